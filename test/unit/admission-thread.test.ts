/**
 * The admission thread: the endpoint served from a worker thread, over real TLS, answering as the
 * main thread's server would. Rules that read the request's Namespace read the thread's copy,
 * kept current; webhooks with params, the operator's own routes and large bodies are answered by
 * the main thread; `authorizer` checks are asked of it; what the thread counted reaches the
 * operator's metrics; a new generation and a renewed certificate are acknowledged once served;
 * a thread that stops is started again with everything it served.
 */
import https from 'node:https';
import tls from 'node:tls';
import { expect } from 'chai';
import { AdmissionAnswering } from '../../src/admission/answering.ts';
import { AdmissionThread } from '../../src/admission/threads/thread.ts';
import { LARGE_BODY } from '../../src/admission/threads/offload.ts';
import { REVIEW_ERRORS } from '../../src/admission/errors.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import { CertificateStore } from '../../src/certs/store.ts';
import { createCA, issueLeaf, type IssuedCertificate } from '../../src/certs/x509.ts';
import { Metrics } from '../../src/health/metrics.ts';
import { logger } from '../../src/log.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';
import type { AuthorizationAttributes } from '../../src/api/authorization.ts';
import type { ClusterView } from '../../src/handlers/handler.ts';
import type { ParamsSource } from '../../src/registry/compile.ts';
import type { ParamsChange } from '../../src/apiserver/params-watches.ts';
import type { LookupChange } from '../../src/apiserver/lookups.ts';
import { fixtures } from '../fixtures/reviews.ts';

