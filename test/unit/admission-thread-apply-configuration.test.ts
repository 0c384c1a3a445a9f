/**
 * A suite webhook's ApplyConfiguration mutations served through the admission thread: answered
 * there from its copy of the OpenAPI schemas the main thread read (no forward), left to the main
 * thread (which reads the schema) only while the copy lacks the kind's; either way the evaluation
 * counted in the operator's metrics and an error marked as answered by failurePolicy. Owns these
 * checks only; the merge itself is test/unit/policy/engine/map-apply-configuration.test.ts' and
 * its comparison with the API server's MAP test/e2e/map-apply-differential.test.ts'.
 */
import { expect } from 'chai';
import { AdmissionAnswering } from '../../src/admission/answering.ts';
import { AdmissionThread } from '../../src/admission/threads/thread.ts';
import type { AdmissionSuite, WebhookSpec } from '../../src/api/types.ts';
import { CertificateStore } from '../../src/certs/store.ts';
import { createCA, issueLeaf, type IssuedCertificate } from '../../src/certs/x509.ts';
import { Metrics } from '../../src/health/metrics.ts';
import type { SchemaChange } from '../../src/apiserver/openapi-state.ts';
import { logger } from '../../src/log.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { APPS, components, deployments, URL_V1 } from '../fixtures/openapi-apps.ts';
import { poster, SERVER_NAME, type TestEndpoint } from '../support/endpoint.ts';

function mutating(name: string, expression: string, failurePolicy: 'Fail' | 'Ignore'): WebhookSpec {
  return { name, type: 'Mutating', failurePolicy, rules: deployments, mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression } }] } as WebhookSpec;
}

const SUITE: AdmissionSuite = {
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: 'apply', uid: 'uid-apply', generation: 1 },
  spec: {
    webhooks: [
      mutating('replicas', 'Object{spec: Object.spec{replicas: 2}}', 'Fail'),
      // `missing` is no field of the request's spec: an evaluation error, which Ignore admits
      mutating('broken', 'Object{spec: Object.spec{replicas: object.spec.missing}}', 'Ignore'),
    ],
  },
};

function review(): string {
  const review = fixtures.deploymentCreate();
  (review.request!.object as { spec: { replicas: number } }).spec.replicas = 7;
  return JSON.stringify(review);
}

describe('admission: ApplyConfiguration mutations answered in the admission thread', function () {
  let ca: IssuedCertificate;
  let metrics: Metrics;
  let answering: AdmissionAnswering;
  let thread: AdmissionThread;
  let post: TestEndpoint['post'];
  /** The kinds whose schema the main thread was asked for: each a request the thread forwarded. */
  const asked: string[] = [];
  const listeners: ((change: SchemaChange) => void)[] = [];
  const tell = (change: SchemaChange) => listeners.forEach((listener) => listener(change));

  const patchOf = (response: { patch?: string }) => JSON.parse(Buffer.from(response.patch ?? 'W10=', 'base64').toString());
  /** A series' value in the operator's /metrics text (the thread's counts flushed into it first). */
  const series = async (name: string, labels: string) => {
    const line = (await metrics.render()).split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const evaluations = (webhook: string) => series('portcullis_admission_cel_evaluation_cost_count', `webhook="${webhook}"`);

  before(async function () {
    ca = await createCA({ commonName: 'apply-ca', notAfter: new Date(Date.now() + 86_400_000) });
    metrics = new Metrics();
    // The main thread's schemas: read asynchronously, as OpenApiSchemas reads them.
    const registry = new SuiteRegistry({ observers: metrics, operatorNamespace: 'portcullis-system', mergeSchemas: { schema: async (kind) => (asked.push(kind.kind), { ref: 'Deployment', components }) } });
    registry.sync(SUITE);
    const certificates = new CertificateStore();
    const leaf = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });
    certificates.install('apply', leaf.certPem, leaf.keyPem);
    answering = new AdmissionAnswering({ registry, metrics, log: logger });
    const feed = { subscribe: (listener: (change: SchemaChange) => void) => (listeners.push(listener), () => undefined), refresh: () => undefined };
    thread = new AdmissionThread({ answering, registry, certificates, metrics, mirrors: { Namespace: { list: () => [] }, LimitRange: { list: () => [] } }, log: logger, validation: { paramsAccess: true, schemas: feed } });
    await thread.listen({ port: 0, host: '127.0.0.1' });
    post = poster(thread.port!, ca.certPem);
    metrics.attach({ collect: () => thread.flushMetrics() });
    expect(await thread.whenServing('apply', 'uid-apply', 1)).to.equal(true);
  });
  after(async () => {
    await thread.close();
    await answering.close();
  });
  beforeEach(() => (asked.length = 0));

  it('leaves a request to the main thread while the thread holds no schema of its kind, and counts the evaluation there', async function () {
    const answer = await post('/admit/apply/replicas', review());
    expect(answer.body.response.allowed).to.equal(true);
    expect(patchOf(answer.body.response)).to.deep.equal([{ op: 'replace', path: '/spec/replicas', value: 2 }]);
    expect(asked).to.deep.equal(['Deployment']);
    expect(await evaluations('replicas')).to.equal(1);

    const ignored = await post('/admit/apply/broken', review());
    expect(ignored.body.response.allowed).to.equal(true);
    expect(ignored.body.response.patch).to.equal(undefined);
    expect(await series('portcullis_admission_failure_policy_total', 'webhook="broken"')).to.equal(1);
    expect(await evaluations('broken')).to.equal(1);
  });

  it('answers in the thread, from its copy, once the main thread has read the schema, counted as well', async function () {
    const at = Date.now();
    tell({ type: 'paths', at, paths: { [APPS]: { serverRelativeURL: URL_V1 } } });
    tell({ type: 'document', path: APPS, url: URL_V1, components });
    const answer = await post('/admit/apply/replicas', review());
    expect(answer.body.response.allowed).to.equal(true);
    expect(patchOf(answer.body.response)).to.deep.equal([{ op: 'replace', path: '/spec/replicas', value: 2 }]);
    expect(asked).to.deep.equal([]);
    expect(await evaluations('replicas')).to.equal(2);

    expect((await post('/admit/apply/broken', review())).body.response.allowed).to.equal(true);
    expect(asked).to.deep.equal([]);
    expect(await series('portcullis_admission_failure_policy_total', 'webhook="broken"')).to.equal(2);
  });
});
