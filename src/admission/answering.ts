/**
 * admission: what answers a request the endpoint (endpoint.ts) read: which webhook a path names (the
 * registry's, the operator's validation webhooks, the AdmissionPolicies' in the tenant workers), through
 * the one chain (chain.ts), large reviews in the review workers, or another thread (Forwarding). No socket.
 */
import type { SuiteRegistry } from '../registry/registry.ts';
import type { LogWriter } from '../log.ts';
import { REVIEW_ERRORS, ReviewError } from './errors.ts';
import { LARGE_BODY, LargeBody, REVIEW_WORKERS, ReviewOffload } from './threads/offload.ts';
import { AdmissionChain, type Reply, type Router } from './chain.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { EXCEPTIONS } from '../api/exceptions.ts';
import { exceptionValidationWebhook, policyValidationWebhook, suiteValidationWebhook, type ParamsAccessCheck, type TypeChecking } from './suite-validation.ts';
import type { PolicyRegistry } from '../registry/policies.ts';
import { namespacedWebhook } from '../registry/policy-webhook.ts';
import { PolicyWorkerPool, type PolicyWorkerPoolOptions } from './threads/policy-workers.ts';
import { NO_OBSERVER, type WebhookObserver } from '../registry/compile.ts';
import type { AdmissionRequest } from '../api/admission-review.ts';
import { parseJson, sendFailure, type Rejections } from './review-codec.ts';
import { HeldElsewhere } from '../handlers/handler.ts';

/** What the endpoint asks of what answers: the route of a URL, the answer to a body read whole, how large bodies are read. */
export interface Answering {
  /** The route of a request's URL (its query is not part of it); undefined: nothing here answers it (refused unread). */
  route(url: string): Route | undefined;
  /** A body read whole at `route`'s `url`: answered through `reply`, here, by another thread, or as a transport failure. */
  answer(route: Route, url: string, body: string | Uint8Array, reply: Reply): void;
  /** Bodies of `from` bytes or more are read as bytes (judged in another thread), at most `atOnce` at a time. */
  readonly largeBodies: { from: number; atOnce: number };
  /** The webhooks answered: the API server keeps a client, and connections, for each. */
  readonly webhookCount: number;
}

/** A route: the webhooks of one path, and the suite and webhook it names. */
export interface Route {
  router: Router;
  suite: string;
  name: string;
}

/** How many large reviews are judged at once, and wait. */
export interface AnsweringLimits {
  /** Review workers judging large reviews at once (threads/offload.ts): by default one per CPU, at most 2 (REVIEW_WORKERS). */
  reviewWorkers: number;
  /** Large reviews that may wait for a worker beyond those judged (twice reviewWorkers unless set); more are refused with 429. */
  largeReviewsWaiting?: number;
}
export const ANSWERING_LIMITS: AnsweringLimits = { reviewWorkers: REVIEW_WORKERS };

/** An answer as the endpoint sends it. */
export interface Answered {
  status: number;
  json: string;
  /** Close the connection after it (the replica drains, or the body was not read to its end). */
  close: boolean;
}

/**
 * Where answering in a thread that is not the operator's only one (the admission thread's, threads/thread-worker.ts)
 * sends what it does not answer itself: the AdmissionPolicies' webhooks (the main thread's tenant
 * workers), the validation webhooks unless it `validates`, large bodies, and requests whose webhook
 * reads what is held only there (HeldElsewhere: a handler's lookups, params of a collection not
 * sent here, a SubjectAccessReview or a schema a validation needs). The main thread's answering answers them (forwarded()).
 */
export interface Forwarding {
  /** `body` as read: text, or the bytes of a large one (readJsonBody), which the sender gives up. */
  to(url: string, body: string | Uint8Array): Promise<Answered>;
}

/** The operator's own routes where they are forwarded: known there (anything else is refused unread), answered by the other. */
const FORWARDED: Router = { find: () => undefined, offload: false };

export interface AnsweringOptions {
  registry: SuiteRegistry;
  /** The AdmissionPolicies, served at NAMESPACED.paths (evaluated in tenant workers, threads/policy-workers.ts); none served without it. */
  policies?: PolicyRegistry;
  /** The tenant workers' limits (the operator's flags; tests' smaller ones). */
  tenants?: Partial<PolicyWorkerPoolOptions>;
  /** Where refused requests are counted (the operator's Metrics), and each webhook's answers. */
  metrics: { countRejected(code: string): void; webhook?(suite: string, webhook: string): WebhookObserver };
  log: LogWriter;
  /** What is left to another thread (see Forwarding); without it, every route is answered here. */
  forward?: Forwarding;
  /**
   * Answering that forwards answers the suite- and policy-validation webhooks itself (the admission
   * thread: an apply is then not queued behind the main thread's reconciles), from `registry`,
   * `paramsAccess`, `schemas` and `policies`' validate, whose answers must be the main thread's
   * or HeldElsewhere (then forwarded); without it, or without `policies`, they are forwarded.
   */
  validates?: { policies?: Pick<PolicyRegistry, 'validate'> };
  /** Whether a suite's author may read the params it names; without it, suites are checked for what they say only. */
  paramsAccess?: ParamsAccessCheck;
  /** The OpenAPI schemas suites are type-checked against on apply; without it, they are not. */
  schemas?: TypeChecking;
  /** ANSWERING_LIMITS but those set here; an undefined one keeps its default. */
  limits?: Partial<AnsweringLimits>;
  /** True once the replica is shutting down: every answer then closes its connection. */
  draining?: () => boolean;
}

