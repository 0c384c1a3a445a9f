/** Decoding an AdmissionReview request and encoding the response for a Decision. */
import type { AdmissionRequest, AdmissionResponse, AdmissionReview, Decision } from '../api/admission-review.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import { errorMessage } from '../error-message.ts';
import type { LogWriter } from '../log.ts';

export const REVIEW_VERSIONS = new Set(['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']);
const OPERATIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

/** The body's JSON, or a MALFORMED_JSON ReviewError. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ReviewError(REVIEW_ERRORS.MALFORMED_JSON, errorMessage(err));
  }
}

export function decodeReview(body: unknown): { apiVersion: string; request: AdmissionRequest } {
  const fail = (detail: string): never => {
    throw new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, detail);
  };
  if (body === null || typeof body !== 'object' || Array.isArray(body)) fail('the body is not a JSON object');
  const review = body as Partial<AdmissionReview>;
  if (review.kind !== 'AdmissionReview') fail(`kind is ${JSON.stringify(review.kind)}, want AdmissionReview`);
  if (!REVIEW_VERSIONS.has(review.apiVersion ?? '')) fail(`apiVersion ${JSON.stringify(review.apiVersion)} is not admission.k8s.io/v1 or v1beta1`);
  const request = review.request;
  if (!request || typeof request !== 'object') fail('request is missing');
  if (typeof request!.uid !== 'string' || request!.uid === '') fail('request.uid is missing');
  if (!OPERATIONS.has(request!.operation)) fail(`request.operation ${JSON.stringify(request!.operation)} is not CREATE, UPDATE, DELETE or CONNECT`);
  if (!request!.kind || !request!.resource) fail('request.kind and request.resource are required');
  return { apiVersion: review.apiVersion!, request: request! };
}

export function encodeReview(apiVersion: string, uid: string, decision: Decision): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: decision.allowed };
  if (!decision.allowed || decision.code) {
    response.status = { code: decision.code ?? 403, reason: decision.reason, message: decision.message };
  }
  if (decision.patch?.length) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  }
  if (decision.warnings?.length) response.warnings = decision.warnings;
  if (decision.auditAnnotations) response.auditAnnotations = decision.auditAnnotations;
  return { apiVersion, kind: 'AdmissionReview', response };
}

/**
 * The JSON text of encodeReview's review; a plain allow, the answer to most requests, from a template.
 * Why: docs/adr/0007-plain-allow-from-a-template.md
 */
export function encodeReviewText(apiVersion: string, uid: string, decision: Decision): string {
  if (decision.allowed && !decision.code && !decision.patch?.length && !decision.warnings?.length && !decision.auditAnnotations) {
    return `{"apiVersion":${JSON.stringify(apiVersion)},"kind":"AdmissionReview","response":{"uid":${JSON.stringify(uid)},"allowed":true}}`;
  }
  return JSON.stringify(encodeReview(apiVersion, uid, decision));
}

/** A transport failure, still answered in the AdmissionReview shape. */
export function encodeFailure(err: ReviewError, apiVersion = 'admission.k8s.io/v1', uid = ''): AdmissionReview {
  return {
    apiVersion,
    kind: 'AdmissionReview',
    response: { uid, allowed: false, status: { code: err.kind.status, reason: err.kind.code, message: err.message } },
  };
}

/** Where transport failures are said: logged and counted (the operator's Metrics). */
export interface Rejections {
  log: LogWriter;
  countRejected(code: string): void;
}

/**
 * A transport failure (the endpoint's, or a request the chain could not answer): answered as an
 * AdmissionReview with its catalogue code, counted and logged. `reply` is the request's (chain.ts' Reply).
 */
export function sendFailure(error: unknown, reply: { send(status: number, json: string, close: boolean): void }, close: boolean, rejections: Rejections): void {
  const reviewError = error instanceof ReviewError ? error : new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, errorMessage(error));
  rejections.log.warn('rejected an admission request', { code: reviewError.kind.code, reason: reviewError.message });
  rejections.countRejected(reviewError.kind.code);
  reply.send(reviewError.kind.status, JSON.stringify(encodeFailure(reviewError)), close);
}
