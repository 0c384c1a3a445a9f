/**
 * The suite- and policy-validation webhooks answered in the admission thread, as the main
 * thread's server answers them: type-checked from the thread's copy of the OpenAPI schemas read
 * (renewed before it goes stale), and left to the main thread whole when they need what the
 * thread does not hold (a SubjectAccessReview, a read that is missing or stale); counted in the
 * operator's metrics like every webhook.
 */
import https from 'node:https';
import { expect } from 'chai';
import { AdmissionAnswering } from '../../src/admission/answering.ts';
import { AdmissionThread } from '../../src/admission/threads/thread.ts';
import type { ParamsAccessCheck } from '../../src/admission/suite-validation.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../../src/api/names.ts';
import type { AdmissionPolicy, AdmissionSuite, WebhookSpec } from '../../src/api/types.ts';
import { CertificateStore } from '../../src/certs/store.ts';
import { createCA, issueLeaf, type IssuedCertificate } from '../../src/certs/x509.ts';
import { Metrics } from '../../src/health/metrics.ts';
import { FRESH_MS, PATHS_KEY, type SchemaChange } from '../../src/apiserver/openapi-state.ts';
import { logger } from '../../src/log.ts';
import { PolicyRegistry } from '../../src/registry/policies.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import type { SchemaSource } from '../../src/registry/typecheck.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { APPS, components, deployments, URL_V1 } from '../fixtures/openapi-apps.ts';

const SERVER_NAME = 'portcullis-operator.portcullis-system.svc';

function suite(name: string, webhook: Partial<WebhookSpec> = {}): AdmissionSuite {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name, uid: `uid-${name}` },
    spec: { typeCheckErrors: 'Deny', webhooks: [{ name: 'w', type: 'Validating', rules: deployments, validations: [{ expression: 'object.spec.replicas <= 3' }], ...webhook }] },
  };
}

function policy(spec: Partial<AdmissionPolicy['spec']>): AdmissionPolicy {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name: 'p', namespace: 'team-a', uid: 'uid-p' },
    spec: { type: 'Validating', rules: deployments, validations: [{ expression: 'true' }], ...spec } as AdmissionPolicy['spec'],
  };
}

function reviewOf(object: object, kind: 'AdmissionSuite' | 'AdmissionPolicy') {
  const review = fixtures.deploymentCreate();
  return JSON.stringify({ ...review, request: { ...review.request, kind: { group: 'admission.portcullis.dev', version: 'v1alpha1', kind }, namespace: 'team-a', object } });
}

