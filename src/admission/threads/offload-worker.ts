/**
 * The review worker (see offload.ts): parses a large review, finds its webhook in a registry of
 * its own, asks the main thread for the request's namespace, LimitRanges and params, judges it,
 * and sends back the Decision. One review at a time (the main thread sends the next once it has
 * the answer), so the context it was given is the one its rules read. Says which suite it is
 * compiling, so that one that kills it is known (offload.ts quarantines it). Makes no API call and opens no socket; `authorizer` checks and RESTMappings go to the main thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { MainQuestions } from './main-questions.ts';
import { followedFailurePolicy } from '../../api/admission-review.ts';
import { LookupNotReady, type ClusterView } from '../../handlers/handler.ts';
import type { ParamsSource } from '../../registry/compile.ts';
import { SuiteRegistry } from '../../registry/registry.ts';
import { ExceptionStore } from '../../registry/exceptions.ts';
import { tuneHeapForAdmission } from '../v8-tuning.ts';
import { REVIEW_ERRORS, ReviewError } from '../errors.ts';
import { decode } from '../chain.ts';
import { utf8 } from '../body.ts';
import type { FromWorker, ReviewContext, ToWorker } from './offload.ts';
import { signals } from '../../workers/kit.ts';

const port = parentPort!;
const send = (message: FromWorker) => port.postMessage(message);
const kit = signals(send);

/** The context of the review being judged; the view and params read it. */
let current: { namespace?: string; context: ReviewContext } = { context: { limitRanges: [] } };
const view: ClusterView = {
  namespace: (name) => (name === current.namespace ? current.context.namespaceObject : undefined),
  limitRanges: (namespace) => (namespace === current.namespace ? (current.context.limitRanges as Record<string, any>[]) : []),
  // What the main thread sent for this review: its handler's kinds (Pods of the request's namespace).
  list: (kind, namespace) => {
    const objects = current.context.lookups?.[kind];
    if (!objects) throw new LookupNotReady(kind);
    if (kind === 'Pod' && namespace !== current.namespace) return [];
    return (namespace === undefined ? objects : objects.filter((o) => (o.metadata as { namespace?: string } | undefined)?.namespace === namespace)) as Record<string, any>[];
  },
};
const params: ParamsSource = {
  watch: () => undefined,
  select: () => current.context.params ?? { state: 'pending', reason: 'params were not sent to the review worker' },
};

let reviewId = 0;
const questions = new MainQuestions(send, () => reviewId);
const { authorizer: asksAuthorizer, mapper: asksMapper } = workerData as { authorizer: boolean; mapper: boolean };
const authorizer = asksAuthorizer ? questions.authorizer : undefined;
// No operatorNamespace: suites it refuses are not served, so the main thread sends no review for them.
const mapper = asksMapper ? questions.mapper : undefined;

tuneHeapForAdmission();
/** The AdmissionExceptions, as the thread that offloads holds them. */
const exceptions = new ExceptionStore();
const registry = new SuiteRegistry({ view, params, authorizer, mapper, exceptions });
let waitingContext: ((context: ReviewContext) => void) | undefined;
const queue: Extract<ToWorker, { type: 'review' }>[] = [];
let busy = false;

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'suite': {
      const { name } = message.suite.metadata;
      // Said first: if compiling it kills the worker, the main thread knows which suite did.
      kit.suspect(name);
      try {
        registry.sync(message.suite);
      } catch (err) {
        // Not judged here at all (not even an earlier generation): its large reviews are answered by their failurePolicy.
        try {
          registry.remove(name);
        } finally {
          kit.cleared(name);
          send({ type: 'compile-failed', name, message: String((err as Error)?.message ?? err).split('\n')[0]! });
        }
        return;
      }
      kit.cleared(name);
      return;
    }
    case 'removed':
      registry.remove(message.name);
      return;
    case 'exception':
      exceptions.apply(message.change);
      return;
    case 'review':
      queue.push(message);
      if (!busy) void drain();
      return;
    case 'context':
      waitingContext?.(message.context);
      return;
    default:
      questions.answered(message);
  }
});

async function drain(): Promise<void> {
  busy = true;
  for (let review = queue.shift(); review; review = queue.shift()) {
    reviewId = review.id;
    try {
      const answer = await judge(review);
      send({ type: 'answer', id: review.id, ...answer });
    } catch (err) {
      const error = err instanceof ReviewError ? err : new ReviewError(REVIEW_ERRORS.NOT_A_REVIEW, `internal error: ${(err as Error).message}`);
      send({ type: 'failed', id: review.id, key: error.key, message: error.message });
    }
  }
  busy = false;
}

async function judge(review: Extract<ToWorker, { type: 'review' }>): Promise<Omit<Extract<FromWorker, { type: 'answer' }>, 'type' | 'id'>> {
  let body: unknown;
  try {
    body = JSON.parse(utf8(review.body));
  } catch (err) {
    throw new ReviewError(REVIEW_ERRORS.MALFORMED_JSON, (err as Error).message);
  }
  const { apiVersion, request } = decode(body);
  const webhook = registry.webhook(review.suite, review.webhook);
  if (!webhook) throw new ReviewError(REVIEW_ERRORS.UNKNOWN_WEBHOOK, `/admit/${review.suite}/${review.webhook}`);
  const namespace = request.namespace || undefined;
  const context = await new Promise<ReviewContext>((resolve) => {
    waitingContext = resolve;
    send({ type: 'needs', id: review.id, namespace, params: registry.paramsOf(review.suite, review.webhook), lookups: webhook.lookups });
  });
  waitingContext = undefined;
  current = { namespace, context };
  const decision = await webhook.admit(request);
  return { apiVersion, uid: request.uid, operation: request.operation, decision, failed: followedFailurePolicy(decision) };
}
