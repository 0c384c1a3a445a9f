/**
 * Where a handler module's handlers run: in a worker thread of the module's own (handler-worker.ts),
 * never on the main thread nor the admission thread. Owns the workers and their messages; what a
 * suite may name is the registry's. Why: docs/adr/0028-handler-modules-in-workers.md
 */
import { workerEntry } from '../app-files.ts';
import type { AdmissionRequest, Decision } from '../api/admission-review.ts';
import type { ClusterView, ConfigContext, Handler, LookupKind } from '../handlers/handler.ts';
import type { LogWriter } from '../log.ts';
import type { LookupChange } from '../apiserver/lookups.ts';
import { configChecks, type LoadedHandler } from './modules.ts';
import type { BackoffOptions } from '../workers/restarts.ts';
import { CallTimeout, Restarting, WorkerThread, type Death, type KitSignal } from '../workers/kit.ts';

/** What a handler reads of the cluster, sent with each request. */
export interface HandlerContext {
  namespace?: string;
  namespaceObject?: Record<string, any>;
  limitRanges: Record<string, any>[];
  lookups: Partial<Record<LookupKind, Record<string, any>[]>>;
}

export type ToHandlerWorker =
  { type: 'run'; id: number; handler: string; side: 'validate' | 'mutate'; request: AdmissionRequest; config: SentConfig; context: HandlerContext } | { type: 'ping'; id: number } | { type: 'lookup'; change: LookupChange };

/** A suite's config as sent to the worker: numbered (parsed there once per number), as given, and where it was compiled. */
export interface SentConfig {
  id: number;
  raw: Record<string, unknown>;
  context: ConfigContext;
}

export type FromHandlerWorker =
  | { type: 'answer'; id: number; decision: Decision }
  | { type: 'error'; id: number; message: string }
  | { type: 'pong'; id: number }
  /** About to run the request's side (its id as the key): if the worker dies before it answers, this run is the suspect. */
  | KitSignal;

/**
 * Why a request was answered by failurePolicy: the handler threw or rejected, ran past its budget,
 * or its worker was stopped under it (or is being started again).
 */
export type FailureReason = 'error' | 'timeout' | 'lost';

/**
 * The old generation a module's worker may grow to: a handler that leaks (or a copy of a kind
 * larger than this) stops its own worker (its requests answered by failurePolicy), not the
 * operator, whose shipped memory limit is 1Gi.
 */
export const MODULE_HEAP_MB = 256;

/** How long a worker whose handler ran past its budget has to answer a ping before it is stopped. */
export const PROBE_MS = 100;

const WORKER = workerEntry('handler-worker', import.meta.url);

export interface RunnerOptions {
  budgetMs: number;
  log: LogWriter;
  /** Counts a request answered by failurePolicy (the operator's metrics). */
  failed?(handler: string, reason: FailureReason): void;
  /** The heap a module's worker may grow to, in MB (MODULE_HEAP_MB by default); past it the worker is stopped, as a blocked one is. */
  maxHeapMb?: number;
  /** The operator's lookup caches, copied into each worker (but Pods); without them, each request is sent what it may read. */
  lookups?: { subscribe(listener: (change: LookupChange) => void): () => void };
  /** When a module's worker that died is started again (RESTART_BACKOFF by default; tests shorten it). */
  restart?: Partial<BackoffOptions>;
  /** A module's worker died (or was stopped for blocking): counted by the operator's metrics. */
  died?(module: string): void;
}

/** What a module handler's side is handed by the registry: the config as the suite gives it, and the time budget of its webhook. */
export interface ServedConfig {
  raw: Record<string, unknown>;
  /** Where the suite was compiled, as parseConfig was told on apply: the worker parses the config again with it. */
  context: ConfigContext;
  budgetMs: number;
}

/** A handler's run that failed, in words naming the handler (the denial the user reads: "internal error: handler ... "). */
export class HandlerFailure extends Error {}

/**
 * A module's worker keeps a copy of the lookup kinds its handlers declare, sent as they sync and
 * change (as the admission thread's copies are; Why: docs/adr/0029-lookup-copies-sent-as-they-change.md);
 * Pods are not copied (as many as the cluster
 * has): a request is sent with the Pods of its namespace, its Namespace and its LimitRanges, read
 * from the operator's caches at that moment. It waits at most the time budget. A throw, a rejection, a run past the budget
 * or a worker lost is a rejection naming the handler, which the registry answers by the webhook's
 * failurePolicy (registry/compile.ts), and is counted by handler and reason. A worker still busy
 * a moment after a budget ran out (it does not answer a ping) is stopped. A worker that dies or is
 * stopped is started again, always, with backoff (src/workers/kit.ts; a request while it waits
 * is answered by failurePolicy), and its death is counted and logged naming the handler it was
 * running. It blames nothing: a death while running a request is the request's doing as much as
 * the handler's, and anyone can send one to the admission port (it asks no credential), so
 * quarantining the handler would let any client switch a check off (failurePolicy Ignore) or on
 * for every request (Fail) until its suite changed, as review and tenant workers blame nothing for
 * such deaths either.
 */