const SERVER_NAME = 'portcullis-guards.portcullis-system.svc';
const deployments = [{ operations: ['CREATE' as const], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];

function suiteAt(generation: number): AdmissionSuite {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'guards', uid: 'u1', generation },
    spec: {
      webhooks: [
        {
          name: 'team',
          type: 'Validating',
          rules: deployments,
          validations: [{ expression: "namespaceObject.metadata.labels.team == 'payments'", messageExpression: "'team ' + namespaceObject.metadata.labels.team + ' may not'" }],
        },
        {
          name: 'limit',
          type: 'Validating',
          rules: deployments,
          params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'limits', name: 'replicas' },
          validations: [{ expression: 'object.spec.replicas <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' replicas'" }],
        },
        {
          name: 'scale',
          type: 'Validating',
          rules: deployments,
          validations: [{ expression: "authorizer.group('apps').resource('deployments').namespace('team-a').check('scale').allowed()", message: 'may not scale' }],
        },
        {
          name: 'priority',
          type: 'Mutating',
          rules: [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          handler: { name: 'Priority' },
        },
        ...(generation > 1 ? [{ name: 'added', type: 'Validating' as const, rules: deployments, validations: [{ expression: 'false', message: 'generation 2 says no' }] }] : []),
      ],
    },
  };
}

function review(replicas = 3) {
  const r = fixtures.deploymentCreate();
  (r.request!.object as { spec: { replicas: number } }).spec.replicas = replicas;
  return r;
}

describe('admission: the endpoint served from a thread of its own', function () {
  let ca: IssuedCertificate;
  let certificates: CertificateStore;
  let registry: SuiteRegistry;
  let metrics: Metrics;
  let answering: AdmissionAnswering;
  let thread: AdmissionThread;
  const namespaces = [{ metadata: { name: 'team-a', labels: { team: 'payments' } } }];
  const checks: AuthorizationAttributes[] = [];
  /** The params collections the main thread has synced, as ObjectWatches tells them. */
  const paramsListeners: ((change: ParamsChange) => void)[] = [];
  const paramsCopies = { subscribe: (listener: (change: ParamsChange) => void) => (paramsListeners.push(listener), () => undefined) };
  const lookupListeners: ((change: LookupChange) => void)[] = [];
  const lookupCopies = { subscribe: (listener: (change: LookupChange) => void) => (lookupListeners.push(listener), () => undefined) };

  const post = (path: string, body: string) =>
    new Promise<{ status: number; body: any; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: thread.port, path, method: 'POST', servername: SERVER_NAME, ca: ca.certPem, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, headers: res.headers }));
      });
      req.on('error', reject);
      req.end(body);
    });

  /** The certificate a new TLS connection is served. */
  const servedCertificate = () =>
    new Promise<Buffer>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: thread.port!, servername: SERVER_NAME, ca: ca.certPem }, () => {
        resolve(socket.getPeerX509Certificate()!.raw);
        socket.destroy();
      });
      socket.on('error', reject);
    });

  const leaf = () => issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });

  before(async function () {
    ca = await createCA({ commonName: 'thread-ca', notAfter: new Date(Date.now() + 86_400_000) });
    const view: ClusterView = { namespace: (name) => namespaces.find((n) => n.metadata.name === name), limitRanges: () => [], list: () => [] };
    const params: ParamsSource = { watch: () => undefined, select: () => ({ state: 'selected', objects: [{ data: { max: '2' } }] }) };
    const authorizer = {
      check: async (attributes: AuthorizationAttributes) => {
        checks.push(attributes);
        return { allowed: attributes.resource?.verb === 'scale', reason: '', evaluationError: '' };
      },
    };
    metrics = new Metrics();
    registry = new SuiteRegistry({ view, params, authorizer, observers: metrics });
    registry.sync(suiteAt(1));
    certificates = new CertificateStore();
    const issued = await leaf();
    certificates.install('guards', issued.certPem, issued.keyPem);
    answering = new AdmissionAnswering({ registry, metrics, log: logger });
    thread = new AdmissionThread({ answering, registry, certificates, metrics, mirrors: { Namespace: { list: () => namespaces }, LimitRange: { list: () => [] } }, params: paramsCopies, lookups: lookupCopies, log: logger });
    await thread.listen({ port: 0, host: '127.0.0.1' });
    metrics.attach({ collect: () => thread.flushMetrics() });
  });
  after(async () => {
    await thread.close();
    await answering.close();
  });

  it('answers from the thread with the Namespace it was sent, and follows a change to it', async function () {
    const allowed = await post('/admit/guards/team', JSON.stringify(review()));
    expect(allowed.status).to.equal(200);
    expect(allowed.body.response.allowed).to.equal(true);
    expect(allowed.body.response.uid).to.equal(review().request!.uid);

    thread.mirror('Namespace', { metadata: { name: 'team-a', labels: { team: 'ads' } } }, false);
    const denied = await post('/admit/guards/team', JSON.stringify(review()));
    expect(denied.body.response.allowed).to.equal(false);
    expect(denied.body.response.status.message).to.equal('team ads may not');
    thread.mirror('Namespace', namespaces[0]!, false);
    expect((await post('/admit/guards/team', JSON.stringify(review()))).body.response.allowed).to.equal(true);
  });

  it('leaves a webhook whose params collection it was not sent to the main thread, which answers with them', async function () {
    const denied = await post('/admit/guards/limit', JSON.stringify(review(3)));
    expect(denied.status).to.equal(200);
    expect(denied.body.response.status.message).to.equal('at most 2 replicas');
    expect((await post('/admit/guards/limit', JSON.stringify(review(2)))).body.response.allowed).to.equal(true);
  });

  it('answers a webhook with params from its copy of the collection once sent, and follows its changes', async function () {
    const key = 'v1|ConfigMap|limits';
    const configMap = (max: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'replicas', namespace: 'limits' }, data: { max } });
    // The thread's copy differs from what the main thread's source says (2), to tell who answered.
    for (const listener of paramsListeners) listener({ type: 'synced', key, namespaced: true, objects: [configMap('4')] });
    expect((await post('/admit/guards/limit', JSON.stringify(review(3)))).body.response.allowed).to.equal(true);
    expect((await post('/admit/guards/limit', JSON.stringify(review(5)))).body.response.status.message).to.equal('at most 4 replicas');
    for (const listener of paramsListeners) listener({ type: 'object', key, object: configMap('3'), deleted: false });
    expect((await post('/admit/guards/limit', JSON.stringify(review(4)))).body.response.status.message).to.equal('at most 3 replicas');
    for (const listener of paramsListeners) listener({ type: 'object', key, object: configMap('3'), deleted: true });
    // No params object: the webhook's notFoundAction (Deny by default), as VAP answers.
    expect((await post('/admit/guards/limit', JSON.stringify(review(1)))).body.response.allowed).to.equal(false);
  });

  it("answers a handler's lookups from its copy of a small kind once sent, and leaves them to the main thread before", async function () {
    const pod = fixtures.podCreate();
    (pod.request!.object as { spec: Record<string, unknown> }).spec.priorityClassName = 'high';
    // The main thread's view (every test view lists nothing) knows no such class.
    const before = await post('/admit/guards/priority', JSON.stringify(pod));
    expect(before.body.response.status.message).to.include('no PriorityClass with name high was found');
    const high = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' }, value: 1000 };
    for (const listener of lookupListeners) listener({ type: 'synced', kind: 'PriorityClass', objects: [high] });
    const after = await post('/admit/guards/priority', JSON.stringify(pod));
    expect(after.body.response.allowed).to.equal(true);
    const patch = JSON.parse(Buffer.from(after.body.response.patch, 'base64').toString()) as { path: string; value: unknown }[];
    expect(patch.find((op) => op.path === '/spec/priority')?.value).to.equal(1000);
  });

  it("asks the main thread's authorizer for `authorizer` checks", async function () {
    checks.length = 0;
    const answer = await post('/admit/guards/scale', JSON.stringify(review()));
    expect(answer.body.response.allowed).to.equal(true);
    expect(checks.map((c) => c.resource?.verb)).to.deep.equal(['scale']);
  });

  it("leaves the operator's own routes and large bodies to the main thread, and refuses bad input with the same 4xx", async function () {
    const validation = await post(SUITE_VALIDATION.path, JSON.stringify({ ...review(), request: { ...review().request, kind: { group: 'admission.portcullis.dev', version: 'v1alpha1', kind: 'AdmissionSuite' }, object: suiteAt(1) } }));
    expect(validation.status).to.equal(200);
    expect(validation.body.response.allowed).to.equal(true);
    const large = review(3);
    (large.request!.object as { metadata: { annotations?: Record<string, string> } }).metadata.annotations = { padding: 'x'.repeat(LARGE_BODY) };
    const largeAnswer = await post('/admit/guards/team', JSON.stringify(large));
    expect(largeAnswer.body.response.allowed).to.equal(true);
    const malformed = await post('/admit/guards/team', '{"apiVersion":');
    expect(malformed.status).to.equal(400);
    expect(malformed.body.response.status.reason).to.equal(REVIEW_ERRORS.MALFORMED_JSON.code);
    const unknown = await post('/admit/guards/nothing', JSON.stringify(review()));
    expect(unknown.status).to.equal(404);
    const elsewhere = await post('/not/a/route', JSON.stringify(review()));
    expect(elsewhere.status).to.equal(404);
    expect(elsewhere.body.response.status.reason).to.equal(REVIEW_ERRORS.UNKNOWN_WEBHOOK.code);
    expect((await post('/admit/guards/team', JSON.stringify(review()))).body.response.allowed).to.equal(true);
  });

  it("counts the thread's answers and refusals in the operator's metrics", async function () {
    const before = await metrics.render();
    const count = (text: string, webhook: string) => Number(new RegExp(`portcullis_admission_requests_total\\{[^}]*webhook="${webhook}"[^}]*decision="allowed"[^}]*\\} (\\d+)`).exec(text)?.[1] ?? 0);
    const rejected = (text: string) => Number(new RegExp(`portcullis_admission_rejected_requests_total\\{code="${REVIEW_ERRORS.MALFORMED_JSON.code}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    await post('/admit/guards/team', JSON.stringify(review()));
    await post('/admit/guards/team', JSON.stringify(review()));
    await post('/admit/guards/team', '{');
    const after = await metrics.render();
    expect(count(after, 'team') - count(before, 'team')).to.equal(2);
    expect(rejected(after) - rejected(before)).to.equal(1);
  });

  it('acknowledges a new generation once it serves it', async function () {
    registry.sync(suiteAt(2));
    expect(await thread.whenServing('guards', 'u1', 2)).to.equal(true);
    const answer = await post('/admit/guards/added', JSON.stringify(review()));
    expect(answer.body.response.status.message).to.equal('generation 2 says no');
  });

  it('serves a renewed certificate on the next handshake, and says so once it does', async function () {
    const renewed = await leaf();
    certificates.install('guards', renewed.certPem, renewed.keyPem);
    for (let i = 0; thread.served('guards') !== renewed.certPem || i === 0; i++) {
      expect(i, 'the thread did not acknowledge the renewed certificate').to.be.below(100);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await servedCertificate()).equals(new (await import('node:crypto')).X509Certificate(renewed.certPem).raw)).to.equal(true);
  });

  it('closes each connection after its answer once draining', async function () {
    thread.drain();
    const answer = await post('/admit/guards/team', JSON.stringify(review()));
    expect(answer.body.response.allowed).to.equal(true);
    expect(answer.headers.connection).to.equal('close');
  });

  it('is started again, with every suite and certificate, when it stops', async function () {
    const port = thread.port;
    await (thread as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    for (let i = 0; !thread.listening; i++) {
      expect(i, 'the thread was not started again').to.be.below(300);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(thread.port).to.equal(port);
    expect(await thread.whenServing('guards', 'u1', 2)).to.equal(true);
    const answer = await post('/admit/guards/added', JSON.stringify(review()));
    expect(answer.body.response.status.message).to.equal('generation 2 says no');
  });

  it('does not take a suite made again under the same name as served until the thread has the new one', async function () {
    registry.remove('guards');
    const again = { ...suiteAt(1), metadata: { name: 'guards', uid: 'u2', generation: 1 } };
    const served = thread.whenServing('guards', 'u2', 1);
    const early = await Promise.race([served, new Promise((resolve) => setTimeout(() => resolve('waiting'), 100))]);
    expect(early).to.equal('waiting');
    registry.sync(again);
    expect(await served).to.equal(true);
    expect((await post('/admit/guards/added', JSON.stringify(review()))).status).to.equal(404);
  });
});
