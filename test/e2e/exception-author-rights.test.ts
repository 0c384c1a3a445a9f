/**
 * An exception never lets through more than its writer could write (issue 55), through the real
 * API server as less-trusted users (ServiceAccount tokens): a namespace admin's stand-in holding
 * the exception role and the right to write ConfigMaps but not Secrets cannot create an exception
 * covering Secrets, by kind or by covering all of a webhook's resources, and can create one
 * covering ConfigMaps only; one who may write Secrets can; a ClusterAdmissionException's writer
 * needs the rights cluster-wide, a namespace's are not enough; the writer is recorded as the
 * exception's author (deploy/07's guard). Creates are dry runs (the validation webhook is called
 * for them; nothing is stored). Owns its namespace (xr-a), suite
 * (xr-writes) and the (Cluster)Roles and bindings named xr-*; touches nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { recordAuthors } from '../support/authors.ts';
import { connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import { CLUSTER_EXCEPTION_PLURAL, EXCEPTION_PLURAL, type ExceptionSpec } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';

const A = 'xr-a';
const LABEL = { 'exception-rights-e2e': 'true' };
const SUITE = 'xr-writes';
/** Holds the exception roles and may write ConfigMaps in A, not Secrets. */
const NARROW = 'narrow';
/** Holds the exception roles and `edit` in A (Secrets included), not cluster-wide. */
const WIDE = 'wide';
const RBAC = 'rbac.authorization.k8s.io';
const WHY = 'an exception lets through only what its writer could write';

const suiteSpec: SuiteSpec = {
  exceptions: { allowed: true },
  namespaceSelector: { matchLabels: LABEL },
  webhooks: [
    {
      name: 'team-label',
      type: 'Validating',
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'secrets'] }],
      validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'a team label is required' }],
    },
  ],
};

const spec = (kinds?: string[]) => ({ suite: SUITE, webhook: 'team-label', reason: 'legacy objects, labelled by the migration', expires: '2099-01-01T00:00:00Z', ...(kinds ? { match: { kinds } } : {}) }) satisfies ExceptionSpec;
const createException = (kube: Kube, name: string, kinds?: string[]) =>
  kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: EXCEPTION_PLURAL,
    namespace: A,
    dryRun: 'All',
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name }, spec: spec(kinds) },
  });
const createClusterException = (kube: Kube, name: string, kinds?: string[]) =>
  kube.custom.createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: CLUSTER_EXCEPTION_PLURAL,
    dryRun: 'All',
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'ClusterAdmissionException', metadata: { name }, spec: spec(kinds) },
  });
const user = (name: string) => `system:serviceaccount:${A}:${name}`;

describe("AdmissionExceptions: never more than their writer's own rights", function () {
  let operator: Operator;
  let narrow: Kube;
  let wide: Kube;

  const subject = (name: string) => [{ kind: 'ServiceAccount', name, namespace: A }];
  const objects = [
    { apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name: 'xr-configmaps', namespace: A }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'update'] }] },
    { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'xr-narrow-configmaps', namespace: A }, roleRef: { apiGroup: RBAC, kind: 'Role', name: 'xr-configmaps' }, subjects: subject(NARROW) },
    { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'xr-wide-edit', namespace: A }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'edit' }, subjects: subject(WIDE) },
    ...[NARROW, WIDE].map((name) => ({
      apiVersion: `${RBAC}/v1`,
      kind: 'RoleBinding',
      metadata: { name: `xr-${name}-exceptions`, namespace: A },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'portcullis-exception-author' },
      subjects: subject(name),
    })),
    { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'xr-wide-cluster-exceptions' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'portcullis-cluster-exception-author' }, subjects: subject(WIDE) },
  ];
  const clusterEdit = { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'xr-wide-cluster-edit' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'edit' }, subjects: subject(WIDE) };

  before(async function () {
    const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/02-rbac.yaml']);
    expect(result.code, result.stderr).to.equal(0);
    const { kube } = cluster();
    await ensureNamespace(A, LABEL);
    for (const name of [NARROW, WIDE]) await kube.core.createNamespacedServiceAccount({ namespace: A, body: { metadata: { name } } }).catch(() => undefined);
    for (const object of objects) await kube.objects.create(object as never).catch(() => undefined);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, suiteSpec);
    await waitForCondition(SUITE, 'Ready', 'True');
    narrow = connect(await serviceAccountKubeConfig(A, NARROW));
    wide = connect(await serviceAccountKubeConfig(A, WIDE));
  });

  after(async function () {
    const { kube } = cluster();
    for (const object of [...objects, clusterEdit]) await deleteIfExists(kube, object as never);
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it('is refused to a writer who may not write Secrets when it covers Secrets, by kind or by covering the whole webhook', async function () {
    // Waits for the webhook to have the suite in view and the bindings to be in force.
    const byKind = await eventually(
      async () => {
        const refused = await refusal(() => createException(narrow, 'secrets-by-kind', ['Secret']));
        if (!refused?.message?.includes(WHY)) throw new Error(`not refused for the writer's rights: ${refused?.message ?? 'created'}`);
        return refused;
      },
      { what: "the exception webhook to check the writer's rights" },
    );
    expect(byKind.message).to.contain(`user "${user(NARROW)}" may not create or update secrets in namespace "${A}"; ${WHY}`);
    const whole = await refusal(() => createException(narrow, 'whole-webhook'));
    expect(whole?.message).to.contain(`user "${user(NARROW)}" may not create or update secrets in namespace "${A}"; ${WHY}`);
    // ConfigMaps it may write: not named among the refusals.
    expect(whole?.message).not.to.contain('configmaps');
  });

  it('is created by a writer who may write all it covers', async function () {
    expect(await refusal(() => createException(narrow, 'configmaps-only', ['ConfigMap']))).to.equal(undefined);
    expect(await refusal(() => createException(wide, 'secrets-by-kind', ['Secret']))).to.equal(undefined);
    expect(await refusal(() => createException(wide, 'whole-webhook'))).to.equal(undefined);
  });

  it("needs the writer's rights cluster-wide for a ClusterAdmissionException", async function () {
    const refused = await refusal(() => createClusterException(wide, 'xr-cluster-secrets', ['Secret']));
    expect(refused?.message).to.contain(`user "${user(WIDE)}" may not create or update secrets at the cluster scope; ${WHY}`);
    await cluster()
      .kube.objects.create(clusterEdit as never)
      .catch(() => undefined);
    await eventually(async () => expect(await refusal(() => createClusterException(wide, 'xr-cluster-secrets', ['Secret']))).to.equal(undefined), { what: 'edit bound cluster-wide to be in force' });
  });

  it('records its writer as its author, in the annotations the policies use (deploy/07)', async function () {
    await recordAuthors();
    const annotations = (created: unknown) => (created as { metadata: { annotations?: Record<string, string> } }).metadata.annotations ?? {};
    // The guard's MutatingAdmissionPolicy may take up the exception kinds a moment after the policies'.
    const recorded = await eventually(
      async () => {
        const found = annotations(await createException(narrow, 'configmaps-only', ['ConfigMap']));
        expect(found[NAMESPACED.authorAnnotation], "the exception's author").to.equal(user(NARROW));
        return found;
      },
      { what: "the API server to record an exception's author" },
    );
    expect(recorded[NAMESPACED.authorGroupsAnnotation]?.split(',')).to.include(`system:serviceaccounts:${A}`);
    // Bound edit cluster-wide by the case before.
    expect(annotations(await createClusterException(wide, 'xr-cluster-configmaps', ['ConfigMap']))[NAMESPACED.authorAnnotation]).to.equal(user(WIDE));
  });
});
