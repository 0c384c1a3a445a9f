/**
 * Large reviews (LARGE_BODY or more) judged off the event loop, in review workers, bounded in
 * number and in waiting. Owns the workers and their messages; what a Decision is, and how it is
 * sent, belong to the registry and the server. Why: docs/adr/0026-large-reviews-in-review-workers.md
 */
import os from 'node:os';
import { workerEntry } from '../../app-files.ts';
import { answerQuestion, type Question, type QuestionAnswer } from './main-questions.ts';
import { markFailed, type AdmissionRequest, type Decision } from '../../api/admission-review.ts';
import type { AdmissionSuite, ParamsRef } from '../../api/types.ts';
import type { ParamsSelection } from '../../api/params.ts';
import { LookupNotReady, type ClusterView, type LookupKind } from '../../handlers/handler.ts';
import { LOOKUP_READY_WAIT_MS } from '../../registry/compile.ts';
import type { LogWriter } from '../../log.ts';
import type { SuiteRegistry } from '../../registry/registry.ts';
import type { ExceptionChange } from '../../registry/exceptions.ts';
import { REVIEW_ERRORS, ReviewError, type ReviewErrorKey } from '../errors.ts';
import { PoolRestarts, Quarantine, type BackoffOptions, type WorkerWatcher } from '../../workers/restarts.ts';
import { StateLog, WorkerThread, type Death, type KitSignal } from '../../workers/kit.ts';

/** Bodies of at least this many bytes are judged in the worker: far above any typical object. */
export const LARGE_BODY = 256 * 1024;

/**
 * Review workers by default: one per CPU the process may run on, at most 2 (two fit the shipped
 * 1Gi limit); --review-workers sets it (with the memory limit). Why: docs/adr/0027-two-review-workers.md
 */
export const REVIEW_WORKERS = Math.max(1, Math.min(os.availableParallelism(), 2));

/** How many reviews may be judged and wait; see ReviewOffload. */
export interface OffloadLimits {
  workers: number;
  waiting: number;
}

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
  | { type: 'exception'; change: ExceptionChange }
  | { type: 'review'; id: number; suite: string; webhook: string; body: Uint8Array }
  | { type: 'context'; id: number; context: ReviewContext }
  | QuestionAnswer;

export type FromWorker =
  /** About to compile the suite (its name as the key): if the worker dies before it says compiled, the suite is the suspect. */
  | KitSignal
  /** Compiling the suite threw in the worker: it is quarantined (it would throw again). */
  | { type: 'compile-failed'; name: string; message: string }
  | { type: 'needs'; id: number; namespace?: string; params?: ParamsRef; lookups?: LookupKind[] }
  | Question
  | { type: 'answer'; id: number; apiVersion: string; uid: string; operation: AdmissionRequest['operation']; decision: Decision; failed: boolean }
  | { type: 'failed'; id: number; key: ReviewErrorKey; message: string };

/** The worker stopped (crashed or ran out of memory) with the review in it. */
export class WorkerLostError extends Error {}

/** The review's suite is quarantined from the review workers: answered, as a lost one is, by its webhook's failurePolicy. */
export class SuiteQuarantinedError extends WorkerLostError {}

/** How the workers are started again, and from which entry (tests wrap the real one). */
export interface OffloadOptions {
  restart?: Partial<BackoffOptions>;
  entry?: URL;
}

export interface OffloadAnswer {
  apiVersion: string;
  uid: string;
  operation: AdmissionRequest['operation'];
  decision: Decision;
}

/** A review given to the offload: in a worker, or waiting for one. */
interface Review {
  suite: string;
  /** The suite generation it was sent to be judged by (its quarantine key). */
  key: string;
  webhook: string;
  body: Uint8Array;
  resolve(answer: OffloadAnswer): void;
  reject(err: Error): void;
}

type ReviewThread = WorkerThread<ToWorker, FromWorker>;

