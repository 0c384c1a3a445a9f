/**
 * Where a handler module's handlers run: in a worker thread of the module's own (handler-worker.ts),
 * never on the operator's main thread nor the admission thread, so that a handler that blocks its
 * thread (a busy loop) holds up only its own module's requests; measured in
 * test/e2e/handler-modules.test.ts, the other suites' answers keep their latency meanwhile.
 *
 * A module's worker keeps a copy of the lookup kinds its handlers declare, sent as they sync and
 * change (as the admission thread's copies are: measured, sending 1,000 Ingresses with each request
 * cost 4.4 ms p50 a request, against 37 us with none); Pods are not copied (as many as the cluster
 * has): a request is sent with the Pods of its namespace, its Namespace and its LimitRanges, read
 * from the operator's caches at that moment. It waits at most the time budget. A throw, a rejection, a run past the budget
 * or a worker lost is a rejection naming the handler, which the registry answers by the webhook's
 * failurePolicy (registry/compile.ts), and is counted by handler and reason. A worker still busy
 * a moment after a budget ran out (it does not answer a ping) is stopped. A worker that dies or is
 * stopped is started again, always, with backoff (src/workers/kit.ts; a request while it waits
 * is answered by failurePolicy); the run it died in (the one it said it was running, else every
 * run in it) counts against its handler and config, and after QUARANTINE_AFTER deaths that handler
 * with that config is quarantined: its requests are answered by failurePolicy without reaching the
 * worker, so the module's other handlers and configs keep being served, and the suites that use it
 * say so (Ready=False, Quarantined) until the config changes. Owns the workers and their messages;
 * what a suite may name is the registry's.
 */
import { workerEntry } from '../app-files.ts';
import type { AdmissionRequest, Decision } from '../api/admission-review.ts';
import type { ClusterView, ConfigContext, Handler, LookupKind } from '../handlers/handler.ts';
import type { LogWriter } from '../log.ts';
import type { LookupChange } from '../apiserver/lookups.ts';
import { configChecks, type LoadedHandler } from './modules.ts';
import { Quarantine, type BackoffOptions } from '../worker-restarts.ts';
import { CallTimeout, Restarting, WorkerThread, type Death, type KitSignal } from '../workers/kit.ts';

/** What a handler reads of the cluster, sent with each request. */
export interface HandlerContext {
  namespace?: string;
  namespaceObject?: Record<string, any>;
  limitRanges: Record<string, any>[];
  lookups: Partial<Record<LookupKind, Record<string, any>[]>>;
}

export type ToHandlerWorker =
  | { type: 'run'; id: number; handler: string; side: 'validate' | 'mutate'; request: AdmissionRequest; config: SentConfig; context: HandlerContext }
  | { type: 'ping'; id: number }
  | { type: 'lookup'; change: LookupChange };

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
 * its worker was stopped under it (or is being started again), or the handler with this config is quarantined.
 */
export type FailureReason = 'error' | 'timeout' | 'lost' | 'quarantined';

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
  /** A handler with one of its configs was quarantined (the suites that use it report it). */
  quarantined?(handler: string): void;
}

/** What a module handler's side is handed by the registry: the config as the suite gives it, and the time budget of its webhook. */
export interface ServedConfig {
  raw: Record<string, unknown>;
  /** Where the suite was compiled, as parseConfig was told on apply: the worker parses the config again with it. */
  context: ConfigContext;
  budgetMs: number;
  /** quarantineKey(handler, raw): computed once, on apply. */
  key: string;
}

/** A handler's run that failed, in words naming the handler (the denial the user reads: "internal error: handler ... "). */
export class HandlerFailure extends Error {}

export class HandlerRunner {
  private readonly options: RunnerOptions;
  private readonly workers = new Map<string, ModuleWorker>();
  /** Each config object a suite was compiled with, numbered, so its worker parses it once. */
  private readonly configIds = new WeakMap<object, number>();
  private nextConfig = 1;
  /** Handlers with a config that kept killing their module's worker (quarantineKey). */
  private readonly quarantine = new Quarantine();

  constructor(options: RunnerOptions) {
    this.options = options;
  }

  /**
   * Why the handler `name` with `config` (a suite webhook's handler.config, as the suite gives it)
   * is quarantined; undefined when it is served.
   */
  quarantined(name: string, config: Record<string, unknown> | undefined): string | undefined {
    return this.quarantine.why(quarantineKey(name, config ?? {}));
  }

