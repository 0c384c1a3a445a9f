/**
 * Who wrote a suite or an AdmissionPolicy, recorded by the API server in the annotations the
 * audit reads (src/audit/access.ts: it judges or counts only what that author may list): for
 * AdmissionPolicies, deploy/07's guard as shipped; for suites, a MutatingAdmissionPolicy of the
 * same form (the tests' own, beside whatever deploy/ records for suites: both write the writer).
 * Applied once per run (the cluster is shared); returns once both are in force.
 */
import { expect } from 'chai';
import { cluster, kubectl } from './cluster.ts';
import { eventually } from './wait.ts';
import { apply } from '../../src/apiserver/client.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import { GROUP, PLURAL as SUITE_PLURAL, POLICY_PLURAL, VERSION } from '../../src/api/types.ts';

const SUITE_AUTHOR = 'portcullis-test-suite-author';
let recorded: Promise<void> | undefined;

const RECORD_WRITER = `Object{metadata: Object.metadata{annotations: {
  "${NAMESPACED.authorAnnotation}": request.userInfo.username,
  "${NAMESPACED.authorGroupsAnnotation}": has(request.userInfo.groups) ? request.userInfo.groups.join(",") : ""}}}`;

export function recordAuthors(): Promise<void> {
  return (recorded ??= record());
}

async function record(): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/07-admission-policy-guard.yaml']);
  expect(applied.code, applied.stderr).to.equal(0);
  const { kube } = cluster();
  await apply(kube, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: SUITE_AUTHOR },
    spec: {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: { resourceRules: [{ apiGroups: [GROUP], apiVersions: ['*'], resources: [SUITE_PLURAL], operations: ['CREATE', 'UPDATE'] }] },
      mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: RECORD_WRITER } }],
    },
  });
  await apply(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: SUITE_AUTHOR }, spec: { policyName: SUITE_AUTHOR } });
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
