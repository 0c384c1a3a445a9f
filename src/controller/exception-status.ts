/**
 * controller: the status of AdmissionExceptions and ClusterAdmissionExceptions (issue 55; a cluster one is held under the namespace ''): `uses` and `lastUsed`, counted in
 * memory as requests are let through and written coalesced (never on the request path), and the
 * `Expired` condition, turned True at `expires` by a wake-up set for that instant (the leader's).
 * Owns only these status fields; the exceptions themselves are the watch's (manager/cluster-state.ts)
 * and whether one applies to a request is registry/exceptions.ts'. Writes nothing else.
 *
 * Uses are written by whichever replica saw them, not only by the leader: a replica's counts are
 * its own, in its memory, and are lost with it if they had to wait for the leader. So each replica
 * adds what it counted since its last write to the stored count, read-modify-write guarded by the
 * resourceVersion (an update that conflicts is read again and added again), and `lastUsed` is the
 * later of the stored one and its own: replicas never overwrite each other's counts. An exception
 * is written at most once per `usesIntervalMs` by each replica; the first use after a quiet period
 * is written at once. What a replica counted and had not yet written when it stopped is lost (at
 * most one interval's), as is the metric's.
 */
import { isDeepStrictEqual } from 'node:util';
import { describeError, isConflict, isNotFound, type Kube } from '../apiserver/client.ts';
import { CLUSTER_EXCEPTION_PLURAL, EXCEPTION_PLURAL, expiryOf, type AnyException, type ExceptionStatus } from '../api/exceptions.ts';
import { GROUP, VERSION } from '../api/types.ts';
import type { ExceptionStore } from '../registry/exceptions.ts';
import type { Logger } from '../log.ts';
import { setConditions, type ConditionInput } from './conditions.ts';
import { WorkQueue, type ReconcileResult } from './queue.ts';

/** How often one replica writes an exception's uses at most. */
export const USES_INTERVAL_MS = 30_000;

/** How many times a conflicting status write is read and made again before the queue backs off. */
const CONFLICT_RETRIES = 5;

/** RFC 3339 to the second, as the API server writes times. */
const toSecond = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface ExceptionStatusDeps {
  /** A client without the leader gate: every replica writes the uses it counted. The Expired condition is written only while `leading`. */
  kube: Kube;
  exceptions: ExceptionStore;
  log: Logger;
  now?: () => number;
  usesIntervalMs?: number;
}

export class ExceptionStatusWriter {
  /** namespace/name -> uses counted here and not yet written. */
  private readonly pending = new Map<string, { count: number; lastUsed: number }>();
  /** namespace/name -> when this replica last wrote its uses. */
  private readonly lastWrite = new Map<string, number>();
  private readonly uses: WorkQueue;
  private readonly expiry: WorkQueue;
  private readonly now: () => number;
  private readonly interval: number;
  private readonly unsubscribe: () => void;
  private readonly deps: ExceptionStatusDeps;

  constructor(deps: ExceptionStatusDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.interval = deps.usesIntervalMs ?? USES_INTERVAL_MS;
    const hooks = (what: string) => ({
      onError: (key: string, err: unknown, retryInMs: number) => deps.log.warn(`could not write an AdmissionException's ${what}; will retry`, { exception: key, error: describeError(err), retryInMs }),
      onRecovered: () => undefined,
    });
    this.uses = new WorkQueue((key) => this.writeUses(key), hooks('uses'), { concurrency: 2 });
    this.expiry = new WorkQueue((key) => this.reconcileExpiry(key), hooks('Expired condition'), { concurrency: 2 });
    // Only the leader writes conditions: until it leads, keys wait.
    this.expiry.setActive(false);
    // Every exception written (a new one, a new expires, our own status write) is judged again; one deleted, forgotten.
    this.unsubscribe = deps.exceptions.subscribe((change) => {
      if ('exception' in change) this.expiry.add(`${change.exception.metadata.namespace}/${change.exception.metadata.name}`);
      else {
        const ref = `${change.removed.namespace}/${change.removed.name}`;
        this.pending.delete(ref);
        this.lastWrite.delete(ref);
      }
    });
  }

  /** A request the exception `namespace`/`name` let through, on this replica: counted now, written within the interval. */
  used(namespace: string, name: string): void {
    const ref = `${namespace}/${name}`;
    const now = this.now();
    const pending = this.pending.get(ref);
    if (pending) {
      pending.count += 1;
      pending.lastUsed = Math.max(pending.lastUsed, now);
    } else this.pending.set(ref, { count: 1, lastUsed: now });
    const last = this.lastWrite.get(ref);
    this.uses.addAfter(ref, last === undefined ? 0 : Math.max(0, last + this.interval - now));
  }