export class HandlerRunner {
  private readonly options: RunnerOptions;
  private readonly workers = new Map<string, ModuleWorker>();
  /** Each config object a suite was compiled with, numbered, so its worker parses it once. */
  private readonly configIds = new WeakMap<object, number>();
  private nextConfig = 1;

  constructor(options: RunnerOptions) {
    this.options = options;
  }

  /**
   * The handler as the registry serves it: its own name, resources, lookups and config checks
   * (run here, on apply); sides that run in its module's worker and answer with a Promise.
   */
  proxy({ handler, module }: LoadedHandler): Handler<ServedConfig, Promise<Decision>> {
    let worker = this.workers.get(module);
    if (!worker) this.workers.set(module, (worker = new ModuleWorker(module, this.options)));
    const lookups = handler.lookups ?? [];
    // What the worker keeps a copy of is not sent with each request (but read here: a kind not synced throws LookupNotReady).
    const copied = this.options.lookups ? new Set(lookups.filter((kind) => kind !== 'Pod')) : new Set<LookupKind>();
    worker.copy(copied);
    const side = (name: 'validate' | 'mutate') =>
      handler[name] &&
      ((request: AdmissionRequest, { raw, context, budgetMs }: ServedConfig, view: ClusterView) =>
        // The context is read here, synchronously: a lookup not synced throws LookupNotReady, which the registry waits on.
        worker.run(handler.name, name, request, { id: this.configId(raw), raw, context }, contextOf(lookups, copied, request, view), budgetMs));
    return {
      name: handler.name,
      resources: handler.resources,
      lookups,
      audits: false,
      // The worker parses the config again from what the suite says: the side is handed that, not the parsed form (which may not cross threads),
      // with the webhook's budget: --handler-budget, or half its timeoutSeconds when that is less.
      parseConfig: (config, context) => {
        const timeout = context?.timeoutSeconds;
        const budgetMs = timeout === undefined ? this.options.budgetMs : Math.min(this.options.budgetMs, (timeout * 1000) / 2);
        return { config: { raw: config, context: context ?? {}, budgetMs }, errors: configChecks(handler)(config, context).errors };
      },
      validate: side('validate'),
      mutate: side('mutate'),
    };
  }

  /** Starts every module's worker now (rather than on its first request). */
  warm(): void {
    for (const worker of this.workers.values()) worker.ensure();
  }

  async close(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.stop('the operator is stopping')));
  }

  private configId(config: object): number {
    let id = this.configIds.get(config);
    if (id === undefined) this.configIds.set(config, (id = this.nextConfig++));
    return id;
  }
}

function contextOf(lookups: LookupKind[], copied: ReadonlySet<LookupKind>, request: AdmissionRequest, view: ClusterView): HandlerContext {
  const namespace = request.namespace || undefined;
  const context: HandlerContext = { namespace, limitRanges: namespace ? view.limitRanges(namespace) : [], lookups: {} };
  if (namespace) context.namespaceObject = view.namespace(namespace);
  for (const kind of lookups) {
    if (kind === 'Pod' && !namespace) context.lookups[kind] = [];
    else if (copied.has(kind)) view.list(kind);
    else context.lookups[kind] = view.list(kind, kind === 'Pod' ? namespace : undefined);
  }
  return context;
}

/** A run in a module's worker: what a death in it is logged against. */
interface Run {
  handler: string;
}

type ModuleThread = WorkerThread<ToHandlerWorker, FromHandlerWorker, Run>;

/**
 * One module's worker (src/workers/kit.ts): started on first use; when it dies or is stopped,
 * started again at once, then with backoff while it keeps dying.
 */
class ModuleWorker {
  private readonly module: string;
  private readonly options: RunnerOptions;
  private readonly restarts: Restarting<ModuleThread>;
  /** A ping is in flight to a worker whose run ran past its budget (one at a time). */
  private probing = false;
  /** The lookup kinds its worker keeps a copy of. */
  private readonly kinds = new Set<LookupKind>();

  constructor(module: string, options: RunnerOptions) {
    this.module = module;
    this.options = options;
    this.restarts = new Restarting(options.restart, () => this.start());
  }

  /** Adds kinds its worker copies (before it starts: the proxies are made first). */
  copy(kinds: Iterable<LookupKind>): void {
    for (const kind of kinds) this.kinds.add(kind);
  }

