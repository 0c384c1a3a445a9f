/**
 * ClusterAdmissionExceptions through the real API server (issue 55): a suite denies ConfigMaps
 * without a team label in two namespaces; a cluster exception, granted by someone bound to the
 * cluster exception role, selecting one namespace by label, admits there with the warning naming
 * it and not in the other, and its status counts the use; one naming a suite that accepts no
 * exceptions is refused on apply; a namespace admin cannot create one, and the role is aggregated to nothing. Owns its namespaces
 * (cexc-a, cexc-b), suites (cexc-*), the cluster exceptions it makes and its bindings; touches
 * nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import { CLUSTER_EXCEPTION_PLURAL, type ClusterAdmissionException, type ExceptionSpec } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';

const A = 'cexc-a';
const B = 'cexc-b';
const LABEL = { 'cluster-exceptions-e2e': 'true' };
const SUITE = 'cexc-team-labels';
const PROTECTED = 'cexc-protected';
const GRANTER = 'cluster-granter';
const OWNER = 'owner';
const DENIAL = 'ConfigMaps need a team label';
const EXCEPTION = 'cexc-legacy-teams';
const REASON = 'legacy namespaces, labelled by the migration';

const suiteSpec = (exceptions: SuiteSpec['exceptions'], namespaceLabels: Record<string, string>): SuiteSpec => ({
  ...(exceptions ? { exceptions } : {}),
  namespaceSelector: { matchLabels: namespaceLabels },
  webhooks: [
    {
      name: 'team-label',
      type: 'Validating',
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: DENIAL }],
    },
  ],
});

const body = (name: string, spec: Partial<ExceptionSpec>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'ClusterAdmissionException',
  metadata: { name },
  spec: { suite: SUITE, webhook: 'team-label', reason: REASON, expires: '2099-01-01T00:00:00Z', ...spec },
});
const createClusterException = (kube: Kube, name: string, spec: Partial<ExceptionSpec>) => kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL, body: body(name, spec) });

const createUnlabelled = (namespace: string) => kubectl(['create', 'configmap', 'unlabelled', '-n', namespace, '--from-literal=a=b', '--dry-run=server']);

describe('ClusterAdmissionExceptions: cluster-wide grants, by namespace selector', function () {
  let operator: Operator;
  let granter: Kube;
  let owner: Kube;

  before(async function () {
    const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/02-rbac.yaml']);
    expect(result.code, result.stderr).to.equal(0);
    const { kube } = cluster();
    await ensureNamespace(A, { ...LABEL, 'legacy-teams': 'true' });
    await ensureNamespace(B, LABEL);
    for (const name of [GRANTER, OWNER]) await kube.core.createNamespacedServiceAccount({ namespace: A, body: { metadata: { name } } }).catch(() => undefined);
    const subject = (name: string) => [{ kind: 'ServiceAccount', name, namespace: A }];
    await kube.objects
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'cexc-granter' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'portcullis-cluster-exception-author' },
        subjects: subject(GRANTER),
      } as never)
      .catch(() => undefined);
    // And `edit` cluster-wide: a cluster exception lets through only what its writer could write everywhere (exception-author-rights.test.ts).
    await kube.objects
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'cexc-granter-edit' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
        subjects: subject(GRANTER),
      } as never)
      .catch(() => undefined);
    await kube.objects
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'cexc-owner', namespace: A },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: subject(OWNER),
      } as never)
      .catch(() => undefined);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, suiteSpec({ allowed: true }, LABEL));
    await createSuite(PROTECTED, suiteSpec(undefined, { 'cluster-exceptions-e2e': 'protected' }));
    for (const name of [SUITE, PROTECTED]) await waitForCondition(name, 'Ready', 'True');
    granter = connect(await serviceAccountKubeConfig(A, GRANTER));
    owner = connect(await serviceAccountKubeConfig(A, OWNER));
    // Registered: the unlabelled ConfigMap is refused before any exception.
    await eventually(
      async () => {
        const refused = await createUnlabelled(A);
        if (refused.code === 0 || !refused.stderr.includes(DENIAL)) throw new Error(`not refused by the suite yet: ${refused.stderr}`);
      },
      { what: `the suite to deny in ${A}` },
    );
  });

  after(async function () {
    const { kube } = cluster();
    for (const name of [EXCEPTION, 'cexc-past-protected', 'cexc-by-admin']) {
      await deleteIfExists(kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'ClusterAdmissionException', metadata: { name } });
    }
    await deleteIfExists(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'cexc-granter' } });
    await deleteIfExists(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'cexc-granter-edit' } });
    for (const name of [SUITE, PROTECTED]) await deleteSuite(name);
    await operator?.stop();
  });

  it('admits in the namespaces it selects with a warning naming it, never in another, and counts its use in status', async function () {
    await createClusterException(granter, EXCEPTION, { namespaceSelector: { matchLabels: { 'legacy-teams': 'true' } } });
    const admitted = await eventually(
      async () => {
        const result = await createUnlabelled(A);
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: `the cluster exception to admit an unlabelled ConfigMap in ${A}` },
    );
    expect(admitted.stderr).to.contain(`Warning: admitted by exception ${EXCEPTION} (expires 2099-01-01T00:00:00Z): ${REASON}`);
    const elsewhere = await createUnlabelled(B);
    expect(elsewhere.code, `the same create in ${B}, which it does not select`).to.not.equal(0);
    expect(elsewhere.stderr).to.contain(DENIAL).and.not.contain('admitted by exception');
    const status = await eventually(
      async () => {
        const stored = (await cluster().kube.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL, name: EXCEPTION })) as ClusterAdmissionException;
        if (!stored.status?.uses) throw new Error(`status is ${JSON.stringify(stored.status)}`);
        return stored.status;
      },
      { what: 'the cluster exception status to count its use' },
    );
    expect(status.uses).to.equal(1);
    expect(status.conditions?.find((c) => c.type === 'Expired')).to.include({ status: 'False', reason: 'Active' });
  });

  it('is refused on apply naming a suite that accepts no exceptions', async function () {
    const protectedSuite = await refusal(() => createClusterException(granter, 'cexc-past-protected', { suite: PROTECTED }));
    expect(protectedSuite?.message).to.contain(`ClusterAdmissionException "cexc-past-protected" is invalid: spec.suite: AdmissionSuite ${PROTECTED} accepts no exceptions`);
    const { kube } = cluster();
    expect(await refusal(() => kube.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL, name: 'cexc-past-protected' }))).to.deep.include({ code: 404 });
  });

  it('cannot be created by a namespace admin; its role is aggregated to nothing', async function () {
    const refused = await refusal(() => createClusterException(owner, 'cexc-by-admin', {}));
    expect(refused?.code, refused?.message).to.equal(403);
    expect(refused?.message).to.contain('cannot create resource "clusteradmissionexceptions"');
    const role = await cluster().kube.objects.read({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'portcullis-cluster-exception-author' } } as never);
    expect(Object.keys(role.metadata?.labels ?? {}).filter((l) => l.startsWith('rbac.authorization.k8s.io/aggregate-to-'))).to.deep.equal([]);
    for (const who of ['system:serviceaccount:cexc-a:owner', 'system:serviceaccount:portcullis-system:portcullis-operator']) {
      const canI = await kubectl(['auth', 'can-i', 'create', `${CLUSTER_EXCEPTION_PLURAL}.${GROUP}`, '--as', who]);
      expect(canI.stdout.trim(), who).to.equal('no');
    }
  });
});
