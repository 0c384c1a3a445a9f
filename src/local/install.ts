/** Installs what the operator needs into a control plane with no deploy/ applied: the CRDs (its own and OpenReports') and the operator's namespace. */
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { appFile } from '../app-files.ts';
import { apply, connect } from '../apiserver/client.ts';

export const CRD_FILE = appFile('crds', 'admission.portcullis.dev_admissionsuites.yaml');
export const POLICY_CRD_FILE = appFile('crds', 'admission.portcullis.dev_admissionpolicies.yaml');
/** The OpenReports Report and ClusterReport, where the background audit writes its results. */
export const REPORT_CRD_FILES = [appFile('crds', 'openreports.io_reports.yaml'), appFile('crds', 'openreports.io_clusterreports.yaml')];

export async function installForLocalRun(config: k8s.KubeConfig, namespace: string): Promise<void> {
  const kube = connect(config);
  const crds = [CRD_FILE, POLICY_CRD_FILE, ...REPORT_CRD_FILES].map((file) => k8s.loadYaml<k8s.KubernetesObject & Record<string, unknown>>(fs.readFileSync(file, 'utf8')));
  for (const crd of crds) await apply(kube, crd);
  await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  for (const crd of crds) await waitForCrd(kube, crd.metadata!.name!);
}

async function waitForCrd(kube: ReturnType<typeof connect>, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const crd = (await kube.objects.read({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name } })) as {
      status?: { conditions?: { type: string; status: string }[] };
    };
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`CRD ${name} was not established`);
}
