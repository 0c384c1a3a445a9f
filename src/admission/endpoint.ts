/**
 * admission: the HTTPS endpoint the API server calls, transport only: TLS (SNI from the certificate
 * store), connection limits (connection-limits.ts), the body read (body.ts), the route looked up and the
 * body handed to what answers (answering.ts' Answering), failures of the transport answered here.
 */
import { constants } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { CertificateStore } from '../certs/store.ts';
import type { LogWriter } from '../log.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import type { Reply } from './chain.ts';
import { readJsonBody, type LargeBodies } from './body.ts';
import { ANSWERING_LIMITS, type Answering, type AnsweringLimits } from './answering.ts';
import { sendFailure, type Rejections } from './review-codec.ts';
import { ConnectionLimits, type ConnectionCounts, type ConnectionKind } from './connection-limits.ts';

/** The API server sends objects up to its own 3 MiB limit, twice for an UPDATE. */
export const BODY_LIMIT = 7 * 1024 * 1024;

/**
 * Bounds on what one client can hold (why: docs/adr/0021-connection-caps.md). Connections are counted by source address and kind
 * (connection-limits.ts): the API server's addresses hold an allowance that grows with the suites
 * served; any other address at most maxConnectionsPerAddress, and the others together
 * maxConnections, where a newcomer takes the place of a connection that served no request of the
 * address holding the most, so sockets from one or a few addresses cannot keep the API server out. A socket that does nothing lives until its handshake timeout,
 * then its headers timeout (counted from the handshake's end, and for each later request from its
 * first byte): the API server completes its handshake and sends its headers at once (its own
 * ReadHeaderTimeout is 32 s, a bound, not a need), so a few seconds are ample. The API server's
 * longest webhook timeout is 30 s, so no request needs longer. The large reviews' (AnsweringLimits)
 * are answering.ts', set with these.
 */
export interface ServingLimits extends AnsweringLimits {
  /** Connections from addresses other than the API server's, in all. */
  maxConnections: number;
  /** Connections from one address other than the API server's (the API server's hold this and more per suite). */
  maxConnectionsPerAddress: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  handshakeTimeoutMs: number;
}
export const SERVING_LIMITS: ServingLimits = {
  maxConnections: 1000,
  // The API server keeps 25 idle connections to a webhook (client-go's idleConnsPerHost) and opens more in bursts;
  // its own addresses hold this and more per suite (connection-limits.ts).
  maxConnectionsPerAddress: 250,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 3_000,
  handshakeTimeoutMs: 5_000,
  ...ANSWERING_LIMITS,
};

/**
 * TLS 1.2 with AEAD suites only (no CBC), TLS 1.3's own suites, and no renegotiation (which a
 * client could use to make the server repeat handshakes).
 */
const TLS_OPTIONS = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
  secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
} as const;

export interface EndpointOptions {
  /** What answers the requests read here. */
  answering: Answering;
  certificates: CertificateStore;
  /** Where refused requests and the connections are counted (the operator's Metrics). */
  metrics: { countRejected(code: string): void; connections?(counts: ConnectionCounts): void; connectionsNear?(kind: ConnectionKind, cause: string): void };
  /**
   * The API server's source addresses (the `kubernetes` EndpointSlices; loopback in local mode),
   * normalized (no `::ffff:`): their connections are sized by the webhooks served, never refused for
   * being many (connection-limits.ts). A Set kept current by its owner does; none without it.
   */
  apiServers?: { has(address: string): boolean; readonly size: number };
  log: LogWriter;
  /** SERVING_LIMITS' transport limits but those set here (the operator's flags; tests' shorter ones); an undefined one keeps its default. */
  limits?: Partial<ServingLimits>;
}

export interface ListenOptions {
  port: number;
  host: string;
  /** Replicas on one host share the port (Node 24). */
  reusePort?: boolean;
}

/**
 * Longer than any client's idle wait would make the server the side that closes idle connections
 * (so a client could send on a connection as it closes); Go's http.Transport, the API server's
 * webhook client, keeps idle connections 90 s. Fastify's default, kept from when this server ran on it.
 */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** The content type of every answer. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The endpoint on node:https itself, no web framework. Why: docs/adr/0006-admission-endpoint-on-node-https.md
 */
export class AdmissionEndpoint {
  /** The server on the first address listened on (the only one unless `localhost` resolves to several). */
  readonly server: https.Server;
  private readonly secondaries: https.Server[] = [];
  private readonly options: https.ServerOptions;
  private readonly connections: ConnectionLimits;
  /** Large bodies being read, at most as many as the answering may judge and hold waiting. */
  private readonly largeBodies: LargeBodies;
  private readonly largeFrom: number;
  private readonly answering: Answering;
  private readonly rejections: Rejections;
  private closing = false;

