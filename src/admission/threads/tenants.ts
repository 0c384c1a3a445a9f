/**
 * The teams' AdmissionPolicies evaluated away from everything else, fairly. A namespace admin
 * writes the expressions, and any request in their namespace runs them: on the operator's main
 * thread, a flood of expensive requests in one namespace delayed the probes (every `Fail` webhook
 * then fails closed when the pods go NotReady), the suites' answers and the other teams'
 * policies. So the policies of a request are evaluated in tenant workers (tenant-worker.ts), each
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
 *
 * Owns the workers, the queues and their messages; what a decision is belongs to the registry.
 */
import { Worker } from 'node:worker_threads';
import { workerEntry } from '../../app-files.ts';
import { answerQuestion, type Question, type QuestionAnswer } from './main-questions.ts';
import { errored, markFailed, type AdmissionRequest, type Decision } from '../../api/admission-review.ts';
import type { AdmissionPolicy, ParamsRef, WebhookType } from '../../api/types.ts';
import type { FieldError } from '../../api/validate.ts';
import type { ParamsSelection } from '../../api/params.ts';
import type { PolicyRegistry } from '../../registry/policies.ts';
import type { LogWriter } from '../../log.ts';

/** What a request's policies read of the cluster, gathered by the main thread when it is dispatched. */
export interface TenantContext {
  namespaceObject?: Record<string, unknown>;
  /** By paramsKey(ref): the objects each served policy's params select for the request. */
  params: Record<string, ParamsSelection>;
}

export type ToTenantWorker =
  | { type: 'policy'; policy: AdmissionPolicy }
  | { type: 'removed'; namespace: string; name: string }
  | { type: 'withheld'; withheld: [string, FieldError][] }
  | { type: 'review'; id: number; webhook: WebhookType; request: AdmissionRequest; context: TenantContext }
  | QuestionAnswer;

export type FromTenantWorker =
  | Question
  /** The worker began evaluating: from here its time counts (not while it starts or compiles the policies). */
  | { type: 'started'; id: number }
  | { type: 'answer'; id: number; decision: Decision; failed: boolean }
  | { type: 'error'; id: number; message: string };

/** A params reference as a key (the same reference is sent and asked for). */
export const paramsKey = (ref: ParamsRef) => JSON.stringify([ref.apiVersion, ref.kind, ref.namespace ?? '', ref.name ?? '', ref.selector ?? null]);

export interface TenantPoolOptions {
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
}

/** Evaluations shorter than this never make their namespace rest. */
const REST_AFTER_MS = 5;

export const TENANT_POOL_DEFAULTS: TenantPoolOptions = { workers: 2, maxQueued: 64, maxWaitMs: 5_000, stuckAfterMs: 3_000, restFactor: 1 };

interface Item {
  id: number;
  webhook: WebhookType;
  request: AdmissionRequest;
  namespace: string;
  queuedAt: number;
  resolve(decision: Decision): void;
}

interface Slot {
  worker: Worker;
  item?: Item;
  /** When the worker began evaluating its item (0: not yet). */
  startedAt: number;
}

const WORKER = workerEntry('tenant-worker', import.meta.url);

/** The failurePolicy answer (Fail) for a request whose policies could not be evaluated. */
function refused(namespace: string, why: string): Decision {
  return errored(`the AdmissionPolicies of namespace ${namespace} could not be evaluated: ${why}`, 'Fail');
}

export class TenantPool {
  private readonly registry: PolicyRegistry;
  private readonly log: LogWriter;
  private readonly options: TenantPoolOptions;
  /** The policies as last synced, by namespace/name, and what is withheld: replayed to a new worker. */
  private readonly policies = new Map<string, AdmissionPolicy>();
  private withheld: [string, FieldError][] = [];
  private readonly slots: Slot[] = [];
  private readonly queues = new Map<string, Item[]>();
  /** Namespaces with requests waiting and none in a worker, in turn order. */
  private readonly turns: string[] = [];
  /** Namespaces with a request in a worker, or resting after an expensive one: not in `turns`. */
  private readonly running = new Set<string>();
  private nextId = 1;
  private watchdog: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(registry: PolicyRegistry, log: LogWriter, options: Partial<TenantPoolOptions> = {}) {
    this.registry = registry;
    this.log = log;
    this.options = { ...TENANT_POOL_DEFAULTS, ...options };
    for (const compiled of registry.all()) this.policies.set(`${compiled.namespace}/${compiled.name}`, compiled.source);
    this.withheld = registry.withheldEntries();
    registry.subscribe((change) => {
      let message: ToTenantWorker;
      if ('policy' in change) {
        this.policies.set(`${change.policy.metadata.namespace}/${change.policy.metadata.name}`, change.policy);
        message = { type: 'policy', policy: change.policy };
      } else if ('removed' in change) {
        this.policies.delete(`${change.removed.namespace}/${change.removed.name}`);
        message = { type: 'removed', ...change.removed };
      } else {
        this.withheld = change.withheld;
        message = { type: 'withheld', withheld: change.withheld };
      }
      for (const slot of this.slots) slot.worker.postMessage(message);
    });
  }

