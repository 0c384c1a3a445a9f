/**
 * Large reviews are judged by the review workers (off the event loop), and answered exactly as the
 * same review would be when small: decision, message, uid and apiVersion, with the request's
 * namespace, the webhook's params and `authorizer` checks read on the main thread's behalf; and
 * bad large bodies get the same 4xx as bad small ones. As many are judged at once as there are
 * workers; what waits for them, and large bodies being read, are bounded: beyond, a review is
 * refused with 429 and Retry-After while the server keeps serving. (How much this protects other
 * requests is measured by `npm run bench:starvation`.)
 */
import { expect } from 'chai';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { SERVER_NAME, startTestEndpoint, type TestEndpoint } from '../support/endpoint.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { REVIEW_ERRORS } from '../../src/admission/errors.ts';
import { LARGE_BODY } from '../../src/admission/threads/offload.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';
import type { AuthorizationAttributes, Authorizer } from '../../src/api/authorization.ts';
import type { ClusterView } from '../../src/handlers/handler.ts';
import type { ParamsSource } from '../../src/registry/compile.ts';
import { fixtures } from '../fixtures/reviews.ts';

const deployments = [{ operations: ['CREATE' as const], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];
const suite: AdmissionSuite = {
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: 'guards', uid: 'u1', generation: 1 },
  spec: {
    webhooks: [
      {
        name: 'context',
        type: 'Validating',
        rules: deployments,
        params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'limits', name: 'replicas' },
        validations: [
          { expression: 'object.spec.replicas <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' replicas in team ' + namespaceObject.metadata.labels.team" },
          { expression: "authorizer.group('apps').resource('deployments').namespace('team-a').check('scale').allowed()", message: 'may not scale' },
        ],
      },
      {
        name: 'labels',
        type: 'Mutating',
        rules: deployments,
        mutations: [{ patch: [{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }] }],
      },
    ],
  },
};

const view: ClusterView = {
  namespace: (name) => (name === 'team-a' ? { metadata: { name, labels: { team: 'payments' } } } : undefined),
  limitRanges: () => [],
  list: () => [],
};
const params: ParamsSource = {
  watch: () => undefined,
  select: (ref) => ({ state: 'selected', objects: ref.name === 'replicas' ? [{ data: { max: '2' } }] : [] }),
};

/** The deployment review, padded with annotations to `bytes` of JSON. */
function review(bytes: number, replicas = 3) {
  const r = fixtures.deploymentCreate();
  const object = r.request!.object as { metadata: { annotations?: Record<string, string> }; spec: { replicas: number } };
  object.spec.replicas = replicas;
  if (bytes > 0) object.metadata.annotations = { padding: 'x'.repeat(bytes) };
  return r;
}

