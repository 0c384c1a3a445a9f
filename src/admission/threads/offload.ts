/**
 * Large reviews judged off the event loop. Parsing and judging an object of megabytes takes
 * hundreds of milliseconds (measured: 3 MiB with 266k labels, about 100 ms to parse and 250 ms
 * to judge); on the one event loop, a few clients sending such objects back to back held every
 * other admission for seconds (bench/starvation.ts). A body of LARGE_BODY or more is handed, as
 * its bytes (never decoded here), to a worker thread that keeps its own copy of the registry (the same suites, compiled the
 * same way) and asks this thread for what it cannot know: the namespace, LimitRanges and params
 * of the request (from the watch caches), `authorizer` checks and RESTMappings. It answers a Decision, which
 * the server encodes like any other. Owns the worker and its messages; what a Decision is, and
 * how it is sent, belong to the registry and the server.
 */
import { Worker } from 'node:worker_threads';
import { workerEntry } from '../../app-files.ts';
import { answerQuestion, type Question, type QuestionAnswer } from './main-questions.ts';
import { markFailed, type AdmissionRequest, type Decision } from '../../api/review.ts';
import type { AdmissionSuite, ParamsRef } from '../../api/types.ts';
import type { ParamsSelection } from '../../api/params.ts';
import { LookupNotReady, type ClusterView, type LookupKind } from '../../handlers/handler.ts';
import { LOOKUP_READY_WAIT_MS } from '../../registry/compile.ts';
import type { LogWriter } from '../../log.ts';
import type { SuiteRegistry } from '../../registry/registry.ts';
import { ReviewError, type ReviewErrorKey } from '../errors.ts';

/** Bodies of at least this many bytes are judged in the worker: far above any typical object. */
export const LARGE_BODY = 256 * 1024;

/** A body left undecoded for the worker: its bytes, as read. */
export class LargeBody {
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }
}

/** What the worker needs of the cluster for one review. */
export interface ReviewContext {
  namespaceObject?: Record<string, unknown>;
  limitRanges: Record<string, unknown>[];
  /** The params objects the webhook's params select for the review's namespace. */
  params?: ParamsSelection;
  /** The webhook's handler's lookups (Pods of the request's namespace only); null for a kind not yet synced. */
  lookups?: Partial<Record<LookupKind, Record<string, unknown>[] | null>>;
}

export type ToWorker =
  | { type: 'suite'; suite: AdmissionSuite }
  | { type: 'removed'; name: string }
  | { type: 'review'; id: number; suite: string; webhook: string; body: Uint8Array }
  | { type: 'context'; id: number; context: ReviewContext }
  | QuestionAnswer;

export type FromWorker =
  | { type: 'needs'; id: number; namespace?: string; params?: ParamsRef; lookups?: LookupKind[] }
  | Question
  | { type: 'answer'; id: number; apiVersion: string; uid: string; operation: AdmissionRequest['operation']; decision: Decision; failed: boolean }
  | { type: 'failed'; id: number; key: ReviewErrorKey; message: string };

/** The worker stopped (crashed or ran out of memory) with the review in it. */
export class WorkerLostError extends Error {}

export interface OffloadAnswer {
  apiVersion: string;
  uid: string;
  operation: AdmissionRequest['operation'];
  decision: Decision;
}

interface Pending {
  resolve(answer: OffloadAnswer): void;
  reject(err: Error): void;
}

const WORKER = workerEntry('offload-worker', import.meta.url);

export class ReviewOffload {
  private readonly registry: SuiteRegistry;
  private readonly log: LogWriter;
  private readonly suites = new Map<string, AdmissionSuite>();
  private readonly pending = new Map<number, Pending>();
  private worker: Worker | undefined;
  private nextId = 1;
  private closed = false;

