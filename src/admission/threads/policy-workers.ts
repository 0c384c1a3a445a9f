/**
 * The teams' AdmissionPolicies evaluated away from everything else, fairly. A namespace admin
 * writes the expressions, and any request in their namespace runs them: on the operator's main
 * thread, a flood of expensive requests in one namespace delayed the probes (every `Fail` webhook
 * then fails closed when the pods go NotReady), the suites' answers and the other teams'
 * policies. So the policies of a request are evaluated in tenant workers (policy-worker.ts), each
 * with its own copy of the policies, and the requests wait in one queue per namespace:
 *
 * - a namespace has at most one request in a worker at a time, and the namespaces with requests
 *   waiting take turns (round robin), so one namespace's flood delays another's request by at
 *   most one evaluation, and with two workers or more, not at all while another is free;
 * - a namespace's queue is bounded (`maxQueued`), and a request that waited longer than
 *   `maxWaitMs` is not started: both are answered at once by the policies' failurePolicy (Fail),
 *   so what waits never grows without bound, and only that namespace's requests are refused;
 * - a worker that has not answered within `stuckAfterMs` (far past the policies' own deadline, so
 *   only an evaluation that escaped the meter) is stopped and started again; its request is
 *   answered by failurePolicy, naming its namespace.
 * - a worker that dies (or is stopped as stuck) is started again, always, with backoff
 *   (src/workers/kit.ts, restarts.ts), while the others keep evaluating; the policy it was compiling counts a
 *   death (not those a request in it matched: anyone can POST a request to the endpoint, and
 *   blaming its policies would let any client quarantine a team's policy); a policy
 *   generation with QUARANTINE_AFTER of them (or whose compiling threw there) is quarantined: no
 *   longer sent to a worker, every request it matches answered at once by failurePolicy (Fail), the
 *   namespace's other requests and every other namespace evaluated as before, until it changes;
 *   `quarantined` says so to its status.
 *
 * Owns the workers, the queues and their messages; what a decision is belongs to the registry.
 */
import { workerEntry } from '../../app-files.ts';
import { answerQuestion, type Question, type QuestionAnswer } from './main-questions.ts';
import { errored, markFailed, type AdmissionRequest, type Decision } from '../../api/admission-review.ts';
import type { AdmissionPolicy, ParamsRef, WebhookType } from '../../api/types.ts';
import type { FieldError } from '../../api/validate.ts';
import type { ParamsSelection } from '../../api/params.ts';
import type { PolicyRegistry } from '../../registry/policies.ts';
import { appliesConfiguration } from '../../registry/compile.ts';
import type { MergeSchema } from '../../policy/engine/apply-configuration.ts';
import { policiesFor } from '../../registry/policy-webhook.ts';
import type { LogWriter } from '../../log.ts';
import { PoolRestarts, Quarantine, type BackoffOptions, type WorkerWatcher } from '../../workers/restarts.ts';
import { StateLog, WorkerThread, type Death, type KitSignal } from '../../workers/kit.ts';

/** What a request's policies read of the cluster, gathered by the main thread when it is dispatched. */
export interface TenantContext {
  namespaceObject?: Record<string, unknown>;
  /** By paramsKey(ref): the objects each served policy's params select for the request. */
  params: Record<string, ParamsSelection>;
  /**
   * The schema of the request's kind, read when one of its Mutating policies has ApplyConfiguration
   * mutations (null: the API server publishes none); absent otherwise (a worker then answers such a
   * mutation by failurePolicy rather than merge without it). A schema read from a document (its
   * `source`, the URL with its hash) the workers were sent (a `schemas` message) is sent as its name
   * only: a group version's document is large, and copying it to a worker per request is not free.
   */
  mergeSchema?: MergeSchema | SchemaReference | null;
}

/** A kind's component in the document at `source`, sent to the workers before (`schemas`). */
interface SchemaReference {
  ref: string;
  source: string;
}

