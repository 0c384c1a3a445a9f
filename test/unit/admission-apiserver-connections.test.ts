/**
 * The API server is never the client refused (issue 50): with many suites, the connections from
 * the API server's address, more than any other address's share, are all let in and served, and
 * sockets held from that same address (a hostNetwork pod on its node) are what is closed to make
 * room, never a connection that has served requests; a new client from elsewhere is answered
 * throughout. The counts by kind are what the metrics report.
 */
import { expect } from 'chai';
import https from 'node:https';
import type { Socket } from 'node:net';
import { startTestEndpoint, type TestEndpoint } from '../support/endpoint.ts';
import { holdingSocket } from '../support/held-sockets.ts';
import { eventually } from '../support/wait.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { SERVING_LIMITS } from '../../src/admission/endpoint.ts';
import { CONNECTIONS_PER_WEBHOOK } from '../../src/admission/connection-limits.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { guardsSuite } from '../fixtures/suites.ts';

/** Webhooks served (the first suite's, then one per suite): the API server's allowance grows with them. */
const WEBHOOKS = 150;
/** The API server's connections: more than today's 250 per address. */
const API_SERVER_CONNECTIONS = 600;
/** Sockets held from the API server's own address, as issue 37's attack. */
const HELD = 1200;

/** A client from `localAddress` that keeps every connection it opens, as the API server's webhook clients do, and says which the server closed. */
function keepingClient(endpoint: TestEndpoint, localAddress: string) {
  const sockets: Socket[] = [];
  let closed = 0;
  const agent = new https.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: Infinity, timeout: 0 });
  const createConnection = agent.createConnection.bind(agent);
  agent.createConnection = ((options: object, callback: unknown) => {
    const socket = (createConnection as (o: object, c: unknown) => Socket)({ ...options, localAddress }, callback);
    sockets.push(socket);
    socket.once('close', () => closed++);
    return socket;
  }) as typeof agent.createConnection;
  const post = () => endpoint.post('/admit/guards/replicas', JSON.stringify(fixtures.deploymentCreate()), undefined, agent).then((reply) => reply.status);
  /** `n` requests at once: on a fresh client, each opens a connection of its own. */
  const burst = (n: number) => Promise.allSettled(Array.from({ length: n }, post));
  return { burst, opened: () => sockets.length, closed: () => closed, close: () => agent.destroy() };
}

const statuses = (settled: PromiseSettledResult<number>[]) => settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message));

