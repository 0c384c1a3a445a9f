/**
 * ImagePolicyWebhook, after the in-tree admission plugin (plugin/pkg/admission/imagepolicy): a
 * Pod's CREATE or UPDATE (its containers and init containers), or an update of its
 * `ephemeralcontainers` (those alone), is sent to an external ImageReview backend
 * (imagepolicy.k8s.io/v1alpha1), with the Pod's annotations whose keys hold
 * `.image-policy.k8s.io/` (the break-glass annotation `alpha.image-policy.k8s.io/break-glass`
 * among them: the backend decides what it means) and its namespace. Answers are kept in an LRU
 * of 1024 by the review's spec, allowed ones for `allowTTL`, denied ones for `denyTTL`. When the
 * backend cannot answer, `defaultAllow` admits the Pod (audit annotation `failed-open`, and, on the
 * Mutating side, the Pod annotation `alpha.image-policy.k8s.io/failed-open: "true"` as upstream
 * writes it), else it is refused. Upstream's configuration fields and bounds, but the backend is
 * named by `url` and `caBundle` instead of a kubeconfig file. Every call is bounded by
 * `timeoutSeconds` (retries included), so the request path never waits longer.
 *
 * Unlike upstream, whose backend only the cluster admin names, `url` is a suite author's: it must
 * be under a backend the admin allows (handlers/backends.ts, `--handler-backends`), else the suite
 * is refused on apply (and a call is never made); and a backend that fails is answered with a fixed
 * message, counted as an error and logged with why (the decision marked failed, with the detail
 * beside it), so that what the operator found at the URL never reaches the requester.
 *
 * The one built-in handler that calls out: its sides answer with a Promise (which the compiled
 * suite passes through as an `asks` handler's). Owns the backend client and cache; must not
 * import the controller or the admission server.
 */
import https from 'node:https';
import { allowed, markFailed, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { backendAllowed, backendRefusal } from './backends.ts';
import { forbidden } from './errors.ts';
import { metadataOf, pointer, podSpecOf } from './pods.ts';
import { errorMessage } from '../error-message.ts';

export const FAILED_OPEN_ANNOTATION = 'alpha.image-policy.k8s.io/failed-open';
/** Why a Pod is refused when the backend failed (without defaultAllow): the same words whatever the failure. */
export const BACKEND_FAILED = "the image policy webhook backend could not review the images (the operator's log says why)";
const ENTRIES = 1024;

export interface ImagePolicyConfig {
  url: string;
  caBundle?: string;
  allowTTLMs: number;
  denyTTLMs: number;
  retryBackoffMs: number;
  defaultAllow: boolean;
  timeoutMs: number;
  /** The answers of this suite's backend, by review spec; made with the config, so each compiled suite has its own. */
  cache: ReviewCache;
}

interface ReviewStatus {
  allowed: boolean;
  reason?: string;
  auditAnnotations?: Record<string, string>;
}

/** upstream's LRUExpireCache: least recently used dropped past `size`, each entry with its own expiry. */
export class ReviewCache {
  private readonly entries = new Map<string, { status: ReviewStatus; expires: number }>();
  private readonly size: number;
  constructor(size = ENTRIES) {
    this.size = size;
  }
  get(key: string, now = Date.now()): ReviewStatus | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expires <= now) return undefined;
    this.entries.set(key, entry);
    return entry.status;
  }
  add(key: string, status: ReviewStatus, ttlMs: number, now = Date.now()): void {
    this.entries.delete(key);
    this.entries.set(key, { status, expires: now + ttlMs });
    if (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * upstream normalizeConfigDuration: -1 disables (0), 0 or unset takes the default, else the value
 * in `unit` ms must lie within [min, max] ms.
 */
function duration(read: ConfigReader, field: string, unitMs: number, minMs: number, maxMs: number, defaultMs: number): number {
  const value = read.raw(field);
  if (value === undefined || value === null || value === 0) return defaultMs;
  if (value === -1) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value * unitMs < minMs || value * unitMs > maxMs) {
    read.error(field, `must be -1 (disabled), 0 (the default, ${defaultMs / unitMs}) or an integer from ${Math.ceil(minMs / unitMs)} to ${maxMs / unitMs}`);
    return defaultMs;
  }
  return value * unitMs;
}

function parseConfig(config: Record<string, unknown>): { config: ImagePolicyConfig; errors: { field: string; message: string }[] } {
  const read = new ConfigReader(config, 'ImagePolicyWebhook', ['url', 'caBundle', 'allowTTL', 'denyTTL', 'retryBackoff', 'defaultAllow', 'timeoutSeconds']);
  const url = read.string('url', '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    read.error('url', 'must be the https URL of an ImageReview backend');
  }
  if (parsed && (parsed.protocol !== 'https:' || parsed.username || parsed.hash)) read.error('url', 'must be an https URL with no user or fragment');
  else if (parsed && !backendAllowed(parsed)) read.error('url', backendRefusal());
  const caBundle = read.string('caBundle', '') || undefined;
  if (caBundle !== undefined && !caBundle.includes('-----BEGIN CERTIFICATE-----')) read.error('caBundle', "must be PEM certificates (the CA the backend's serving certificate chains to)");
  const timeoutSeconds = read.integer('timeoutSeconds', 4, 1);
  // Within the API server's longest webhook timeout (30 s); the webhook's own timeoutSeconds should exceed it.
  if (timeoutSeconds > 29) read.error('timeoutSeconds', "must be at most 29: the API server waits at most 30 s for a webhook (and the webhook's own timeoutSeconds should be longer than this)");
  const defaultAllow = read.raw('defaultAllow');
  if (defaultAllow !== undefined && typeof defaultAllow !== 'boolean') read.error('defaultAllow', 'must be true or false');
  return {
    config: {
      url,
      ...(caBundle ? { caBundle } : {}),
      allowTTLMs: duration(read, 'allowTTL', 1000, 1000, 30 * 60_000, 5 * 60_000),
      denyTTLMs: duration(read, 'denyTTL', 1000, 1000, 30 * 60_000, 30_000),
      retryBackoffMs: duration(read, 'retryBackoff', 1, 1, 5 * 60_000, 500),
      defaultAllow: defaultAllow === true,
      timeoutMs: Math.min(timeoutSeconds, 29) * 1000,
      cache: new ReviewCache(),
    },
    errors: read.errors,
  };
}

/** The ImageReview spec upstream builds, its fields in Go's order (the cache key is its JSON), or undefined when the request is not reviewed. */
export function reviewSpec(request: AdmissionRequest): Record<string, unknown> | undefined {
  const sub = request.subResource ?? '';
  if ((request.operation !== 'CREATE' && request.operation !== 'UPDATE') || request.resource.group !== '' || request.resource.resource !== 'pods') return undefined;
  if (sub !== '' && sub !== 'ephemeralcontainers') return undefined;
  const spec = podSpecOf(request.object) ?? {};
  const containers = sub === '' ? [...(spec.containers ?? []), ...(spec.initContainers ?? [])] : (spec.ephemeralContainers ?? []);
  const annotations = Object.entries(metadataOf(request.object)?.annotations ?? {})
    .filter(([key]) => key.includes('.image-policy.k8s.io/'))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    ...(containers.length ? { containers: containers.map((c) => (c.image ? { image: c.image } : {})) } : {}),
    ...(annotations.length ? { annotations: Object.fromEntries(annotations) } : {}),
    ...(request.namespace ? { namespace: request.namespace } : {}),
  };
}

