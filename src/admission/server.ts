/**
 * admission: the HTTPS endpoint the API server calls: TLS (SNI from the certificate store),
 * limits, body reading (body.ts), and routing. /admit/<suite>/<webhook> goes to the registry's webhooks,
 * the suite-validation path to the operator's own; both through the one per-request chain
 * (chain.ts: decode, route, offload, decide, failurePolicy, encode). Transport failures are
 * answered here. It never evaluates rules itself and makes no API calls of its own (a webhook
 * whose rules use `authorizer` asks SubjectAccessReviews through the Authorizer it was compiled with).
 */
import { constants } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { CertificateStore } from '../certs/store.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import type { LogWriter } from '../log.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import { LARGE_BODY, LargeBody, ReviewOffload } from './threads/offload.ts';
import { AdmissionChain, type Reply, type Router } from './chain.ts';
import { readJsonBody } from './body.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { policyValidationWebhook, suiteValidationWebhook, type ParamsAccessCheck } from './suite-validation.ts';
import type { PolicyRegistry } from '../registry/policies.ts';
import { namespacedWebhook } from '../registry/namespaced.ts';
import type { SchemaSource } from '../registry/typecheck.ts';
import { encodeFailure, parseJson } from './review.ts';
import { HeldElsewhere } from '../handlers/handler.ts';

/** The API server sends objects up to its own 3 MiB limit, twice for an UPDATE. */
export const BODY_LIMIT = 7 * 1024 * 1024;

/**
 * Bounds on what one client can hold (measured: a half-open TLS socket costs about 60 KiB, so the
 * cap keeps sockets under 60 MiB). The API server's longest webhook timeout is 30 s, so no request
 * needs longer, and it sends its headers at once (its own ReadHeaderTimeout is 32 s).
 */