/** The group version a document's URL (`/openapi/v3/apis/apps/v1?hash=...`) is of: a newer document of it replaces an older one. */
export const documentOf = (source: string) => source.split('?')[0]!;

export type ToTenantWorker =
  | { type: 'policy'; policy: AdmissionPolicy }
  | { type: 'removed'; namespace: string; name: string }
  | { type: 'withheld'; withheld: [string, FieldError][] }
  /** An OpenAPI v3 document read (at `source`), whose kinds' schemas requests then name (SchemaReference). */
  | { type: 'schemas'; source: string; components: MergeSchema['components'] }
  | { type: 'review'; id: number; webhook: WebhookType; request: AdmissionRequest; context: TenantContext }
  | QuestionAnswer;

export type FromTenantWorker =
  | Question
  /** About to compile the policy (namespace/name as the key): if the worker dies before it says compiled, the policy is the suspect. */
  | KitSignal
  /** Compiling the policy threw in the worker: it is quarantined (it would throw again). */
  | { type: 'compile-failed'; policy: string; message: string }
  /** The worker began evaluating: from here its time counts (not while it starts or compiles the policies). */
  | { type: 'started'; id: number }
  | { type: 'answer'; id: number; decision: Decision; failed: boolean }
  | { type: 'error'; id: number; message: string };

/** A params reference as a key (the same reference is sent and asked for). */
export const paramsKey = (ref: ParamsRef) => JSON.stringify([ref.apiVersion, ref.kind, ref.namespace ?? '', ref.name ?? '', ref.selector ?? null]);

export interface PolicyWorkerPoolOptions {
  /** Workers evaluating at once (at least 1). */
  workers: number;
  /** Requests of one namespace that may wait; more are refused at once. */
  maxQueued: number;
  /** A request that waited this long is refused rather than started (the API server gives up at 10 s). */
  maxWaitMs: number;
  /** A worker that has not answered this long is stopped. */
  stuckAfterMs: number;
  /**
   * After an evaluation of more than REST_AFTER_MS, its namespace rests this many times as long
   * before its next request starts: a namespace whose every request is expensive gets at most
   * 1 / (1 + restFactor) of a worker's time, and leaves the machine's cores to the API server and
   * everyone else. A typical request (well under a millisecond) never rests.
   */
  restFactor: number;
  /** When a worker that died is started again (RESTART_BACKOFF by default; tests shorten it). */
  restart?: Partial<BackoffOptions>;
  /** The workers' entry (policy-worker.ts; tests wrap it). */
  entry?: URL;
}

/** Evaluations shorter than this never make their namespace rest. */
const REST_AFTER_MS = 5;

export const TENANT_POOL_DEFAULTS: PolicyWorkerPoolOptions = { workers: 2, maxQueued: 64, maxWaitMs: 5_000, stuckAfterMs: 3_000, restFactor: 1 };

interface Item {
  /** Its call's id in the worker it was sent to (0 until it is sent). */
  id: number;
  webhook: WebhookType;
  request: AdmissionRequest;
  namespace: string;
  queuedAt: number;
  /** Read before it is queued (admit): TenantContext.mergeSchema. */
  mergeSchema?: MergeSchema | null;
  resolve(decision: Decision): void;
}

type TenantThread = WorkerThread<ToTenantWorker, FromTenantWorker>;

interface Slot {
  worker: TenantThread;
  item?: Item;
  /** When the worker began evaluating its item (0: not yet). */
  startedAt: number;
  /** What its death counts as when it is stopped for running past the limit (the quarantine's words). */
  stuck?: string;
}

const WORKER = workerEntry('policy-worker', import.meta.url);

/** The failurePolicy answer (Fail) for a request whose policies could not be evaluated. */
function refused(namespace: string, why: string): Decision {
  return errored(`the AdmissionPolicies of namespace ${namespace} could not be evaluated: ${why}`, 'Fail');
}

