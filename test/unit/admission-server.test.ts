/**
 * The admission endpoint over real, verified TLS: routing by /admit/<suite>/<webhook>, the
 * response shape the API server expects, and bad input answered with a 4xx and a reason while
 * the server keeps serving.
 */
import { expect } from 'chai';
import { SERVER_NAME, startTestEndpoint, type TestEndpoint } from '../support/endpoint.ts';
import { BODY_LIMIT } from '../../src/admission/endpoint.ts';
import https from 'node:https';
import { REVIEW_ERRORS } from '../../src/admission/errors.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { guardsSuite } from '../fixtures/suites.ts';

const suite = guardsSuite();

describe('admission: the HTTPS endpoint', function () {
  let endpoint: TestEndpoint;
  const post = (path: string, body: string, contentType?: string) => endpoint.post(path, body, contentType);

  before(async function () {
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards');
  });

  after(() => endpoint.close());

  it('denies with the reason code and echoes the request uid and apiVersion', async function () {
    const review = fixtures.deploymentCreate();
    const reply = await post('/admit/guards/replicas', JSON.stringify(review));
    expect(reply.status).to.equal(200);
    expect(reply.body).to.deep.equal({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: review.request!.uid, allowed: false, status: { code: 422, reason: 'Invalid', message: 'at most 2 replicas' } },
    });
  });

  it('answers a v1beta1 review in v1beta1', async function () {
    const review = { ...fixtures.deploymentCreate(), apiVersion: 'admission.k8s.io/v1beta1' };
    const reply = await post('/admit/guards/replicas', JSON.stringify(review));
    expect(reply.body.apiVersion).to.equal('admission.k8s.io/v1beta1');
    expect(reply.body.response.uid).to.equal(review.request!.uid);
  });

  it('answers a mutation with a base64 JSONPatch', async function () {
    const reply = await post('/admit/guards/labels', JSON.stringify(fixtures.deploymentCreate()));
    expect(reply.body.response).to.include({ allowed: true, patchType: 'JSONPatch' });
    expect(JSON.parse(Buffer.from(reply.body.response.patch, 'base64').toString())).to.deep.equal([{ op: 'add', path: '/metadata/labels/checked', value: 'yes' }]);
  });

  const badInputs: [string, string, string, string, number][] = [
    ['malformed JSON', '/admit/guards/replicas', '{"apiVersion": ', 'application/json', 400],
    ['an empty body', '/admit/guards/replicas', '', 'application/json', 400],
    ['a JSON array', '/admit/guards/replicas', '[]', 'application/json', 400],
    ['a review without a request', '/admit/guards/replicas', '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', 'application/json', 400],
    ['an unknown review version', '/admit/guards/replicas', JSON.stringify({ ...fixtures.deploymentCreate(), apiVersion: 'admission.k8s.io/v2' }), 'application/json', 400],
    ['the wrong content type', '/admit/guards/replicas', 'hello', 'text/plain', 415],
    ['an unknown webhook', '/admit/guards/nope', JSON.stringify(fixtures.deploymentCreate()), 'application/json', 404],
    ['an unknown path', '/elsewhere', JSON.stringify(fixtures.deploymentCreate()), 'application/json', 404],
  ];
  for (const [what, path, body, type, status] of badInputs) {
    it(`answers ${what} with ${status} and a reason, and keeps serving`, async function () {
      const reply = await post(path, body, type);
      expect(reply.status).to.equal(status);
      expect(reply.body.kind).to.equal('AdmissionReview');
      expect(reply.body.response.allowed).to.equal(false);
      expect(reply.body.response.status.code).to.equal(status);
      expect(reply.body.response.status.message).to.be.a('string').and.not.equal('');
      const ok = await post('/admit/guards/replicas', JSON.stringify({ ...fixtures.deploymentCreate(), request: { ...fixtures.deploymentCreate().request, object: { spec: { replicas: 1 } } } }));
      expect(ok.body.response.allowed).to.equal(true);
    });
  }

  it('routes by path alone: the query the API server adds (?timeout=10s) is not part of the route', async function () {
    const reply = await post('/admit/guards/replicas?timeout=10s', JSON.stringify(fixtures.deploymentCreate()));
    expect(reply.status).to.equal(200);
    expect(reply.body.response.status.message).to.equal('at most 2 replicas');
  });

  it('answers a GET with 404 and a reason', async function () {
    const reply = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port: endpoint.port, path: '/admit/guards/replicas', servername: SERVER_NAME, ca: endpoint.caPem }, (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        })
        .on('error', reject);
    });
    expect(reply.status).to.equal(404);
    expect(reply.body.response.status.reason).to.equal(REVIEW_ERRORS.UNKNOWN_WEBHOOK.code);
  });

  it('refuses a body declared larger than the limit with 413 before reading it, and keeps serving', async function () {
    const reply = await new Promise<{ status: number; connection?: string; body: any }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port: endpoint.port, path: '/admit/guards/replicas', method: 'POST', servername: SERVER_NAME, ca: endpoint.caPem, headers: { 'content-type': 'application/json', 'content-length': BODY_LIMIT + 1 } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.flushHeaders(); // and no body: the answer must not wait for one
    });
    expect(reply.status).to.equal(413);
    expect(reply.connection, 'the unread body cannot be followed by another request').to.equal('close');
    expect(reply.body.response.status.reason).to.equal(REVIEW_ERRORS.BODY_TOO_LARGE.code);
    expect((await post('/admit/guards/replicas', JSON.stringify(fixtures.deploymentCreate()))).status).to.equal(200);
  });

  it('names the catalogue code of a transport error', async function () {
    const reply = await post('/admit/guards/replicas', '{');
    expect(reply.body.response.status.reason).to.equal(REVIEW_ERRORS.MALFORMED_JSON.code);
  });

  it('refuses a TLS handshake for a server name it has no certificate for', async function () {
    const outcome = await new Promise<string>((resolve) => {
      const req = https.request({ host: '127.0.0.1', port: endpoint.port, path: '/admit/guards/replicas', method: 'POST', servername: 'other.example.svc', ca: endpoint.caPem }, () => resolve('answered'));
      req.on('error', (err) => resolve(`refused: ${err.message}`));
      req.end('{}');
    });
    expect(outcome).to.match(/^refused/);
  });
});