  constructor(options: EndpointOptions) {
    const { answering, certificates, metrics, log } = options;
    const limits = { ...SERVING_LIMITS };
    for (const [key, value] of Object.entries(options.limits ?? {})) if (value !== undefined) Object.assign(limits, { [key]: value });
    this.answering = answering;
    this.rejections = { log, countRejected: (code) => metrics.countRejected(code) };
    const { from, atOnce } = answering.largeBodies;
    this.largeFrom = from;
    let reading = 0;
    this.largeBodies = {
      hold: () => {
        if (reading >= atOnce) return false;
        reading++;
        return true;
      },
      release: () => void reading--,
    };
    this.options = {
      SNICallback: certificates.sniCallback,
      ...TLS_OPTIONS,
      handshakeTimeout: limits.handshakeTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Node looks for requests past their timeouts on this period (30 s by default, which would double ours).
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs / 2, limits.requestTimeoutMs / 2),
    };
    const apiServers = options.apiServers ?? new Set<string>();
    this.connections = new ConnectionLimits(
      limits,
      { webhooks: () => answering.webhookCount, isApiServer: (address) => apiServers.has(address), apiServerAddresses: () => apiServers.size },
      log,
      metrics.connections?.bind(metrics),
      metrics.connectionsNear?.bind(metrics),
    );
    this.server = this.newServer();
  }

  /**
   * Listens on `host`; for `localhost`, on every address it resolves to (127.0.0.1 and ::1 where
   * both are there), since a client resolving it may try either first.
   */
  async listen(options: ListenOptions): Promise<void> {
    const addresses = options.host === 'localhost' ? (await lookup('localhost', { all: true })).map((a) => a.address) : [options.host];
    await listenOn(this.server, { ...options, host: addresses[0]! });
    const port = (this.server.address() as AddressInfo).port;
    for (const host of addresses.slice(1)) {
      const secondary = this.newServer();
      try {
        await listenOn(secondary, { ...options, host, port });
        this.secondaries.push(secondary);
      } catch (err) {
        // An address family the host has turned off (no IPv6) is not an error.
        if (!['EADDRNOTAVAIL', 'EAFNOSUPPORT'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      }
    }
  }

  /** The connections held now, by kind, and what the limits allow each kind. */
  connectionCounts(): ConnectionCounts {
    return this.connections.counts();
  }

  /** Stops accepting, closes idle connections, lets requests in flight be answered (each closing its connection); what answers is closed by its owner after. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      [this.server, ...this.secondaries.splice(0)]
        .filter((server) => server.listening)
        .map((server) => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeIdleConnections();
          return closed;
        }),
    );
    this.connections.flush();
  }

  private newServer(): https.Server {
    const server = https.createServer(this.options, (request, response) => this.serve(request, response));
    // Before the TLS server's own listener, which starts the handshake (the net.Server's maxConnections would refuse by count alone).
    server.prependListener('connection', this.connections.admit);
    server.on('secureConnection', this.connections.secured);
    return server;
  }

  private serve(request: IncomingMessage, response: ServerResponse): void {
    const reply: Reply = {
      send: (status, json, close) => {
        send(response, status, json, close || this.closing);
        // Answered: its connection has served (never closed to make room).
        this.connections.served(request.socket);
      },
    };
    const url = request.url ?? '';
    const route = request.method === 'POST' ? this.answering.route(url) : undefined;
    if (!route) return sendFailure(new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `${request.method} ${url}`), reply, false, this.rejections);
    readJsonBody(
      request,
      BODY_LIMIT,
      (body) => this.answering.answer(route, url, body, reply),
      // The rest of the body is unread: the connection cannot carry another request; but for BUSY,
      // refused once the body was read (and dropped) to its end.
      (err) => sendFailure(err, reply, err.kind !== REVIEW_ERRORS.BUSY, this.rejections),
      this.largeFrom,
      this.largeBodies,
    );
  }
}

function listenOn(server: https.Server, options: ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function send(response: ServerResponse, status: number, json: string, close: boolean): void {
  if (response.headersSent) return;
  const headers = ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(json))];
  if (close) headers.push('connection', 'close');
  // BUSY: client-go's REST client (the API server's webhook client) waits this long and sends again, within the webhook's timeout.
  if (status === 429) headers.push('retry-after', '1');
  response.writeHead(status, headers);
  response.end(json);
}
