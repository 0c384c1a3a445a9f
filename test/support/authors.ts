/**
 * Who wrote a suite or an AdmissionPolicy, recorded by the API server in the annotations the
 * audit reads (src/audit/access.ts: it judges or counts only what that author may list): the
 * install's own guards as shipped, deploy/06's for suites and deploy/07's for AdmissionPolicies
 * (a policy of the tests' own beside them would record differently: deploy/06 keeps the author
 * over an edit that leaves the spec alone, and its validation holds the two to agree).
 * Applied once per run (the cluster is shared); returns once both are in force.
 */
import { expect } from 'chai';
import { cluster, kubectl } from './cluster.ts';
import { eventually } from './wait.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import { GROUP, PLURAL as SUITE_PLURAL, POLICY_PLURAL, VERSION } from '../../src/api/types.ts';

let recorded: Promise<void> | undefined;

export function recordAuthors(): Promise<void> {
  return (recorded ??= record());
}

async function record(): Promise<void> {
  for (const file of ['deploy/06-suite-params-guard.yaml', 'deploy/07-admission-policy-guard.yaml']) {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
    expect(applied.code, applied.stderr).to.equal(0);
  }
  const { kube } = cluster();
  // The API server takes up new admission policies a moment later: dry runs show when.
  const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
  const webhook = { type: 'Validating', rules, validations: [{ expression: 'true' }] };
  await eventually(
    async () => {
      const suite = (await kube.custom.createClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: SUITE_PLURAL,
        dryRun: 'All',
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name: 'author-probe' }, spec: { webhooks: [{ name: 'probe', ...webhook }] } },
      })) as { metadata: { annotations?: Record<string, string> } };
      expect(suite.metadata.annotations?.[NAMESPACED.authorAnnotation], "a suite's author").to.be.a('string');
      const policy = (await kube.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: POLICY_PLURAL,
        namespace: 'default',
        dryRun: 'All',
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: 'author-probe' }, spec: webhook },
      })) as { metadata: { annotations?: Record<string, string> } };
      expect(policy.metadata.annotations?.[NAMESPACED.authorAnnotation], "a policy's author").to.be.a('string');
    },
    { what: 'the API server to record the authors of suites and policies', timeoutMs: 60_000 },
  );
}