  /** The decision of the namespace's `webhook` policies on `request`: always resolves (by failurePolicy when they cannot be evaluated). */
  admit(webhook: WebhookType, request: AdmissionRequest): Promise<Decision> {
    const namespace = request.namespace ?? '';
    if (this.closed) return Promise.resolve(refused(namespace, 'the operator is stopping'));
    const queue = this.queues.get(namespace) ?? [];
    if (queue.length >= this.options.maxQueued) {
      return Promise.resolve(refused(namespace, `${queue.length} of its requests are already waiting (the most one namespace may have); retry`));
    }
    return new Promise((resolve) => {
      queue.push({ id: this.nextId++, webhook, request, namespace, queuedAt: Date.now(), resolve });
      if (queue.length === 1) {
        this.queues.set(namespace, queue);
        if (!this.running.has(namespace)) this.turns.push(namespace);
      }
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
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
      this.running.add(namespace);
      slot.item = item;
      slot.startedAt = 0;
      slot.worker.postMessage({ type: 'review', id: item.id, webhook: item.webhook, request: item.request, context: this.contextFor(item) } satisfies ToTenantWorker);
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
    const context: TenantContext = { params: {} };
    const namespaceObject = view?.namespace(item.namespace);
    if (namespaceObject) context.namespaceObject = namespaceObject;
    for (const policy of this.registry.served(item.namespace)) {
      const ref = policy.params;
      if (ref && params) context.params[paramsKey(ref)] = params.select(ref, item.namespace);
    }
    return context;
  }

  private freeSlot(): Slot | undefined {
    const free = this.slots.find((slot) => !slot.item);
    if (free) return free;
    if (this.slots.length >= Math.max(1, this.options.workers)) return undefined;
    return this.start();
  }

  private start(): Slot {
    const { limits, protectedNamespaces, operatorNamespace, authorizer } = this.registry.context;
    const worker = new Worker(WORKER, { workerData: { limits, protectedNamespaces, operatorNamespace, authorizer: authorizer !== undefined } });
    // The workers do not keep the process alive; the server's sockets do.
    worker.unref();
    for (const policy of this.policies.values()) worker.postMessage({ type: 'policy', policy } satisfies ToTenantWorker);
    if (this.withheld.length) worker.postMessage({ type: 'withheld', withheld: this.withheld } satisfies ToTenantWorker);
    const slot: Slot = { worker, startedAt: 0 };
    worker.on('message', (message: FromTenantWorker) => this.onMessage(slot, message));
    worker.on('error', (err) => this.lost(slot, err.message));
    worker.on('exit', (code) => this.lost(slot, `the tenant worker exited (${code})`));
    this.slots.push(slot);
    this.watchdog ??= setInterval(() => this.stopStuck(), Math.min(250, this.options.stuckAfterMs / 4)).unref();
    return slot;
  }

  private onMessage(slot: Slot, message: FromTenantWorker): void {
    switch (message.type) {
      case 'authorize':
      case 'map':
        answerQuestion(this.registry.context, message, (answer) => slot.worker.postMessage(answer satisfies ToTenantWorker));
        return;
      case 'started':
        if (slot.item?.id === message.id) slot.startedAt = Date.now();
        return;
      case 'answer':
        // (the mark of an answer by failurePolicy is not sent with the object: it is set again here)
        if (slot.item?.id === message.id) this.finish(slot, message.failed ? markFailed(message.decision) : message.decision);
        return;
      case 'error':
        if (slot.item?.id === message.id) this.finish(slot, refused(slot.item.namespace, message.message));
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
      this.lost(slot, `their evaluation ran more than ${this.options.stuckAfterMs} ms and was stopped`);
      void slot.worker.terminate();
    }
  }

  /** The worker is gone: its request is answered by failurePolicy, and the next request starts a new one. */
  private lost(slot: Slot, why: string): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    if (this.slots.length === 0 && this.watchdog) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
    }
    if (!this.closed && !slot.item) this.log.warn('a tenant worker stopped', { error: why });
    if (slot.item) this.finish(slot, refused(slot.item.namespace, why));
    else this.dispatch();
  }
}
