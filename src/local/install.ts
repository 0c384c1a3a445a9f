/**
 * Installs what the operator needs into a control plane with no deploy/ applied: the CRDs (its
 * own and OpenReports'), the operator's namespace, and the two guards that record who wrote each
 * suite and AdmissionPolicy (deploy/06 and 07), without which the background audit judges nothing.
 * It writes only these; the operator's own objects are the operator's to write.
 */
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { appFile } from '../app-files.ts';
import { apply, connect, statusCode, type Kube } from '../apiserver/client.ts';
import { Discovery } from '../apiserver/discovery.ts';
import { NAMESPACED } from '../api/names.ts';
import { GROUP, VERSION } from '../api/types.ts';

export const CRD_FILE = appFile('crds', 'admission.portcullis.dev_admissionsuites.yaml');
export const POLICY_CRD_FILE = appFile('crds', 'admission.portcullis.dev_admissionpolicies.yaml');
export const EXCEPTION_CRD_FILE = appFile('crds', 'admission.portcullis.dev_admissionexceptions.yaml');
export const CLUSTER_EXCEPTION_CRD_FILE = appFile('crds', 'admission.portcullis.dev_clusteradmissionexceptions.yaml');
/** The OpenReports Report and ClusterReport, where the background audit writes its results. */
export const REPORT_CRD_FILES = [appFile('crds', 'openreports.io_reports.yaml'), appFile('crds', 'openreports.io_clusterreports.yaml')];
/** The install's own author-recording guards, as `kubectl apply -f deploy/` installs them. */
export const AUTHOR_GUARD_FILES = [appFile('deploy', '06-suite-params-guard.yaml'), appFile('deploy', '07-admission-policy-guard.yaml')];

/** Polls of a condition the API server reaches on its own (a CRD established, a policy in force): 100 ms apart, 30 s at most. */
const POLLS = 300;

export async function installForLocalRun(config: k8s.KubeConfig, namespace: string): Promise<void> {
  const kube = connect(config);
  const crds = [CRD_FILE, POLICY_CRD_FILE, EXCEPTION_CRD_FILE, CLUSTER_EXCEPTION_CRD_FILE, ...REPORT_CRD_FILES].map((file) => k8s.loadYaml<k8s.KubernetesObject & Record<string, unknown>>(fs.readFileSync(file, 'utf8')));
  for (const crd of crds) await apply(kube, crd);
  await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  for (const crd of crds) await waitForCrd(kube, crd.metadata!.name!);
  // As `kubectl apply -f deploy/` on an API server before 1.36: what it does not serve (the
  // MutatingAdmissionPolicies that record authors) is left out, and no author is waited for.
  const discovery = config.makeApiClient(Discovery);
  const served = async (object: k8s.KubernetesObject) => (await discovery.lookup(object.apiVersion!, object.kind!).catch((err: unknown) => (statusCode(err) === 404 ? undefined : Promise.reject(err)))) !== undefined;
  let recording = false;
  for (const file of AUTHOR_GUARD_FILES) {
    for (const object of k8s.loadAllYaml(fs.readFileSync(file, 'utf8')) as (k8s.KubernetesObject & Record<string, unknown>)[]) {
      if (!object || !(await served(object))) continue;
      await apply(kube, object);
      if (object.kind === 'MutatingAdmissionPolicy') recording = true;
    }
  }
  if (recording) await waitForAuthorsRecorded(kube);
}

async function waitForCrd(kube: Kube, name: string): Promise<void> {
  for (let i = 0; i < POLLS; i++) {
    const crd = (await kube.objects.read({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } })) as {
      status?: { conditions?: { type: string; status: string }[] };
    };
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    await pause();
  }
  throw new Error(`CRD ${name} was not established`);
}

/**
 * Returns once the API server records the author of a new suite and of a new AdmissionPolicy:
 * it takes up admission policies a moment after they are written, and serves a new CRD's kind
 * a moment after it is established (503 meanwhile), so dry-run creates show when both hold.
 */
async function waitForAuthorsRecorded(kube: Kube): Promise<void> {
  const webhook = { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], validations: [{ expression: 'true' }] };
  const probes = [
    { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name: 'author-probe' }, spec: { webhooks: [{ name: 'probe', type: 'Validating', ...webhook }] } },
    { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: 'author-probe', namespace: 'default' }, spec: { type: 'Validating', ...webhook } },
  ];
  let last = '';
  for (let i = 0; i < POLLS; i++) {
    try {
      const recorded = await Promise.all(probes.map(async (probe) => ((await kube.objects.create(probe, undefined, 'All')) as k8s.KubernetesObject).metadata?.annotations?.[NAMESPACED.authorAnnotation]));
      if (recorded.every((author) => typeof author === 'string')) return;
      last = 'created without an author annotation';
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await pause();
  }
  throw new Error(`the API server did not take up the author-recording guards (${AUTHOR_GUARD_FILES.join(', ')}): ${last}`);
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
