/**
 * The orphan sweeper: deletes what the operator made for a suite that no longer exists, when the garbage
 * collector will not (it learns a new type only on its next discovery pass, about 30 s, and never
 * collects a dependent whose owner's type is gone: a suite applied just
 * after its CRD, then the CRD removed, left a webhook configuration that with `failurePolicy: Fail`
 * blocks writes for good). Level-based, from the caches, by the leader at start and on a period. Never
 * touches an object without our labels, nor the operator's own (CA, suite validation: no suite label).
 */
import { SUITE_LABEL } from '../api/names.ts';
import type { AdmissionSuite } from '../api/types.ts';
import { deleteIfExists, type Kube } from '../apiserver/client.ts';
import type { WatchedCache } from '../apiserver/watch.ts';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import type { ReconcileResult } from './queue.ts';

/** The work-queue key of the sweep; not a DNS label, so no suite can have it. */
export const ORPHANS_KEY = '#orphans';

/** Garbage collection normally gets there first; this is the net under it. */
const SWEEP_PERIOD_MS = 5 * 60_000;

export interface OrphanSweeperDeps {
  kube: Kube;
  suites: WatchedCache<AdmissionSuite>;
  /** Our label-selected caches of what we make for suites, with the apiVersion/kind of each. */
  made: { apiVersion: string; kind: string; cache: WatchedCache<KubernetesObject> }[];
  log: Logger;
}

export class OrphanSweeper {
  private readonly deps: OrphanSweeperDeps;

  constructor(deps: OrphanSweeperDeps) {
    this.deps = deps;
  }

  async reconcile(): Promise<ReconcileResult> {
    for (const { apiVersion, kind, cache } of this.deps.made) {
      for (const object of cache.list()) {
        const suite = object.metadata?.labels?.[SUITE_LABEL];
        // A suite of that name owns it: the same suite, or one deleted and applied again under its
        // name, which takes it over (isOurs) on its next reconcile.
        if (!suite || this.deps.suites.get(suite)) continue;
        const { name, namespace } = object.metadata!;
        if (await deleteIfExists(this.deps.kube, { apiVersion, kind, metadata: { name: name!, ...(namespace ? { namespace } : {}) } })) {
          this.deps.log.info('removed an object of a suite that no longer exists', { kind, name, namespace, suite });
        }
      }
    }
    return { requeueAfterMs: SWEEP_PERIOD_MS };
  }
}
