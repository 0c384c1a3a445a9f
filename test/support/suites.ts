/** Creating, reading and deleting AdmissionSuites in the test cluster, and waiting on their conditions. */
import { GROUP, PLURAL, VERSION, type AdmissionSuite, type Condition, type SuiteSpec } from '../../src/api/types.ts';
import { isNotFound } from '../../src/kube/client.ts';
import { cluster } from './cluster.ts';
import { eventually } from './wait.ts';

const ref = { group: GROUP, version: VERSION, plural: PLURAL };

export async function createSuite(name: string, spec: SuiteSpec): Promise<AdmissionSuite> {
  const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name }, spec };
  return (await cluster().kube.custom.createClusterCustomObject({ ...ref, body })) as AdmissionSuite;
}

export async function getSuite(name: string): Promise<AdmissionSuite | undefined> {
  try {
    return (await cluster().kube.custom.getClusterCustomObject({ ...ref, name })) as AdmissionSuite;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function deleteSuite(name: string): Promise<void> {
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
export async function waitForCondition(name: string, type: string, status: 'True' | 'False', timeoutMs = 30_000): Promise<AdmissionSuite> {
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
