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
 * stopped is started again, always, with backoff (src/worker-restarts.ts; a request while it waits
 * is answered by failurePolicy); the run it died in (the one it said it was running, else every
 * run in it) counts against its handler and config, and after QUARANTINE_AFTER deaths that handler
 * with that config is quarantined: its requests are answered by failurePolicy without reaching the
 * worker, so the module's other handlers and configs keep being served, and the suites that use it
 * say so (Ready=False, Quarantined) until the config changes. Owns the workers and their messages;
 * what a suite may name is the registry's.
 */
import { Worker } from 'node:worker_threads';
import { workerEntry } from '../app-files.ts';
import type { AdmissionRequest, Decision } from '../api/admission-review.ts';
import type { ClusterView, ConfigContext, Handler, LookupKind } from '../handlers/handler.ts';
import type { LogWriter } from '../log.ts';
import type { LookupChange } from '../apiserver/lookups.ts';
import { configChecks, type LoadedHandler } from './modules.ts';
import { Backoff, Quarantine, type BackoffOptions } from '../worker-restarts.ts';

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
  /** About to run the request's side: if the worker dies before it answers, this run is the suspect. */
  | { type: 'running'; id: number };

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

interface Pending {
  handler: string;
  /** The handler with the config it runs with: what a death in this run counts against (quarantineKey). */
  key: string;
  budgetMs: number;
  resolve(decision: Decision): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

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

/**
 * One module's worker: started on first use; when it dies or is stopped, started again at once,
 * then with backoff while it keeps dying; the run it died in counts against its handler and config.
 */
class ModuleWorker {
  private readonly module: string;
  private readonly options: RunnerOptions;
  private readonly quarantine: Quarantine;
  private readonly backoff: Backoff;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private next = 1;
  private probe: { id: number; timer: NodeJS.Timeout } | undefined;
  /** The run the worker said it is running, until it answers it (a worker's last messages arrive before its exit). */
  private running: number | undefined;
  /** While a worker that died waits to be started again: when it will be, and the timer that will. */
  private restart: { at: number; timer: NodeJS.Timeout } | undefined;
  private stopped = false;
  /** The lookup kinds its worker keeps a copy of, and the subscription that keeps it. */
  private readonly kinds = new Set<LookupKind>();
  private unsubscribe: (() => void) | undefined;

  constructor(module: string, options: RunnerOptions, quarantine: Quarantine) {
    this.module = module;
    this.options = options;
    this.quarantine = quarantine;
    this.backoff = new Backoff(options.restart);
  }

  /** Adds kinds its worker copies (before it starts: the proxies are made first). */
  copy(kinds: Iterable<LookupKind>): void {
    for (const kind of kinds) this.kinds.add(kind);
  }

  /** The worker, started if there is none; undefined while one that died waits to be started again. */
  ensure(): Worker | undefined {
    if (this.worker) return this.worker;
    if (this.restart) return undefined;
    this.stopped = false;
    const worker = new Worker(WORKER, { workerData: { module: this.module }, resourceLimits: { maxOldGenerationSizeMb: this.options.maxHeapMb ?? MODULE_HEAP_MB } });
    this.worker = worker;
    this.backoff.started();
    // Every synced kind now, then each change, in the order the requests that read them are sent.
    if (this.kinds.size) {
      this.unsubscribe = this.options.lookups?.subscribe((change) => {
        if (this.kinds.has(change.kind)) worker.postMessage({ type: 'lookup', change } satisfies ToHandlerWorker);
      });
    }
    worker.unref();
    worker.on('message', (message: FromHandlerWorker) => this.received(message));
    worker.on('error', (err) => {
      this.options.log.error('handler module worker failed', { module: this.module, error: err.message });
      this.lost(worker, `its worker failed: ${err.message}`);
    });
    worker.on('exit', (code) => this.lost(worker, `its worker stopped (exit code ${code})`));
    return worker;
  }

  run(handler: string, key: string, side: 'validate' | 'mutate', request: AdmissionRequest, config: SentConfig, context: HandlerContext, budgetMs: number): Promise<Decision> {
    const held = this.quarantine.why(key);
    if (held) return this.refuse(handler, 'quarantined', `handler ${handler} is quarantined with this config: ${held}`);
    const worker = this.ensure();
    if (!worker) return this.refuse(handler, 'lost', `handler ${handler} was not answered: its module's worker stopped and is started again in ${Math.max(0, this.restart!.at - Date.now())} ms`);
    const id = this.next++;
    // Throws here (DataCloneError) when what is sent cannot cross threads: answered by failurePolicy like a throw.
    worker.postMessage({ type: 'run', id, handler, side, request, config, context } satisfies ToHandlerWorker);
    return new Promise<Decision>((resolve, reject) => {
      const timer = setTimeout(() => this.expired(id), budgetMs);
      this.pending.set(id, { handler, key, budgetMs, resolve, reject, timer });
    });
  }

