/**
 * What one client can hold of the admission endpoint: connections beyond the cap are refused
 * while open connections keep being answered, a half-open handshake and a slow body are cut at
 * their timeouts, only AEAD ciphers are offered, renegotiation is refused, and what a client
 * sends is echoed back and logged only in part.
 */
import { expect } from 'chai';
import net from 'node:net';
import tls from 'node:tls';
import https from 'node:https';
import { startTestEndpoint, SERVER_NAME, type TestEndpoint } from '../support/endpoint.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { REVIEW_ERRORS, ECHO_LIMIT } from '../../src/admission/errors.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { guardsSuite } from '../fixtures/suites.ts';

const suite = guardsSuite();

const LIMITS = { maxConnections: 8, handshakeTimeoutMs: 1500, requestTimeoutMs: 1500, headersTimeoutMs: 1500 };

/** Resolves when the server closes `socket` (or its connection fails), with how long that took. */
function closedWithin(socket: net.Socket): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => {
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Date.now() - started));
  });
}

describe('admission: the endpoint bounds what one client can hold', function () {
  let endpoint: TestEndpoint;
  const review = () => JSON.stringify(fixtures.deploymentCreate());

  beforeEach(async function () {
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards', LIMITS);
  });
  afterEach(() => endpoint.close());

  it('refuses connections beyond the cap, keeps answering on open ones, and drops half-open handshakes at the timeout', async function () {
    // An established keep-alive connection, as the API server holds them.
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const send = () =>
      new Promise<number>((resolve, reject) => {
        const req = https.request(
          { host: '127.0.0.1', port: endpoint.port, path: '/admit/guards/replicas', method: 'POST', servername: SERVER_NAME, ca: endpoint.caPem, agent, headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(review());
      });
    expect(await send()).to.equal(200);

    // Half-open sockets (TCP only, no ClientHello) up to and beyond the cap.
    const halfOpen = Array.from({ length: LIMITS.maxConnections + 4 }, () => net.connect(endpoint.port, '127.0.0.1'));
    const closes = halfOpen.map(closedWithin);
    await new Promise((r) => setTimeout(r, 300));
    const refusedAtOnce = await Promise.race([Promise.all(closes.slice(-4)), new Promise((r) => setTimeout(() => r('not closed'), 1000))]);
    expect(refusedAtOnce, 'the sockets beyond the cap were not closed').to.be.an('array');

    // The open connection is still answered while the cap is reached.
    expect(await send()).to.equal(200);

    // The half-open ones within the cap are dropped at the handshake timeout.
    const held = await Promise.all(closes.slice(0, LIMITS.maxConnections - 1));
    for (const ms of held) expect(ms).to.be.within(LIMITS.handshakeTimeoutMs - 200, LIMITS.handshakeTimeoutMs + 2000);
    agent.destroy();
    // Room again for new connections.
    expect((await endpoint.post('/admit/guards/replicas', review())).status).to.equal(200);
  });

  it('cuts a request whose body never finishes at the request timeout', async function () {
    const socket = tls.connect({ host: '127.0.0.1', port: endpoint.port, servername: SERVER_NAME, ca: endpoint.caPem });
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.write('POST /admit/guards/replicas HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"apiVersion":');
    const drip = setInterval(() => socket.write(' '), 200);
    const ms = await closedWithin(socket);
    clearInterval(drip);
    expect(ms).to.be.within(LIMITS.requestTimeoutMs - 200, LIMITS.requestTimeoutMs + 2000);
    expect(answer).to.match(/^HTTP\/1\.1 408/);
  });

  it('offers AEAD ciphers only and refuses renegotiation', async function () {
    const connect = (options: tls.ConnectionOptions) =>
      new Promise<tls.TLSSocket>((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port: endpoint.port, servername: SERVER_NAME, ca: endpoint.caPem, ...options }, () => resolve(socket));
        socket.on('error', reject);
      });
    const cbc = await connect({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:AES128-SHA' }).then(
      () => 'connected',
      (err: Error) => err.message,
    );
    expect(cbc).to.match(/handshake failure|no shared cipher/i);

    const gcm = await connect({ maxVersion: 'TLSv1.2' });
    expect(gcm.getCipher().name).to.match(/GCM|CHACHA20/);
    const renegotiated = await new Promise<string>((resolve) => {
      gcm.on('error', (err) => resolve(`error: ${err.message}`));
      gcm.on('close', () => resolve('closed'));
      const started = gcm.renegotiate({}, (err) => resolve(err ? `error: ${err.message}` : 'renegotiated'));
      if (!started) resolve('refused by the client');
    });
    expect(renegotiated).to.not.equal('renegotiated');
    gcm.destroy();
    expect((await endpoint.post('/admit/guards/replicas', review())).status).to.equal(200);
  });

  it('echoes at most a few hundred characters of what a client sent', async function () {
    const huge = 'v'.repeat(1024 * 1024);
    const reply = await endpoint.post('/admit/guards/replicas', JSON.stringify({ apiVersion: huge, kind: 'AdmissionReview', request: fixtures.deploymentCreate().request }));
    expect(reply.status).to.equal(400);
    expect(reply.body.response.status.reason ?? reply.body.response.status.message).to.be.a('string');
    const text = JSON.stringify(reply.body);
    expect(text.length).to.be.below(ECHO_LIMIT + 600);
    expect(text).to.contain(REVIEW_ERRORS.NOT_A_REVIEW.code);
  });
});
