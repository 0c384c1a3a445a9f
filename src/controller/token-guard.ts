/**
 * The keeper of deploy/04-token-guard.yaml's policy and binding, run by the native process (--role=native,
 * src/manager/native.ts): one deleted is put back as last seen, with a Warning Event, since while it is
 * missing the serving operator's token may register webhooks that send requests anywhere (an admin's
 * mistake; the serving pods cannot delete it). One never seen since start is reported, not invented.
 * Never edits the guard: whoever may edit it is an admin.
 */
import { TOKEN_GUARD } from '../api/names.ts';
import { isConflict, write, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { WatchedCache } from '../apiserver/watch.ts';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS } from '../desired/native.ts';
import type { EventRecorder } from './events.ts';
import type { ReconcileResult } from './queue.ts';

/** The work-queue key of the guard; not a DNS label, so no suite can have it. */
export const TOKEN_GUARD_KEY = '#token-guard';

export interface TokenGuardDeps {
  kube: Kube;
  /** The caches of the policies and bindings, by kind (the guard's among them). */
  caches: Record<'policy' | 'binding', WatchedCache<KubernetesObject>>;
  events: EventRecorder;
  log: Logger;
}

export class TokenGuardKeeper {
  private readonly deps: TokenGuardDeps;
  /** The guard's objects as last seen, without what the API server sets. */
  private readonly seen = new Map<'policy' | 'binding', KubeObject>();
  /** Each missing object reported as never seen: said once. */
  private readonly reported = new Set<string>();

  constructor(deps: TokenGuardDeps) {
    this.deps = deps;
  }

  /** A policy or binding event: the guard's copy is remembered. Returns whether it was the guard's. */
  observe(which: 'policy' | 'binding', object: KubernetesObject, deleted: boolean): boolean {
    if (object.metadata?.name !== TOKEN_GUARD) return false;
    if (!deleted) {
      const { name, labels, annotations } = object.metadata;
      const { metadata: _m, status: _s, ...rest } = object as KubeObject;
      this.seen.set(which, { ...rest, apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS[which], metadata: { name, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) } });
    }
    return true;
  }

  async reconcile(): Promise<ReconcileResult> {
    for (const which of ['policy', 'binding'] as const) {
      if (this.deps.caches[which].get(TOKEN_GUARD)) continue;
      const kind = NATIVE_KINDS[which];
      const regarding = { apiVersion: NATIVE_API_VERSION, kind, name: TOKEN_GUARD };
      const copy = this.seen.get(which);
      if (!copy) {
        if (this.reported.has(which)) continue;
        this.reported.add(which);
        const message = `the token guard's ${kind} ${TOKEN_GUARD} is missing and was not seen since this process started, so it cannot be put back: apply deploy/04-token-guard.yaml (or upgrade the chart); meanwhile the operator's token may register webhooks served anywhere`;
        this.deps.log.warn('token guard missing', { kind });
        await this.deps.events.warnOn(regarding, 'TokenGuardMissing', message);
        continue;
      }
      try {
        await write(this.deps.kube, () => this.deps.kube.objects.create(copy));
      } catch (err) {
        // Someone made it meanwhile: its watch event brings it to the cache.
        if (!isConflict(err)) throw err;
      }
      this.deps.log.warn('token guard put back', { kind });
      await this.deps.events.warnOn(
        regarding,
        'TokenGuardRestored',
        `the token guard's ${kind} ${TOKEN_GUARD} was deleted and has been put back as it was last seen; find out who deleted it (the API server's audit log): while it was missing the operator's token could register webhooks served anywhere`,
      );
    }
  }
}