const ADMIT_PREFIX = '/admit/';

/** The webhooks one thread answers, by path, each request through the chain. */
export class AdmissionAnswering implements Answering {
  readonly largeBodies: { from: number; atOnce: number };
  private readonly chain: AdmissionChain;
  /** The review workers (large reviews): their quarantines reach the suites' status. */
  readonly offload: ReviewOffload;
  /** The tenant workers, where the AdmissionPolicies' webhooks are answered here. */
  tenants: PolicyWorkerPool | undefined;
  private readonly registry: SuiteRegistry;
  private readonly routes = new Map<string, Route>();
  private readonly suites: Router;
  private readonly forward: Forwarding | undefined;
  private readonly rejections: Rejections;
  private closing = false;

  constructor(options: AnsweringOptions) {
    const { registry, metrics, log } = options;
    const limits = { ...ANSWERING_LIMITS };
    for (const [key, value] of Object.entries(options.limits ?? {})) if (value !== undefined) Object.assign(limits, { [key]: value });
    this.registry = registry;
    this.rejections = { log, countRejected: (code) => metrics.countRejected(code) };
    this.forward = options.forward;
    const reviewsWaiting = limits.largeReviewsWaiting ?? 2 * limits.reviewWorkers;
    this.offload = new ReviewOffload(registry, log, { workers: limits.reviewWorkers, waiting: reviewsWaiting });
    // Large bodies being read, at most as many as the review workers may judge and hold waiting.
    this.largeBodies = { from: LARGE_BODY, atOnce: limits.reviewWorkers + reviewsWaiting };
    const draining = options.draining ?? (() => false);
    this.chain = new AdmissionChain({ offload: this.offload, log, draining: () => this.closing || draining() });
    this.suites = { find: (suite, webhook) => registry.webhook(suite, webhook), offload: true };
    this.addOperatorRoutes(options);
  }

  get webhookCount(): number {
    return this.registry.webhookCount;
  }

  /**
   * The operator's own webhooks (suite and policy validation, the AdmissionPolicies'); answering that
   * forwards leaves them to the one it forwards to, but the validation webhooks when it `validates`.
   */
  private addOperatorRoutes(options: AnsweringOptions): void {
    const { registry, paramsAccess, forward } = options;
    const forwarded = (path: string) => this.routes.set(path, { router: FORWARDED, suite: '', name: '' });
    // Counted as every webhook is (suite label empty: no suite has an empty name), so their latency shows beside the suites'.
    const observed = (name: string) => options.metrics.webhook?.('', name) ?? NO_OBSERVER;
    if (!forward || options.validates) {
      const validation = suiteValidationWebhook(registry, paramsAccess, options.schemas, observed(SUITE_VALIDATION.webhook));
      // The operator's own webhook: a suite that cannot work, or names params its author may not read, is refused on apply.
      this.routes.set(SUITE_VALIDATION.path, { router: { find: () => validation, offload: false }, suite: validation.suite, name: validation.name });
      // AdmissionExceptions need the suites and Namespaces, which every copy holds, and their writer's rights, asked where the clients are.
      const exceptions = exceptionValidationWebhook(registry, observed(EXCEPTIONS.validationWebhook), paramsAccess, options.schemas);
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
      const tenants = (this.tenants = new PolicyWorkerPool(policies, options.log, options.tenants));
      for (const type of ['Mutating', 'Validating'] as const) {
        const webhook = { ...namespacedWebhook(type, policies), admit: (request: AdmissionRequest) => tenants.admit(type, request) };
        this.routes.set(NAMESPACED.paths[type], { router: { find: () => webhook, offload: false }, suite: '', name: webhook.name });
      }
    }
  }

  /** The route of a request's URL; its query (the API server sends `?timeout=10s`) is not part of it. */
  route(url: string): Route | undefined {
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

  answer(route: Route, url: string, body: string | Uint8Array, reply: Reply): void {
    if (this.forward && (route.router === FORWARDED || typeof body !== 'string')) return this.forwardTo(this.forward, url, body, reply);
    this.dispatch(route, body, reply, url);
  }

  /** The answer to a request another thread's endpoint read (see Forwarding), as it would have been answered here. */
  forwarded(url: string, body: string | Uint8Array): Promise<Answered> {
    return new Promise((resolve) => {
      const reply: Reply = { send: (status, json, close) => resolve({ status, json, close: close || this.closing }) };
      const route = this.route(url);
      if (!route) return sendFailure(new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `POST ${url}`), reply, false, this.rejections);
      this.dispatch(route, body, reply, url);
    });
  }

  /** Lets the review and tenant workers go (the endpoint has answered what was in flight). */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([this.offload.close(), this.tenants?.close()]);
  }

  private forwardTo(forward: Forwarding, url: string, body: string | Uint8Array, reply: Reply): void {
    forward.to(url, body).then(
      ({ status, json, close }) => reply.send(status, json, close),
      (err: unknown) => sendFailure(err, reply, false, this.rejections),
    );
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
    else sendFailure(err, reply, false, this.rejections);
  }
}
