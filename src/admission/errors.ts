/**
 * One catalogue of the admission endpoint's transport errors: each has a code tests assert on,
 * an HTTP status, and a message template. They are answered as AdmissionReviews with an error
 * status, so the API server logs a reason rather than an opaque failure.
 */

export interface ReviewErrorKind {
  code: string;
  status: number;
  message: (detail: string) => string;
}

export const REVIEW_ERRORS = {
  BAD_CONTENT_TYPE: { code: 'PORTCULLIS_BAD_CONTENT_TYPE', status: 415, message: (d: string) => `content type must be application/json, got ${d}` },
  BODY_TOO_LARGE: { code: 'PORTCULLIS_BODY_TOO_LARGE', status: 413, message: (d: string) => `request body is larger than ${d}` },
  MALFORMED_JSON: { code: 'PORTCULLIS_MALFORMED_JSON', status: 400, message: (d: string) => `request body is not JSON: ${d}` },
  NOT_A_REVIEW: { code: 'PORTCULLIS_NOT_A_REVIEW', status: 400, message: (d: string) => `not an AdmissionReview: ${d}` },
  UNKNOWN_WEBHOOK: { code: 'PORTCULLIS_UNKNOWN_WEBHOOK', status: 404, message: (d: string) => `no webhook is served at ${d}` },
  /** Answered with `Retry-After: 1`, which the API server's webhook client waits for and retries within the webhook's timeout. */
  BUSY: { code: 'PORTCULLIS_BUSY', status: 429, message: (d: string) => `too many large reviews at once (${d}); retry later` },
} as const satisfies Record<string, ReviewErrorKind>;

/** How much of what a client sent is echoed in an answer or a log line: enough to recognise it, never a megabyte. */
export const ECHO_LIMIT = 256;

/** `text` as it may be echoed or logged: its first ECHO_LIMIT characters, and how many more there were. The one cap of every such field. */
export function capped(text: string): string {
  return text.length > ECHO_LIMIT ? `${text.slice(0, ECHO_LIMIT)}… (${text.length - ECHO_LIMIT} more characters)` : text;
}

export type ReviewErrorKey = keyof typeof REVIEW_ERRORS;

export class ReviewError extends Error {
  readonly kind: ReviewErrorKind;
  constructor(kind: ReviewErrorKind, detail: string) {
    super(kind.message(capped(detail)));
    this.kind = kind;
  }

  /** Its name in REVIEW_ERRORS, to send it between threads. */
  get key(): ReviewErrorKey {
    return (Object.keys(REVIEW_ERRORS) as ReviewErrorKey[]).find((k) => REVIEW_ERRORS[k] === this.kind) ?? 'NOT_A_REVIEW';
  }

  /** The error as another thread made it: its message as it was written there. */
  static sent(key: ReviewErrorKey, message: string): ReviewError {
    const error = new ReviewError(REVIEW_ERRORS[key], '');
    error.message = message;
    return error;
  }
}
