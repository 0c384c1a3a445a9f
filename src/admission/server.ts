/**
 * admission: the HTTPS endpoint the API server calls. Decodes and checks each AdmissionReview,
 * finds the compiled webhook for /admit/<suite>/<webhook>, asks it for a Decision, and encodes
 * the response. It never evaluates rules itself and makes no API calls of its own (a webhook
 * whose rules use `authorizer` asks SubjectAccessReviews through the Authorizer it was compiled with).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { CertificateStore } from '../certs/store.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import type { Logger } from '../log.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import { SUITE_VALIDATION } from '../api/names.ts';
import type { AdmissionSuite } from '../api/types.ts';
import { allowed, denied, type Decision } from '../api/review.ts';
import { compileSuite } from '../registry/compile.ts';
import { decodeReview, encodeFailure, encodeReview } from './review.ts';
import type { Metrics } from '../health/metrics.ts';

/** The API server sends objects up to its own 3 MiB limit, twice for an UPDATE. */
export const BODY_LIMIT = 7 * 1024 * 1024;

/** The content type of every answer (what fastify's own serializer sets). */
const JSON_TYPE = 'application/json; charset=utf-8';

export interface AdmissionServerOptions {
  registry: SuiteRegistry;
  certificates: CertificateStore;
  metrics: Metrics;
  log: Logger;
}

export function createAdmissionServer(options: AdmissionServerOptions): FastifyInstance {
  const { registry, certificates, metrics, log } = options;
  const app = Fastify({
    https: { SNICallback: certificates.sniCallback, minVersion: 'TLSv1.2' },
    bodyLimit: BODY_LIMIT,
    logger: false,
    return503OnClosing: false,
  });

  // Only JSON is an AdmissionReview; anything else is refused with 415 before it is read.
  app.removeContentTypeParser(['text/plain', 'application/json']);
  // Plain JSON.parse: fastify's default (secure-json-parse) scans every body for prototype keys,
  // a sixth of the request's cost. JSON.parse only ever makes own properties, and nothing here
  // merges a review into another object's prototype chain.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch (err) {
      done(new ReviewError(REVIEW_ERRORS.MALFORMED_JSON, (err as Error).message), undefined);
    }
  });

  app.setNotFoundHandler((request) => {
    throw new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `${request.method} ${request.url}`);
  });

  app.setErrorHandler((error, _request, reply) => {
    const reviewError = toReviewError(error);
    log.warn('rejected an admission request', { code: reviewError.kind.code, reason: reviewError.message });
    metrics.countRejected(reviewError.kind.code);
    void reply.code(reviewError.kind.status).send(encodeFailure(reviewError));
  });

  // The operator's own webhook: a suite that cannot work is refused on apply, naming its fields.
  app.post(SUITE_VALIDATION.path, async (request, reply) => {
    const { apiVersion, request: admissionRequest } = decodeReview(request.body);
    return reply.send(encodeReview(apiVersion, admissionRequest.uid, validateSuite(admissionRequest.object as unknown as AdmissionSuite)));
  });

  // Not async: a synchronous decision is answered in the same tick, with no promise around it.
  // A throw here reaches the error handler as from an async handler.
  app.post<{ Params: { suite: string; webhook: string } }>('/admit/:suite/:webhook', (request, reply) => {
    const started = performance.now();
    const { apiVersion, request: admissionRequest } = decodeReview(request.body);
    const { suite, webhook: name } = request.params;
    const webhook = registry.webhook(suite, name);
    if (!webhook) throw new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `/admit/${suite}/${name}`);
    const answer = (decision: Decision): void => {
      metrics.observeReview(suite, name, decision.allowed, (performance.now() - started) / 1e3);
      if (!decision.allowed) log.info('denied', { suite, webhook: name, uid: admissionRequest.uid, denial: decision.message });
      // Sent as text with its type set, fastify does not serialize it again.
      void reply.header('content-type', JSON_TYPE).send(JSON.stringify(encodeReview(apiVersion, admissionRequest.uid, decision)));
    };
    // Synchronous for almost every webhook; a Promise while `authorizer` checks are asked.
    const decision = webhook.admit(admissionRequest);
    if (decision instanceof Promise) return decision.then(answer).then(() => reply);
    answer(decision);
  });
  return app;
}

function validateSuite(suite: AdmissionSuite): Decision {
  const errors = compileSuite(suite).errors;
  if (errors.length === 0) return allowed();
  const fields = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return denied(`AdmissionSuite "${suite?.metadata?.name ?? ''}" is invalid: ${fields}`, 'Invalid');
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
