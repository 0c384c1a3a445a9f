/**
 * Which reconciler a work-queue key runs: the reconcilers registered in one record keyed by kind,
 * each saying which key it runs under, so running a key is a lookup; timed and counted by kind.
 * The queue knows only keys, the reconcilers only their own object; this joins the two. Owns no state but the record.
 */
import type { ReconcileKind, ReconcileResultLabel } from '../health/metrics.ts';
import { NotLeaderError } from '../apiserver/client.ts';
import { CaNotIssuedError } from './ca.ts';
import type { ReconcileResult } from './queue.ts';

/** A reconciler as the queue runs it. */
export interface Registration {
  /** The one key it runs under; none: every key no other claims (a suite's name). */
  key?: string;
  /** It runs alone: the queue lets the running keys finish first (the CA's: every other reconcile signs with it). */
  alone?: boolean;
  reconcile(key: string): Promise<ReconcileResult>;
}

/** Every reconciler, one entry each: adding a reconciler is adding its kind (health/metrics.ts) and its entry. */
export type Registrations = Record<ReconcileKind, Registration>;

/** The CA is issued first (its key runs before any other); how soon a reconcile that found none runs again. */
export const CA_WAIT_MS = 1000;

/**
 * The queue's reconcile function, made before what it runs (the queue exists first, inactive;
 * the reconcilers, made later, are registered once). `observe` is told each result by kind;
 * `addCa` is the queue's own add, for a reconcile that found no CA yet.
 */
export class Dispatch {
  private readonly observe: (kind: ReconcileKind, result: ReconcileResultLabel, seconds: number) => void;
  private readonly addCa: () => void;
  private registrations?: Registrations;
  private readonly byKey = new Map<string, ReconcileKind>();
  private rest?: ReconcileKind;

  constructor(observe: (kind: ReconcileKind, result: ReconcileResultLabel, seconds: number) => void, addCa: () => void) {
    this.observe = observe;
    this.addCa = addCa;
  }

  /** Registers every reconciler; once, before the queue first runs a key. */
  register(registrations: Registrations): void {
    if (this.registrations) throw new Error('the reconcilers are registered once');
    const rest = Object.entries(registrations).filter(([, r]) => r.key === undefined);
    if (rest.length !== 1) throw new Error(`exactly one reconciler takes the keys no other claims, not ${rest.length}`);
    for (const [kind, { key }] of Object.entries(registrations) as [ReconcileKind, Registration][]) {
      if (key === undefined) continue;
      if (this.byKey.has(key)) throw new Error(`the key ${key} is claimed by both ${this.byKey.get(key)} and ${kind}`);
      this.byKey.set(key, kind);
    }
    this.rest = rest[0]![0] as ReconcileKind;
    this.registrations = registrations;
  }

  kindOf(key: string): ReconcileKind {
    if (!this.rest) throw new Error(`no reconciler is registered yet to run ${key}`);
    return this.byKey.get(key) ?? this.rest;
  }

  /** Whether the key runs alone (the queue's `exclusive`). */
  readonly alone = (key: string): boolean => {
    const kind = this.byKey.get(key);
    return kind !== undefined && this.registrations![kind].alone === true;
  };

  /** Runs the key's reconciler and reports its result by kind. */
  readonly reconcile = async (key: string): Promise<ReconcileResult> => {
    const kind = this.kindOf(key);
    const started = performance.now();
    const done = (result: ReconcileResultLabel) => this.observe(kind, result, (performance.now() - started) / 1e3);
    try {
      const result = await this.registrations![kind].reconcile(key);
      done(result?.requeueAfterMs !== undefined ? 'requeue' : 'success');
      return result;
    } catch (err) {
      // Leadership moved mid-reconcile: the new leader takes it from here.
      if (err instanceof NotLeaderError) return done('not-leader');
      // Once the CA is issued, its Secret's event requeues everyone.
      if (err instanceof CaNotIssuedError) {
        done('requeue');
        this.addCa();
        return { requeueAfterMs: CA_WAIT_MS };
      }
      done('error');
      throw err;
    }
  };
}
