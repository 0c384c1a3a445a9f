/**
 * AdmissionExceptions through the real API server (issue 55): a suite denies ConfigMaps without a
 * team label in two namespaces; an exception in one, granted by someone holding the exception
 * role there and expiring in about 20 s, admits there with a warning naming it and not in the
 * other, and once expired the same create is denied again, with nothing reconciled; the
 * background audit reports a stored object one covers as `skip` naming it, and /metrics counts
 * its uses. As
 * less-trusted users (ServiceAccount tokens): a namespace admin cannot create an exception, and
 * one naming a protected suite or namespace, or without a reason, is refused on apply. Owns its
 * namespaces (exc-a, exc-b), suites (exc-*) and the RoleBindings it makes; touches nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { recordAuthors } from '../support/authors.ts';
import { reportResults } from '../support/reports.ts';
import { sampleValue, scrape } from '../support/prometheus.ts';
import { freePort } from '../../src/local/ports.ts';
import { auditEvents } from '../support/audit-log.ts';
import { webhookFullName } from '../../src/api/names.ts';
import { connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import { EXCEPTION_PLURAL, type ExceptionSpec } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';

const A = 'exc-a';
const B = 'exc-b';
const LABEL = { 'exceptions-e2e': 'true' };
const GRANTER = 'granter';
const OWNER = 'owner';
const SUITE = 'exc-team-labels';
const PROTECTED = 'exc-protected';
const DENIAL = 'ConfigMaps need a team label';
/** Stored in both namespaces before the suite, unlabelled: what the background audit judges. */
const STORED = 'stored-legacy';

const suiteSpec = (exceptions: SuiteSpec['exceptions'], namespaceLabels: Record<string, string>): SuiteSpec => ({
  ...(exceptions ? { exceptions } : {}),
  // Only this file's namespaces: no other test's ConfigMaps are judged.
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

const exceptionBody = (name: string, spec: Partial<ExceptionSpec>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionException',
  metadata: { name },
  spec: { suite: SUITE, webhook: 'team-label', reason: 'legacy config, labelled by the migration', expires: rfc3339(Date.now() + 3600_000), ...spec },
});

/** RFC 3339 to the second, as a person writes it. */
const rfc3339 = (ms: number) => new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

const createAs = (kube: Kube, namespace: string, name: string, spec: Partial<ExceptionSpec>) =>
  kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace, body: exceptionBody(name, spec) });

/** A ConfigMap without a team label, created as a dry run by the test's admin: kubectl's exit code and what it printed (warnings on stderr). */
const createUnlabelled = (namespace: string) => kubectl(['create', 'configmap', 'unlabelled', '-n', namespace, '--from-literal=a=b', '--dry-run=server']);

