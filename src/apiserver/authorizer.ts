/**
 * The Authorizer behind CEL's `authorizer`: SubjectAccessReviews against the API server (the one
 * API call the request path may make), and a short-lived cache in front of them shared by all
 * requests. A review that cannot be made (network, 403, timeout) rejects: an evaluation error for
 * the expression, then failurePolicy. The operator's ClusterRole grants `create` on
 * subjectaccessreviews.authorization.k8s.io.
 */
import * as k8s from '@kubernetes/client-node';
import { authorizationKey, type AuthorizationAttributes, type AuthorizationDecision, type Authorizer } from '../api/authorization.ts';
import { describeError } from './client.ts';

/** Within the API server's webhook timeout (10 s by default), so a slow review is our error, not a timed-out webhook. */
export const REVIEW_TIMEOUT_MS = 5_000;

/** The API server's answer to one SubjectAccessReview, as the requesting user's authorizer would decide. */
export class SubjectAccessReviewer implements Authorizer {
  private readonly api: k8s.AuthorizationV1Api;
  private readonly timeoutMs: number;

  constructor(config: k8s.KubeConfig, timeoutMs: number = REVIEW_TIMEOUT_MS) {
    this.api = config.makeApiClient(k8s.AuthorizationV1Api);
    this.timeoutMs = timeoutMs;
  }

  async check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`SubjectAccessReview timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      const review = await Promise.race([this.api.createSubjectAccessReview({ body: subjectAccessReview(attributes) }), timeout]);
      const status = review.status;
      return { allowed: status?.allowed === true, reason: status?.reason ?? '', evaluationError: status?.evaluationError ?? '' };
    } catch (err) {
      throw new Error(`SubjectAccessReview failed: ${describeError(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The SubjectAccessReview for `attributes` (empty strings are "unset" to the API server, as in its own checks). */
export function subjectAccessReview(attributes: AuthorizationAttributes): k8s.V1SubjectAccessReview {
  const { user, resource: r, nonResource: n } = attributes;
  const spec: k8s.V1SubjectAccessReviewSpec = { user: user.username };
  if (user.uid) spec.uid = user.uid;
  if (user.groups?.length) spec.groups = user.groups;
  if (user.extra && Object.keys(user.extra).length) spec.extra = user.extra;
  if (r) {
    spec.resourceAttributes = { verb: r.verb, group: r.group, version: '*', resource: r.resource, subresource: r.subresource, namespace: r.namespace, name: r.name };
    if (r.fieldSelector) spec.resourceAttributes.fieldSelector = { rawSelector: r.fieldSelector };
    if (r.labelSelector) spec.resourceAttributes.labelSelector = { rawSelector: r.labelSelector };
  } else if (n) {
    spec.nonResourceAttributes = { verb: n.verb, path: n.path };
  }
  return { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec };
}

export interface AuthorizationCacheOptions {
  /** How long an answer is reused (10 s). */
  ttlMs?: number;
  /** Answers kept at most; the oldest go first (10,000). */
  maxEntries?: number;
  now?: () => number;
}

/**
 * Reuses answers across requests for a short TTL; equal checks in flight at once share one review.
 * Failures are not kept: the next request asks again.
 */
export class CachingAuthorizer implements Authorizer {
  private readonly inner: Authorizer;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, { expires: number; answer: Promise<AuthorizationDecision> }>();

  constructor(inner: Authorizer, options: AuthorizationCacheOptions = {}) {
    this.inner = inner;
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
    const key = authorizationKey(attributes);
    const now = this.now();
    const cached = this.entries.get(key);
    if (cached && cached.expires > now) return cached.answer;
    if (cached) this.entries.delete(key);
    const entry = { expires: now + this.ttlMs, answer: this.inner.check(attributes) };
    this.entries.set(key, entry);
    entry.answer.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return entry.answer;
  }

  /** Answers kept (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }
}
