/**
 * The background audit answers as a create of each stored object would be answered, checked
 * against the API server itself: every stored object here is also created again with
 * `dryRun=All` through the harness's kube-apiserver (its webhooks served by the operator), and the
 * audit reports an object failing exactly when that create is refused. Covered: a matchCondition
 * the operator evaluates (not handed to the API server) leaves an object out, and it is never
 * reported; a gatekeeper-library style policy whose variables name `oldObject` is audited, with
 * `oldObject` null as on a create; an expression error is counted by the webhook's failurePolicy
 * (Ignore: admitted, a skip; Fail: an error, failing). Owns its namespace and suite only.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { reportResults, type ReportResult } from '../support/reports.ts';
import { recordAuthors } from '../support/authors.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import type { SuiteSpec, WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'audit-create';
const SUITE = 'audit-create';
const configmaps = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

/** Each webhook judges only the objects labelled with its case, so a dry-run create's answer is that webhook's. */
const webhook = (name: string, rest: Partial<WebhookSpec>): WebhookSpec => ({
  name,
  type: 'Validating',
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
  objectSelector: { matchLabels: { case: name } },
  rules: configmaps,
  ...rest,
});

const spec: SuiteSpec = {
  webhooks: [
    // The condition reads the object, so the operator evaluates it (the API server could not decide it alike under Fail).
    webhook('public-only', {
      matchConditions: [{ name: 'public', expression: "has(object.metadata.labels) && 'tier' in object.metadata.labels && object.metadata.labels['tier'] == 'public'" }],
      validations: [{ expression: "has(object.data) && 'owner' in object.data", message: 'a public configmap names its owner' }],
    }),
    // As the gatekeeper-library's CEL: the object under review is the old one on a DELETE.
    webhook('gatekeeper-style', {
      variables: [{ name: 'anyObject', expression: "request.operation == 'DELETE' ? oldObject : object" }],
      validations: [{ expression: "has(variables.anyObject.data) && 'owner' in variables.anyObject.data", message: 'a configmap names its owner' }],
    }),
    webhook('ignore-errors', { failurePolicy: 'Ignore', validations: [{ expression: "object.data.size == '1'", message: 'size is 1' }] }),
    webhook('fail-errors', { failurePolicy: 'Fail', validations: [{ expression: "object.data.size == '1'", message: 'size is 1' }] }),
  ],
};

/** The stored objects: name, the webhook that judges it, its labels beyond that. */
const OBJECTS: { name: string; case: string; labels?: Record<string, string> }[] = [
  { name: 'internal', case: 'public-only' },
  { name: 'public', case: 'public-only', labels: { tier: 'public' } },
  { name: 'no-owner', case: 'gatekeeper-style' },
  { name: 'no-size-ignore', case: 'ignore-errors' },
  { name: 'no-size-fail', case: 'fail-errors' },
];

const resultsFor = (results: ReportResult[], name: string) => results.filter((r) => r.resources[0]?.name === name && r.policy.startsWith(`${SUITE}/`));
const failing = (results: ReportResult[]) => results.some((r) => r.result === 'fail' || r.result === 'error');

/**
 * The API server's answer to a create of the stored object: refused (by a webhook), or admitted
 * (the object then only conflicts with itself, 409, after admission).
 */
async function dryRunCreate(name: string): Promise<'refused' | 'admitted'> {
  const stored = await cluster().kube.core.readNamespacedConfigMap({ namespace: NS, name });
  const body: k8s.V1ConfigMap = { metadata: { name, namespace: NS, labels: stored.metadata?.labels ?? {} }, ...(stored.data ? { data: stored.data } : {}) };
  const refused = await refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body, dryRun: 'All' }));
  if (refused?.code === 409) return 'admitted';
  if (refused === undefined) throw new Error(`${name}: a dry-run create of a stored object was not even a conflict`);
  return 'refused';
}

describe('background audit: each stored object judged as a create of it would be answered', function () {
  this.timeout(180_000);
  let operator: Operator;
  let results: ReportResult[];

  before(async function () {
    await recordAuthors();
    await ensureNamespace(NS);
    for (const o of OBJECTS) {
      await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: o.name, namespace: NS } });
      await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: o.name, labels: { case: o.case, ...o.labels } } } });
    }
    operator = await startTestOperator({ audit: true });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, spec);
    results = await eventually(
      async () => {
        const found = await reportResults(NS);
        for (const name of ['public', 'no-owner', 'no-size-ignore', 'no-size-fail'])
          if (resultsFor(found, name).length === 0) throw new Error(`${name} not reported yet: ${JSON.stringify(found.map((r) => [r.resources[0]?.name, r.policy, r.result]))}`);
        return found;
      },
      { what: 'the audit results in the Report' },
    );
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator.stop();
  });

  it('reports an object failing exactly when the API server refuses a dry-run create of it', async function () {
    // Served once the one object every webhook case refuses is refused.
    await eventually(async () => expect(await dryRunCreate('no-size-fail')).to.equal('refused'), { what: 'the suite to be enforced' });
    const audit: Record<string, string> = {};
    const server: Record<string, string> = {};
    for (const { name } of OBJECTS) {
      audit[name] = failing(resultsFor(results, name)) ? 'refused' : 'admitted';
      server[name] = await dryRunCreate(name);
    }
    expect(audit).to.deep.equal(server);
    expect(server).to.deep.equal({ internal: 'admitted', public: 'refused', 'no-owner': 'refused', 'no-size-ignore': 'admitted', 'no-size-fail': 'refused' });
  });

  it("never reports an object the operator's matchCondition leaves out", async function () {
    expect(resultsFor(results, 'public').map((r) => [r.policy, r.rule, r.result, r.message])).to.deep.equal([[`${SUITE}/public-only`, 'validations[0]', 'fail', 'a public configmap names its owner']]);
    expect(resultsFor(results, 'internal')).to.deep.equal([]);
  });

  it('audits a policy whose variables name oldObject, with oldObject null as on a create', async function () {
    expect(resultsFor(results, 'no-owner').map((r) => [r.policy, r.rule, r.result, r.message])).to.deep.equal([[`${SUITE}/gatekeeper-style`, 'validations[0]', 'fail', 'a configmap names its owner']]);
  });

  it("counts an expression's error by the webhook's failurePolicy: Ignore admits it, Fail fails it", async function () {
    const ignored = resultsFor(results, 'no-size-ignore');
    expect(ignored.map((r) => [r.policy, r.result])).to.deep.equal([[`${SUITE}/ignore-errors`, 'skip']]);
    expect(ignored[0]!.message).to.match(/failurePolicy Ignore admits/);
    expect(resultsFor(results, 'no-size-fail').map((r) => [r.policy, r.result])).to.deep.equal([[`${SUITE}/fail-errors`, 'error']]);
    const audit = await eventually(
      async () => {
        const webhooks = (await getSuite(SUITE))?.status?.audit?.webhooks ?? [];
        if (webhooks.length < spec.webhooks.length) throw new Error(`status.audit not complete yet: ${JSON.stringify(webhooks)}`);
        return Object.fromEntries(webhooks.map((w) => [w.name, w.failing]));
      },
      { what: "the suite's status.audit" },
    );
    expect(audit).to.deep.equal({ 'public-only': 1, 'gatekeeper-style': 1, 'ignore-errors': 0, 'fail-errors': 1 });
  });
});