export class PolicyWorkerPool {
  private readonly registry: PolicyRegistry;
  private readonly log: LogWriter;
  private readonly options: PolicyWorkerPoolOptions;
  /** The policies as last synced, by namespace/name, and what is withheld (sent to a new worker as it starts). */
  private readonly policies = new Map<string, AdmissionPolicy>();
  private withheld: [string, FieldError][] = [];
  /** What every worker holds (the policies, as sendPolicy says them), replayed to each as it starts. */
  private readonly state = new StateLog<ToTenantWorker>();
  /** By documentOf(source): the newest document the workers were sent (in `state`, so a worker started again has it too). */
  private readonly documents = new Map<string, string>();
  private readonly slots: Slot[] = [];
  private readonly queues = new Map<string, Item[]>();
  /** Namespaces with requests waiting and none in a worker, in turn order. */
  private readonly turns: string[] = [];
  /** Namespaces with a request in a worker, or resting after an expensive one: not in `turns`. */
  private readonly running = new Set<string>();
  private watchdog: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly quarantine = new Quarantine();
  /** Namespaces with a quarantined policy: only their requests are matched here before they are sent. */
  private readonly held = new Set<string>();
  private readonly restarts: PoolRestarts;
  private readonly watchers: WorkerWatcher[] = [];

  constructor(registry: PolicyRegistry, log: LogWriter, options: Partial<PolicyWorkerPoolOptions> = {}) {
    this.registry = registry;
    this.log = log;
    this.options = { ...TENANT_POOL_DEFAULTS, ...options };
    this.restarts = new PoolRestarts(this.options.restart, () => this.restarted());
    for (const compiled of registry.all()) {
      this.policies.set(`${compiled.namespace}/${compiled.name}`, compiled.source);
      this.sendPolicy(compiled.source);
    }
    this.withheld = registry.withheldEntries();
    registry.subscribe((change) => {
      if ('policy' in change) {
        const name = `${change.policy.metadata.namespace}/${change.policy.metadata.name}`;
        this.policies.set(name, change.policy);
        const key = policyKey(change.policy);
        // Older generations (and another policy once under the name) are not coming back.
        this.forget((k) => k.startsWith(`${name}\n`) && k !== key);
        this.sendPolicy(change.policy);
      } else if ('removed' in change) {
        const name = `${change.removed.namespace}/${change.removed.name}`;
        this.policies.delete(name);
        this.forget((k) => k.startsWith(`${name}\n`));
        this.state.drop(name, { type: 'removed', ...change.removed });
      } else {
        this.withheld = change.withheld;
        this.state.send({ type: 'withheld', withheld: change.withheld });
      }
    });
  }

  /** Tells `watcher` of each worker's death and each policy quarantined. */
  watch(watcher: WorkerWatcher): void {
    this.watchers.push(watcher);
  }

  /** Why this generation of the policy is not sent to the tenant workers (the requests it matches refused by failurePolicy); undefined when it is. */
  quarantined(policy: AdmissionPolicy): string | undefined {
    return this.quarantine.why(policyKey(policy));
  }

  /** What the workers are told of a policy: a quarantined generation is not sent (nor an earlier one kept: it is removed there). */
  private sendPolicy(policy: AdmissionPolicy): void {
    const { namespace, name } = policy.metadata;
    if (this.quarantine.why(policyKey(policy))) this.state.drop(`${namespace}/${name}`, { type: 'removed', namespace, name });
    else this.state.put(`${namespace}/${name}`, { type: 'policy', policy });
  }

  private forget(drop: (key: string) => boolean): void {
    this.quarantine.forget(drop);
    this.held.clear();
    for (const policy of this.policies.values()) if (this.quarantine.why(policyKey(policy))) this.held.add(policy.metadata.namespace);
  }

