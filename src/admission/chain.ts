/**
 * admission: the per-request chain, written once and in order (as Kyverno's server.go chains its
 * handlers), for every webhook served, the operator's own suite validation included:
 *   1. decode  the body into an AdmissionReview (review.ts), whose uid can be echoed (decode());
 *              a large one stays bytes for step 3;
 *   2. route   to the webhook the path names (the Router answering.ts finds for it: the registry's, or suite validation);
 *   3. offload a large body to a review worker (threads/offload.ts), which decodes and decides it off this event loop;
 *   4. decide  by the webhook: synchronous for almost every webhook (answered in the same tick,
 *              with no promise around it), a Promise while `authorizer` checks are asked;
 *   5. failurePolicy for what the chain itself lost (the worker): the webhook's, by the same
 *              internalError a compiled webhook answers its handler's throws with (registry/compile.ts);
 *   6. encode  the response, counted and logged (one line per denial and per error, what the
 *              request brought in it capped as error messages are), its connection closed while the replica drains;
 *              what a rule in shadow mode (Warn, Audit) let through goes to the webhook's observer (audit/live.ts).
 * A ReviewError thrown at any step is a transport failure, answered as such (review-codec.ts' sendFailure).
 * Knows no webhook's domain and no transport beyond the reply it writes to.
 */
import { failureDetail, outcomeOf, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import { exceptionsNamed } from '../api/exceptions.ts';
import type { LogWriter } from '../log.ts';
import { internalError, type CompiledWebhook } from '../registry/compile.ts';
import { capped, ECHO_LIMIT, REVIEW_ERRORS, ReviewError } from './errors.ts';
import { LargeBody, type ReviewOffload, WorkerLostError } from './threads/offload.ts';
import { decodeReview, encodeReviewText, parseJson } from './review-codec.ts';
import { utf8 } from './body.ts';
import { shadowed } from '../audit/live.ts';

/**
 * Step 1: the review in `body` (decodeReview), refused when its uid is too long to echo: the
 * answer must carry it whole, and the API server's are UUIDs (36 characters). Also the review
 * worker's decoding.
 */
export function decode(body: unknown): { apiVersion: string; request: AdmissionRequest } {
  const decoded = decodeReview(body);
  const { uid } = decoded.request;
  if (uid.length > ECHO_LIMIT) throw new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, `request.uid is ${uid.length} characters long, more than ${ECHO_LIMIT}: ${uid}`);
  return decoded;
}

/** What the chain needs of a webhook. */
export type ServedWebhook = Pick<CompiledWebhook, 'suite' | 'name' | 'failurePolicy' | 'admit' | 'observer' | 'offload'>;

/** Step 2: the webhooks one route serves. */
export interface Router {
  find(suite: string, webhook: string): ServedWebhook | undefined;
  /** Whether its large bodies go to the review worker (whose registry holds the suites' webhooks only). */
  offload: boolean;
}

/** Where the chain writes its answer: the endpoint's response to this request (endpoint.ts), or a forwarded request's answer. */
export interface Reply {
  /** Sends the JSON text `json` with HTTP `status`; `close` closes the connection after it. */
  send(status: number, json: string, close: boolean): void;
}

export interface ChainOptions {
  offload: ReviewOffload;
  log: LogWriter;
  /** True once the replica is shutting down: every answer then closes its connection. */
  draining: () => boolean;
}

export class AdmissionChain {
  private readonly offload: ReviewOffload;
  private readonly log: LogWriter;
  private readonly draining: () => boolean;

  constructor(options: ChainOptions) {
    this.offload = options.offload;
    this.log = options.log;
    this.draining = options.draining;
  }

  /** One request through every step; undefined when it was answered synchronously. */
  handle(router: Router, suite: string, name: string, body: unknown, reply: Reply): Promise<void> | undefined {
    const started = performance.now();
    if (body instanceof LargeBody) {
      if (router.offload) {
        const webhook = this.route(router, suite, name);
        // A handler module's webhook (offload: false) is judged here: the review worker does not load modules.
        if (webhook.offload !== false) return this.offloaded(webhook, body, reply, started);
      }
      body = parseJson(utf8(body.bytes));
    }
    const { apiVersion, request } = decode(body);
    const webhook = this.route(router, suite, name);
    const decision = webhook.admit(request);
    if (decision instanceof Promise) return decision.then((d) => this.answer(reply, started, apiVersion, request, webhook, d));
    this.answer(reply, started, apiVersion, request, webhook, decision);
    return undefined;
  }

  private route(router: Router, suite: string, name: string): ServedWebhook {
    const webhook = router.find(suite, name);
    if (!webhook) throw new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `/admit/${suite}/${name}`);
    return webhook;
  }

  private async offloaded(webhook: ServedWebhook, body: LargeBody, reply: Reply, started: number): Promise<void> {
    try {
      const judged = await this.offload.admit(webhook.suite, webhook.name, body.bytes);
      // The review worker counts nothing itself: the exceptions that let it through are named in its answer, and counted here as a request judged here is.
      for (const { namespace, name } of exceptionsNamed(judged.decision)) webhook.observer.excepted?.(namespace, name);
      this.answer(reply, started, judged.apiVersion, judged, webhook, judged.decision);
    } catch (err) {
      if (!(err instanceof WorkerLostError)) throw err;
      // The worker is gone: the request is answered here, by the webhook's failurePolicy.
      const { apiVersion, request } = decode(parseJson(utf8(body.bytes)));
      this.answer(reply, started, apiVersion, request, webhook, internalError(err, webhook.failurePolicy));
    }
  }

  private answer(reply: Reply, started: number, apiVersion: string, request: Pick<AdmissionRequest, 'uid' | 'operation'> & Partial<AdmissionRequest>, webhook: ServedWebhook, decision: Decision): void {
    const { uid, operation } = request;
    const outcome = outcomeOf(decision);
    webhook.observer.answered(operation, outcome, (performance.now() - started) / 1e3, webhook.failurePolicy);
    // What a rule being rolled out (Warn, Audit) would have denied: kept with the audit's results.
    if (webhook.observer.shadowed && request.kind && shadowed(request, decision)) webhook.observer.shadowed(request as AdmissionRequest, decision);
    // One line per denial and per error (the request's uid finds it in the API server's audit log;
    // decode() bounds it). The denial may quote the request (a name, a value): capped.
    if (outcome === 'denied' || outcome === 'error') {
      this.log.info(outcome === 'error' ? 'answered by failurePolicy' : 'denied', {
        uid,
        suite: webhook.suite,
        webhook: webhook.name,
        operation,
        decision: outcome,
        allowed: decision.allowed,
        denial: decision.message === undefined ? undefined : capped(decision.message),
        // A handler's backend that failed: why, here only (its denial is a fixed message).
        ...(failureDetail(decision) !== undefined ? { error: capped(failureDetail(decision)!) } : {}),
      });
    }
    // While draining, the API server's keep-alive connections are closed after an answer rather
    // than under a request in flight, so its next call opens a connection to another replica.
    reply.send(200, encodeReviewText(apiVersion, uid, decision), this.draining());
  }
}
