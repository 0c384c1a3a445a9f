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
import { LARGE_BODY, LargeBody, REVIEW_WORKERS, ReviewOffload } from './threads/offload.ts';
import { AdmissionChain, type Reply, type Router } from './chain.ts';
import { readJsonBody, type LargeBodies } from './body.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { EXCEPTIONS } from '../api/exceptions.ts';
import { exceptionValidationWebhook, policyValidationWebhook, suiteValidationWebhook, type ParamsAccessCheck, type TypeChecking } from './suite-validation.ts';
import type { PolicyRegistry } from '../registry/policies.ts';
import { namespacedWebhook } from '../registry/namespaced.ts';
import { TenantPool, type TenantPoolOptions } from './threads/tenants.ts';
import { NO_OBSERVER, type WebhookObserver } from '../registry/compile.ts';
import type { AdmissionRequest } from '../api/admission-review.ts';
import { encodeFailure, parseJson } from './review-codec.ts';
import { HeldElsewhere } from '../handlers/handler.ts';
import { errorMessage } from '../error-message.ts';
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
 * longest webhook timeout is 30 s, so no request needs longer.
 */
export interface ServingLimits {
  /** Connections from addresses other than the API server's, in all. */
  maxConnections: number;
  /** Connections from one address other than the API server's (the API server's hold this and more per suite). */
  maxConnectionsPerAddress: number;
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  handshakeTimeoutMs: number;
  /** Review workers judging large reviews at once (threads/offload.ts): by default one per CPU, at most 2 (REVIEW_WORKERS). */
  reviewWorkers: number;
  /** Large reviews that may wait for a worker beyond those judged (twice reviewWorkers unless set); more are refused with 429. */
  largeReviewsWaiting?: number;
}
export const SERVING_LIMITS: ServingLimits = {
  maxConnections: 1000,
  // The API server keeps 25 idle connections to a webhook (client-go's idleConnsPerHost) and opens more in bursts;
  // its own addresses hold this and more per suite (connection-limits.ts).
  maxConnectionsPerAddress: 250,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 3_000,
  handshakeTimeoutMs: 5_000,
  reviewWorkers: REVIEW_WORKERS,
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
 * sends what it does not answer itself: the AdmissionPolicies' webhooks (the main thread's tenant
 * workers), the validation webhooks unless it `validates`, large bodies, and requests whose webhook
 * reads what is held only there (HeldElsewhere: a handler's lookups, params of a collection not
 * sent here, a SubjectAccessReview or a schema a validation needs). The main thread's server answers them (answer()).
 */
export interface Forwarding {
  /** `body` as read: text, or the bytes of a large one (readJsonBody), which the sender gives up. */
  to(url: string, body: string | Uint8Array): Promise<Answered>;
}

/** The operator's own routes in a server that forwards them: known there (anything else is refused unread), answered by the other. */
const FORWARDED: Router = { find: () => undefined, offload: false };

export interface AdmissionServerOptions {
  registry: SuiteRegistry;
  /** The AdmissionPolicies, served at NAMESPACED.paths (evaluated in tenant workers, threads/tenants.ts); none served without it. */
  policies?: PolicyRegistry;
  /** The tenant workers' limits (the operator's flags; tests' smaller ones). */
  tenants?: Partial<TenantPoolOptions>;
  certificates: CertificateStore;
  /** Where refused requests are counted (the operator's Metrics). */
  metrics: { countRejected(code: string): void; webhook?(suite: string, webhook: string): WebhookObserver; connections?(counts: ConnectionCounts): void; connectionsNear?(kind: ConnectionKind, cause: string): void };
  /**
   * The API server's source addresses (the `kubernetes` EndpointSlices; loopback in local mode),
   * normalized (no `::ffff:`): their connections are sized by the webhooks served, never refused for
   * being many (connection-limits.ts). A Set kept current by its owner does; none without it.
   */
  apiServers?: { has(address: string): boolean; readonly size: number };
  log: LogWriter;
  /** What this server leaves to another (see Forwarding); without it, it answers every route itself. */
  forward?: Forwarding;
  /**
   * A server that forwards answers the suite- and policy-validation webhooks itself (the admission
   * thread: an apply is then not queued behind the main thread's reconciles), from `registry`,
   * `paramsAccess`, `schemas` and `policies`' validate, whose answers must be the main thread's
   * server's or HeldElsewhere (then forwarded); without it, or without `policies`, they are forwarded.
   */
  validates?: { policies?: Pick<PolicyRegistry, 'validate'> };
  /** Whether a suite's author may read the params it names; without it, suites are checked for what they say only. */
  paramsAccess?: ParamsAccessCheck;
  /** The OpenAPI schemas suites are type-checked against on apply; without it, they are not. */
  schemas?: TypeChecking;
  /** SERVING_LIMITS but those set here (the operator's flags; tests' shorter ones); an undefined one keeps its default. */
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
 * The endpoint on node:https itself, no web framework. Why: docs/adr/0006-admission-endpoint-on-node-https.md
 */
export class AdmissionServer {
  /** The server on the first address listened on (the only one unless `localhost` resolves to several). */
  readonly server: https.Server;
  private readonly secondaries: https.Server[] = [];
  private readonly options: https.ServerOptions;
  private readonly connections: ConnectionLimits;
  /** Large bodies being read, at most as many as the review workers may judge and hold waiting. */
  private readonly largeBodies: LargeBodies;
  private readonly chain: AdmissionChain;
  /** The review workers (large reviews): their quarantines reach the suites' status. */
  readonly offload: ReviewOffload;
  /** The tenant workers, where this server answers the AdmissionPolicies' webhooks itself. */
  tenants: TenantPool | undefined;
  private readonly routes = new Map<string, Route>();
  private readonly suites: Router;
  private readonly forward: Forwarding | undefined;
  private readonly metrics: { countRejected(code: string): void };
  private readonly log: LogWriter;
  private closing = false;

