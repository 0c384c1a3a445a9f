/**
 * admission: one request's body, read within the endpoint's limits. Owns the content-type check
 * (only JSON is an AdmissionReview: anything else is refused before it is read), the size cap
 * (checked on the declared length, then on every chunk, so an oversized body is never held), and
 * the decoding of the bytes to text. Knows nothing of reviews: what the text means is review.ts'.
 */
import type { IncomingMessage } from 'node:http';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';

/** Whether the request says its body is JSON (`application/json`, with or without parameters). */
export function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const end = contentType.indexOf(';');
  const type = (end === -1 ? contentType : contentType.slice(0, end)).trim();
  return type.length === 16 && type.toLowerCase() === 'application/json';
}

/**
 * Reads the body of `request` as UTF-8 text and hands it to `done`, or a ReviewError (wrong type,
 * too large) to `failed`. Callbacks, not a promise: a small review is read, judged and answered in
 * the tick its last chunk arrives. After a failure the rest of the body is left unread (the
 * answer closes the connection).
 */
export function readJsonBody(request: IncomingMessage, limit: number, done: (text: string) => void, failed: (error: ReviewError) => void): void {
  const type = request.headers['content-type'];
  if (!isJson(type)) return failed(new ReviewError(REVIEW_ERRORS.BAD_CONTENT_TYPE, type ?? 'none'));
  const tooLarge = () => new ReviewError(REVIEW_ERRORS.BODY_TOO_LARGE, `${limit} bytes`);
  if (Number(request.headers['content-length']) > limit) return failed(tooLarge());
  let first: Buffer | undefined;
  let rest: Buffer[] | undefined;
  let received = 0;
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) {
      request.off('data', onData).off('end', onEnd);
      return failed(tooLarge());
    }
    if (!first) first = chunk;
    else (rest ??= [first]).push(chunk);
  };
  const onEnd = () => {
    if (!first) return done('');
    done(rest ? Buffer.concat(rest, received).toString('utf8') : first.toString('utf8'));
  };
  // A client gone mid-body leaves nobody to answer: the socket is already closed.
  request.on('data', onData).on('end', onEnd).on('error', () => request.off('data', onData).off('end', onEnd));
}
