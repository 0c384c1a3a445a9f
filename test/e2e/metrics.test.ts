/**
 * /metrics after real admissions through the API server: requests by decision, the latency and
 * CEL histograms, failurePolicy answers, the expiry gauges against the certificates actually
 * served, the leader gauge, reconciles, build info and runtime metrics; every scrape parsed by a strict
 * parser of the exposition format (test/support/prometheus.ts).
 */
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { expect } from 'chai';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { parseExposition, sampleValue, scrape, type Family } from '../support/prometheus.ts';
import { freePort } from '../../src/local/ports.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { SuiteSpec } from '../../src/api/types.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';

const NS = 'metrics-e2e';
const SUITE = 'metrics-guard';
const SELECTED = { matchLabels: { 'portcullis-test': 'metrics' } };
const CONFIGMAPS = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

const spec: SuiteSpec = {
  webhooks: [
    { name: 'stamp', type: 'Mutating', rules: CONFIGMAPS, objectSelector: SELECTED, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels/stamped', value: 'yes' }] }] },
    { name: 'no-deny', type: 'Validating', rules: CONFIGMAPS, objectSelector: SELECTED, validations: [{ expression: "!has(object.data) || !('deny' in object.data)", message: 'no deny key' }] },
    { name: 'warn', type: 'Validating', rules: CONFIGMAPS, objectSelector: SELECTED, validationActions: ['Warn'], validations: [{ expression: "!has(object.data) || !('warn' in object.data)", message: 'a warn key' }] },
    // Errors on every request (no such key), answered by failurePolicy Ignore: allowed, counted as an error.
    { name: 'broken', type: 'Validating', failurePolicy: 'Ignore', rules: CONFIGMAPS, objectSelector: SELECTED, validations: [{ expression: "object.data.missing == 'x'" }] },
  ],
};

/** The labels a series may carry: nothing that names an object, a namespace or a request. */
const BOUNDED_LABELS = new Set([
  'suite',
  'webhook',
  'operation',
  'decision',
  'failure_policy',
  'code',
  'kind',
  'ca',
  'result',
  'condition',
  'status',
  'version',
  'node_version',
  'le',
  'quantile',
  'space',
  'type',
  'major',
  'minor',
  'patch',
  'gc',
  'worker',
]);

describe('Metrics: /metrics after real admissions through the API server', function () {
  let operator: Operator;
  let metricsPort: number;

  before(async function () {
    await ensureNamespace(NS);
    metricsPort = await freePort();
    operator = await startTestOperator({ metricsPort });
    await createSuite(SUITE, spec);
    await waitForCondition(SUITE, 'Ready', 'True');
    const { core } = cluster().kube;
    const create = (name: string, data: Record<string, string>) => core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name, labels: { 'portcullis-test': 'metrics' } }, data } });
    // The API server's configuration cache may lag the registration: wait for the mutation.
    await eventually(
      async () => {
        const cm = await create(`probe-${Date.now()}`, {});
        if (cm.metadata?.labels?.stamped !== 'yes') throw new Error('not stamped yet');
      },
      { what: 'the suite to be called' },
    );
    await create('plain', { a: '1' });
    await create('warned', { warn: 'x' });
    expect(await refusal(() => create('refused', { deny: 'x' }))).to.deep.include({ code: 422 });
    const plain = await core.readNamespacedConfigMap({ namespace: NS, name: 'plain' });
    await core.replaceNamespacedConfigMap({ namespace: NS, name: 'plain', body: { ...plain, data: { a: '1', b: '2' } } });
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it('counts each answer by suite, webhook, operation and decision, and the latency histogram counts the same answers', async function () {
    const metrics = await scrape(metricsPort);
    const requests = (webhook: string, labels: Record<string, string>) => sampleValue(metrics, 'portcullis_admission_requests_total', { suite: SUITE, webhook, ...labels }) ?? 0;
    expect(requests('stamp', { operation: 'CREATE', decision: 'patched' })).to.be.at.least(4);
    expect(requests('stamp', { operation: 'UPDATE', decision: 'allowed' }), 'the update finds the label there already').to.be.at.least(1);
    expect(requests('no-deny', { operation: 'CREATE', decision: 'denied' })).to.equal(1);
    expect(requests('no-deny', { operation: 'CREATE', decision: 'allowed' })).to.be.at.least(3);
    expect(requests('no-deny', { operation: 'UPDATE', decision: 'allowed' })).to.equal(1);
    expect(requests('warn', { operation: 'CREATE', decision: 'warned' })).to.equal(1);
    expect(requests('broken', { operation: 'CREATE', decision: 'error' })).to.be.at.least(4);
    expect(requests('broken', { decision: 'allowed', operation: 'CREATE' })).to.equal(0);

    const failures = sampleValue(metrics, 'portcullis_admission_failure_policy_total', { suite: SUITE, webhook: 'broken', failure_policy: 'Ignore' });
    const errors =
      sampleValue(metrics, 'portcullis_admission_requests_total', { suite: SUITE, webhook: 'broken', operation: 'CREATE', decision: 'error' })! +
      (sampleValue(metrics, 'portcullis_admission_requests_total', { suite: SUITE, webhook: 'broken', operation: 'UPDATE', decision: 'error' }) ?? 0);
    expect(failures).to.equal(errors);

    const histogram = metrics.get('portcullis_admission_request_duration_seconds')!;
    expect(histogram.type).to.equal('histogram');
    for (const webhook of ['stamp', 'no-deny', 'warn', 'broken']) {
      const answered = metrics
        .get('portcullis_admission_requests_total')!
        .samples.filter((s) => s.labels.suite === SUITE && s.labels.webhook === webhook)
        .reduce((sum, s) => sum + s.value, 0);
      const count = sampleValue(metrics, 'portcullis_admission_request_duration_seconds_count', { suite: SUITE, webhook });
      expect(count, webhook).to.equal(answered);
      const buckets = histogram.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.webhook === webhook && s.labels.suite === SUITE).map((s) => s.labels.le);
      expect(buckets[0], 'sub-millisecond buckets').to.equal('0.0001');
      expect(buckets.at(-2)).to.equal('10');
      const under = sampleValue(metrics, 'portcullis_admission_request_duration_seconds_bucket', { suite: SUITE, webhook, le: '10' });
      expect(under, 'every answer took under 10 s').to.equal(count);
    }
  });

  it("records each CEL evaluation's time and cost, per webhook", async function () {
    const metrics = await scrape(metricsPort);
    for (const webhook of ['no-deny', 'warn', 'broken']) {
      expect(sampleValue(metrics, 'portcullis_admission_cel_evaluation_duration_seconds_count', { suite: SUITE, webhook }), webhook).to.be.at.least(4);
      expect(sampleValue(metrics, 'portcullis_admission_cel_evaluation_cost_sum', { suite: SUITE, webhook }), webhook).to.be.greaterThan(0);
    }
  });

  it('reports the seconds until expiry of the certificate served for the suite and of the CA that signed it', async function () {
    const configuration = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` });
    const bundle = Buffer.from(configuration.webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
    const leaf = await new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: operator.servingPort, servername: `portcullis-${SUITE}.${OPERATOR_NAMESPACE}.svc`, ca: bundle }, () => {
        resolve(socket.getPeerX509Certificate()!);
        socket.end();
      });
      socket.on('error', reject);
    });
    const ca = bundle
      .split(/(?<=-----END CERTIFICATE-----)/)
      .filter((pem) => pem.includes('BEGIN'))
      .map((pem) => new X509Certificate(pem.trim()))
      .find((candidate) => leaf.checkIssued(candidate) && leaf.verify(candidate.publicKey));
    expect(ca, 'the leaf is signed by a CA of the caBundle').to.not.equal(undefined);

    const now = Date.now();
    const metrics = await scrape(metricsPort);
    const leafSeconds = sampleValue(metrics, 'portcullis_serving_certificate_expiry_seconds', { kind: 'suite', suite: SUITE })!;
    expect(Math.abs(leafSeconds - (new Date(leaf.validTo).getTime() - now) / 1e3), `leaf notAfter ${leaf.validTo}`).to.be.lessThan(5);
    const caSeconds = sampleValue(metrics, 'portcullis_ca_certificate_expiry_seconds', { ca: 'current' })!;
    expect(Math.abs(caSeconds - (new Date(ca!.validTo).getTime() - now) / 1e3), `CA notAfter ${ca!.validTo}`).to.be.lessThan(5);
    expect(sampleValue(metrics, 'portcullis_serving_certificate_expiry_seconds', { kind: 'suite-validation' }), "the operator's own webhook").to.be.greaterThan(0);
  });

  it("counts the operator's own validation webhook as every webhook is (suite label empty), so its latency shows beside the suites'", async function () {
    const spec: SuiteSpec = {
      webhooks: [
        {
          name: 'noop',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'metrics-e2e': 'none' } },
          validations: [{ expression: 'true' }],
        },
      ],
    };
    const labels = { suite: '', webhook: SUITE_VALIDATION.webhook };
    await eventually(
      async () => {
        await createSuite('metrics-validated', spec);
        await deleteSuite('metrics-validated');
        const metrics = await scrape(metricsPort);
        expect(sampleValue(metrics, 'portcullis_admission_requests_total', { ...labels, operation: 'CREATE', decision: 'allowed' })).to.be.at.least(1);
        expect(sampleValue(metrics, 'portcullis_admission_request_duration_seconds_count', labels)).to.be.at.least(1);
      },
      { what: "the suite-validation webhook's answers to be counted" },
    );
  });

  it('says which replica leads, what it wrote, and how the suites stand', async function () {
    const metrics = await eventually(
      async () => {
        const scraped = await scrape(metricsPort);
        if (sampleValue(scraped, 'portcullis_leader') !== 1) throw new Error('not leading yet');
        return scraped;
      },
      { what: 'the leader gauge to be 1' },
    );
    expect(sampleValue(metrics, 'portcullis_api_writes_total')).to.be.greaterThan(0);
    // The leader reconciled the suite, the CA and its own webhook, and timed each.
    for (const kind of ['suite', 'ca', 'suite-validation']) {
      const reconciles = metrics.get('portcullis_reconcile_duration_seconds')!.samples.filter((s) => s.name.endsWith('_count') && s.labels.kind === kind && s.labels.result !== 'error');
      expect(
        reconciles.reduce((sum, s) => sum + s.value, 0),
        kind,
      ).to.be.greaterThan(0);
    }
    expect(sampleValue(metrics, 'portcullis_workqueue_depth')).to.be.a('number');
    expect(sampleValue(metrics, 'portcullis_suites', { condition: 'Ready', status: 'True' })).to.be.at.least(1);
    expect(metrics.get('portcullis_build_info')!.samples[0]!.labels).to.deep.equal({ version: '0.1.0', node_version: process.version });
    for (const runtime of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds', 'nodejs_active_handles_total', 'process_resident_memory_bytes', 'process_cpu_seconds_total']) {
      expect(metrics.has(runtime), runtime).to.equal(true);
    }
    const unbounded = [...metrics.values()].flatMap((f: Family) => f.samples.flatMap((s) => Object.keys(s.labels))).filter((label) => !BOUNDED_LABELS.has(label));
    expect(unbounded, 'labels outside the bounded set').to.deep.equal([]);
    for (const family of metrics.values()) expect(family.help, family.name).to.be.a('string').and.not.equal('');

    await operator.drain();
    expect(sampleValue(await scrape(metricsPort), 'portcullis_leader'), 'after handing over').to.equal(0);
  });

  it('the strict parser refuses what Prometheus refuses (so the scrapes above prove the format)', function () {
    expect(() => parseExposition('a_total{x="1"} 1\n# TYPE a_total counter\n')).to.throw(/TYPE after samples/);
    expect(() => parseExposition('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n')).to.throw(/not cumulative/);
    expect(() => parseExposition('a{x="\\q"} 1\n')).to.throw(/bad escape/);
    expect(() => parseExposition('a 1\nb 1\na 2\n')).to.throw(/two groups|duplicate/);
  });
});