  /** The refusal of a request one of whose policies is quarantined; undefined for any other (checked only in namespaces that have one). */
  private heldBack(webhook: WebhookType, request: AdmissionRequest): Decision | undefined {
    const namespace = request.namespace ?? '';
    if (!this.held.has(namespace)) return undefined;
    for (const policy of policiesFor(request, webhook, this.registry)) {
      const why = this.quarantine.why(policyKey(policy.source));
      if (why) return refused(namespace, `AdmissionPolicy ${policy.name} is quarantined: ${why}`);
    }
    return undefined;
  }

  /** The decision of the namespace's `webhook` policies on `request`: always resolves (by failurePolicy when they cannot be evaluated). */
  admit(webhook: WebhookType, request: AdmissionRequest): Promise<Decision> {
    const namespace = request.namespace ?? '';
    if (this.closed) return Promise.resolve(refused(namespace, 'the operator is stopping'));
    const held = this.heldBack(webhook, request);
    if (held) return Promise.resolve(held);
    // The workers hold no schemas: the kind's is read here (cached by OpenApiSchemas) and sent with the request.
    const source = this.registry.context.mergeSchemas;
    if (webhook === 'Mutating' && source && request.kind && policiesFor(request, webhook, this.registry).some((p) => appliesConfiguration(p.source.spec))) {
      const kind = request.kind;
      return (async () => {
        let schema: (MergeSchema & { source?: string }) | undefined;
        try {
          schema = await source.schema(kind);
        } catch (err) {
          return refused(namespace, `the schema of ${kind.kind} could not be read: ${(err as Error)?.message ?? err}`);
        }
        // Sent to the workers once per document read (OpenApiSchemas' KindSchema names it), before any request names it.
        if (typeof schema?.source === 'string' && this.documents.get(documentOf(schema.source)) !== schema.source) {
          this.documents.set(documentOf(schema.source), schema.source);
          this.state.put(`schemas ${documentOf(schema.source)}`, { type: 'schemas', source: schema.source, components: schema.components });
        }
        return this.queued(webhook, request, namespace, schema ?? null);
      })();
    }
    return this.queued(webhook, request, namespace);
  }