describe('admission: the validation webhooks answered in the admission thread', function () {
  let ca: IssuedCertificate;
  let metrics: Metrics;
  let answering: AdmissionAnswering;
  let thread: AdmissionThread;
  /** What the main thread's server was asked: SubjectAccessReviews, and reads of the schemas. */
  const asked: string[] = [];
  const renewed: string[] = [];
  const listeners: ((change: SchemaChange) => void)[] = [];
  const tell = (change: SchemaChange) => listeners.forEach((listener) => listener(change));
  const readAt = (at: number) => {
    tell({ type: 'paths', at, paths: { [APPS]: { serverRelativeURL: URL_V1 } } });
    tell({ type: 'resources', key: 'apps/v1', at, resources: [{ name: 'deployments', kind: 'Deployment' }] });
  };

  const post = (path: string, body: string) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: thread.port, path, method: 'POST', servername: SERVER_NAME, ca: ca.certPem, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
      });
      req.on('error', reject);
      req.end(body);
    });

  before(async function () {
    ca = await createCA({ commonName: 'validation-ca', notAfter: new Date(Date.now() + 86_400_000) });
    metrics = new Metrics();
    const registry = new SuiteRegistry({ observers: metrics, operatorNamespace: 'portcullis-system' });
    const policies = new PolicyRegistry({ operatorNamespace: 'portcullis-system', limits: { mutations: true, costBudget: 1_000_000 }, protectedNamespaces: ['portcullis-system', 'kube-system'] });
    const certificates = new CertificateStore();
    const leaf = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });
    certificates.install('self', leaf.certPem, leaf.keyPem);
    const paramsAccess: ParamsAccessCheck = {
      refusals: async (_user, uses) => (asked.push('params'), uses.map((u) => ({ field: u.field, message: 'the main thread says no' }))),
      mutationRefusals: async () => (asked.push('mutation'), [{ field: 'spec.rules', message: 'the main thread says no' }]),
    };
    // The main thread's reads: the same document, counted.
    const schemas: SchemaSource = {
      kindsFor: async (group, version, resource) => (asked.push(`kinds ${group}/${version}`), resource === 'deployments' ? [{ group, version, kind: 'Deployment' }] : []),
      schema: async () => (asked.push('schema'), { ref: 'Deployment', components, source: URL_V1 }),
    };
    answering = new AdmissionAnswering({ registry, policies, metrics, log: logger, paramsAccess, schemas: { ...schemas, byDefault: 'Warn' } });
    const feed = { subscribe: (listener: (change: SchemaChange) => void) => (listeners.push(listener), () => undefined), refresh: (key: string) => void renewed.push(key), byDefault: 'Warn' as const };
    thread = new AdmissionThread({ answering, registry, certificates, metrics, mirrors: { Namespace: { list: () => [] }, LimitRange: { list: () => [] } }, log: logger, validation: { paramsAccess: true, schemas: feed, policies } });
    await thread.listen({ port: 0, host: '127.0.0.1' });
    metrics.attach({ collect: () => thread.flushMetrics() });
    tell({ type: 'document', path: APPS, url: URL_V1, components });
  });
  after(async () => {
    await thread.close();
    await answering.close();
  });
  beforeEach(() => (asked.length = 0));

  it('asks the main thread to read again what it answers from once half stale, once per read', async function () {
    const at = Date.now() - FRESH_MS * 0.75;
    readAt(at);
    for (let i = 0; i < 2; i++) expect((await post(SUITE_VALIDATION.path, reviewOf(suite('good'), 'AdmissionSuite'))).body.response.allowed).to.equal(true);
    expect(asked).to.deep.equal([]);
    // Sent before the answers, on another channel: given a moment to arrive.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(renewed.sort()).to.deep.equal([PATHS_KEY, 'apps/v1'].sort());
  });

  it('type-checks a suite from its copy of the schemas, refusing what the main thread refuses, and asks the main thread nothing', async function () {
    readAt(Date.now());
    const accepted = await post(SUITE_VALIDATION.path, reviewOf(suite('good'), 'AdmissionSuite'));
    expect(accepted.body.response.allowed).to.equal(true);
    const refused = await post(SUITE_VALIDATION.path, reviewOf(suite('typo', { validations: [{ expression: 'object.spec.replica <= 3' }] }), 'AdmissionSuite'));
    expect(refused.body.response.allowed).to.equal(false);
    expect(refused.body.response.status.message).to.include("undefined field 'replica'");
    const invalid = await post(SUITE_VALIDATION.path, reviewOf(suite('bad', { validations: [{ expression: 'object.spec.replicas <=' }] }), 'AdmissionSuite'));
    expect(invalid.body.response.allowed).to.equal(false);
    expect(asked).to.deep.equal([]);
  });

  it('leaves to the main thread a suite that introduces params (a SubjectAccessReview) and one whose schemas it does not hold fresh', async function () {
    readAt(Date.now());
    const withParams = await post(SUITE_VALIDATION.path, reviewOf(suite('params', { params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'limits', name: 'max' } }), 'AdmissionSuite'));
    expect(withParams.body.response.status.message).to.include('the main thread says no');
    expect(asked).to.deep.equal(['params']);

    asked.length = 0;
    readAt(Date.now() - FRESH_MS - 1_000);
    // Told in order, an older read does not replace a newer: the copy held stays fresh until it ages.
    expect((await post(SUITE_VALIDATION.path, reviewOf(suite('good'), 'AdmissionSuite'))).body.response.allowed).to.equal(true);
    expect(asked).to.deep.equal([]);
    tell({ type: 'resources-dropped' });
    const stale = await post(SUITE_VALIDATION.path, reviewOf(suite('typo', { validations: [{ expression: 'object.spec.replica <= 3' }] }), 'AdmissionSuite'));
    expect(stale.body.response.status.message).to.include("undefined field 'replica'");
    expect(asked).to.deep.equal(['kinds apps/v1', 'schema']);
  });

  it("validates AdmissionPolicies against the policies' limits, leaving a Mutating policy (its author's rights) to the main thread", async function () {
    readAt(Date.now());
    const good = await post(NAMESPACED.validationPath, reviewOf(policy({}), 'AdmissionPolicy'));
    expect(good.body.response.allowed).to.equal(true);
    const bad = await post(NAMESPACED.validationPath, reviewOf(policy({ validations: [{ expression: 'nope(' }] }), 'AdmissionPolicy'));
    expect(bad.body.response.allowed).to.equal(false);
    expect(asked).to.deep.equal([]);
    const mutating = await post(NAMESPACED.validationPath, reviewOf(policy({ type: 'Mutating', validations: undefined, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] }] }), 'AdmissionPolicy'));
    expect(mutating.body.response.status.message).to.include('the main thread says no');
    expect(asked).to.deep.equal(['mutation']);
  });

  it("counts the thread's answers in the operator's metrics, under the webhook's name", async function () {
    readAt(Date.now());
    const count = (text: string) => Number(new RegExp(`portcullis_admission_requests_total\\{[^}]*webhook="${SUITE_VALIDATION.webhook.replaceAll('.', '\\.')}"[^}]*decision="allowed"[^}]*\\} (\\d+)`).exec(text)?.[1] ?? 0);
    const before = count(await metrics.render());
    await post(SUITE_VALIDATION.path, reviewOf(suite('good'), 'AdmissionSuite'));
    await post(SUITE_VALIDATION.path, reviewOf(suite('good'), 'AdmissionSuite'));
    expect(count(await metrics.render()) - before).to.equal(2);
    expect(asked).to.deep.equal([]);
  });
});