  async stop(why: string): Promise<void> {
    this.stopped = true;
    if (this.restart) clearTimeout(this.restart.timer);
    this.restart = undefined;
    const worker = this.worker;
    if (!worker) return;
    this.lost(worker, why);
    await worker.terminate();
  }

  private refuse(handler: string, reason: FailureReason, message: string): Promise<Decision> {
    return new Promise((resolve, reject) => this.fail({ handler, key: '', budgetMs: 0, resolve, reject, timer: undefined as unknown as NodeJS.Timeout }, reason, message));
  }

  private received(message: FromHandlerWorker): void {
    if (message.type === 'running') {
      this.running = message.id;
      return;
    }
    if (message.type === 'pong') {
      if (this.probe?.id === message.id) {
        clearTimeout(this.probe.timer);
        this.probe = undefined;
      }
      return;
    }
    if (this.running === message.id) this.running = undefined;
    const waiting = this.settle(message.id);
    if (!waiting) return;
    if (message.type === 'answer') return waiting.resolve(message.decision);
    this.fail(waiting, 'error', `handler ${waiting.handler} failed: ${message.message}`);
  }

  private settle(id: number): Pending | undefined {
    const waiting = this.pending.get(id);
    if (!waiting) return undefined;
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    return waiting;
  }

  /** A run past its budget: answered now; and the worker is asked whether it still answers at all. */
  private expired(id: number): void {
    const waiting = this.settle(id);
    if (!waiting) return;
    this.fail(waiting, 'timeout', `handler ${waiting.handler} did not answer within its budget of ${waiting.budgetMs} ms`);
    const worker = this.worker;
    if (!worker || this.probe) return;
    const probe = this.next++;
    this.probe = {
      id: probe,
      timer: setTimeout(() => {
        this.probe = undefined;
        this.options.log.warn('handler module worker stopped: a handler blocked it past its budget; started again', { module: this.module, handler: waiting.handler });
        // The run that blocked it is the one that ran past its budget (answered already): the death counts against it.
        this.lost(worker, `handler ${waiting.handler} blocked its module's worker`, [waiting]);
        void worker.terminate();
      }, PROBE_MS),
    };
    worker.postMessage({ type: 'ping', id: probe } satisfies ToHandlerWorker);
  }

  /**
   * A request answered by failurePolicy (by the registry, from this rejection): counted and logged
   * by handler, since with failurePolicy Ignore the answer itself names nothing.
   */
  private fail(waiting: Pending, reason: FailureReason, message: string): void {
    this.options.failed?.(waiting.handler, reason);
    this.options.log.info('handler module answered by failurePolicy', { handler: waiting.handler, module: this.module, reason, error: message });
    waiting.reject(new HandlerFailure(message));
  }

  /**
   * The worker is gone (stopped, failed, exited): what waited on it is answered by failurePolicy,
   * the run it died in (`culprits`, else the one it said it was running, else every run in it)
   * counts against its handler and config, and, unless the runner stops, it is started again.
   */
  private lost(worker: Worker, why: string, culprits?: Pending[]): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.probe) clearTimeout(this.probe.timer);
    this.probe = undefined;
    const running = this.running === undefined ? undefined : this.pending.get(this.running);
    this.running = undefined;
    const suspects = culprits ?? (running ? [running] : [...this.pending.values()]);
    for (const id of [...this.pending.keys()]) {
      const waiting = this.settle(id)!;
      this.fail(waiting, 'lost', `handler ${waiting.handler} was not answered: ${why}`);
    }
    if (this.stopped) return;
    for (const key of new Set(suspects.map((s) => s.key))) {
      const handler = suspects.find((s) => s.key === key)!.handler;
      if (!this.quarantine.died(key, `handler ${handler}: ${why}`)) continue;
      this.options.log.error('handler quarantined with this config: it stopped its module\'s worker again and again; its requests are answered by failurePolicy until the config changes', { handler, module: this.module });
      this.options.quarantined?.(handler);
    }
    const wait = this.backoff.died();
    if (wait === 0) return void this.ensure();
    this.options.log.warn('handler module worker stopped again; starting it again after a wait', { module: this.module, inMs: wait, deathsInARow: this.backoff.deaths });
    this.restart = {
      at: Date.now() + wait,
      timer: setTimeout(() => {
        this.restart = undefined;
        this.ensure();
      }, wait),
    };
    this.restart.timer.unref();
  }
}
