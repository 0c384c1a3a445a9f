/**
 * An AdmissionException's status through the real API server (issue 55): once it lets requests
 * through, its status counts them (`uses`; a large request, judged in a review worker, too, as the
 * uses metric counts it) and says when (`lastUsed`), and `kubectl get` shows them
 * in its printer columns (the CRD's additionalPrinterColumns, served as the API server's Table);
 * `Expired` is False while it applies and turns True once `expires` passes, with nothing else
 * changed. Owns its namespace (exc-status), its suite (exc-status-labels) and its exception;
 * touches nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import { EXCEPTION_PLURAL, type AdmissionException } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { LARGE_BODY } from '../../src/admission/threads/offload.ts';
import { freePort } from '../../src/local/ports.ts';
import { sampleValue, scrape } from '../support/prometheus.ts';

const NAMESPACE = 'exc-status';
const LABEL = { 'exceptions-status-e2e': 'true' };
const SUITE = 'exc-status-labels';
const EXCEPTION = 'counted';
/** Creates through kubectl, each a small request judged where it arrives. */
const SMALL = 3;
/** And one ConfigMap large enough to be judged in a review worker: every one a use. */
const USES = SMALL + 1;

const suiteSpec: SuiteSpec = {
  exceptions: { allowed: true },
  namespaceSelector: { matchLabels: LABEL },
  webhooks: [
    {
      name: 'team-label',
      type: 'Validating',
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'ConfigMaps need a team label' }],
    },
  ],
};

/** RFC 3339 to the second, as a person writes it. */
const rfc3339 = (ms: number) => new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

const read = async () => (await cluster().kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: NAMESPACE, name: EXCEPTION })) as AdmissionException;

/** `kubectl get` of the exception as a person reads it (the server's Table): column name -> value. */
async function columns(wide: boolean): Promise<Record<string, string>> {
  const result = await kubectl(['get', 'admissionexceptions', EXCEPTION, '-n', NAMESPACE, ...(wide ? ['-o', 'wide'] : [])]);
  expect(result.code, result.stderr).to.equal(0);
  const [header, row] = result.stdout.trimEnd().split('\n');
  // Columns are separated by runs of 2+ spaces; no value here has two spaces in it.
  const names = header!.split(/\s{2,}/);
  const values = row!.split(/\s{2,}/);
  return Object.fromEntries(names.map((name, i) => [name, values[i] ?? '']));
}

describe('AdmissionException status: uses, last use and expiry, in status and in kubectl get', function () {
  let operator: Operator;
  let metricsPort: number;

  before(async function () {
    await ensureNamespace(NAMESPACE, LABEL);
    metricsPort = await freePort();
    operator = await startTestOperator({ metricsPort });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, suiteSpec);
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    await deleteIfExists(cluster().kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name: EXCEPTION, namespace: NAMESPACE } });
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it('counts its uses, shows them and the last use in status and columns, and turns Expired True at expires', async function () {
    // Long enough to be used a few times and have every use written (within 30 s of the first) through a busy machine; short enough to wait for.
    const expiresAt = Math.ceil((Date.now() + 45_000) / 1000) * 1000;
    const expires = rfc3339(expiresAt);
    await cluster().kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: EXCEPTION_PLURAL,
      namespace: NAMESPACE,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name: EXCEPTION }, spec: { suite: SUITE, webhook: 'team-label', reason: 'legacy config', expires } },
    });
    // Before any use: it applies, and says so.
    const active = await eventually(
      async () => {
        const condition = (await read()).status?.conditions?.find((c) => c.type === 'Expired');
        if (condition?.status !== 'False') throw new Error(`Expired is ${JSON.stringify(condition)}`);
        return condition;
      },
      { what: 'Expired to be False while it applies' },
    );
    expect(active.reason).to.equal('Active');

    const before = Date.now();
    let admitted = 0;
    // The first admission waits for the operator's watch to bring the exception.
    await eventually(
      async () => {
        const result = await kubectl(['create', 'configmap', `unlabelled-${admitted}`, '-n', NAMESPACE, '--from-literal=a=b', '--dry-run=server']);
        if (result.code !== 0) throw new Error(result.stderr);
        expect(result.stderr).to.contain(`admitted by exception ${NAMESPACE}/${EXCEPTION}`);
        if (++admitted < SMALL) throw new Error(`admitted ${admitted} of ${SMALL}`);
      },
      { what: `${SMALL} creates admitted by the exception` },
    );
    // A large request, judged off the admission thread, is let through and counted as well.
    await cluster().kube.core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: 'unlabelled-large' }, data: { a: 'x'.repeat(LARGE_BODY) } }, dryRun: 'All' });
    await eventually(
      async () => expect(sampleValue(await scrape(metricsPort), 'portcullis_exception_uses_total', { namespace: NAMESPACE, exception: EXCEPTION, suite: SUITE, webhook: 'team-label' }), 'portcullis_exception_uses_total').to.equal(USES),
      { what: `the uses metric to count ${USES}` },
    );
    expect(Date.now(), 'the creates were made before it expired (else the machine was too slow for this test)').to.be.below(expiresAt);

    // Written coalesced (the first use at once, the rest within the interval): every use counted.
    const status = await eventually(
      async () => {
        const { status } = await read();
        if ((status?.uses ?? 0) < USES) throw new Error(`status.uses is ${status?.uses}`);
        return status!;
      },
      { what: `status.uses to reach ${USES}` },
    );
    expect(status.uses).to.equal(USES);
    expect(Date.parse(status.lastUsed!), 'status.lastUsed')
      .to.be.at.least(Math.floor(before / 1000) * 1000)
      .and.below(expiresAt);

    const shown = await columns(true);
    expect(shown).to.include({ NAME: EXCEPTION, SUITE, WEBHOOK: 'team-label', EXPIRES: expires, USES: String(USES), EXPIRED: 'False', 'LAST-USED': shown['LAST-USED'] });
    expect(shown['LAST-USED'], 'LAST-USED, as kubectl shows an age').to.match(/^\d+[smh]/);
    expect(Object.keys(await columns(false))).to.deep.equal(['NAME', 'SUITE', 'WEBHOOK', 'EXPIRES', 'USES', 'EXPIRED', 'AGE']);

    // From expires on: Expired turns True, by the operator's own wake-up (no request, no edit of the exception).
    const expired = await eventually(
      async () => {
        const condition = (await read()).status?.conditions?.find((c) => c.type === 'Expired');
        if (condition?.status !== 'True') throw new Error(`Expired is ${JSON.stringify(condition)}`);
        return condition;
      },
      { what: 'Expired to turn True', timeoutMs: Math.max(0, expiresAt - Date.now()) + 60_000 },
    );
    expect(expired.reason).to.equal('Expired');
    expect(expired.message).to.contain(`expired at ${expires}`);
    expect(Date.parse(expired.lastTransitionTime), 'turned True at or after expires').to.be.at.least(expiresAt);
    expect((await columns(false)).EXPIRED).to.equal('True');
  });
});