describe('admission: the API server is never the client refused', function () {
  let endpoint: TestEndpoint;
  const held: ReturnType<typeof holdingSocket>[] = [];
  const clients: { close(): void }[] = [];

  before(async function () {
    const registry = new SuiteRegistry();
    registry.sync(guardsSuite());
    for (let i = 1; registry.webhookCount < WEBHOOKS; i++) {
      const suite = guardsSuite();
      suite.metadata.name = `guards-${i}`;
      suite.spec.webhooks = suite.spec.webhooks.slice(0, 1);
      registry.sync(suite);
    }
    expect(registry.webhookCount).to.equal(WEBHOOKS);
    // The limits' defaults, but timeouts far beyond the test: only the connection limits can let anyone in.
    endpoint = await startTestEndpoint(registry, 'guards', { handshakeTimeoutMs: 120_000, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 }, new Set(['127.0.0.1']));
  });
  after(async function () {
    for (const { socket } of held.splice(0)) socket.destroy();
    for (const client of clients.splice(0)) client.close();
    await endpoint.close();
  });

  it(`serves ${API_SERVER_CONNECTIONS} connections from the API server's address (the others' share is ${SERVING_LIMITS.maxConnectionsPerAddress}), and closes none of them for ${HELD} sockets held from there`, async function () {
    this.timeout(180_000);
    expect(API_SERVER_CONNECTIONS).to.be.above(SERVING_LIMITS.maxConnectionsPerAddress);
    expect(API_SERVER_CONNECTIONS).to.be.below(SERVING_LIMITS.maxConnectionsPerAddress + CONNECTIONS_PER_WEBHOOK * WEBHOOKS);
    const apiServer = keepingClient(endpoint, '127.0.0.1');
    clients.push(apiServer);
    const first = statuses(await apiServer.burst(API_SERVER_CONNECTIONS));
    expect(
      first.filter((s) => s !== 200),
      'answers other than 200',
    ).to.deep.equal([]);
    expect(apiServer.opened()).to.equal(API_SERVER_CONNECTIONS);
    expect(endpoint.server.connectionCounts()).to.include({ apiserver: API_SERVER_CONNECTIONS, other: 0 });

    // Sockets held from the API server's own address, far beyond its allowance: the oldest of them are closed to make room.
    const attack = Array.from({ length: HELD }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.1'));
    held.push(...attack);
    await Promise.all(attack.map((h) => h.opened));
    const allowance = SERVING_LIMITS.maxConnectionsPerAddress + CONNECTIONS_PER_WEBHOOK * WEBHOOKS;
    await eventually(async () => expect(attack.filter((h) => h.isClosed()).length).to.be.at.least(HELD - (allowance - API_SERVER_CONNECTIONS)), { what: 'the held sockets beyond the allowance closed' });
    expect(apiServer.closed(), "the API server's connections the server closed").to.equal(0);

    // Every connection the API server keeps is answered on again, and it opens new ones too.
    const again = statuses(await apiServer.burst(API_SERVER_CONNECTIONS));
    expect(
      again.filter((s) => s !== 200),
      'answers other than 200',
    ).to.deep.equal([]);
    expect(apiServer.closed()).to.equal(0);
    const more = keepingClient(endpoint, '127.0.0.1');
    clients.push(more);
    expect(statuses(await more.burst(50)).filter((s) => s !== 200)).to.deep.equal([]);
    expect(apiServer.closed()).to.equal(0);

    // A client from elsewhere is answered throughout, and its connection is the others'.
    const other = keepingClient(endpoint, '127.0.0.3');
    clients.push(other);
    expect(statuses(await other.burst(1))).to.deep.equal([200]);
    expect(endpoint.server.connectionCounts()).to.include({ other: 1 });
  });
});

describe('admission: a connection that has served requests is never closed to make room', function () {
  let endpoint: TestEndpoint;
  const held: ReturnType<typeof holdingSocket>[] = [];
  const clients: { close(): void }[] = [];

  before(async function () {
    const registry = new SuiteRegistry();
    registry.sync(guardsSuite());
    // No API server address: every connection is the others', under a cap of 5.
    endpoint = await startTestEndpoint(registry, 'guards', { maxConnections: 5, maxConnectionsPerAddress: 5, handshakeTimeoutMs: 60_000, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
  });
  after(async function () {
    for (const { socket } of held.splice(0)) socket.destroy();
    for (const client of clients.splice(0)) client.close();
    await endpoint.close();
  });

  it('refuses newcomers at the cap rather than close a busy client’s connections, and sheds only sockets that served nothing', async function () {
    const busy = keepingClient(endpoint, '127.0.0.2');
    clients.push(busy);
    expect(statuses(await busy.burst(3))).to.deep.equal([200, 200, 200]);
    // Two sockets from elsewhere that serve nothing fill the cap.
    const idle = Array.from({ length: 2 }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.3'));
    held.push(...idle);
    expect(await Promise.all(idle.map((h) => h.opened))).to.deep.equal(['held', 'held']);
    // Newcomers from a third address: the busy client holds the most, but only an idle socket may make room (from an
    // address holding more than the newcomer's would); then none may, and the next newcomer is refused.
    const newcomers = Array.from({ length: 2 }, () => holdingSocket(endpoint.port, endpoint.caPem, '127.0.0.4'));
    held.push(...newcomers);
    expect((await Promise.all(newcomers.map((h) => h.opened))).sort()).to.deep.equal(['held', 'refused']);
    // The busy client's three connections were never closed (an idle socket was), and answer again.
    expect(busy.closed(), "the busy client's connections closed").to.equal(0);
    await Promise.race(idle.map((h) => h.closed));
    expect(statuses(await busy.burst(3))).to.deep.equal([200, 200, 200]);
    expect(busy.opened()).to.equal(3);
  });
});
