/**
 * admission: one request's body, read within the endpoint's limits. Owns the content-type check
 * (only JSON is an AdmissionReview: anything else is refused before it is read), the size cap
 * (checked on the declared length, then on every chunk, so an oversized body is never held), the
 * place a large body holds while it is read (LargeBodies: so many at once, the rest read only
 * to be dropped, then refused), and the decoding of the bytes to text. Knows nothing of reviews: what the text means is review.ts'.
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
 * How many large bodies may be read at once (the server's count): each holds up to the body limit
 * in memory until it is read, and a client may send it as slowly as the request timeout allows.
 */
export interface LargeBodies {
  /** Takes a place for one more, or says there is none. */
  hold(): boolean;
  release(): void;
}

/**
 * Reads the body of `request` as UTF-8 text and hands it to `done`, or a ReviewError (wrong type,
 * too large, BUSY) to `failed`. A body of `bytesFrom` bytes or more is handed over as its bytes,
 * undecoded: a large review is judged in another thread, and a string of megabytes made here only
 * to be copied there would cost this thread the copy and its collection. Such a body holds a place
 * in `large` while it is read (from its headers when it declares its length, else from the chunk
 * that makes it large): with none free, the rest of it is read and dropped as it comes, and then
 * it is refused (BUSY). Refused before its end, the answer would close the connection under a
 * client still writing, which may then see a broken pipe rather than the answer that tells it to
 * retry. Callbacks, not a promise:
 * a small review is read, judged and answered in the tick its last chunk arrives. After another
 * failure the rest of the body is left unread (the answer closes the connection).
 */
export function readJsonBody(request: IncomingMessage, limit: number, done: (body: string | Buffer) => void, failed: (error: ReviewError) => void, bytesFrom = Infinity, large?: LargeBodies): void {
  const type = request.headers['content-type'];
  if (!isJson(type)) return failed(new ReviewError(REVIEW_ERRORS.BAD_CONTENT_TYPE, type ?? 'none'));
  const tooLarge = () => new ReviewError(REVIEW_ERRORS.BODY_TOO_LARGE, `${limit} bytes`);
  const declared = Number(request.headers['content-length']);
  if (declared > limit) return failed(tooLarge());
  /** Gives back the place this body holds, once it holds one. */
  let release: (() => void) | undefined;
  if (large && declared >= bytesFrom && !(release = holdPlace(request, large))) return dropThenRefuse(request, failed);
  let first: Buffer | undefined;
  let rest: Buffer[] | undefined;
  let received = 0;
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) {
      request.off('data', onData).off('end', onEnd);
      release?.();
      return failed(tooLarge());
    }
    if (received >= bytesFrom && large && !release && !(release = holdPlace(request, large))) {
      request.off('data', onData).off('end', onEnd);
      first = rest = undefined;
      return dropThenRefuse(request, failed);
    }
    if (!first) first = chunk;
    else (rest ??= [first]).push(chunk);
  };
  const onEnd = () => {
    release?.();
    if (!first) return done('');
    const bytes = rest ? Buffer.concat(rest, received) : first;
    done(received >= bytesFrom ? bytes : bytes.toString('utf8'));
  };
  // A client gone mid-body leaves nobody to answer: the socket is already closed (a place held is given back on 'close').
  request
    .on('data', onData)
    .on('end', onEnd)
    .on('error', () => request.off('data', onData).off('end', onEnd));
}

/** A large body with no place: the rest of it read and dropped as it comes (nothing held), then refused (BUSY). */
function dropThenRefuse(request: IncomingMessage, failed: (error: ReviewError) => void): void {
  request.once('end', () => failed(new ReviewError(REVIEW_ERRORS.BUSY, 'as many large bodies are being read as can be judged'))).resume();
}

/** A place in `large` for the body of `request`, given back once: by the returned function, or when the request closes. */
function holdPlace(request: IncomingMessage, large: LargeBodies): (() => void) | undefined {
  if (!large.hold()) return undefined;
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    large.release();
  };
  request.once('close', release);
  return release;
}
