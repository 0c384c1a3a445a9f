/**
 * What one client can hold of the admission endpoint: connections beyond the cap are refused
 * while open connections keep being answered, sockets from one address can neither hold the cap
 * nor more than their address's share of it, a half-open handshake, headers that do not come and
 * a slow body are cut at their timeouts, only AEAD ciphers are offered, renegotiation is refused,
 * and what a client sends is echoed back and logged only in part.
 */
import { expect } from 'chai';
import net from 'node:net';
import tls from 'node:tls';
import https from 'node:https';
import { Writable } from 'node:stream';
import winston from 'winston';
import { startTestEndpoint, SERVER_NAME, type TestEndpoint } from '../support/endpoint.ts';
import { holdingSocket, settledWithin } from '../support/held-sockets.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { REVIEW_ERRORS, ECHO_LIMIT } from '../../src/admission/errors.ts';
import { SERVING_LIMITS } from '../../src/admission/endpoint.ts';
import { logger } from '../../src/log.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';
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
    const send = () => endpoint.post('/admit/guards/replicas', review(), undefined, agent).then((reply) => reply.status);
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

describe('admission: sockets from one address cannot keep another out', function () {
  let endpoint: TestEndpoint;
  const review = () => JSON.stringify(fixtures.deploymentCreate());
  const sockets: ReturnType<typeof holdingSocket>[] = [];
  // Timeouts far beyond the test: only the connection limits can let anyone in.
  const patient = { handshakeTimeoutMs: 60_000, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 };

  afterEach(async function () {
    for (const { socket } of sockets.splice(0)) socket.destroy();
    await endpoint.close();
  });

  it('answers a client from another address while one address holds sockets up to the whole cap', async function () {
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards', { ...patient, maxConnections: 8, maxConnectionsPerAddress: 8 });
    const held = Array.from({ length: 8 }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.2'));
    sockets.push(...held);
    expect(await Promise.all(held.map((h) => h.opened))).to.deep.equal(Array(8).fill('held'));

    // The cap is reached, every connection from 127.0.0.2: a client from 127.0.0.1 is answered (its connection takes the place of one of them).
    const answered = await endpoint.post('/admit/guards/replicas', review());
    expect(answered.status).to.equal(200);
    expect(answered.body.response.uid).to.equal(fixtures.deploymentCreate().request!.uid);
    expect(
      await settledWithin(
        held.map((h) => h.closed),
        1,
        5000,
      ),
    ).to.equal(1);
  });

  it("holds at most an address's share of connections, and makes room at the cap from the address holding the most", async function () {
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards', { ...patient, maxConnections: 8, maxConnectionsPerAddress: 6 });
    // Eight from 127.0.0.2: six are let in, two closed at once.
    const greedy = Array.from({ length: 8 }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.2'));
    sockets.push(...greedy);
    const outcomes = await Promise.all(greedy.map((h) => h.opened));
    expect(outcomes.filter((o) => o === 'held')).to.have.length(6);
    // Two from 127.0.0.3: the cap of 8 is reached.
    const modest = Array.from({ length: 2 }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.3'));
    sockets.push(...modest);
    expect(await Promise.all(modest.map((h) => h.opened))).to.deep.equal(['held', 'held']);

    // A client from 127.0.0.1 is answered; the room is made from 127.0.0.2 (six), not 127.0.0.3 (two).
    expect((await endpoint.post('/admit/guards/replicas', review())).status).to.equal(200);
    const greedyHeld = greedy.filter((_, i) => outcomes[i] === 'held');
    expect(
      await settledWithin(
        greedyHeld.map((h) => h.closed),
        1,
        5000,
      ),
    ).to.equal(1);
    expect(modest.map((h) => h.isClosed())).to.deep.equal([false, false]);
  });

  it('gives an address its share back as its connections close, whoever closes them', async function () {
    this.timeout(40_000);
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards', { maxConnections: 8, maxConnectionsPerAddress: 2, handshakeTimeoutMs: 1000, headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
    const open = (n: number) => {
      const opened = Array.from({ length: n }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.2'));
      sockets.push(...opened);
      return opened;
    };
    const first = open(3);
    expect((await Promise.all(first.map((h) => h.opened))).sort()).to.deep.equal(['held', 'held', 'refused']);
    // The server closes the two at its headers timeout: their places are free again.
    expect(
      await settledWithin(
        first.map((h) => h.closed),
        3,
        10_000,
      ),
    ).to.equal(3);
    const second = open(2);
    expect(await Promise.all(second.map((h) => h.opened))).to.deep.equal(['held', 'held']);
    // The client closes one: its place is free again.
    second[0]!.socket.destroy();
    await second[0]!.closed;
    let third = open(1)[0]!;
    for (const deadline = Date.now() + 5000; (await third.opened) === 'refused' && Date.now() < deadline; third = open(1)[0]!) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await third.opened).to.equal('held');
  });

  it('closes a connection whose headers have not all come within a few seconds, by default', async function () {
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards');
    const slow = holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.2');
    sockets.push(slow);
    expect(await slow.opened).to.equal('held');
    const started = Date.now();
    // The API server sends its headers at once; these never finish. Closed at the headers timeout (checked each second), well before 10 s.
    expect(await settledWithin([slow.closed], 1, 9000)).to.equal(1);
    expect(Date.now() - started).to.be.below(SERVING_LIMITS.headersTimeoutMs + 3000);
  });
});

/** Every line the logger writes from now on, counted in bytes, until `stop()`; at `info` meanwhile (the tests may run at `error`). */
function captureLog() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  const transport = new winston.transports.Stream({ stream });
  const level = logger.level;
  logger.level = 'info';
  logger.add(transport);
  return {
    /** What was written before this call (a marker line is logged and waited for: lines are written in order). */
    async written(): Promise<string> {
      const marker = `marker-${Math.random()}`;
      logger.info(marker);
      const deadline = Date.now() + 10_000;
      while (!text.includes(marker) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      return text.slice(0, text.indexOf(marker)).replace(/\{[^\n]*$/, '');
    },
    stop() {
      logger.remove(transport);
      logger.level = level;
    },
  };
}

describe('admission: what a request brings is written to the log only in part', function () {
  let endpoint: TestEndpoint;
  const MiB = 1024 * 1024;
  const pods = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
  const quoting: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'guards', uid: 'u1', generation: 1 },
    spec: {
      webhooks: [
        ...guardsSuite().spec.webhooks,
        // The in-tree plugin's denial quotes the Pod's name.
        { name: 'anti-affinity', type: 'Validating', rules: pods, handler: { name: 'LimitPodHardAntiAffinityTopology' } },
      ],
    },
  };

  before(async function () {
    const registry = new SuiteRegistry();
    registry.sync(quoting);
    endpoint = await startTestEndpoint(registry, 'guards');
  });
  after(() => endpoint.close());

  it('adds at most a few hundred bytes to the log for a 1 MiB uid, and does not echo it', async function () {
    const review = fixtures.deploymentCreate();
    review.request!.uid = 'u'.repeat(MiB);
    const log = captureLog();
    try {
      const reply = await endpoint.post('/admit/guards/replicas', JSON.stringify(review));
      const written = await log.written();
      expect(written.length, written.slice(0, 2000)).to.be.below(1000);
      expect(written).to.contain('request.uid');
      expect(reply.status).to.equal(400);
      expect(reply.body.response.status.reason).to.equal(REVIEW_ERRORS.NOT_A_REVIEW.code);
      expect(JSON.stringify(reply.body).length).to.be.below(ECHO_LIMIT + 600);
    } finally {
      log.stop();
    }
    // A review with the API server's uid (a UUID) is answered as ever.
    expect((await endpoint.post('/admit/guards/replicas', JSON.stringify(fixtures.deploymentCreate()))).body.response.allowed).to.equal(false);
  });

  it('adds at most a few hundred bytes to the log for a denial that quotes a 1 MiB name', async function () {
    const review = fixtures.podCreate();
    const pod = review.request!.object as { metadata: { name: string }; spec: Record<string, unknown> };
    pod.metadata.name = 'n'.repeat(MiB);
    pod.spec.affinity = { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', labelSelector: {} }] } };
    const log = captureLog();
    try {
      const reply = await endpoint.post('/admit/guards/anti-affinity', JSON.stringify(review));
      expect(reply.body.response.allowed).to.equal(false);
      const written = await log.written();
      expect(written).to.contain('"decision":"denied"');
      expect(written.length, written.slice(0, 2000)).to.be.below(1000);
    } finally {
      log.stop();
    }
  });
});
