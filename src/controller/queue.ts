/**
 * controller: the work queue, the reconciler, status conditions and Events. A reconcile request
 * is only a suite's name; the reconciler reads all it needs, so it never depends on which event
 * woke it. The queue deduplicates names, runs one at a time, and backs off failures.
 */

import { backoffMs, type BackoffPolicy } from '../kube/backoff.ts';

const RETRY: BackoffPolicy = { baseMs: 500, maxMs: 60_000 };

export type ReconcileResult = { requeueAfterMs?: number } | void;

export interface QueueHooks {
  onError(name: string, err: unknown, retryInMs: number, failures: number): void;
  /** A name reconciled after `failures` failed attempts. */
  onRecovered(name: string, failures: number, lastError: unknown): void;
}

export class WorkQueue {
  private readonly pending = new Set<string>();
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  private readonly failures = new Map<string, { count: number; lastError: unknown }>();
  private running = false;
  private stopped = false;
  private active = true;
  private readonly reconcile: (name: string) => Promise<ReconcileResult>;
  private readonly hooks: QueueHooks;

  constructor(reconcile: (name: string) => Promise<ReconcileResult>, hooks: QueueHooks) {
    this.reconcile = reconcile;
    this.hooks = hooks;
  }

  /** An inactive queue (a replica that is not the leader) keeps its names but runs nothing. */
  setActive(active: boolean): void {
    this.active = active;
    if (active) void this.drain();
  }

  add(name: string): void {
    if (this.stopped) return;
    this.pending.add(name);
    void this.drain();
  }

  /** Adds `name` after `delayMs`, unless an earlier wake-up for it is already set. */
  addAfter(name: string, delayMs: number): void {
    const due = Date.now() + delayMs;
    const existing = this.timers.get(name);
    if (existing && existing.due <= due) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(name);
      this.add(name);
    }, Math.min(delayMs, 2 ** 31 - 1));
    timer.unref();
    this.timers.set(name, { timer, due });
  }

  stop(): void {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.pending.clear();
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    while (!this.stopped && this.active && this.pending.size > 0) {
      const name = this.pending.values().next().value!;
      this.pending.delete(name);
      try {
        const result = await this.reconcile(name);
        const failed = this.failures.get(name);
        if (failed) this.hooks.onRecovered(name, failed.count, failed.lastError);
        this.failures.delete(name);
        if (result && result.requeueAfterMs !== undefined) this.addAfter(name, result.requeueAfterMs);
      } catch (err) {
        const failures = (this.failures.get(name)?.count ?? 0) + 1;
        this.failures.set(name, { count: failures, lastError: err });
        const delay = backoffMs(failures, RETRY);
        this.hooks.onError(name, err, Math.round(delay), failures);
        this.addAfter(name, delay);
      }
    }
    this.running = false;
  }
}