/**
 * What client-go makes of a backend's answer that is not 2xx and not a Status object
 * (apimachinery NewGenericServerResponse, its text when the answer is text), and whether the
 * plugin's DefaultShouldRetry tries again (internal errors, timeouts, 429).
 */
export function serverResponseError(code: number, body: string, textual: boolean): { message: string; retry: boolean } {
  const server = textual ? body.slice(0, 2048).trim() : 'unknown';
  const fixed: Record<number, string> = {
    409: 'the server reported a conflict',
    404: 'the server could not find the requested resource',
    400: 'the server rejected our request for an unknown reason',
    401: 'the server has asked for the client to provide credentials',
    405: 'the server does not allow this method on the requested resource',
    422: 'the server rejected our request due to an error in our request',
    503: 'the server is currently unable to handle the request',
    504: 'the server was unable to return a response in the time allotted, but may still be processing the request',
    429: 'the server has received too many requests and has asked us to try again later',
  };
  if (code === 403 || code === 415) return { message: server, retry: false };
  if (code === 406) return { message: server === '' || server === 'unknown' ? 'the server was unable to respond with a content type that the client supports' : server, retry: false };
  if (fixed[code]) return { message: fixed[code]!, retry: code === 504 || code === 429 };
  if (code >= 500) return { message: `an error on the server (${JSON.stringify(server)}) has prevented the request from succeeding`, retry: true };
  return { message: `the server responded with the status code ${code} but did not return more information`, retry: false };
}