  constructor(registry: SuiteRegistry, log: LogWriter) {
    this.registry = registry;
    this.log = log;
    registry.subscribe((change) => {
      if ('suite' in change) this.suites.set(change.suite.metadata.name, change.suite);
      else this.suites.delete(change.removed);
      this.worker?.postMessage(('suite' in change ? { type: 'suite', suite: change.suite } : { type: 'removed', name: change.removed }) satisfies ToWorker);
    });
  }

  /** The webhook's answer to the review in `body`; rejects with a ReviewError for a body that is not one. */
  admit(suite: string, webhook: string, body: Uint8Array): Promise<OffloadAnswer> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Copied, not transferred: if the worker is lost, the server decodes the body to answer it.
      this.started().postMessage({ type: 'review', id, suite, webhook, body } satisfies ToWorker);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER, { workerData: { authorizer: this.registry.context.authorizer !== undefined, mapper: this.registry.context.mapper !== undefined } });
    // The worker does not keep the process alive; the server's sockets do.
    worker.unref();
    for (const suite of this.suites.values()) worker.postMessage({ type: 'suite', suite } satisfies ToWorker);
    worker.on('message', (message: FromWorker) => this.onMessage(worker, message));
    worker.on('error', (err) => this.lost(worker, err));
    worker.on('exit', (code) => this.lost(worker, new Error(`the review worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Every review in the lost worker fails with WorkerLostError (the server answers it by failurePolicy); the next one starts a new worker. */
  private lost(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    if (!this.closed) this.log.error('the review worker stopped; large reviews in it are answered by their failurePolicy', { error: err.message });
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.reject(new WorkerLostError(`the review worker stopped: ${err.message}`));
    }
  }

  private onMessage(worker: Worker, message: FromWorker): void {
    switch (message.type) {
      case 'needs': {
        const { view, params } = this.registry.context;
        void lookupsFor(view, message.lookups ?? [], message.namespace).then((lookups) => {
          const context: ReviewContext = {
            namespaceObject: message.namespace ? view.namespace(message.namespace) : undefined,
            limitRanges: message.namespace ? view.limitRanges(message.namespace) : [],
            params: message.params ? params.select(message.params, message.namespace) : undefined,
            ...(lookups ? { lookups } : {}),
          };
          worker.postMessage({ type: 'context', id: message.id, context } satisfies ToWorker);
        });
        return;
      }
      case 'authorize':
      case 'map':
        answerQuestion(this.registry.context, message, (answer) => worker.postMessage(answer satisfies ToWorker));
        return;
      case 'answer': {
        const pending = this.take(message.id);
        // (the mark of an answer by failurePolicy is not sent with the object: it is set again here)
        const { apiVersion, uid, operation, decision, failed } = message;
        pending?.resolve({ apiVersion, uid, operation, decision: failed ? markFailed(decision) : decision });
        return;
      }
      case 'failed': {
        const pending = this.take(message.id);
        pending?.reject(ReviewError.sent(message.key, message.message));
        return;
      }
    }
  }

  private take(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    this.pending.delete(id);
    return pending;
  }
}

/**
 * The lookups a handler reads, from this thread's caches, waiting for unsynced ones as a request
 * judged here would (the worker's view then answers a kind still unsynced as not ready).
 */
async function lookupsFor(view: ClusterView, kinds: LookupKind[], namespace: string | undefined): Promise<ReviewContext['lookups']> {
  if (kinds.length === 0) return undefined;
  const read = () => {
    const out: NonNullable<ReviewContext['lookups']> = {};
    let missing = false;
    for (const kind of kinds) {
      try {
        out[kind] = view.list(kind, kind === 'Pod' ? (namespace ?? '') : undefined);
      } catch (err) {
        if (!(err instanceof LookupNotReady)) throw err;
        out[kind] = null;
        missing = true;
      }
    }
    return { out, missing };
  };
  const first = read();
  if (!first.missing || !view.whenReady) return first.out;
  await view.whenReady(kinds, LOOKUP_READY_WAIT_MS);
  return read().out;
}