  /** While leading, this replica writes the Expired conditions. */
  leading(leading: boolean): void {
    this.expiry.setActive(leading);
  }

  stop(): void {
    this.unsubscribe();
    this.uses.stop();
    this.expiry.stop();
  }

  private async writeUses(ref: string): Promise<ReconcileResult> {
    const taken = this.pending.get(ref);
    if (!taken) return;
    this.pending.delete(ref);
    this.lastWrite.set(ref, this.now());
    try {
      await this.writeStatus(ref, (status) => ({
        ...status,
        uses: (Number.isInteger(status.uses) ? status.uses! : 0) + taken.count,
        lastUsed: toSecond(Math.max(taken.lastUsed, Date.parse(status.lastUsed ?? '') || 0)),
      }));
    } catch (err) {
      // Not lost: added back to what was counted meanwhile, and tried again (the queue backs off).
      const meanwhile = this.pending.get(ref);
      this.pending.set(ref, { count: taken.count + (meanwhile?.count ?? 0), lastUsed: Math.max(taken.lastUsed, meanwhile?.lastUsed ?? 0) });
      throw err;
    }
    // What came while it was written waits for the next interval.
    if (this.pending.has(ref)) return { requeueAfterMs: this.interval };
  }

  private async reconcileExpiry(ref: string): Promise<ReconcileResult> {
    const [namespace, name] = ref.split('/') as [string, string];
    const exception = this.deps.exceptions.get(namespace, name);
    const expiresAt = expiryOf(exception?.spec?.expires);
    if (!exception || expiresAt === undefined) return;
    const now = this.now();
    const expired = now >= expiresAt;
    const condition: ConditionInput = expired
      ? { type: 'Expired', status: 'True', reason: 'Expired', message: `expired at ${exception.spec.expires}: it lets no request through any more (delete it, or set a later spec.expires)` }
      : { type: 'Expired', status: 'False', reason: 'Active', message: `lets requests through until ${exception.spec.expires}` };
    await this.writeStatus(ref, (status, current) => {
      const generation = current.metadata.generation ?? 0;
      const conditions = setConditions(status.conditions, [condition], generation, new Date(now));
      return isDeepStrictEqual(conditions, status.conditions) ? undefined : { ...status, conditions };
    });
    // Woken again at `expires` (or later: timers never fire early, and a wake-up before it sets itself again).
    if (!expired) return { requeueAfterMs: expiresAt - now };
  }

  /**
   * Writes the status `change` makes of the one held (undefined: nothing to write), over the
   * cached exception first and, on a conflict, over one read again: `change` is applied to
   * whatever is stored, so no other writer's fields or counts are lost.
   */
  private async writeStatus(ref: string, change: (status: ExceptionStatus, exception: AnyException) => ExceptionStatus | undefined): Promise<void> {
    const [namespace, name] = ref.split('/') as [string, string];
    const { kube } = this.deps;
    // A ClusterAdmissionException is held under the namespace ''.
    const cluster = namespace === '';
    const target = { group: GROUP, version: VERSION, plural: cluster ? CLUSTER_EXCEPTION_PLURAL : EXCEPTION_PLURAL, namespace, name };
    let base = this.deps.exceptions.get(namespace, name);
    for (let attempt = 0; ; attempt++) {
      if (!base) return;
      const status = change(JSON.parse(JSON.stringify(base.status ?? {})) as ExceptionStatus, base);
      if (status === undefined) return;
      try {
        const body = { ...base, status };
        if (cluster) {
          const { metadata } = body;
          const { namespace: _none, ...clusterMetadata } = metadata;
          await kube.custom.replaceClusterCustomObjectStatus({ ...target, body: { ...body, metadata: clusterMetadata } });
        } else await kube.custom.replaceNamespacedCustomObjectStatus({ ...target, body });
        return;
      } catch (err) {
        // Deleted meanwhile: nothing left to say it of.
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= CONFLICT_RETRIES) throw err;
      }
      // Someone wrote it meanwhile (another replica's uses, a new spec): read it and apply the change to theirs.
      try {
        const fresh = (await (cluster ? kube.custom.getClusterCustomObject(target) : kube.custom.getNamespacedCustomObject(target))) as AnyException;
        base = { ...fresh, metadata: { ...fresh.metadata, namespace } } as AnyException;
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
    }
  }
}
