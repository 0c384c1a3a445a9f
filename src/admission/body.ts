/**
 * admission: one request's body, read within the endpoint's limits. Owns the content-type check
 * (only JSON is an AdmissionReview: anything else is refused before it is read), the size cap
 * (checked on the declared length, then on every chunk, so an oversized body is never held), and
 * the decoding of the bytes to text. Knows nothing of reviews: what the text means is review.ts'.
 */
import type { IncomingMessage } from 'node:http';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';

/** Bytes handed over undecoded (readJsonBody), as UTF-8 text: where they are judged. */
export function utf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** Whether the request says its body is JSON (`application/json`, with or without parameters). */
export function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const end = contentType.indexOf(';');
  const type = (end === -1 ? contentType : contentType.slice(0, end)).trim();
  return type.length === 16 && type.toLowerCase() === 'application/json';
}

/**
 * Reads the body of `request` as UTF-8 text and hands it to `done`, or a ReviewError (wrong type,
 * too large) to `failed`. A body of `bytesFrom` bytes or more is handed over as its bytes,
 * undecoded: a large review is judged in another thread, and a string of megabytes made here only
 * to be copied there would cost this thread the copy and its collection. Callbacks, not a promise:
 * a small review is read, judged and answered in the tick its last chunk arrives. After a failure
 * the rest of the body is left unread (the answer closes the connection).
 */
export function readJsonBody(request: IncomingMessage, limit: number, done: (body: string | Buffer) => void, failed: (error: ReviewError) => void, bytesFrom = Infinity): void {
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
    const bytes = rest ? Buffer.concat(rest, received) : first;
    done(received >= bytesFrom ? bytes : bytes.toString('utf8'));
  };
  // A client gone mid-body leaves nobody to answer: the socket is already closed.
  request.on('data', onData).on('end', onEnd).on('error', () => request.off('data', onData).off('end', onEnd));
}
