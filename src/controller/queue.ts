/**
 * controller: the work queue, as client-go's: a key (never the event) queued once however often added,
 * never reconciled twice at once (one added while running runs again after), up to `concurrency` keys
 * at once, failures backing off per key. An exclusive key (the CA's) runs alone, after the running
 * keys finish, so no reconcile reads the CA halfway through a rotation step. Knows nothing of suites
 * or the API server.
 */

import { backoffMs, type BackoffPolicy } from '../apiserver/backoff.ts';

const RETRY: BackoffPolicy = { baseMs: 500, maxMs: 60_000 };

export type ReconcileResult = { requeueAfterMs?: number } | void;

export interface QueueHooks {
  onError(key: string, err: unknown, retryInMs: number, failures: number): void;
  /** A key reconciled after `failures` failed attempts. */
  onRecovered(key: string, failures: number, lastError: unknown): void;
}

export interface QueueOptions {
  /** How many different keys may be reconciled at once (controller-runtime's MaxConcurrentReconciles). */
  concurrency: number;
  /** Keys that run alone. */
  exclusive?: (key: string) => boolean;
}

export class WorkQueue {
  /** Keys waiting to run, in the order they were first added (exclusive keys are few: looked for first). */
  private readonly pending = new Set<string>();
  private readonly running = new Set<string>();
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  private readonly failures = new Map<string, { count: number; lastError: unknown }>();
  private exclusiveRunning = false;
  private stopped = false;
  private active = true;
  private readonly reconcile: (key: string) => Promise<ReconcileResult>;
  private readonly hooks: QueueHooks;
  private readonly concurrency: number;
  private readonly isExclusive: (key: string) => boolean;

  constructor(reconcile: (key: string) => Promise<ReconcileResult>, hooks: QueueHooks, options: QueueOptions = { concurrency: 1 }) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) throw new Error(`concurrency must be a whole number of at least 1, not ${options.concurrency}`);
    this.reconcile = reconcile;
    this.hooks = hooks;
    this.concurrency = options.concurrency;
    this.isExclusive = options.exclusive ?? (() => false);
  }

  /** An inactive queue (a replica that is not the leader) keeps its keys but starts nothing. */
  setActive(active: boolean): void {
    this.active = active;
    if (active) this.dispatch();
  }

  add(key: string): void {
    if (this.stopped) return;
    this.pending.add(key);
    this.dispatch();
  }

  /** Adds `key` after `delayMs`, unless an earlier wake-up for it is already set. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const due = Date.now() + delayMs;
    const existing = this.timers.get(key);
    if (existing && existing.due <= due) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.add(key);
      },
      Math.min(delayMs, 2 ** 31 - 1),
    );
    timer.unref();
    this.timers.set(key, { timer, due });
  }

  /** Keys waiting (not those running): the queue's depth. */
  get depth(): number {
    return this.pending.size;
  }

  stop(): void {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.pending.clear();
  }

  /** Starts every key that may start now. An exclusive key waiting goes first: it waits for the running keys, and nothing starts before it. */
  private dispatch(): void {
    if (this.stopped || !this.active || this.exclusiveRunning) return;
    for (const key of this.pending) {
      if (!this.isExclusive(key) || this.running.has(key)) continue;
      if (this.running.size > 0) return;
      this.exclusiveRunning = true;
      this.start(key);
      return;
    }
    for (const key of this.pending) {
      if (this.running.size >= this.concurrency) return;
      if (!this.running.has(key)) this.start(key);
    }
  }

  private start(key: string): void {
    this.pending.delete(key);
    this.running.add(key);
    void this.run(key).finally(() => {
      this.running.delete(key);
      if (this.isExclusive(key)) this.exclusiveRunning = false;
      this.dispatch();
    });
  }

  private async run(key: string): Promise<void> {
    try {
      const result = await this.reconcile(key);
      const failed = this.failures.get(key);
      if (failed) this.hooks.onRecovered(key, failed.count, failed.lastError);
      this.failures.delete(key);
      if (result && result.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const failures = (this.failures.get(key)?.count ?? 0) + 1;
      this.failures.set(key, { count: failures, lastError: err });
      const delay = backoffMs(failures, RETRY);
      this.hooks.onError(key, err, Math.round(delay), failures);
      this.addAfter(key, delay);
    }
  }
}
