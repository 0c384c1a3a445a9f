/**
 * admission: the HTTPS endpoint the API server calls: TLS (SNI from the certificate store),
 * limits, body parsing, and routing. /admit/<suite>/<webhook> goes to the registry's webhooks,
 * the suite-validation path to the operator's own; both through the one per-request chain
 * (chain.ts: decode, route, offload, decide, failurePolicy, encode). Transport failures are
 * answered here. It never evaluates rules itself and makes no API calls of its own (a webhook
 * whose rules use `authorizer` asks SubjectAccessReviews through the Authorizer it was compiled with).
 */
import { constants } from 'node:crypto';
import type https from 'node:https';
import Fastify, { type FastifyInstance } from 'fastify';
import type { CertificateStore } from '../certs/store.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import type { Logger } from '../log.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import { LARGE_BODY, LargeBody, ReviewOffload } from './offload.ts';
import { AdmissionChain, type Router } from './chain.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { policyValidationWebhook, suiteValidationWebhook, type ParamsAccessCheck } from './suite-validation.ts';
import type { PolicyRegistry } from '../registry/policies.ts';
import { namespacedWebhook } from '../registry/namespaced.ts';
import type { SchemaSource } from '../registry/typecheck.ts';
import { encodeFailure, parseJson } from './review.ts';
import type { Metrics } from '../health/metrics.ts';

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

export interface AdmissionServerOptions {
  registry: SuiteRegistry;
  /** The AdmissionPolicies, served at NAMESPACED.paths; none served without it. */
  policies?: PolicyRegistry;
  certificates: CertificateStore;
  metrics: Metrics;
  log: Logger;
  /** Whether a suite's author may read the params it names; without it, suites are checked for what they say only. */
  paramsAccess?: ParamsAccessCheck;
  /** The OpenAPI schemas suites are type-checked against on apply; without it, they are not. */
  schemas?: SchemaSource;
  /** SERVING_LIMITS unless a test needs them shorter. */
  limits?: Partial<ServingLimits>;
  /** True once the replica is shutting down: every answer then closes its connection. */
  draining?: () => boolean;
}

export function createAdmissionServer(options: AdmissionServerOptions): FastifyInstance {
  const { registry, certificates, metrics, log, paramsAccess } = options;
  const limits = { ...SERVING_LIMITS, ...options.limits };
  const app = Fastify({
    https: {
      SNICallback: certificates.sniCallback,
      ...TLS_OPTIONS,
      handshakeTimeout: limits.handshakeTimeoutMs,
      // Node looks for requests past their timeouts on this period (30 s by default, which would double ours).
      connectionsCheckingInterval: Math.min(1000, limits.requestTimeoutMs / 2),
    } as https.ServerOptions,
    bodyLimit: BODY_LIMIT,
    requestTimeout: limits.requestTimeoutMs,
    logger: false,
    return503OnClosing: false,
  });

  app.server.maxConnections = limits.maxConnections;
  app.server.headersTimeout = limits.headersTimeoutMs;

  // Only JSON is an AdmissionReview; anything else is refused with 415 before it is read.
  app.removeContentTypeParser(['text/plain', 'application/json']);
  // Plain JSON.parse: fastify's default (secure-json-parse) scans every body for prototype keys,
  // a sixth of the request's cost. JSON.parse only ever makes own properties, and nothing here
  // merges a review into another object's prototype chain.
  // A large body is left as text for the review worker (offload.ts), off this event loop.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if ((body as string).length >= LARGE_BODY) return done(null, new LargeBody(body as string));
    try {
      done(null, parseJson(body as string));
    } catch (err) {
      done(err as ReviewError, undefined);
    }
  });
  const offload = new ReviewOffload(registry, log);
  app.addHook('onClose', async () => offload.close());

  app.setNotFoundHandler((request) => {
    throw new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `${request.method} ${request.url}`);
  });

  app.setErrorHandler((error, _request, reply) => {
    const reviewError = toReviewError(error);
    log.warn('rejected an admission request', { code: reviewError.kind.code, reason: reviewError.message });
    metrics.countRejected(reviewError.kind.code);
    void reply.code(reviewError.kind.status).send(encodeFailure(reviewError));
  });

  // The server only routes: every request goes through the one chain (chain.ts).
  const chain = new AdmissionChain({ offload, log, draining: options.draining ?? (() => false) });
  const suites: Router = { find: (suite, webhook) => registry.webhook(suite, webhook), offload: true };
  const validation = suiteValidationWebhook(registry, paramsAccess, options.schemas);
  // The operator's own webhook: a suite that cannot work, or names params its author may not read, is refused on apply.
  const suiteValidation: Router = { find: () => validation, offload: false };
  app.post(SUITE_VALIDATION.path, (request, reply) => chain.handle(suiteValidation, validation.suite, validation.name, request.body, reply));
  if (options.policies) {
    const policies = options.policies;
    const policyValidation = policyValidationWebhook(policies, paramsAccess, options.schemas);
    app.post(NAMESPACED.validationPath, (request, reply) => chain.handle({ find: () => policyValidation, offload: false }, '', policyValidation.name, request.body, reply));
    // The namespaced policies' webhooks; a large body is decoded here, not in the review worker (which holds the suites only).
    for (const type of ['Mutating', 'Validating'] as const) {
      const webhook = namespacedWebhook(type, policies);
      app.post(NAMESPACED.paths[type], (request, reply) => chain.handle({ find: () => webhook, offload: false }, '', webhook.name, request.body, reply));
    }
  }
  // Not async: a synchronous decision is answered in the same tick, with no promise around it.
  // A throw here reaches the error handler as from an async handler.
  app.post<{ Params: { suite: string; webhook: string } }>('/admit/:suite/:webhook', (request, reply) =>
    chain.handle(suites, request.params.suite, request.params.webhook, request.body, reply),
  );
  return app;
}

function toReviewError(error: unknown): ReviewError {
  if (error instanceof ReviewError) return error;
  const code = (error as { code?: string }).code;
  const message = (error as Error).message ?? String(error);
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new ReviewError(REVIEW_ERRORS.BAD_CONTENT_TYPE, message);
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ReviewError(REVIEW_ERRORS.BODY_TOO_LARGE, `${BODY_LIMIT} bytes`);
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || error instanceof SyntaxError || code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new ReviewError(REVIEW_ERRORS.MALFORMED_JSON, message);
  }
  return new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, message);
}
