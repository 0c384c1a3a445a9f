/**
 * Which reconciler a work-queue key runs (the CA's, the suite-validation webhook's, the orphan
 * sweep's, the AdmissionPolicies', or a suite's), timed and counted by kind. The queue knows only keys; the reconcilers
 * know only their own object; this is the one place that joins the two. Owns no state.
 */
import type { ReconcileKind, ReconcileResultLabel } from '../health/metrics.ts';
import { NotLeaderError } from '../apiserver/client.ts';
import { CA_KEY, CaNotIssuedError } from './ca.ts';
import { ORPHANS_KEY } from './orphans.ts';
import type { ReconcileResult } from './queue.ts';
import { SELF_KEY } from './self.ts';
import { NAMESPACED_KEY } from './namespaced.ts';

export interface Reconcilers {
  ca: { reconcile(): Promise<ReconcileResult> };
  self: { reconcile(): Promise<ReconcileResult> };
  orphans: { reconcile(): Promise<ReconcileResult> };
  namespaced: { reconcile(): Promise<ReconcileResult> };
  suite: { reconcile(name: string): Promise<ReconcileResult> };
}

export function kindOf(key: string): ReconcileKind {
  return key === CA_KEY ? 'ca' : key === SELF_KEY ? 'suite-validation' : key === ORPHANS_KEY ? 'orphans' : key === NAMESPACED_KEY ? 'namespaced' : 'suite';
}

/** The CA is issued first (its key runs before any other); how soon a reconcile that found none runs again. */
export const CA_WAIT_MS = 1000;

/**
 * The queue's reconcile function: runs the key's reconciler and reports its result by kind.
 * `addCa` is the queue's own add, for a reconcile that found no CA yet.
 */
export function dispatcher(
  reconcilers: Reconcilers,
  observe: (kind: ReconcileKind, result: ReconcileResultLabel, seconds: number) => void,
  addCa: () => void,
): (key: string) => Promise<ReconcileResult> {
  return async (key) => {
    const started = performance.now();
    const done = (result: ReconcileResultLabel) => observe(kindOf(key), result, (performance.now() - started) / 1e3);
    try {
      const result =
        key === CA_KEY
          ? await reconcilers.ca.reconcile()
          : key === SELF_KEY
            ? await reconcilers.self.reconcile()
            : key === ORPHANS_KEY
              ? await reconcilers.orphans.reconcile()
              : key === NAMESPACED_KEY
                ? await reconcilers.namespaced.reconcile()
                : await reconcilers.suite.reconcile(key);
      done(result?.requeueAfterMs !== undefined ? 'requeue' : 'success');
      return result;
    } catch (err) {
      // Leadership moved mid-reconcile: the new leader takes it from here.
      if (err instanceof NotLeaderError) return done('not-leader');
      // Once the CA is issued, its Secret's event requeues everyone.
      if (err instanceof CaNotIssuedError) {
        done('requeue');
        addCa();
        return { requeueAfterMs: CA_WAIT_MS };
      }
      done('error');
      throw err;
    }
  };
}
