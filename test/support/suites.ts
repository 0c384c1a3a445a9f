/** Creating, reading and deleting AdmissionSuites in the test cluster, and waiting on their conditions. */
import { GROUP, PLURAL, VERSION, type AdmissionSuite, type Condition, type SuiteSpec } from '../../src/api/types.ts';
import { deleteIfExists, describeError, getObject, isNotFound, statusCode, type KubeObject } from '../../src/apiserver/client.ts';
import { configurationName } from '../../src/api/names.ts';
import { cluster } from './cluster.ts';
import { eventually } from './wait.ts';

const ref = { group: GROUP, version: VERSION, plural: PLURAL };

/**
 * Creates the suite as a user's retrying apply would: while the API server answers that it cannot
 * take AdmissionSuites yet (503, "There can be a delay between when CustomResourceDefinitions are
 * created and when they are available": its MutatingAdmissionPolicies, the install's guards among
 * them, find a CRD's schema only some seconds after the CRD is made again or the API server
 * restarts), it is asked again, under a ceiling; any other answer at once.
 */
export async function createSuite(name: string, spec: SuiteSpec): Promise<AdmissionSuite> {
  const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name }, spec };
  let created: AdmissionSuite | undefined;
  let failed: unknown;
  await eventually(
    async () => {
      try {
        created = (await cluster().kube.custom.createClusterCustomObject({ ...ref, body })) as AdmissionSuite;
      } catch (err) {
        if (statusCode(err) === 503 && /There can be a delay/.test(describeError(err))) throw err;
        failed = err;
      }
    },
    { what: `the API server to take AdmissionSuite ${name}`, timeoutMs: 180_000, intervalMs: 1000 },
  );
  if (failed !== undefined) throw failed;
  return created!;
}

export async function getSuite(name: string): Promise<AdmissionSuite | undefined> {
  try {
    return (await cluster().kube.custom.getClusterCustomObject({ ...ref, name })) as AdmissionSuite;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Deletes the suite, and its webhook configurations at once rather than when garbage collection
 * gets to them (which, after an API server restart, can take longer than a test waits): one left
 * behind points at an operator that a test may stop next, and would fail the next tests' requests
 * (failurePolicy Fail) with "connection refused". Tests of garbage collection itself delete the
 * suite through the API instead.
 */
export async function deleteSuite(name: string): Promise<void> {
  const suite = await getSuite(name);
  if (!suite) return;
  await deleteSuiteObject(name);
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
    const header = { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: configurationName(name) } };
    const configuration = await getObject<KubeObject & { metadata: { ownerReferences?: { uid: string }[] } }>(cluster().kube, header);
    if (configuration?.metadata.ownerReferences?.some((o) => o.uid === suite.metadata.uid)) await deleteIfExists(cluster().kube, header);
  }
}

/** Deletes the AdmissionSuite object alone: what it owns goes by garbage collection (tests of that). */
export async function deleteSuiteObject(name: string): Promise<void> {
  try {
    await cluster().kube.custom.deleteClusterCustomObject({ ...ref, name });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

export function condition(suite: AdmissionSuite | undefined, type: string): Condition | undefined {
  return suite?.status?.conditions?.find((c) => c.type === type);
}

/** Waits until the suite's condition `type` has `status` for its current generation. */
export async function waitForCondition(name: string, type: string, status: 'True' | 'False', timeoutMs = 60_000): Promise<AdmissionSuite> {
  return eventually(
    async () => {
      const suite = await getSuite(name);
      const c = condition(suite, type);
      if (!suite || c?.status !== status || suite.status?.observedGeneration !== suite.metadata.generation) {
        throw new Error(`${type} is ${c?.status ?? 'absent'} (${c?.reason ?? ''}: ${c?.message ?? ''})`);
      }
      return suite;
    },
    { timeoutMs, what: `suite ${name} ${type}=${status}` },
  );
}

/**
 * A suite, Ready, whose one webhook (failurePolicy Fail) refuses ConfigMaps named `forbidden...` in
 * `namespace` with `message`: for the tests of an operator as it is built (the image's bundle, the
 * npm package's JavaScript), where with Fail a worker thread that could not start refuses the
 * allowed ConfigMaps too.
 */
export async function createForbiddenNamesSuite(name: string, namespace: string, message: string): Promise<void> {
  await createSuite(name, {
    webhooks: [
      {
        name: 'no-forbidden',
        type: 'Validating',
        failurePolicy: 'Fail',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        validations: [{ expression: "!object.metadata.name.startsWith('forbidden')", message }],
      },
    ],
  });
  await waitForCondition(name, 'Ready', 'True');
}

/**
 * A suite that takes exceptions, whose one webhook (`team-label`) refuses ConfigMaps (and the other
 * `resources`) without a `team` label in the namespaces `namespaceLabels` selects: the rule the
 * exception tests let objects through.
 */
export function teamLabelSuite(namespaceLabels: Record<string, string>, resources = ['configmaps']): SuiteSpec {
  return {
    exceptions: { allowed: true },
    namespaceSelector: { matchLabels: namespaceLabels },
    webhooks: [
      {
        name: 'team-label',
        type: 'Validating',
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources }],
        validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'a team label is required' }],
      },
    ],
  };
}