describe('AdmissionExceptions: granted, expiring, in their own namespace only', function () {
  let operator: Operator;
  let metricsPort: number;
  let granter: Kube;
  let owner: Kube;

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    const { kube } = cluster();
    await recordAuthors();
    for (const namespace of [A, B]) await ensureNamespace(namespace, LABEL);
    for (const namespace of [A, B]) {
      await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: STORED, namespace } });
      await kube.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: STORED }, data: { a: 'b' } } });
    }
    for (const name of [GRANTER, OWNER]) await kube.core.createNamespacedServiceAccount({ namespace: A, body: { metadata: { name } } }).catch(() => undefined);
    const binding = (namespace: string, name: string, role: string, subject: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: subject, namespace: A }],
    });
    // The exception role bound where the granter may grant: its own namespace, and kube-system (to show a protected namespace is refused whatever RBAC says).
    // And `edit` in its namespace: an exception lets through only what its writer could write (exception-author-rights.test.ts).
    for (const object of [
      binding(A, 'exc-granter', 'portcullis-exception-author', GRANTER),
      binding(A, 'exc-granter-edit', 'edit', GRANTER),
      binding('kube-system', 'exc-granter', 'portcullis-exception-author', GRANTER),
      binding(A, 'exc-owner', 'admin', OWNER),
    ]) {
      await kube.objects.create(object).catch(() => undefined);
    }
    // The audit on, scanning every few seconds: an exception changes no audited object, so only a scan judges its objects again.
    metricsPort = await freePort();
    operator = await startTestOperator({ audit: true, auditIntervalMs: 5_000, metricsPort });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, suiteSpec({ allowed: true }, LABEL));
    // Judges nothing (no namespace has the label): it is here to be named by an exception it does not accept.
    await createSuite(PROTECTED, suiteSpec(undefined, { 'exceptions-e2e': 'protected' }));
    for (const name of [SUITE, PROTECTED]) await waitForCondition(name, 'Ready', 'True');
    granter = connect(await serviceAccountKubeConfig(A, GRANTER));
    owner = connect(await serviceAccountKubeConfig(A, OWNER));
  });

  after(async function () {
    const { kube } = cluster();
    for (const namespace of [A, B]) await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: STORED, namespace } });
    for (const [namespace, name] of [
      [A, 'legacy-config'],
      [A, 'audit-legacy'],
      [A, 'past-protected'],
      ['kube-system', 'in-kube-system'],
      [A, 'no-reason'],
      [A, 'by-admin'],
    ] as const) {
      await deleteIfExists(kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name, namespace } });
    }
    await deleteIfExists(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'exc-granter', namespace: 'kube-system' } });
    await deleteIfExists(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'exc-editor', namespace: A } });
    for (const name of [SUITE, PROTECTED]) await deleteSuite(name);
    await operator?.stop();
  });

  it('admits in its namespace with a warning naming it, never in another, and denies again once expired', async function () {
    const expiresAt = Math.ceil((Date.now() + 20_000) / 1000) * 1000;
    const expires = rfc3339(expiresAt);
    await createAs(granter, A, 'legacy-config', { expires });
    // The exception reaches the operator through its watch.
    const admitted = await eventually(
      async () => {
        const result = await createUnlabelled(A);
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: `the exception to admit an unlabelled ConfigMap in ${A}` },
    );
    expect(admitted.stderr).to.contain(`Warning: admitted by exception ${A}/legacy-config (expires ${expires}): legacy config, labelled by the migration`);
    // Each use counted, by exception.
    const uses = sampleValue(await scrape(metricsPort), 'portcullis_exception_uses_total', { namespace: A, exception: 'legacy-config', suite: SUITE, webhook: 'team-label' });
    expect(uses, 'portcullis_exception_uses_total of the exception').to.be.at.least(1);
    // And the API server's audit log names it on the request it let through.
    const annotation = `${webhookFullName(SUITE, 'team-label')}/exception`;
    await eventually(
      async () => {
        const events = auditEvents<{ stage: string; verb: string; objectRef?: { namespace?: string; resource?: string; name?: string }; annotations?: Record<string, string> }>(cluster().controlPlane.auditLogPath);
        const named = events.filter((e) => e.stage === 'ResponseComplete' && e.verb === 'create' && e.objectRef?.namespace === A && e.objectRef?.resource === 'configmaps' && e.annotations?.[annotation] !== undefined);
        expect(named.map((e) => e.annotations![annotation])).to.include(`${A}/legacy-config`);
      },
      { what: `the audit log to record ${annotation}` },
    );
    const elsewhere = await createUnlabelled(B);
    expect(elsewhere.code, 'the same create in the other namespace').to.not.equal(0);
    expect(elsewhere.stderr).to.contain(DENIAL).and.not.contain('admitted by exception');

    // From `expires` on it applies no more: the same create is denied again, with nothing changed but the clock.
    const denied = await eventually(
      async () => {
        const result = await createUnlabelled(A);
        if (result.code === 0) throw new Error(`still admitted: ${result.stderr}`);
        return { result, at: Date.now() };
      },
      { what: 'the expired exception to admit no more', timeoutMs: Math.max(0, expiresAt - Date.now()) + 60_000 },
    );
    expect(denied.result.stderr).to.contain(DENIAL);
    expect(denied.at, 'denied only once it expired').to.be.at.least(expiresAt);
  });

  it('shows in the background audit: a stored object it covers is a skip naming it, the same object elsewhere fails', async function () {
    await createAs(granter, A, 'audit-legacy', { match: { names: [STORED] }, reason: 'stored before the rule' });
    const stored = (results: Awaited<ReturnType<typeof reportResults>>) => results.filter((r) => r.resources[0]?.name === STORED && r.policy === `${SUITE}/team-label`);
    const covered = await eventually(
      async () => {
        const found = stored(await reportResults(A));
        // (The first test's exception, expired, may still be named until the next scan.)
        if (!found.some((r) => r.result === 'skip' && r.message?.includes('audit-legacy'))) throw new Error(`not a skip naming audit-legacy yet: ${JSON.stringify(found)}`);
        return found;
      },
      { what: `the Report of ${A} to show ${STORED} as a skip` },
    );
    expect(covered.map((r) => [r.rule, r.result])).to.deep.equal([['validations[0]', 'skip']]);
    expect(covered[0]!.message).to.contain(`admitted by exception ${A}/audit-legacy`).and.contain('stored before the rule');
    const elsewhere = await eventually(
      async () => {
        const found = stored(await reportResults(B));
        if (found.length === 0) throw new Error(`${STORED} not reported in ${B} yet`);
        return found;
      },
      { what: `the Report of ${B}` },
    );
    expect(elsewhere.map((r) => [r.rule, r.result, r.message])).to.deep.equal([['validations[0]', 'fail', DENIAL]]);
  });

  it('cannot be created by a namespace admin who was not given the exception role', async function () {
    // The admin binding is in force: the aggregated view of exceptions reaches it.
    await eventually(
      async () => {
        await owner.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: A });
      },
      { what: 'the admin role to read exceptions' },
    );
    const refused = await refusal(() => createAs(owner, A, 'by-admin', {}));
    expect(refused?.code, refused?.message).to.equal(403);
    expect(refused?.message).to.contain('cannot create resource "admissionexceptions"');
  });

  it("is read by the operator's ServiceAccount as deploy/ grants it, and written by neither it nor `edit`", async function () {
    const canI = async (who: string, verb: string, namespace: string) => (await kubectl(['auth', 'can-i', verb, `${EXCEPTION_PLURAL}.${GROUP}`, '-n', namespace, '--as', who])).stdout.trim();
    const operatorAccount = 'system:serviceaccount:portcullis-system:portcullis-operator';
    for (const verb of ['list', 'watch']) expect(await canI(operatorAccount, verb, A), `operator ${verb}`).to.equal('yes');
    for (const verb of ['create', 'update', 'delete']) expect(await canI(operatorAccount, verb, A), `operator ${verb}`).to.equal('no');
    // A user bound to `edit` in the namespace: it reads exceptions (aggregated to view and edit), never creates one.
    const { kube } = cluster();
    await kube.objects
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'exc-editor', namespace: A },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
        subjects: [{ kind: 'User', name: 'exc-editor', apiGroup: 'rbac.authorization.k8s.io' }],
      } as never)
      .catch(() => undefined);
    await eventually(async () => expect(await canI('exc-editor', 'list', A)).to.equal('yes'), { what: 'edit to read exceptions' });
    expect(await canI('exc-editor', 'create', A)).to.equal('no');
  });

  it('is refused on apply when it names a protected suite or namespace, or gives no reason', async function () {
    const protectedSuite = await refusal(() => createAs(granter, A, 'past-protected', { suite: PROTECTED }));
    expect(protectedSuite?.message).to.contain(`spec.suite: AdmissionSuite ${PROTECTED} accepts no exceptions`).and.contain('it is protected');
    const protectedNamespace = await refusal(() => createAs(granter, 'kube-system', 'in-kube-system', {}));
    expect(protectedNamespace?.message).to.contain('metadata.namespace: kube-system is protected');
    const noReason = await refusal(() => createAs(granter, A, 'no-reason', { reason: undefined as unknown as string }));
    expect(noReason?.message).to.contain('spec.reason: Required value');
    // Nothing of them stored.
    const { kube } = cluster();
    for (const [namespace, name] of [
      [A, 'past-protected'],
      ['kube-system', 'in-kube-system'],
      [A, 'no-reason'],
    ] as const) {
      expect(await refusal(() => kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace, name }))).to.deep.include({ code: 404 });
    }
  });
});