export interface ServingLimits {
  maxConnections: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  handshakeTimeoutMs: number;
}
export const SERVING_LIMITS: ServingLimits = {
  maxConnections: 1000,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  handshakeTimeoutMs: 10_000,
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

/** An answer as the server sends it. */
export interface Answered {
  status: number;
  json: string;
  /** Close the connection after it (the replica drains, or the body was not read to its end). */
  close: boolean;
}

/**
 * Where a server that is not the operator's only one (the admission thread's, threads/thread-worker.ts)
 * sends what it does not answer itself: the operator's own webhooks, large bodies, and requests
 * whose webhook reads what is held only there (HeldElsewhere: a handler's lookups, params of a
 * collection not sent here). The main thread's server answers them (answer()).
 */
export interface Forwarding {
  /** `body` as read: text, or the bytes of a large one (readJsonBody), which the sender gives up. */
  to(url: string, body: string | Uint8Array): Promise<Answered>;
}

/** The operator's own routes in a server that forwards them: known there (anything else is refused unread), answered by the other. */
const FORWARDED: Router = { find: () => undefined, offload: false };

export interface AdmissionServerOptions {
  registry: SuiteRegistry;
  /** The AdmissionPolicies, served at NAMESPACED.paths; none served without it. */
  policies?: PolicyRegistry;
  certificates: CertificateStore;
  /** Where refused requests are counted (the operator's Metrics). */
  metrics: { countRejected(code: string): void };
  log: LogWriter;
  /** What this server leaves to another (see Forwarding); without it, it answers every route itself. */
  forward?: Forwarding;
  /** Whether a suite's author may read the params it names; without it, suites are checked for what they say only. */
  paramsAccess?: ParamsAccessCheck;
  /** The OpenAPI schemas suites are type-checked against on apply; without it, they are not. */
  schemas?: SchemaSource;
  /** SERVING_LIMITS unless a test needs them shorter. */
  limits?: Partial<ServingLimits>;
  /** True once the replica is shutting down: every answer then closes its connection. */
  draining?: () => boolean;
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

/** A fixed route: one path, one webhook. */
interface Route {
  router: Router;
  suite: string;
  name: string;
}

const ADMIT_PREFIX = '/admit/';

/**
 * The endpoint on node:https itself. It was a fastify app; for a handful of POST routes that all
 * take JSON and answer JSON, fastify's routing, hooks and reply added about 4 us per review beyond
 * a bare Node server (bench/run.ts), a tenth of the whole hot path, and nothing it offered was used.
 */
export class AdmissionServer {
  /** The server on the first address listened on (the only one unless `localhost` resolves to several). */
  readonly server: https.Server;
  private readonly secondaries: https.Server[] = [];
  private readonly options: https.ServerOptions;
  private readonly maxConnections: number;
  private readonly chain: AdmissionChain;
  private readonly offload: ReviewOffload;
  private readonly routes = new Map<string, Route>();
  private readonly suites: Router;
  private readonly forward: Forwarding | undefined;
  private readonly metrics: { countRejected(code: string): void };
  private readonly log: LogWriter;
  private closing = false;

  constructor(options: AdmissionServerOptions) {
    const { registry, certificates, metrics, log } = options;
    const limits = { ...SERVING_LIMITS, ...options.limits };
    this.metrics = metrics;
    this.log = log;
    this.forward = options.forward;
    this.offload = new ReviewOffload(registry, log);
    const draining = options.draining ?? (() => false);
    // The server only routes: every request goes through the one chain (chain.ts).
    this.chain = new AdmissionChain({ offload: this.offload, log, draining: () => this.closing || draining() });
    this.suites = { find: (suite, webhook) => registry.webhook(suite, webhook), offload: true };
    this.addOperatorRoutes(options);
    this.options = {
      SNICallback: certificates.sniCallback,
      ...TLS_OPTIONS,
      handshakeTimeout: limits.handshakeTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Node looks for requests past their timeouts on this period (30 s by default, which would double ours).
      connectionsCheckingInterval: Math.min(1000, limits.requestTimeoutMs / 2),
    };
    this.maxConnections = limits.maxConnections;
    this.server = this.newServer();
  }

  /** The operator's own webhooks (suite validation, the AdmissionPolicies'); a server that forwards leaves them to the one it forwards to. */
  private addOperatorRoutes(options: AdmissionServerOptions): void {
    if (options.forward) {
      for (const path of [SUITE_VALIDATION.path, NAMESPACED.validationPath, NAMESPACED.paths.Mutating, NAMESPACED.paths.Validating]) this.routes.set(path, { router: FORWARDED, suite: '', name: '' });
      return;
    }
    const { registry, paramsAccess } = options;
    const validation = suiteValidationWebhook(registry, paramsAccess, options.schemas);
    // The operator's own webhook: a suite that cannot work, or names params its author may not read, is refused on apply.
    this.routes.set(SUITE_VALIDATION.path, { router: { find: () => validation, offload: false }, suite: validation.suite, name: validation.name });
    if (options.policies) {
      const policies = options.policies;
      const policyValidation = policyValidationWebhook(policies, paramsAccess, options.schemas);
      this.routes.set(NAMESPACED.validationPath, { router: { find: () => policyValidation, offload: false }, suite: '', name: policyValidation.name });
      // The namespaced policies' webhooks; a large body is decoded here, not in the review worker (which holds the suites only).
      for (const type of ['Mutating', 'Validating'] as const) {
        const webhook = namespacedWebhook(type, policies);
        this.routes.set(NAMESPACED.paths[type], { router: { find: () => webhook, offload: false }, suite: '', name: webhook.name });
      }
    }
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

  /** Stops accepting, closes idle connections, lets requests in flight be answered (each closing its connection), then stops the review worker. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      [this.server, ...this.secondaries.splice(0)].filter((server) => server.listening).map((server) => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        return closed;
      }),
    );
    await this.offload.close();
  }

  private newServer(): https.Server {
    const server = https.createServer(this.options, (request, response) => this.serve(request, response));
    server.maxConnections = this.maxConnections;
    return server;
  }

  private serve(request: IncomingMessage, response: ServerResponse): void {
    const reply: Reply = { send: (status, json, close) => send(response, status, json, close || this.closing) };
    const url = request.url ?? '';
    const route = request.method === 'POST' ? this.route(url) : undefined;
    if (!route) return this.fail(new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `${request.method} ${url}`), reply, false);
    readJsonBody(
      request,
      BODY_LIMIT,
      (body) => {
        if (this.forward && (route.router === FORWARDED || typeof body !== 'string')) return this.forwardTo(this.forward, url, body, reply);
        this.dispatch(route, body, reply, url);
      },
      // The rest of the body is unread: the connection cannot carry another request.
      (err) => this.fail(err, reply, true),
      LARGE_BODY,
    );
  }

  private forwardTo(forward: Forwarding, url: string, body: string | Uint8Array, reply: Reply): void {
    forward.to(url, body).then(
      ({ status, json, close }) => reply.send(status, json, close),
      (err: unknown) => this.fail(err, reply, false),
    );
  }

  /** The answer to a request another server read (see Forwarding), as this server would have sent it. */
  answer(url: string, body: string | Uint8Array): Promise<Answered> {
    return new Promise((resolve) => {
      const reply: Reply = { send: (status, json, close) => resolve({ status, json, close: close || this.closing }) };
      const route = this.route(url);
      if (!route) return this.fail(new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `POST ${url}`), reply, false);
      this.dispatch(route, body, reply, url);
    });
  }

  /** A body read whole (at `url`), through the chain: text, or a large one's bytes, left for the review worker to decode. */
  private dispatch(route: Route, read: string | Uint8Array, reply: Reply, url: string): void {
    try {
      if (read === '') throw new ReviewError(REVIEW_ERRORS.MALFORMED_JSON, 'the body is empty');
      const body = typeof read === 'string' ? parseJson(read) : new LargeBody(read);
      const answered = this.chain.handle(route.router, route.suite, route.name, body, reply);
      if (answered) answered.catch((err: unknown) => this.failed(err, url, read, reply));
    } catch (err) {
      this.failed(err, url, read, reply);
    }
  }

  /** A request the chain could not answer: one whose webhook reads what is held elsewhere goes there (Forwarding); anything else is a transport failure. */
  private failed(err: unknown, url: string, body: string | Uint8Array, reply: Reply): void {
    if (err instanceof HeldElsewhere && this.forward) this.forwardTo(this.forward, url, body, reply);
    else this.fail(err, reply, false);
  }

  /** The route of a request's URL; its query (the API server sends `?timeout=10s`) is not part of it. */
  private route(url: string): Route | undefined {
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path.startsWith(ADMIT_PREFIX)) {
      // Suite and webhook names are DNS labels: nothing in them is escaped.
      const slash = path.indexOf('/', ADMIT_PREFIX.length);
      if (slash === -1 || path.includes('/', slash + 1)) return undefined;
      return { router: this.suites, suite: path.slice(ADMIT_PREFIX.length, slash), name: path.slice(slash + 1) };
    }
    return this.routes.get(path);
  }

  /** A transport failure: answered as an AdmissionReview with its catalogue code, counted and logged. */
  private fail(error: unknown, reply: Reply, close: boolean): void {
    const reviewError = toReviewError(error);
    this.log.warn('rejected an admission request', { code: reviewError.kind.code, reason: reviewError.message });
    this.metrics.countRejected(reviewError.kind.code);
    reply.send(reviewError.kind.status, JSON.stringify(encodeFailure(reviewError)), close);
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
  response.writeHead(status, headers);
  response.end(json);
}

function toReviewError(error: unknown): ReviewError {
  if (error instanceof ReviewError) return error;
  return new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, (error as Error).message ?? String(error));
}