/** A started worker and the review it judges (none while idle). */
interface ReviewWorker {
  worker: ReviewThread;
  judging: Review | undefined;
}

const WORKER = workerEntry('offload-worker', import.meta.url);

/**
 * A body of LARGE_BODY or more is handed, as
 * its bytes (never decoded here), to a review worker: a worker thread that keeps its own copy of the registry (the same suites, compiled the
 * same way) and asks this thread for what it cannot know: the namespace, LimitRanges and params
 * of the request (from the watch caches), `authorizer` checks and RESTMappings. It answers a Decision, which
 * the server encodes like any other. Up to `workers` of them (started as reviews need them), each
 * judging one review at a time; reviews beyond them wait here, at most `waiting`, and a review
 * beyond those is refused at once (BUSY, 429), so what large reviews hold is bounded rather than
 * queued without end. A worker that dies is started again, always, with backoff
 * (src/workers/kit.ts, restarts.ts); the suite generation it was compiling when it died is the suspect, and one
 * that killed a worker QUARANTINE_AFTER times (or whose compiling threw there) is quarantined: no longer sent to a worker, its large reviews answered by their
 * webhook's failurePolicy, until it changes; `quarantined` says so to the suite's status.
 */
export class ReviewOffload {
  private readonly registry: SuiteRegistry;
  private readonly log: LogWriter;
  private readonly limits: OffloadLimits;
  private readonly suites = new Map<string, AdmissionSuite>();
  private readonly pool: ReviewWorker[] = [];
  /** Reviews waiting for a worker, oldest first; at most limits.waiting. */
  private readonly waiting: Review[] = [];
  /** What every worker holds (the suites, as sendSuite says them), replayed to each as it starts. */
  private readonly state = new StateLog<ToWorker>();
  private closed = false;
  private readonly entry: URL;
  private readonly quarantine = new Quarantine();
  private readonly restarts: PoolRestarts;
  private readonly watchers: WorkerWatcher[] = [];

  constructor(registry: SuiteRegistry, log: LogWriter, limits: OffloadLimits = { workers: REVIEW_WORKERS, waiting: 2 * REVIEW_WORKERS }, options: OffloadOptions = {}) {
    this.registry = registry;
    this.log = log;
    this.limits = { workers: Math.max(1, limits.workers), waiting: Math.max(0, limits.waiting) };
    this.entry = options.entry ?? WORKER;
    this.restarts = new PoolRestarts(options.restart, () => this.restarted());
    registry.subscribe((change) => {
      if ('suite' in change) {
        const { name } = change.suite.metadata;
        this.suites.set(name, change.suite);
        const key = suiteKey(change.suite);
        // Older generations (and another suite once under the name) are not coming back.
        this.quarantine.forget((k) => k.startsWith(`${name}\n`) && k !== key);
        this.sendSuite(change.suite);
      } else {
        this.suites.delete(change.removed);
        this.quarantine.forget((k) => k.startsWith(`${change.removed}\n`));
        this.state.drop(change.removed, { type: 'removed', name: change.removed });
      }
    });
    // The AdmissionExceptions the registry's webhooks ask, copied as they change (a new worker gets them all as it starts).
    registry.context.exceptions?.subscribe((change) => this.state.send({ type: 'exception', change }));
  }

  /** Tells `watcher` of each worker's death and each suite quarantined. */
  watch(watcher: WorkerWatcher): void {
    this.watchers.push(watcher);
  }

  /** Why this generation of the suite is not sent to the review workers (its large reviews answered by failurePolicy); undefined when it is. */
  quarantined(name: string, uid: string | undefined, generation: number): string | undefined {
    return this.quarantine.why(suiteKey({ metadata: { name, uid, generation } }));
  }

  /** What the workers are told of a suite: a quarantined generation is not sent (nor an earlier one kept: it is removed there). */
  private sendSuite(suite: AdmissionSuite): void {
    const { name } = suite.metadata;
    if (this.quarantine.why(suiteKey(suite))) this.state.drop(name, { type: 'removed', name });
    else this.state.put(name, { type: 'suite', suite });
  }