describe('admission: large reviews are judged by the review worker', function () {
  let endpoint: TestEndpoint;
  const checks: AuthorizationAttributes[] = [];
  /** Run (once) when the worker asks the main thread for an `authorizer` check: mid-review. */
  let duringCheck: (() => void) | undefined;

  before(async function () {
    const authorizer: Authorizer = {
      check: async (attributes) => {
        checks.push(attributes);
        const fault = duringCheck;
        duringCheck = undefined;
        fault?.();
        return { allowed: attributes.resource?.verb === 'scale', reason: '', evaluationError: '' };
      },
    };
    const registry = new SuiteRegistry({ view, params, authorizer });
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards');
  });
  after(() => endpoint.close());

  it('answers a large review as it answers a small one, with namespace, params and authorizer', async function () {
    const small = await endpoint.post('/admit/guards/context', JSON.stringify(review(0)));
    const largeReview = review(LARGE_BODY + 1000);
    checks.length = 0;
    const large = await endpoint.post('/admit/guards/context', JSON.stringify(largeReview));
    expect(small.status).to.equal(200);
    expect(large.status).to.equal(200);
    expect(large.body.response.status).to.deep.equal({ code: 422, reason: 'Invalid', message: 'at most 2 replicas in team payments' });
    expect(large.body).to.deep.equal(small.body);
    expect(large.body.response.uid).to.equal(largeReview.request!.uid);
    expect(checks.map((c) => c.resource?.verb)).to.deep.equal(['scale']);

    const allowed = await endpoint.post('/admit/guards/context', JSON.stringify(review(LARGE_BODY + 1000, 2)));
    expect(allowed.body.response.allowed).to.equal(true);
    const v1beta1 = await endpoint.post('/admit/guards/context', JSON.stringify({ ...review(LARGE_BODY + 1000, 2), apiVersion: 'admission.k8s.io/v1beta1' }));
    expect(v1beta1.body.apiVersion).to.equal('admission.k8s.io/v1beta1');
  });

  it('answers a large review whose worker stops mid-review by its failurePolicy, with its uid, and judges the next in a new worker', async function () {
    // Fault injection: the worker is stopped as a crash or an out-of-memory would stop it, while
    // its review waits on the main thread. The server still holds the body to answer it.
    const offload = (endpoint.answering as unknown as { offload: { pool: { judging?: unknown; worker: { terminate(): Promise<number> } }[] } }).offload;
    duringCheck = () => void offload.pool.find((slot) => slot.judging)!.worker.terminate();
    const body = review(LARGE_BODY + 1000, 1);
    const lost = await endpoint.post('/admit/guards/context', JSON.stringify(body));
    expect(lost.status).to.equal(200);
    expect(lost.body.response.uid).to.equal(body.request!.uid);
    expect(lost.body.response.allowed).to.equal(false);
    expect(lost.body.response.status.message).to.contain('the review worker stopped');
    const next = await endpoint.post('/admit/guards/context', JSON.stringify(review(LARGE_BODY + 1000, 1)));
    expect(next.body.response.allowed).to.equal(true);
  });

  it('patches a large object as it patches a small one', async function () {
    const large = await endpoint.post('/admit/guards/labels', JSON.stringify(review(LARGE_BODY + 1000)));
    expect(large.body.response.patchType).to.equal('JSONPatch');
    expect(JSON.parse(Buffer.from(large.body.response.patch, 'base64').toString())).to.deep.equal([{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }]);
  });

  it('refuses a large body that is not JSON, not a review, or for no webhook, and keeps serving', async function () {
    const padding = ' '.repeat(LARGE_BODY);
    const notJson = await endpoint.post('/admit/guards/context', `{"apiVersion": ${padding}`);
    expect(notJson.status).to.equal(400);
    expect(notJson.body.response.status.reason).to.equal(REVIEW_ERRORS.MALFORMED_JSON.code);
    const notReview = await endpoint.post('/admit/guards/context', JSON.stringify({ kind: 'Pod', padding }));
    expect(notReview.status).to.equal(400);
    expect(notReview.body.response.status.reason).to.equal(REVIEW_ERRORS.NOT_A_REVIEW.code);
    const unknown = await endpoint.post('/admit/guards/nothing', JSON.stringify(review(LARGE_BODY + 1000)));
    expect(unknown.status).to.equal(404);
    expect((await endpoint.post('/admit/guards/context', JSON.stringify(review(LARGE_BODY + 1000, 1)))).body.response.allowed).to.equal(true);
  });
});