  /** The worker, started if there is none; undefined while one that died waits to be started again. */
  ensure(): ModuleThread | undefined {
    return this.restarts.ensure();
  }

  private start(): ModuleThread {
    return new WorkerThread<ToHandlerWorker, FromHandlerWorker, Run>({
      entry: WORKER,
      workerData: { module: this.module },
      resourceLimits: { maxOldGenerationSizeMb: this.options.maxHeapMb ?? MODULE_HEAP_MB },
      // Every synced kind now, then each change, in the order the requests that read them are sent.
      started: (post) =>
        this.kinds.size
          ? this.options.lookups?.subscribe((change) => {
              if (this.kinds.has(change.kind)) post({ type: 'lookup', change });
            })
          : undefined,
      replies: ['answer', 'error', 'pong'],
      receive: () => undefined,
      describe: (cause) => ('error' in cause ? `its worker failed: ${cause.error.message}` : 'exitCode' in cause ? `its worker stopped (exit code ${cause.exitCode})` : cause.stopped),
      died: (death) => this.lost(death),
    });
  }

  run(handler: string, side: 'validate' | 'mutate', request: AdmissionRequest, config: SentConfig, context: HandlerContext, budgetMs: number): Promise<Decision> {
    const thread = this.ensure();
    if (!thread) return Promise.reject(this.fail(handler, 'lost', `handler ${handler} was not answered: its module's worker stopped and is started again in ${this.restarts.restartInMs ?? 0} ms`));
    // Throws here (DataCloneError) when what is sent cannot cross threads: answered by failurePolicy like a throw.
    const run: Run = { handler };
    const { reply } = thread.call({ type: 'run', handler, side, request, config, context }, { timeoutMs: budgetMs, tag: run });
    return reply.then(
      (message) => {
        if (message.type === 'answer') return message.decision;
        throw this.fail(handler, 'error', `handler ${handler} failed: ${(message as { message: string }).message}`);
      },
      (err: Error) => {
        if (!(err instanceof CallTimeout)) throw this.fail(handler, 'lost', `handler ${handler} was not answered: ${err.message}`);
        const failure = this.fail(handler, 'timeout', `handler ${handler} did not answer within its budget of ${budgetMs} ms`);
        this.probe(thread, run);
        throw failure;
      },
    );
  }

  async stop(why: string): Promise<void> {
    this.restarts.close();
    await this.restarts.alive?.stop(why);
  }

  /** A run past its budget (answered already): is the worker still answering at all? If not, it is stopped, blaming that run. */
  private probe(thread: ModuleThread, run: Run): void {
    if (!thread.alive || this.probing) return;
    this.probing = true;
    thread.call({ type: 'ping' }, { timeoutMs: PROBE_MS }).reply.then(
      () => (this.probing = false),
      (err: Error) => {
        this.probing = false;
        if (!(err instanceof CallTimeout)) return;
        this.options.log.warn('handler module worker stopped: a handler blocked it past its budget; started again', { module: this.module, handler: run.handler });
        void thread.stop(`handler ${run.handler} blocked its module's worker`, [run]);
      },
    );
  }

  /**
   * A request answered by failurePolicy (by the registry, from the rejection returned): counted and
   * logged by handler, since with failurePolicy Ignore the answer itself names nothing.
   */
  private fail(handler: string, reason: FailureReason, message: string): HandlerFailure {
    this.options.failed?.(handler, reason);
    this.options.log.info('handler module answered by failurePolicy', { handler, module: this.module, reason, error: message });
    return new HandlerFailure(message);
  }

  /**
   * The worker is gone (stopped, failed, exited; what waited on it was rejected by the kit): counted,
   * logged with the handlers it was running (the one stopped for blocking it, else the one it said it
   * was running, else every run in it), and, unless the runner stops, started again. Nothing is blamed.
   */
  private lost(death: Death<Run>): void {
    if ('error' in death.cause) this.options.log.error('handler module worker failed', { module: this.module, error: death.cause.error.message });
    if (this.restarts.isClosed) return void this.restarts.died();
    // One stopped for blocking was logged when it was stopped (probe).
    if (!death.blamed) {
      const running = death.calls.find((call) => String(call.id) === death.suspect);
      const suspects = running ? [running.tag] : death.calls.map((call) => call.tag);
      this.options.log.warn('handler module worker stopped while running a request; started again, nothing quarantined (a request can be made to stop it)', {
        module: this.module,
        handlers: [...new Set(suspects.map((s) => s.handler))],
        why: death.why,
      });
    }
    this.options.died?.(this.module);
    const wait = this.restarts.died();
    if (wait > 0) this.options.log.warn('handler module worker stopped again; starting it again after a wait', { module: this.module, inMs: wait, deathsInARow: this.restarts.deaths });
  }
}