  /**
   * The handler as the registry serves it: its own name, resources, lookups and config checks
   * (run here, on apply); sides that run in its module's worker and answer with a Promise.
   */
  proxy({ handler, module }: LoadedHandler): Handler<ServedConfig, Promise<Decision>> {
    let worker = this.workers.get(module);
    if (!worker) this.workers.set(module, (worker = new ModuleWorker(module, this.options, this.quarantine)));
    const lookups = handler.lookups ?? [];
    // What the worker keeps a copy of is not sent with each request (but read here: a kind not synced throws LookupNotReady).
    const copied = this.options.lookups ? new Set(lookups.filter((kind) => kind !== 'Pod')) : new Set<LookupKind>();
    worker.copy(copied);
    const side = (name: 'validate' | 'mutate') =>
      handler[name] &&
      ((request: AdmissionRequest, { raw, context, budgetMs, key }: ServedConfig, view: ClusterView) =>
        // The context is read here, synchronously: a lookup not synced throws LookupNotReady, which the registry waits on.
        worker.run(handler.name, key, name, request, { id: this.configId(raw), raw, context }, contextOf(lookups, copied, request, view), budgetMs));
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
        return { config: { raw: config, context: context ?? {}, budgetMs, key: quarantineKey(handler.name, config) }, errors: configChecks(handler)(config, context).errors };
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

/**
 * What a death counts against: the handler with the config a suite webhook gives it. Not the
 * suite's name (a handler is not told it): two suites giving one handler the same config share it,
 * and are quarantined together, as they would both stop the worker.
 */
function quarantineKey(handler: string, config: Record<string, unknown>): string {
  return `${handler}\n${JSON.stringify(config)}`;
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

/** A run in a module's worker: what a death in it counts against. */
interface Run {
  handler: string;
  /** The handler with the config it runs with (quarantineKey). */
  key: string;
}

type ModuleThread = WorkerThread<ToHandlerWorker, FromHandlerWorker, Run>;

/**
 * One module's worker (src/workers/kit.ts): started on first use; when it dies or is stopped,
 * started again at once, then with backoff while it keeps dying; the run it died in counts
 * against its handler and config.
 */
class ModuleWorker {
  private readonly module: string;
  private readonly options: RunnerOptions;
  private readonly quarantine: Quarantine;
  private readonly restarts: Restarting<ModuleThread>;
  /** A ping is in flight to a worker whose run ran past its budget (one at a time). */
  private probing = false;
  /** The lookup kinds its worker keeps a copy of. */
  private readonly kinds = new Set<LookupKind>();

  constructor(module: string, options: RunnerOptions, quarantine: Quarantine) {
    this.module = module;
    this.options = options;
    this.quarantine = quarantine;
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

  run(handler: string, key: string, side: 'validate' | 'mutate', request: AdmissionRequest, config: SentConfig, context: HandlerContext, budgetMs: number): Promise<Decision> {
    const held = this.quarantine.why(key);
    if (held) return Promise.reject(this.fail(handler, 'quarantined', `handler ${handler} is quarantined with this config: ${held}`));
    const thread = this.ensure();
    if (!thread) return Promise.reject(this.fail(handler, 'lost', `handler ${handler} was not answered: its module's worker stopped and is started again in ${this.restarts.restartInMs ?? 0} ms`));
    // Throws here (DataCloneError) when what is sent cannot cross threads: answered by failurePolicy like a throw.
    const run: Run = { handler, key };
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
   * The worker is gone (stopped, failed, exited; what waited on it was rejected by the kit): the run
   * it died in (the one stopped for blocking it, else the one it said it was running, else every
   * run in it) counts against its handler and config, and, unless the runner stops, it is started again.
   */
  private lost(death: Death<Run>): void {
    if ('error' in death.cause) this.options.log.error('handler module worker failed', { module: this.module, error: death.cause.error.message });
    if (this.restarts.isClosed) return void this.restarts.died();
    const running = death.calls.find((call) => String(call.id) === death.suspect);
    const suspects = death.blamed ?? (running ? [running.tag] : death.calls.map((call) => call.tag));
    for (const key of new Set(suspects.map((s) => s.key))) {
      const handler = suspects.find((s) => s.key === key)!.handler;
      if (!this.quarantine.died(key, `handler ${handler}: ${death.why}`)) continue;
      this.options.log.error("handler quarantined with this config: it stopped its module's worker again and again; its requests are answered by failurePolicy until the config changes", { handler, module: this.module });
      this.options.quarantined?.(handler);
    }
    const wait = this.restarts.died();
    if (wait > 0) this.options.log.warn('handler module worker stopped again; starting it again after a wait', { module: this.module, inMs: wait, deathsInARow: this.restarts.deaths });
  }
}
