/**
 * The admission thread, main side: the admission endpoint served from a worker thread of its own
 * (thread-worker.ts), and everything sent to and from it. Owns the worker and what it is sent;
 * the messages' shapes are thread-messages.ts', the answering itself answering.ts': this file must
 * not answer a review. While the thread is down nothing serves admission.
 * Why: docs/adr/0011-admission-thread.md
 */
import { workerEntry } from '../../app-files.ts';
import type { ObjectRef } from '../../audit/results.ts';
import type { CheckResult } from '../../audit/targets.ts';
import type { CertificateStore } from '../../certs/store.ts';
import { recordConnections, type Metrics } from '../../health/metrics.ts';
import { LOG_LEVELS, type Logger, type LogLevel } from '../../log.ts';
import { Quarantine, type BackoffOptions } from '../../workers/restarts.ts';
import { Restarting, WorkerThread, type Death, type KitSignal } from '../../workers/kit.ts';
import type { SuiteRegistry } from '../../registry/registry.ts';
import type { ParamsChange } from '../../apiserver/params-watches.ts';
import type { ExceptionChange } from '../../registry/exceptions.ts';
import type { CachedKind, LookupChange } from '../../apiserver/lookups.ts';
import type { SchemaChange } from '../../apiserver/openapi-state.ts';
import type { PolicyRegistry } from '../../registry/policies.ts';
import type { TypeCheckDefault } from '../../registry/typecheck.ts';
import { answerQuestion } from './main-questions.ts';
import { sizeNurseryForAdmission } from '../v8-tuning.ts';
import { SERVING_LIMITS, type ListenOptions, type ServingLimits } from '../endpoint.ts';
import type { AdmissionAnswering } from '../answering.ts';
import type { ConnectionKind } from '../connection-limits.ts';
import type { FromThread, MirroredKind, Observation, ThreadData, ToThread } from './thread-messages.ts';

export interface AdmissionThreadOptions {
  /** The main thread's answering: it answers what the thread forwards. */
  answering: Pick<AdmissionAnswering, 'forwarded'>;
  registry: SuiteRegistry;
  certificates: CertificateStore;
  metrics: Metrics;
  /** Where a request a suite webhook allowed with Warn or Audit failures goes (the background audit's live results, audit/live.ts). */
  shadowed?: (suite: string, webhook: string, ref: ObjectRef, results: CheckResult[]) => void;
  /** The caches the thread's copies of Namespaces and LimitRanges start from (mirror() keeps them current). */
  mirrors: Record<MirroredKind, { list(): { metadata?: unknown }[] }>;
  /** The params collections the main thread watches, copied as they sync and change; without it, every webhook with params is answered by the main thread. */
  params?: { subscribe(listener: (change: ParamsChange) => void): () => void };
  /** The AdmissionExceptions (registry.context.exceptions), copied as they change: the suites' webhooks answered there ask them per request. */
  exceptions?: { subscribe(listener: (change: ExceptionChange) => void): () => void };
  /** The handlers' lookup caches; the kinds in COPIED_LOOKUPS are copied, reviews that read the others are answered by the main thread. */
  lookups?: { subscribe(listener: (change: LookupChange) => void): () => void };
  /** The folder of handler modules (--handler-modules): loaded in the thread too, for their names and config checks; their requests are answered by the main thread. */
  handlerModules?: string;
  /** Where the thread's lines are written, and its own troubles. */
  log: Logger;
  limits?: Partial<ServingLimits>;
  /** Told when the thread's endpoint nears a connection limit, with the cause (the operator raises an Event). */
  connectionsNear?(kind: ConnectionKind, cause: string): void;
  /** The API server's addresses (apiserver/apiserver-addresses.ts), copied as they change: the endpoint's limits size their connections by the webhooks served. */
  apiServers?: { subscribe(listener: (addresses: string[]) => void): () => void };
  /**
   * What the thread needs to answer the suite- and policy-validation webhooks itself, as `answering`
   * does (forwarded, an apply's validation waits behind the main thread's reconciles; Why:
   * docs/adr/0025-validation-answered-in-the-admission-thread.md): whether `answering` checks the author's access to
   * params (a write that needs a SubjectAccessReview is then forwarded), the OpenAPI schemas it
   * type-checks against (copied as read; `refresh` renews a read before the copy's goes stale)
   * and its default for type errors, and the policies' registry (its limits). Without it, or
   * without a part, what needs it is forwarded.
   */
  validation?: {
    paramsAccess: boolean;
    schemas?: { subscribe(listener: (change: SchemaChange) => void): () => void; refresh(key: string): void; byDefault?: TypeCheckDefault };
    policies?: PolicyRegistry;
  };
  /** When a thread that died is started again (RESTART_BACKOFF by default; tests shorten it). */
  restart?: Partial<BackoffOptions>;
}