  constructor(options: AdmissionServerOptions) {
    const { registry, certificates, metrics, log } = options;
    const limits = { ...SERVING_LIMITS };
    for (const [key, value] of Object.entries(options.limits ?? {})) if (value !== undefined) Object.assign(limits, { [key]: value });
    this.metrics = metrics;
    this.log = log;
    this.forward = options.forward;
    const reviewsWaiting = limits.largeReviewsWaiting ?? 2 * limits.reviewWorkers;
    this.offload = new ReviewOffload(registry, log, { workers: limits.reviewWorkers, waiting: reviewsWaiting });
    const largeAtOnce = limits.reviewWorkers + reviewsWaiting;
    let reading = 0;
    this.largeBodies = {
      hold: () => {
        if (reading >= largeAtOnce) return false;
        reading++;
        return true;
      },
      release: () => void reading--,
    };
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
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs / 2, limits.requestTimeoutMs / 2),
    };
    const apiServers = options.apiServers ?? new Set<string>();
    this.connections = new ConnectionLimits(
      limits,
      { webhooks: () => registry.webhookCount, isApiServer: (address) => apiServers.has(address), apiServerAddresses: () => apiServers.size },
      log,
      metrics.connections?.bind(metrics),
      metrics.connectionsNear?.bind(metrics),
    );
    this.server = this.newServer();
  }

  /**
   * The operator's own webhooks (suite and policy validation, the AdmissionPolicies'); a server that
   * forwards leaves them to the one it forwards to, but the validation webhooks when it `validates`.
   */
  private addOperatorRoutes(options: AdmissionServerOptions): void {
    const { registry, paramsAccess, forward } = options;
    const forwarded = (path: string) => this.routes.set(path, { router: FORWARDED, suite: '', name: '' });
    // Counted as every webhook is (suite label empty: no suite has an empty name), so their latency shows beside the suites'.
    const observed = (name: string) => options.metrics.webhook?.('', name) ?? NO_OBSERVER;
    if (!forward || options.validates) {
      const validation = suiteValidationWebhook(registry, paramsAccess, options.schemas, observed(SUITE_VALIDATION.webhook));
      // The operator's own webhook: a suite that cannot work, or names params its author may not read, is refused on apply.
      this.routes.set(SUITE_VALIDATION.path, { router: { find: () => validation, offload: false }, suite: validation.suite, name: validation.name });
      // AdmissionExceptions need only the suites and Namespaces, which every copy holds.
      const exceptions = exceptionValidationWebhook(registry, observed(EXCEPTIONS.validationWebhook));
      this.routes.set(EXCEPTIONS.validationPath, { router: { find: () => exceptions, offload: false }, suite: '', name: exceptions.name });
    } else {
      forwarded(SUITE_VALIDATION.path);
      forwarded(EXCEPTIONS.validationPath);
    }
    const policies = forward ? options.validates?.policies : options.policies;
    if (policies) {
      const policyValidation = policyValidationWebhook(policies, paramsAccess, options.schemas, observed(NAMESPACED.validationWebhook));
      this.routes.set(NAMESPACED.validationPath, { router: { find: () => policyValidation, offload: false }, suite: '', name: policyValidation.name });
    } else if (forward) forwarded(NAMESPACED.validationPath);
    if (forward) {
      forwarded(NAMESPACED.paths.Mutating);
      forwarded(NAMESPACED.paths.Validating);
      return;
    }
    if (options.policies) {
      const policies = options.policies;
      // The namespaced policies' webhooks: decoded here (a large body too: the review workers hold the suites only), and
      // evaluated in the tenant workers, each namespace in turn, never on this thread (it answers the probes and the suites).
      const tenants = (this.tenants = new TenantPool(policies, this.log, options.tenants));
      for (const type of ['Mutating', 'Validating'] as const) {
        const webhook = { ...namespacedWebhook(type, policies), admit: (request: AdmissionRequest) => tenants.admit(type, request) };
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

  /** The connections held now, by kind, and what the limits allow each kind. */
  connectionCounts(): ConnectionCounts {
    return this.connections.counts();
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
    this.connections.flush();
    await Promise.all([this.offload.close(), this.tenants?.close()]);
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
    const route = request.method === 'POST' ? this.route(url) : undefined;
    if (!route) return this.fail(new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `${request.method} ${url}`), reply, false);
    readJsonBody(
      request,
      BODY_LIMIT,
      (body) => {
        if (this.forward && (route.router === FORWARDED || typeof body !== 'string')) return this.forwardTo(this.forward, url, body, reply);
        this.dispatch(route, body, reply, url);
      },
      // The rest of the body is unread: the connection cannot carry another request; but for BUSY,
      // refused once the body was read (and dropped) to its end.
      (err) => this.fail(err, reply, err.kind !== REVIEW_ERRORS.BUSY),
      LARGE_BODY,
      this.largeBodies,
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
  // BUSY: client-go's REST client (the API server's webhook client) waits this long and sends again, within the webhook's timeout.
  if (status === 429) headers.push('retry-after', '1');
  response.writeHead(status, headers);
  response.end(json);
}

function toReviewError(error: unknown): ReviewError {
  if (error instanceof ReviewError) return error;
  return new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, errorMessage(error));
}