  private queued(webhook: WebhookType, request: AdmissionRequest, namespace: string, mergeSchema?: MergeSchema | null): Promise<Decision> {
    const queue = this.queues.get(namespace) ?? [];
    if (queue.length >= this.options.maxQueued) {
      return Promise.resolve(refused(namespace, `${queue.length} of its requests are already waiting (the most one namespace may have); retry`));
    }
    return new Promise((resolve) => {
      queue.push({ id: 0, webhook, request, namespace, queuedAt: Date.now(), resolve, ...(mergeSchema !== undefined ? { mergeSchema } : {}) });
      if (queue.length === 1) {
        this.queues.set(namespace, queue);
        if (!this.running.has(namespace)) this.turns.push(namespace);
      }
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.restarts.close();
    clearInterval(this.watchdog);
    for (const [namespace, queue] of this.queues) for (const item of queue) item.resolve(refused(namespace, 'the operator is stopping'));
    this.queues.clear();
    this.turns.length = 0;
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  /** Starts waiting requests on free workers, namespaces in turn, one request per namespace at a time. */
  private dispatch(): void {
    while (this.turns.length > 0) {
      const slot = this.freeSlot();
      if (!slot) return;
      const namespace = this.turns.shift()!;
      const queue = this.queues.get(namespace)!;
      const item = queue.shift()!;
      if (queue.length === 0) this.queues.delete(namespace);
      if (Date.now() - item.queuedAt > this.options.maxWaitMs) {
        item.resolve(refused(namespace, `it waited more than ${this.options.maxWaitMs} ms behind the namespace's other requests; retry`));
        if (this.queues.has(namespace)) this.turns.push(namespace);
        continue;
      }
      // One of its policies was quarantined while it waited: never sent to a worker.
      const held = this.heldBack(item.webhook, item.request);
      if (held) {
        item.resolve(held);
        if (this.queues.has(namespace)) this.turns.push(namespace);
        continue;
      }
      this.running.add(namespace);
      slot.item = item;
      slot.startedAt = 0;
      const call = slot.worker.call({ type: 'review', webhook: item.webhook, request: item.request, context: this.contextFor(item) });
      item.id = call.id;
      call.reply.then(
        (message) => {
          if (slot.item !== item) return;
          // (the mark of an answer by failurePolicy is not sent with the object: it is set again here)
          if (message.type === 'answer') this.finish(slot, message.failed ? markFailed(message.decision) : message.decision);
          else if (message.type === 'error') this.finish(slot, refused(item.namespace, message.message));
        },
        // The worker died with it in: lost() answers it, in its words.
        () => undefined,
      );
    }
  }

  /** The request is answered: its namespace's next request, if any, takes its turn after the others waiting. */
  private finish(slot: Slot, decision: Decision): void {
    const item = slot.item;
    if (!item) return;
    slot.item = undefined;
    const busy = slot.startedAt ? Date.now() - slot.startedAt : 0;
    item.resolve(decision);
    if (busy > REST_AFTER_MS && this.options.restFactor > 0) {
      // Its next request waits as long as this one ran, whatever else is waiting.
      setTimeout(() => this.wake(item.namespace), busy * this.options.restFactor).unref();
    } else this.wake(item.namespace);
    this.dispatch();
  }

  /** The namespace may have a worker again: it takes its turn after the others waiting. */
  private wake(namespace: string): void {
    this.running.delete(namespace);
    if (this.closed || !this.queues.has(namespace)) return;
    this.turns.push(namespace);
    this.dispatch();
  }

  private contextFor(item: Item): TenantContext {
    const { view, params } = this.registry.context;
    const context: TenantContext = { params: {}, ...(item.mergeSchema !== undefined ? { mergeSchema: this.named(item.mergeSchema) } : {}) };
    const namespaceObject = view?.namespace(item.namespace);
    if (namespaceObject) context.namespaceObject = namespaceObject;
    for (const policy of this.registry.served(item.namespace)) {
      const ref = policy.params;
      if (ref && params) context.params[paramsKey(ref)] = params.select(ref, item.namespace);
    }
    return context;
  }

  /** A schema as a request carries it: by name where the workers hold its document (a newer one may have replaced it since it was read: then whole). */
  private named(schema: (MergeSchema & { source?: string }) | null): TenantContext['mergeSchema'] {
    if (schema === null || typeof schema.source !== 'string' || this.documents.get(documentOf(schema.source)) !== schema.source) return schema && { ref: schema.ref, components: schema.components };
    return { ref: schema.ref, source: schema.source };
  }

  private freeSlot(): Slot | undefined {
    const free = this.slots.find((slot) => !slot.item);
    if (free) return free;
    if (this.slots.length >= Math.max(1, this.options.workers) || this.restarts.waiting) return undefined;
    return this.start();
  }

  /** The backoff's wait after a death is over: a worker is started again, and takes the waiting requests. */
  private restarted(): void {
    if (this.closed || this.slots.length >= Math.max(1, this.options.workers)) return;
    this.start();
    this.dispatch();
  }

  private start(): Slot {
    const { limits, protectedNamespaces, operatorNamespace, authorizer } = this.registry.context;
    const slot = { startedAt: 0 } as Slot;
    slot.worker = new WorkerThread<ToTenantWorker, FromTenantWorker>({
      entry: this.options.entry ?? WORKER,
      workerData: { limits, protectedNamespaces, operatorNamespace, authorizer: authorizer !== undefined },
      state: this.state,
      started: (post) => {
        if (this.withheld.length) post({ type: 'withheld', withheld: this.withheld });
      },
      replies: ['answer', 'error'],
      receive: (message) => this.onMessage(slot, message),
      describe: (cause) => ('error' in cause ? cause.error.message : 'exitCode' in cause ? `the tenant worker exited (${cause.exitCode})` : cause.stopped),
      died: (death) => this.lost(slot, death),
    });
    this.restarts.started();
    this.slots.push(slot);
    this.watchdog ??= setInterval(() => this.stopStuck(), Math.min(250, this.options.stuckAfterMs / 4)).unref();
    return slot;
  }

  private onMessage(slot: Slot, message: Exclude<FromTenantWorker, KitSignal>): void {
    switch (message.type) {
      case 'authorize':
      case 'map':
        answerQuestion(this.registry.context, message, (answer) => slot.worker.post(answer));
        return;
      case 'compile-failed': {
        const policy = this.policies.get(message.policy);
        if (!policy || this.quarantine.why(policyKey(policy))) return;
        this.quarantine.hold(policyKey(policy), `compiling it threw in a tenant worker: ${message.message}`);
        this.putInQuarantine(policy);
        return;
      }
      case 'started':
        if (slot.item?.id === message.id) slot.startedAt = Date.now();
        return;
    }
  }

  /** A worker that has run one request too long is stopped; its request is answered by failurePolicy. */
  private stopStuck(): void {
    const now = Date.now();
    for (const slot of [...this.slots]) {
      if (!slot.item || slot.startedAt === 0 || now - slot.startedAt < this.options.stuckAfterMs) continue;
      const namespace = slot.item.namespace;
      this.log.warn('a tenant worker ran past its limit and was stopped; its request is answered by failurePolicy', { namespace, ms: now - slot.startedAt });
      slot.stuck = "it ran past the tenant workers' limit and was stopped";
      void slot.worker.stop(`their evaluation ran more than ${this.options.stuckAfterMs} ms and was stopped`);
    }
  }

  /**
   * The worker is gone: its request is answered by failurePolicy; the policy it was compiling, else
   * those its request matched, count a death (quarantined at the last); a new worker starts after the
   * backoff's wait, the others take the waiting requests meanwhile.
   */
  private lost(slot: Slot, { why, suspect }: Death<never>): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    if (this.slots.length === 0 && this.watchdog) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
    }
    if (this.closed) {
      if (slot.item) this.finish(slot, refused(slot.item.namespace, why));
      return;
    }
    const compiling = suspect !== undefined ? this.policies.get(suspect) : undefined;
    // The request's policies are not suspects: a request that kills a worker is its sender's doing.
    const suspects = compiling ? [compiling] : [];
    const wait = this.restarts.died();
    this.log.warn('a tenant worker stopped; starting it again', { error: why, namespace: slot.item?.namespace, inMs: wait, deathsInARow: this.restarts.deaths });
    for (const watcher of this.watchers) watcher.died?.('tenant');
    for (const policy of suspects) if (this.quarantine.died(policyKey(policy), `${slot.stuck ?? why} while compiling it`)) this.putInQuarantine(policy);
    if (slot.item) this.finish(slot, refused(slot.item.namespace, why));
    else this.dispatch();
  }

  /** The policy's generation is quarantined now: not sent to the workers; the requests it matches are refused before they are. */
  private putInQuarantine(policy: AdmissionPolicy): void {
    const { namespace, name } = policy.metadata;
    this.held.add(namespace);
    this.log.error('AdmissionPolicy quarantined: it stopped a tenant worker again and again; the requests it matches are refused by failurePolicy until it changes', {
      namespace,
      policy: name,
      generation: policy.metadata.generation,
      why: this.quarantine.why(policyKey(policy)),
    });
    this.state.drop(`${namespace}/${name}`, { type: 'removed', namespace, name });
    for (const watcher of this.watchers) watcher.quarantined?.('tenant', `${namespace}/${name}`);
  }
}

/** A policy generation as a quarantine key: namespace/name first (a policy removed forgets its keys by it). */
function policyKey(policy: AdmissionPolicy): string {
  const { namespace, name, uid, generation } = policy.metadata;
  return `${namespace}/${name}\n${uid ?? ''}\n${generation ?? 0}`;
}
