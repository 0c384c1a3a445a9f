/**
 * Suites of many webhooks, through the real API server: it keeps a client, with connections of its
 * own, for each webhook it calls (not each configuration), so a few suites of a hundred webhooks
 * hold as many connections as hundreds of one-webhook suites. Every webhook of three suites of 128
 * answers a create, with no calling error in the API server's own metrics (the allowance sized by
 * suites refused it past about 260 webhooks: the differential's fourth side met it first).
 * Owns its namespace and suites (conn-hooks-*).
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, errorStatus } from '../support/objects.ts';
import { eventually, pool } from '../support/wait.ts';
import { scrapeApiServer, type Family } from '../support/prometheus.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { WebhookSpec } from '../../src/api/types.ts';

const NS = 'conn-hooks';
const SUITES = ['conn-hooks-a', 'conn-hooks-b', 'conn-hooks-c'];
/** A suite's most (the CRD's bound). */
const WEBHOOKS = 128;

const webhook = (suite: string, i: number): WebhookSpec => ({
  name: `w${i}`,
  type: 'Validating',
  failurePolicy: 'Fail',
  rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
  objectSelector: { matchLabels: { hook: `${suite}-w${i}` } },
  validations: [{ expression: "!has(object.data) || !('deny' in object.data)", message: `denied by ${suite}/w${i}` }],
});

function callingErrors(families: Map<string, Family>): string[] {
  return [...families.values()]
    .flatMap((f) => f.samples)
    .filter((s) => s.name === 'apiserver_admission_webhook_rejection_count' && (s.labels.name ?? '').includes('conn-hooks') && s.labels.error_type !== 'no_error' && s.value > 0)
    .map((s) => `${s.labels.name} ${s.labels.error_type} ${s.labels.rejection_code}: ${s.value}`);
}

describe(`the API server is never the client refused: ${SUITES.length} suites of ${WEBHOOKS} webhooks each answer a create`, function () {
  this.timeout(600_000);
  let operator: Operator;

  before(async function () {
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await ensureNamespace(NS);
    for (const suite of SUITES) await createSuite(suite, { webhooks: Array.from({ length: WEBHOOKS }, (_, i) => webhook(suite, i)) });
    for (const suite of SUITES) await waitForCondition(suite, 'Ready', 'True', 120_000);
  });

  after(async function () {
    for (const suite of SUITES) await deleteSuite(suite);
    await cluster()
      .kube.core.deleteNamespace({ name: NS })
      .catch(() => undefined);
    await operator?.stop();
  });

  it('answers through every webhook, with no calling error in the API server’s metrics', async function () {
    const hooks = SUITES.flatMap((suite) => Array.from({ length: WEBHOOKS }, (_, i) => `${suite}-w${i}`));
    const failures: string[] = [];
    // Each webhook is asked a create it denies, once the API server sends it there; concurrently, as a busy cluster's writes come.
    await pool(hooks, 8, async (hook) => {
      await eventually(
        async () => {
          try {
            await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, dryRun: 'All', body: { metadata: { name: `probe-${hook}`, labels: { hook } }, data: { deny: 'yes' } } });
          } catch (err) {
            const status = errorStatus(err);
            if (status.message?.includes(`denied by ${hook.replace(/-(w\d+)$/, '/$1')}`)) return;
            // Any other refusal (a reset connection, EOF: failurePolicy Fail) is a failure, never retried.
            failures.push(`${hook}: ${status.code} ${status.message}`);
            return;
          }
          throw new Error(`the create for ${hook} was not sent to it yet`);
        },
        { what: `webhook ${hook} to be called` },
      );
    });
    expect(failures, `${failures.length} of ${hooks.length} failed, e.g. ${failures.slice(0, 3).join(' | ')}`).to.deep.equal([]);
    expect(callingErrors(await scrapeApiServer(cluster().kubeConfig))).to.deep.equal([]);
  });
});