const WORKER = workerEntry('thread-worker', import.meta.url);

/**
 * The lookup kinds the thread keeps a copy of: few objects each, cluster-wide. Pods and Nodes are
 * not copied (their objects are large, and as many as the cluster has): a review whose handler
 * reads them (PodSecurity's namespace updates, PodTopologyLabels, pod resizes) is answered by the main thread.
 */
export const COPIED_LOOKUPS: ReadonlySet<CachedKind> = new Set(['PriorityClass', 'RuntimeClass', 'StorageClass', 'IngressClass']);

/** How long a reconcile waits for the thread to serve a suite's new generation before it reports waiting and retries. */
export const SERVING_WAIT_MS = 5_000;

type Thread = WorkerThread<ToThread, FromThread>;

/**
 * The admission thread: answering a review runs in a V8 isolate that holds nothing else.
 * It is sent every suite as synced (the worker compiles its own copy),
 * every serving certificate, the Namespaces and LimitRanges rules read, the synced params
 * collections, the small lookup kinds (COPIED_LOOKUPS), what the OpenAPI schemas read (for the
 * validation webhooks it answers, see AdmissionThreadOptions.validation), draining; and it sends
 * back: requests it forwards (answered by the main thread's answering; its endpoint does not listen), the
 * schemas it asks to be read again, the answers it counted (into the operator's metrics), and its acknowledgements, so that a suite is
 * registered only once the thread serves its generation and a CA is retired only once no
 * certificate it signed is served there. A worker that stops is started again with everything,
 * always, with backoff (src/workers/kit.ts, restarts.ts); a suite whose generation it was compiling when it died
 * QUARANTINE_AFTER times, or whose compilation threw there, is quarantined: no longer sent to it
 * (its webhooks are then not served: the API server answers them by their failurePolicy), said so
 * to the reconciler (Ready=False, Quarantined), until the suite changes. While the thread is down,
 * nothing serves admission: `cannotServe` says so, and the liveness probe fails with it.
 */
export class AdmissionThread {
  private readonly options: AdmissionThreadOptions;
  private readonly restarts: Restarting<Thread>;
  private listenOptions: ListenOptions | undefined;
  private boundPort: number | undefined;
  private isListening = false;
  private closing = false;
  private draining = false;
  /** The suite (by uid: one deleted and made again under its name is another) and generation the thread serves under each name, and who waits for one. */
  private readonly synced = new Map<string, { uid?: string; generation: number }>();
  private readonly syncWaiters = new Map<string, { uid?: string; generation: number; done(served: boolean): void }[]>();
  /** The certificate the thread serves for each key. */
  private readonly servedCertificates = new Map<string, string>();
  private readonly quarantine = new Quarantine();
  /** While close() waits for the thread to end. */
  private ended: (() => void) | undefined;
  /** Whether the thread ever listened: from then on, while it does not, nothing serves admission. */
  private listenedOnce = false;
  /** The first listen(): settled once a thread listens, or when the first one cannot. */
  private firstListen: { resolve(): void; reject(err: Error): void } | undefined;
  private readonly quarantineListeners: ((name: string) => void)[] = [];

  constructor(options: AdmissionThreadOptions) {
    this.options = options;
    // Started again from a timer even the first time in a row: the thread that died lets go of its port first.
    this.restarts = new Restarting(options.restart, () => this.start(), false);
  }

  /** The thread alive now (none between a death and its restart). */
  private get worker(): Thread | undefined {
    return this.restarts.alive;
  }

  /**
   * True while the thread that served admission is down (dead, or started again and not listening
   * yet): the main thread's endpoint does not listen, so no review is answered here meanwhile.
   */
  get cannotServe(): boolean {
    return this.listenedOnce && !this.isListening && !this.closing;
  }

  /** Calls `listener` with a suite's name each time one of its generations is quarantined (its status then says so). */
  onQuarantined(listener: (name: string) => void): void {
    this.quarantineListeners.push(listener);
  }

  /** Why this generation of the suite is quarantined (not served); undefined when it is not. */
  quarantined(name: string, uid: string | undefined, generation: number): string | undefined {
    return this.quarantine.why(suiteKey({ name, uid, generation }));
  }