describe('admission: large reviews are judged by a pool of review workers, and what waits for them is bounded', function () {
  const WORKERS = 2;
  const WAITING = 1;
  let endpoint: TestEndpoint;
  /** The `authorizer` checks asked and not answered yet: a review in a worker waits on its check until the test lets it go. */
  const held: (() => void)[] = [];
  let holding = true;

  before(async function () {
    const authorizer: Authorizer = {
      check: () =>
        new Promise((resolve) => {
          const allow = () => resolve({ allowed: true, reason: '', evaluationError: '' });
          if (holding) held.push(allow);
          else allow();
        }),
    };
    const registry = new SuiteRegistry({ view, params, authorizer });
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards', { reviewWorkers: WORKERS, largeReviewsWaiting: WAITING });
  });
  after(() => endpoint.close());
  afterEach(function () {
    holding = false;
    for (const allow of held.splice(0)) allow();
  });

  /** A POST as endpoint.post, with the answer's headers. */
  const post = (body: string, path = '/admit/guards/context') =>
    new Promise<{ status: number; retryAfter?: string; body: any }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: endpoint.port, path, method: 'POST', servername: SERVER_NAME, ca: endpoint.caPem, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const large = () => JSON.stringify(review(LARGE_BODY + 1000, 1));
  /** Waits until `count` checks are held, or `ms` have passed. */
  const checksHeld = async (count: number, ms: number) => {
    const deadline = Date.now() + ms;
    while (held.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return held.length;
  };

  it('judges as many large reviews at once as it has workers, refuses those beyond the waiting bound with 429, and keeps serving', async function () {
    // Generous: starting the workers takes long on a busy machine; every wait below is bounded.
    this.timeout(60_000);
    holding = true;
    // Two large reviews, each held in a worker by its `authorizer` check: judged at once, one per worker.
    const judged = [post(large()), post(large())];
    expect(await checksHeld(WORKERS, 15_000), 'large reviews judged at once').to.equal(WORKERS);

    // Two more: one waits for a worker (the bound is one), the other is refused at once.
    const more = [post(large()), post(large())];
    const refused = await Promise.race(more);
    expect(refused.status).to.equal(429);
    expect(refused.retryAfter).to.equal('1');
    expect(refused.body.response.status.reason).to.equal(REVIEW_ERRORS.BUSY.code);
    // Small reviews are answered meanwhile (by a webhook that asks no check), and no other large one was started.
    const small = await post(JSON.stringify(review(0, 1)), '/admit/guards/labels');
    expect(small.status).to.equal(200);
    expect(small.body.response.patchType).to.equal('JSONPatch');
    expect(held.length).to.equal(WORKERS);

    // Let them go: the two judged and the one that waited are answered.
    holding = false;
    for (const allow of held.splice(0)) allow();
    const answers = await Promise.all([...judged, ...more]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 200, 200, 429]);
    for (const answer of answers.filter((a) => a.status === 200)) expect(answer.body.response.allowed).to.equal(true);
    expect((await post(large())).body.response.allowed).to.equal(true);
  });

  it('refuses a large body it has no room to hold (read and dropped), and keeps serving', async function () {
    holding = false;
    // Large bodies that never finish, as many as may be read at once (workers plus waiting). Each asks
    // `100-continue`: the server's answer says it has the headers, and so has taken the body's place.
    const readers = await Promise.all(
      Array.from({ length: WORKERS + WAITING }, async () => {
        const socket = tls.connect({ socket: net.connect({ host: '127.0.0.1', port: endpoint.port }), servername: SERVER_NAME, ca: endpoint.caPem });
        socket.on('error', () => undefined);
        await new Promise((resolve) => socket.once('secureConnect', resolve));
        const continued = new Promise((resolve) => socket.once('data', resolve));
        socket.write(`POST /admit/guards/context HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${LARGE_BODY + 1000}\r\nexpect: 100-continue\r\n\r\n`);
        expect(String(await continued)).to.match(/^HTTP\/1\.1 100/);
        socket.write('{"apiVersion":');
        return socket;
      }),
    );
    const refused = await post(large());
    expect(refused.status).to.equal(429);
    expect(refused.retryAfter).to.equal('1');
    expect(refused.body.response.status.reason).to.equal(REVIEW_ERRORS.BUSY.code);
    expect((await post(JSON.stringify(review(0, 1)))).body.response.allowed).to.equal(true);

    // Their clients gone, their places are free again (once the server has seen them go).
    for (const socket of readers) socket.destroy();
    let answer = refused;
    for (const deadline = Date.now() + 10_000; answer.status !== 200 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 50));
      answer = await post(large());
    }
    expect(answer.status).to.equal(200);
    expect(answer.body.response.allowed).to.equal(true);
  });
});