/** One POST of the review; the status code and body, or the error Go's client would give. */
function post(config: ImagePolicyConfig, body: string, timeoutMs: number): Promise<{ status: number; text: string; textual: boolean } | { error: string; retry: boolean }> {
  const url = new URL(config.url);
  // Checked on apply too: a config parsed before is never taken past the list it was checked against.
  if (!backendAllowed(url)) return Promise.resolve({ error: `Post "${config.url}": not a backend --handler-backends allows`, retry: false });
  return new Promise((resolve) => {
    const request = https.request(url, { method: 'POST', ca: config.caBundle, headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      const textual = (response.headers['content-type'] ?? '').startsWith('text/');
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), textual }));
      response.on('error', (err) => resolve({ error: `Post "${config.url}": ${err.message}`, retry: true }));
    });
    request.on('timeout', () => request.destroy(new Error('context deadline exceeded')));
    request.on('error', (err: NodeJS.ErrnoException) => {
      const port = url.port || '443';
      // Go's words for the errors a backend's operator meets most, else Node's.
      const why = err.code === 'ECONNREFUSED' ? `dial tcp ${url.hostname}:${port}: connect: connection refused` : err.message;
      resolve({ error: `Post "${config.url}": ${why}`, retry: err.code === 'ECONNRESET' || err.message === 'context deadline exceeded' });
    });
    request.end(body);
  });
}

/**
 * The backend's answer to `spec`, with upstream's retries (initial `retryBackoff`, factor 1.5, five
 * attempts, on reset connections, timeouts, 5xx and 429) inside one deadline; a failure's words.
 */
async function review(config: ImagePolicyConfig, spec: Record<string, unknown>): Promise<ReviewStatus | { error: string }> {
  const body = JSON.stringify({ apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', metadata: { creationTimestamp: null }, spec, status: { allowed: false } });
  const deadline = Date.now() + config.timeoutMs;
  let delay = config.retryBackoffMs;
  let last: { error: string } = { error: 'context deadline exceeded' };
  for (let attempt = 0; attempt < 5; attempt++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const answer = await post(config, body, left);
    if ('error' in answer) {
      last = { error: answer.error };
      if (!answer.retry) return last;
    } else if (answer.status >= 200 && answer.status < 300) {
      let status: unknown;
      try {
        status = (JSON.parse(answer.text) as { status?: unknown }).status;
      } catch (err) {
        return { error: `the backend's answer is not an ImageReview: ${errorMessage(err)}` };
      }
      if (!isPlainObject(status)) return { error: "the backend's answer is not an ImageReview: it has no status" };
      return {
        allowed: status.allowed === true,
        ...(typeof status.reason === 'string' && status.reason ? { reason: status.reason } : {}),
        ...(isPlainObject(status.auditAnnotations) ? { auditAnnotations: status.auditAnnotations as Record<string, string> } : {}),
      };
    } else {
      const unexpected = serverResponseError(answer.status, answer.text, answer.textual);
      last = { error: unexpected.message };
      if (!unexpected.retry) return last;
    }
    const wait = Math.min(delay * (1 + Math.random() * 0.2), deadline - Date.now());
    if (wait <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
    delay *= 1.5;
  }
  return last;
}

/** The Pod annotation upstream sets when it fails open, as a patch. */
function failedOpenPatch(request: AdmissionRequest): Decision['patch'] {
  const annotations = metadataOf(request.object)?.annotations;
  return annotations ? [{ op: 'add', path: pointer('metadata', 'annotations', FAILED_OPEN_ANNOTATION), value: 'true' }] : [{ op: 'add', path: '/metadata/annotations', value: { [FAILED_OPEN_ANNOTATION]: 'true' } }];
}

async function judge(request: AdmissionRequest, config: ImagePolicyConfig, mutating: boolean): Promise<Decision> {
  const spec = reviewSpec(request);
  if (!spec) return allowed();
  if (!isPlainObject(request.object)) return forbidden(request, 'Resource was marked with kind Pod but was unable to be converted');
  const key = JSON.stringify(spec);
  let status = config.cache.get(key);
  if (!status) {
    const answer = await review(config, spec);
    if ('error' in answer) {
      if (config.defaultAllow) {
        return markFailed({ allowed: true, auditAnnotations: { 'failed-open': 'true' }, ...(mutating ? { patch: failedOpenPatch(request) } : {}) }, answer.error);
      }
      // Upstream quotes the error; here the URL is an author's, so its words go to the log alone.
      return markFailed(forbidden(request, BACKEND_FAILED), answer.error);
    }
    status = answer;
    config.cache.add(key, status, status.allowed ? config.allowTTLMs : config.denyTTLMs);
  }
  const audit = status.auditAnnotations && Object.keys(status.auditAnnotations).length ? { auditAnnotations: { ...status.auditAnnotations } } : {};
  if (status.allowed) return { allowed: true, ...audit };
  const why = status.reason ? `image policy webhook backend denied one or more images: ${status.reason}` : 'one or more images rejected by webhook backend';
  return { ...forbidden(request, why), ...audit };
}

export const imagePolicyWebhook: Handler<ImagePolicyConfig, Decision | Promise<Decision>> = {
  name: 'ImagePolicyWebhook',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig,
  mutate(request, config) {
    return judge(request, config, true);
  },
  validate(request, config) {
    return judge(request, config, false);
  },
};