  get listening(): boolean {
    return this.isListening;
  }

  /** The port the thread listens on (resolved once it does). */
  get port(): number | undefined {
    return this.boundPort;
  }

  /** Starts the thread, listening as `options` say; resolves once it listens. */
  async listen(options: ListenOptions): Promise<void> {
    this.listenOptions = options;
    await new Promise<void>((resolve, reject) => {
      this.firstListen = { resolve, reject };
      this.restarts.ensure();
    });
  }

  /**
   * Resolves true once the thread serves `generation` of the suite (or a later one); false after
   * SERVING_WAIT_MS. True at once when the thread is not running: nothing is served, which the
   * endpoint's probe finds and says.
   */
  whenServing(name: string, uid: string | undefined, generation: number): Promise<boolean> {
    // A quarantined generation is served as it will be: not at all (answered by its failurePolicy), which its status says.
    if (!this.worker || serves(this.synced.get(name), uid, generation) || this.quarantined(name, uid, generation)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), SERVING_WAIT_MS).unref();
      const done = (served: boolean) => {
        clearTimeout(timer);
        const waiters = this.syncWaiters.get(name) ?? [];
        waiters.splice(waiters.indexOf(waiter), 1);
        if (waiters.length === 0) this.syncWaiters.delete(name);
        resolve(served);
      };
      const waiter = { uid, generation, done };
      this.syncWaiters.set(name, [...(this.syncWaiters.get(name) ?? []), waiter]);
    });
  }

  /**
   * The certificate served for `key`: the thread's while it has acknowledged one, else the store's
   * (what the rotation's checks must count as served, in either place).
   */
  served(key: string): string | undefined {
    return this.servedCertificates.get(key) ?? this.options.certificates.served(key);
  }

  /** A Namespace or LimitRange changed in the watch cache. */
  mirror(kind: MirroredKind, object: { metadata?: unknown }, deleted: boolean): void {
    this.post({ type: 'mirror', kind, object: object as Record<string, any>, deleted });
  }

  /** Every answer from now on closes its connection. */
  drain(): void {
    this.draining = true;
    this.post({ type: 'draining' });
  }

  /** Brings the answers the thread counted into the operator's metrics (before a scrape). */
  flushMetrics(): Promise<void> {
    if (!this.worker) return Promise.resolve();
    // Its counts arrive (observed) before the reply; a thread that dies meanwhile has no more to give.
    return this.worker.call({ type: 'flush' }).reply.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Stops accepting; requests in flight are answered (each closing its connection); then the thread ends. */
  async close(): Promise<void> {
    this.closing = true;
    this.restarts.close();
    const worker = this.worker;
    if (!worker) return;
    await new Promise<void>((resolve) => {
      this.ended = resolve;
      // Requests in flight are answered within the longest request time; a thread that hangs past it is stopped.
      setTimeout(() => void worker.terminate(), SERVING_LIMITS.requestTimeoutMs + 5_000).unref();
      worker.post({ type: 'close' });
    });
  }

  private post(message: ToThread): void {
    this.worker?.post(message);
  }

  /** Starts a worker with everything; settles the first listen() once it listens (or cannot). */
  private start(): Thread {
    const { registry, log, limits, validation } = this.options;
    const listen = { ...this.listenOptions!, ...(this.boundPort !== undefined ? { port: this.boundPort } : {}) };
    sizeNurseryForAdmission();
    const policies = validation?.policies?.context;
    const data: ThreadData = {
      listen,
      logLevels: LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(log.level as LogLevel) + 1),
      limits,
      authorizer: registry.context.authorizer !== undefined,
      mapper: registry.context.mapper !== undefined,
      operatorNamespace: registry.context.operatorNamespace,
      nativeEnforcement: registry.context.nativeEnforcement,
      handlerModules: this.options.handlerModules,
      validation: validation && {
        paramsAccess: validation.paramsAccess,
        typeChecking: validation.schemas && { byDefault: validation.schemas.byDefault },
        policies: policies && {
          limits: policies.limits,
          protectedNamespaces: policies.protectedNamespaces,
          operatorNamespace: policies.operatorNamespace,
          authorizer: policies.authorizer !== undefined,
          mapper: policies.mapper !== undefined,
        },
      },
    };
    let started = false;
    const thread: Thread = new WorkerThread<ToThread, FromThread>({
      entry: WORKER,
      workerData: data,
      // Everything now, then every change (the subscriptions replay what is there, in order).
      started: (post) => this.replay(post),
      replies: ['flushed'],
      receive: (message) => {
        if (message.type === 'listening') {
          started = true;
          this.boundPort = message.port;
          this.isListening = true;
          this.listenedOnce = true;
          this.firstListen?.resolve();
          this.firstListen = undefined;
        } else if (message.type === 'listen-failed') {
          const err = Object.assign(new Error(message.message), { code: message.code });
          if (this.firstListen) {
            this.firstListen.reject(err);
            this.firstListen = undefined;
            return;
          }
          // Started again and cannot listen (its port held a moment longer): stopped, and started again later.
          log.error('the admission thread could not listen; starting it again', { error: err.message });
          void thread.terminate();
        } else if (message.type === 'closed') {
          if (this.closing) void thread.terminate();
        } else this.onMessage(thread, message);
      },
      failed: (err) => log.error('the admission thread failed', { error: err.message }),
      describe: (cause) => ('exitCode' in cause ? `the admission thread exited (${cause.exitCode})` : 'stopped' in cause ? cause.stopped : cause.error.message),
      died: (death) => this.exited(death, started),
    });
    return thread;
  }

  /** What a new thread is sent: everything now, then every change until it dies (the functions returned stop that). */
  private replay(post: (message: ToThread) => void): () => void {
    const { registry, certificates, mirrors, validation } = this.options;
    if (this.draining) post({ type: 'draining' });
    const stops = [
      registry.subscribe((change) => {
        if ('removed' in change) {
          this.synced.delete(change.removed);
          this.quarantine.forget((key) => key.startsWith(`${change.removed}\n`));
          post({ type: 'removed', name: change.removed });
          return;
        }
        const { name, uid } = change.suite.metadata;
        const generation = change.suite.metadata.generation ?? 0;
        const key = suiteKey({ name, uid, generation });
        // Older generations (and another suite once under the name) are not coming back.
        this.quarantine.forget((k) => k.startsWith(`${name}\n`) && k !== key);
        if (this.quarantine.why(key)) {
          // Not sent: an earlier generation the worker holds goes too, so nothing of the suite is served.
          post({ type: 'removed', name });
          return;
        }
        post({ type: 'suite', suite: change.suite });
      }),
      certificates.subscribe((key, pems) => post({ type: 'certificate', key, pems })),
      ...(this.options.params ? [this.options.params.subscribe((change) => post({ type: 'params', change }))] : []),
      ...(this.options.exceptions ? [this.options.exceptions.subscribe((change) => post({ type: 'exception', change }))] : []),
      ...(this.options.lookups ? [this.options.lookups.subscribe((change) => COPIED_LOOKUPS.has(change.kind) && post({ type: 'lookup', change }))] : []),
      ...(validation?.schemas ? [validation.schemas.subscribe((change) => post({ type: 'schemas', change }))] : []),
      ...(this.options.apiServers ? [this.options.apiServers.subscribe((addresses) => post({ type: 'apiservers', addresses }))] : []),
    ];
    for (const kind of ['Namespace', 'LimitRange'] as const) {
      for (const object of mirrors[kind].list()) post({ type: 'mirror', kind, object: object as Record<string, any>, deleted: false });
    }
    return () => {
      for (const stop of stops) stop();
    };
  }

  /**
   * The thread exited: unless the operator stops, or the first thread could not start, it is
   * started again after the backoff's wait; the suite it said it was compiling counts a death.
   */
  private exited(death: Death<never>, started: boolean): void {
    const { log } = this.options;
    const suspect = death.suspect === undefined ? undefined : generationOf(death.suspect);
    this.lost();
    this.ended?.();
    if (this.closing) return void this.restarts.lost();
    // The first thread could not start, and no suite is to blame: the operator does not start (as before any suite).
    if (!started && this.firstListen && !suspect) {
      this.restarts.lost();
      this.firstListen.reject(new Error(`${death.why} before it listened`));
      this.firstListen = undefined;
      return;
    }
    if (suspect && this.quarantine.died(death.suspect!, `${death.why} while compiling generation ${suspect.generation}`)) {
      log.error('suite quarantined: it stopped the admission thread again and again; its webhooks are answered by their failurePolicy until it changes', { suite: suspect.name, generation: suspect.generation });
      for (const listener of this.quarantineListeners) listener(suspect.name);
    }
    const wait = this.restarts.died();
    this.options.metrics.workerDied('admission-thread');
    const code = 'exitCode' in death.cause ? death.cause.exitCode : undefined;
    log.error('the admission thread stopped; starting it again', { code, inMs: wait, deathsInARow: this.restarts.deaths, compiling: suspect?.name });
  }

  /** The worker is gone: what it served is not served, and whoever waits for it is answered. */
  private lost(): void {
    this.isListening = false;
    this.synced.clear();
    this.servedCertificates.clear();
    for (const waiters of [...this.syncWaiters.values()]) for (const waiter of [...waiters]) waiter.done(false);
  }

  private onMessage(worker: Thread, message: Exclude<FromThread, KitSignal>): void {
    switch (message.type) {
      case 'compile-failed': {
        const key = suiteKey(message);
        if (this.quarantine.why(key)) return;
        this.quarantine.hold(key, `compiling it threw in the admission thread: ${message.message}`);
        this.options.log.error('suite quarantined: compiling it threw in the admission thread; its webhooks are answered by their failurePolicy until it changes', {
          suite: message.name,
          generation: message.generation,
          error: message.message,
        });
        for (const waiter of [...(this.syncWaiters.get(message.name) ?? [])]) if (waiter.uid === message.uid && waiter.generation === message.generation) waiter.done(true);
        for (const listener of this.quarantineListeners) listener(message.name);
        return;
      }
      case 'synced': {
        const synced = { uid: message.uid, generation: message.generation };
        this.synced.set(message.name, synced);
        for (const waiter of [...(this.syncWaiters.get(message.name) ?? [])]) if (serves(synced, waiter.uid, waiter.generation)) waiter.done(true);
        return;
      }
      case 'served':
        if (message.certPem) this.servedCertificates.set(message.key, message.certPem);
        else this.servedCertificates.delete(message.key);
        return;
      case 'forward':
        this.options.answering.forwarded(message.url, message.body).then(
          (answer) => worker.post({ type: 'forwarded', id: message.id, answer }),
          (err: Error) => worker.post({ type: 'forwarded', id: message.id, error: err.message }),
        );
        return;
      case 'renew-schemas':
        this.options.validation?.schemas?.refresh(message.key);
        return;
      case 'observed':
        this.record(message.observations);
        return;
      case 'log':
        this.options.log.log(message.level, message.message, message.fields);
        return;
      case 'authorize':
      case 'map':
        answerQuestion(this.options.registry.context, message, (answer) => worker.post(answer));
        return;
    }
  }

  /**
   * The thread's counts, into the operator's metrics; those of a webhook no longer served are
   * dropped with its series. The operator's own webhooks (suite label empty) are always served.
   */
  private record(observations: Observation[]): void {
    const { metrics, registry } = this.options;
    for (const observation of observations) {
      if (observation[0] === 'rejected') {
        metrics.countRejected(observation[1]);
        continue;
      }
      if (observation[0] === 'connections') {
        recordConnections(metrics, observation[1]);
        continue;
      }
      if (observation[0] === 'connections-near') {
        this.options.connectionsNear?.(observation[1], observation[2]);
        continue;
      }
      if (observation[0] === 'excepted') {
        metrics.exceptionUsed(observation[1], observation[2], observation[3], observation[4]);
        continue;
      }
      const [kind, suite, webhook] = observation;
      if (suite !== '' && !registry.webhook(suite, webhook)) continue;
      if (kind === 'answered') metrics.webhook(suite, webhook).answered(observation[3], observation[4], observation[5], observation[6]);
      else if (kind === 'shadowed') this.options.shadowed?.(suite, webhook, observation[3], observation[4]);
      else metrics.webhook(suite, webhook).evaluated(observation[3], observation[4]);
    }
  }
}

/** Whether what the thread said it serves is `generation` (or later) of the suite with `uid`. */
function serves(synced: { uid?: string; generation: number } | undefined, uid: string | undefined, generation: number): boolean {
  return synced !== undefined && synced.uid === uid && synced.generation >= generation;
}

interface SuiteGeneration {
  name: string;
  uid?: string;
  generation: number;
}

/** A suite generation as a quarantine key (and what the thread says it compiles): its name first (a suite removed forgets its keys by it). */
function suiteKey({ name, uid, generation }: SuiteGeneration): string {
  return `${name}\n${uid ?? ''}\n${generation}`;
}

/** The suite generation of a suiteKey. */
function generationOf(key: string): SuiteGeneration {
  const [name, uid, generation] = key.split('\n');
  return { name: name!, uid: uid || undefined, generation: Number(generation) };
}
