/**
 * The background audit through the real API server: objects created before a suite are judged as
 * a create of each and reported in OpenReports Reports (the CRDs as published), `fail` with the
 * validation's message; fixing one turns it to `pass` within seconds; a validation that reads the
 * request's user is `skip` with the reason; a team's AdmissionPolicy is audited in its namespace;
 * the suite's and the policy's status say how many fail; deleting the suite removes its results;
 * a namespace's `view` user reads its Report and no other namespace's; what a rule in shadow mode
 * (Audit) let through at admission is in the report too, beside the scan's result. And a messageExpression
 * that would print a Secret never reaches a report: Secrets are never audited.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { recordAuthors } from '../support/authors.ts';
import { apply, connect, deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'audit-e2e';
const OTHER = 'audit-e2e-other';
const SUITE = 'audit-owner';
const configmaps = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const secrets = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }];

const spec: SuiteSpec = {
  webhooks: [
    {
      name: 'owner',
      type: 'Validating',
      // Warn: the suite is rolled out in shadow mode; the audit still reports its failures.
      validationActions: ['Warn'],
      namespaceSelector: { matchLabels: { 'audit-e2e': 'yes' } },
      rules: configmaps,
      validations: [
        { expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels", messageExpression: "'configmap ' + object.metadata.name + ' has no owner label'" },
        { expression: "request.userInfo.username != 'mallory'", message: 'mallory may not write configmaps' },
      ],
    },
    {
      // Audit: in shadow mode; only a request says who wrote it, so the scan skips it and the live results tell.
      name: 'audited',
      type: 'Validating',
      validationActions: ['Audit'],
      namespaceSelector: { matchLabels: { 'audit-e2e': 'yes' } },
      rules: configmaps,
      validations: [{ expression: "request.userInfo.username != 'mallory'", message: 'mallory may not write configmaps (audited)' }],
    },
    {
      name: 'secret-words',
      type: 'Validating',
      namespaceSelector: { matchLabels: { 'audit-e2e': 'yes' } },
      rules: secrets,
      validations: [{ expression: 'false', messageExpression: "'the secret holds ' + string(object.data)" }],
    },
  ],
};

interface Result {
  policy: string;
  rule: string;
  result: string;
  message?: string;
  resources: { name: string; kind: string; uid: string }[];
  properties?: Record<string, string>;
}
interface Report {
  metadata: { name: string; labels?: Record<string, string> };
  source?: string;
  summary: Record<string, number>;
  results: Result[];
}

async function reports(namespace: string): Promise<Report[]> {
  const list = (await cluster().kube.custom.listNamespacedCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'reports', namespace })) as { items: Report[] };
  return list.items;
}
const resultsOf = async (namespace: string) => (await reports(namespace)).flatMap((r) => r.results ?? []);
const find = (results: Result[], object: string, rule: string, policy = `${SUITE}/owner`) => results.find((r) => r.policy === policy && r.rule === rule && r.resources[0]?.name === object);

describe('background audit: OpenReports of the objects already there', function () {
  this.timeout(120_000);
  let operator: Operator;

  before(async function () {
    // The audit counts a suite's or policy's results only for its recorded author (src/audit/access.ts).
    await recordAuthors();
    await ensureNamespace(NS, { 'audit-e2e': 'yes' });
    await ensureNamespace(OTHER, { 'audit-e2e': 'yes' });
    for (const name of ['bad', 'good', 'fixed', 'by-mallory', 'by-admin']) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS } });
    await createConfigMap(NS, 'bad');
    await createConfigMap(NS, 'fixed');
    await createConfigMap(NS, 'good', {}, { owner: 'team-a' });
    await createConfigMap(OTHER, 'elsewhere');
    await cluster()
      .kube.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'audit-secret' }, stringData: { password: 'hunter2' } } })
      .catch(() => undefined);
    operator = await startTestOperator({ audit: true });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, spec);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await cluster()
      .kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name: 'team-size' })
      .catch(() => undefined);
    await operator.stop();
  });

  it('reports objects created before the suite: fail with the message, pass, and skip for what only a request has', async function () {
    const results = await eventually(
      async () => {
        const found = await resultsOf(NS);
        if (!find(found, 'bad', 'validations[0]') || !find(found, 'good', 'validations[0]')) throw new Error(`not reported yet: ${JSON.stringify(found.map((r) => [r.resources[0]?.name, r.rule, r.result]))}`);
        return found;
      },
      { what: 'the audit results in the Report', timeoutMs: 60_000 },
    );
    const bad = find(results, 'bad', 'validations[0]')!;
    // validationActions [Warn]: a failure is a warning, with the action in the result's properties
    expect(bad).to.include({ result: 'warn', message: 'configmap bad has no owner label' });
    expect(bad.properties).to.include({ action: 'Warn', sourceKind: 'AdmissionSuite', webhook: 'owner' });
    expect(find(results, 'good', 'validations[0]')).to.include({ result: 'pass' });
    const skipped = find(results, 'bad', 'validations[1]')!;
    expect(skipped.result).to.equal('skip');
    expect(skipped.message).to.contain('request.userInfo');
    const [report] = await reports(NS);
    expect(report!.metadata.name).to.equal('portcullis');
    expect(report!.metadata.labels).to.include({ 'app.kubernetes.io/managed-by': 'portcullis' });
    expect(report!.source).to.equal('portcullis');
    const counted = Object.fromEntries(['pass', 'fail', 'warn', 'error', 'skip'].map((k) => [k, report!.results.filter((r) => r.result === k).length]));
    expect(report!.summary).to.deep.equal(counted);
    // The other namespace's objects are judged too, in their own Report.
    expect(find(await resultsOf(OTHER), 'elsewhere', 'validations[0]')).to.include({ result: 'warn' });
  });

  it('never audits Secrets: a message computed from one would reach whoever reads the report', async function () {
    const results = await resultsOf(NS);
    expect(results.filter((r) => r.policy === `${SUITE}/secret-words`)).to.deep.equal([]);
    expect(JSON.stringify(await reports(NS))).to.not.contain('hunter2');
  });

  it("kubectl get reports -A shows each report's summary", async function () {
    const listed = await kubectl(['get', 'reports', '-A']);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.match(/NAMESPACE\s+NAME\s+PASS\s+FAIL\s+WARN\s+ERROR\s+SKIP/);
    expect(listed.stdout).to.match(new RegExp(`${NS}\\s+portcullis\\s+`));
  });

  it("says in the suite's status how many objects fail, per webhook", async function () {
    const suite = await eventually(
      async () => {
        const s = await getSuite(SUITE);
        if (s?.status?.audit?.webhooks?.[0]?.evaluated === undefined) throw new Error(`no status.audit yet: ${JSON.stringify(s?.status?.audit)}`);
        return s;
      },
      { what: 'status.audit', timeoutMs: 60_000 },
    );
    const audit = suite!.status!.audit!;
    expect(audit.lastRun).to.be.a('string');
    // bad, fixed and elsewhere have no owner; warnings count as failing only with Deny or Audit
    expect(audit.webhooks!.find((w) => w.name === 'owner')).to.include({ evaluated: 4 });
  });

  it('turns a fixed object to pass within seconds, without waiting for the next scan', async function () {
    expect(find(await resultsOf(NS), 'fixed', 'validations[0]')).to.include({ result: 'warn' });
    await cluster().kube.core.patchNamespacedConfigMap({ namespace: NS, name: 'fixed', body: { metadata: { labels: { owner: 'team-b' } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await eventually(async () => expect(find(await resultsOf(NS), 'fixed', 'validations[0]')).to.include({ result: 'pass' }), { what: 'the fixed object to pass', timeoutMs: 60_000 });
  });

  it("audits a team's AdmissionPolicy in its namespace, and says in its status how many fail", async function () {
    const policy: AdmissionPolicy = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AdmissionPolicy',
      metadata: { name: 'team-size', namespace: NS, uid: '' },
      spec: { type: 'Validating', rules: configmaps, validations: [{ expression: "object.metadata.name != 'bad'", message: 'no configmap may be called bad' }] },
    } as AdmissionPolicy;
    const { uid: _uid, ...metadata } = policy.metadata;
    await cluster().kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, body: { ...policy, metadata } });
    const results = await eventually(
      async () => {
        const found = await resultsOf(NS);
        if (!find(found, 'bad', 'validations[0]', `${NS}/team-size`)) throw new Error('not reported yet');
        return found;
      },
      { what: "the policy's results", timeoutMs: 60_000 },
    );
    expect(find(results, 'bad', 'validations[0]', `${NS}/team-size`)).to.include({ result: 'fail', message: 'no configmap may be called bad' });
    expect(find(results, 'good', 'validations[0]', `${NS}/team-size`)).to.include({ result: 'pass' });
    // A policy judges its own namespace only.
    expect((await resultsOf(OTHER)).filter((r) => r.policy === `${NS}/team-size`)).to.deep.equal([]);
    await eventually(
      async () => {
        const p = (await cluster().kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name: 'team-size' })) as AdmissionPolicy;
        expect(p.status?.audit).to.include({ evaluated: 3, failing: 1 });
      },
      { what: "the policy's status.audit", timeoutMs: 60_000 },
    );
  });

  it("records what a rule in shadow mode (Audit) let through at admission, beside the scan's skip", async function () {
    await apply(cluster().kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'mallory', namespace: NS }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }] });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'mallory', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'mallory' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
    });
    await eventually(
      async () => {
        const created = await kubectl(['create', 'configmap', 'by-mallory', '-n', NS, '--as=mallory']);
        if (created.code !== 0 && !created.stderr.includes('AlreadyExists')) throw new Error(created.stderr);
      },
      { what: 'mallory to create a configmap' },
    );
    const results = await eventually(
      async () => {
        const found = (await resultsOf(NS)).filter((r) => r.policy === `${SUITE}/audited` && r.resources[0]?.name === 'by-mallory');
        if (!found.some((r) => r.properties?.origin === 'admission')) throw new Error(`no live result yet: ${JSON.stringify(found)}`);
        return found;
      },
      { what: 'the live result of the audited webhook', timeoutMs: 60_000 },
    );
    const live = results.find((r) => r.properties?.origin === 'admission')!;
    expect(live).to.include({ rule: 'validations[0]', result: 'fail', message: 'mallory may not write configmaps (audited)' });
    expect(live.properties).to.include({ action: 'Audit' });
    // The scan judges the stored object too, and cannot tell who wrote it.
    await eventually(
      async () => {
        const scanned = (await resultsOf(NS)).find((r) => r.policy === `${SUITE}/audited` && r.resources[0]?.name === 'by-mallory' && r.properties?.origin === 'audit');
        expect(scanned?.result).to.equal('skip');
      },
      { what: "the scan's skip for the same object", timeoutMs: 60_000 },
    );
    // A request by anyone else leaves no live failure.
    await cluster()
      .kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'by-admin' } } })
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await resultsOf(NS)).filter((r) => r.resources[0]?.name === 'by-admin' && r.properties?.origin === 'admission' && r.policy === `${SUITE}/audited`)).to.deep.equal([]);
  });

  it("lets a namespace's view user read its reports, and no other namespace's", async function () {
    // The shipped aggregation: reports readable by view (config/base/rbac.yaml).
    const shipped = k8s.loadAllYaml(fs.readFileSync(new URL('../../config/base/rbac.yaml', import.meta.url), 'utf8')) as (k8s.KubernetesObject & Record<string, unknown>)[];
    const viewReports = shipped.find((o) => o.kind === 'ClusterRole' && o.metadata?.name === 'portcullis-reports-view');
    expect(viewReports, 'a ClusterRole that lets view read reports').to.not.equal(undefined);
    await apply(cluster().kube, viewReports!);
    await apply(cluster().kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'viewer', namespace: NS } });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'viewer-view', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: NS }],
    });
    const viewer = connect(await serviceAccountKubeConfig(NS, 'viewer'));
    const read = (namespace: string) => viewer.custom.listNamespacedCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'reports', namespace });
    await eventually(async () => expect(((await read(NS)) as { items: unknown[] }).items.length).to.be.greaterThan(0), { what: 'the viewer to read its reports', timeoutMs: 60_000 });
    const denied = await read(OTHER).then(
      () => undefined,
      (err: { code?: number }) => err.code,
    );
    expect(denied).to.equal(403);
  });

  it("removes the suite's results when the suite is deleted", async function () {
    await deleteSuite(SUITE);
    await eventually(
      async () => {
        const left = [...(await resultsOf(NS)), ...(await resultsOf(OTHER))].filter((r) => r.policy.startsWith(`${SUITE}/`));
        expect(left).to.deep.equal([]);
      },
      { what: "the suite's results to go", timeoutMs: 60_000 },
    );
    // The namespace with nothing left judged has no report at all.
    await eventually(async () => expect(await reports(OTHER)).to.deep.equal([]), { what: 'the empty report to be deleted', timeoutMs: 60_000 });
  });
});