  /**
   * The webhook's answer to the review in `body`; rejects with a ReviewError for a body that is not
   * one, and with BUSY when every worker is judging and as many reviews wait as may.
   */
  admit(suite: string, webhook: string, body: Uint8Array): Promise<OffloadAnswer> {
    return new Promise((resolve, reject) => {
      const current = this.suites.get(suite);
      const key = current ? suiteKey(current) : `${suite}\n`;
      const held = this.quarantine.why(key);
      if (held) return reject(new SuiteQuarantinedError(`suite ${suite} is quarantined from the review workers: ${held}`));
      const review: Review = { suite, key, body, webhook, resolve, reject };
      const free = this.free();
      if (free) return this.judge(free, review);
      if (this.waiting.length >= this.limits.waiting) {
        return reject(new ReviewError(REVIEW_ERRORS.BUSY, `${this.pool.length} review workers judging, ${this.waiting.length} waiting`));
      }
      this.waiting.push(review);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.restarts.close();
    for (const review of this.waiting.splice(0)) review.reject(new WorkerLostError('the server is closing'));
    await Promise.all(this.pool.map(({ worker }) => worker.terminate()));
  }

  /** An idle worker, else a new one while the pool has room (and no backoff's wait runs). */
  private free(): ReviewWorker | undefined {
    for (const slot of this.pool) if (!slot.judging) return slot;
    return this.pool.length < this.limits.workers && !this.restarts.waiting ? this.start() : undefined;
  }

  /** The backoff's wait after a death is over: a worker is started again, and given the oldest waiting review. */
  private restarted(): void {
    if (this.closed || this.pool.length >= this.limits.workers) return;
    const slot = this.start();
    const next = this.waiting.shift();
    if (next) this.judge(slot, next);
  }

  private judge(slot: ReviewWorker, review: Review): void {
    slot.judging = review;
    const { suite, webhook, body } = review;
    // Copied, not transferred: if the worker is lost, the server decodes the body to answer it.
    slot.worker.call({ type: 'review', suite, webhook, body }).reply.then(
      (message) => {
        this.finished(slot, review);
        if (message.type === 'answer') {
          // (the mark of an answer by failurePolicy is not sent with the object: it is set again here)
          const { apiVersion, uid, operation, decision, failed } = message;
          review.resolve({ apiVersion, uid, operation, decision: failed ? markFailed(decision) : decision });
        } else if (message.type === 'failed') review.reject(ReviewError.sent(message.key, message.message));
      },
      (err: Error) => review.reject(new WorkerLostError(`the review worker stopped: ${err.message}`)),
    );
  }

  /** The worker answered its review: the oldest waiting one is next. */
  private finished(slot: ReviewWorker, review: Review): void {
    if (slot.judging !== review) return;
    slot.judging = undefined;
    const next = this.waiting.shift();
    if (next) this.judge(slot, next);
  }

  private start(): ReviewWorker {
    const slot = { judging: undefined } as ReviewWorker;
    slot.worker = new WorkerThread<ToWorker, FromWorker>({
      entry: this.entry,
      workerData: { authorizer: this.registry.context.authorizer !== undefined, mapper: this.registry.context.mapper !== undefined },
      state: this.state,
      started: (post) => {
        for (const exception of this.registry.context.exceptions?.held() ?? []) post({ type: 'exception', change: { exception } });
      },
      replies: ['answer', 'failed'],
      receive: (message) => this.onMessage(slot, message),
      describe: (cause) => ('error' in cause ? cause.error.message : 'exitCode' in cause ? `the review worker exited (${cause.exitCode})` : cause.stopped),
      died: (death) => this.lost(slot, death),
    });
    this.restarts.started();
    this.pool.push(slot);
    return slot;
  }

  /**
   * The review in a lost worker fails with WorkerLostError (the server answers it by failurePolicy);
   * the suite it was compiling, else the one it was judging, counts a death, and is quarantined at
   * the last; a new worker starts after the backoff's wait (another idle one takes a waiting review now).
   */
  private lost(slot: ReviewWorker, death: Death<never>): void {
    const index = this.pool.indexOf(slot);
    if (index === -1) return;
    this.pool.splice(index, 1);
    // (its review was rejected by the kit, with WorkerLost: judge() answers it by failurePolicy)
    slot.judging = undefined;
    if (this.closed) return;
    // Only a death while compiling blames the suite: a review that kills its worker is the request's
    // doing, and anyone can POST one to the endpoint (it asks no credential), so blaming its suite
    // would let any client quarantine any suite. Such deaths are logged, counted and backed off.
    const suspect = death.suspect !== undefined ? this.suites.get(death.suspect) : undefined;
    const blamed = suspect && suiteKey(suspect);
    const wait = this.restarts.died();
    this.log.error('a review worker stopped; the large review in it is answered by its failurePolicy', { error: death.why, suite: blamed && suspect?.metadata.name, inMs: wait, deathsInARow: this.restarts.deaths });
    for (const watcher of this.watchers) watcher.died?.('review');
    if (blamed && suspect && this.quarantine.died(blamed, `a review worker stopped (${death.why}) while compiling generation ${suspect.metadata.generation ?? 0}`)) {
      this.putInQuarantine(suspect);
    }
    const free = this.pool.find((s) => !s.judging);
    const next = free && this.waiting.shift();
    if (free && next) this.judge(free, next);
  }

  /** The suite's generation is quarantined now: not sent to the workers, its waiting reviews answered by failurePolicy. */
  private putInQuarantine(suite: AdmissionSuite): void {
    const name = suite.metadata.name;
    const why = this.quarantine.why(suiteKey(suite))!;
    this.log.error('suite quarantined: it stopped a review worker again and again; its large reviews are answered by their failurePolicy until it changes', { suite: name, generation: suite.metadata.generation, why });
    this.state.drop(name, { type: 'removed', name });
    for (const review of this.waiting.filter((r) => r.suite === name)) {
      this.waiting.splice(this.waiting.indexOf(review), 1);
      review.reject(new SuiteQuarantinedError(`suite ${name} is quarantined from the review workers: ${why}`));
    }
    for (const watcher of this.watchers) watcher.quarantined?.('review', name);
  }

  private onMessage(slot: ReviewWorker, message: Exclude<FromWorker, KitSignal>): void {
    const { worker } = slot;
    switch (message.type) {
      case 'compile-failed': {
        const suite = this.suites.get(message.name);
        if (!suite || this.quarantine.why(suiteKey(suite))) return;
        this.quarantine.hold(suiteKey(suite), `compiling it threw in a review worker: ${message.message}`);
        this.putInQuarantine(suite);
        return;
      }
      case 'needs': {
        const { view, params } = this.registry.context;
        void lookupsFor(view, message.lookups ?? [], message.namespace).then((lookups) => {
          const context: ReviewContext = {
            namespaceObject: message.namespace ? view.namespace(message.namespace) : undefined,
            limitRanges: message.namespace ? view.limitRanges(message.namespace) : [],
            params: message.params ? params.select(message.params, message.namespace) : undefined,
            ...(lookups ? { lookups } : {}),
          };
          worker.post({ type: 'context', id: message.id, context });
        });
        return;
      }
      case 'authorize':
      case 'map':
        answerQuestion(this.registry.context, message, (answer) => worker.post(answer));
        return;
    }
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

/** A suite generation as a quarantine key: its name first (a suite removed forgets its keys by it). */
function suiteKey(suite: { metadata: { name: string; uid?: string; generation?: number } }): string {
  const { name, uid, generation } = suite.metadata;
  return `${name}\n${uid ?? ''}\n${generation ?? 0}`;
}
