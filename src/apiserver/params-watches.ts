/**
 * Watch caches of arbitrary kinds, started on demand (a suite's `params` may name any kind):
 * discovery finds the resource (and whether it is namespaced), a watch keeps the collection in
 * memory (every namespace when a reference names none), and the params a request gets are selected
 * from it (api/params.ts decides which), never calling the API server on the request path. A kind the API server does not serve yet, or that the
 * operator may not list and watch, is retried with backoff (a CRD installed, a role granted later
 * is picked up) and reported as such, for the suite's conditions.
 */
import * as k8s from '@kubernetes/client-node';
import { paramsRefusal } from '../api/validate.ts';
import { collectionKey, selectParams, type ParamsSelection } from '../api/params.ts';
import type { ParamsRef } from '../api/types.ts';
import type { Logger } from '../log.ts';
import { describeError, statusCode, type Kube } from './client.ts';
import { backoffMs } from './backoff.ts';
import { WATCH_RESTART, watchCache, type WatchedCache } from './watch.ts';
import { Discovery } from './discovery.ts';
import { errorMessage } from '../error-message.ts';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/**
 * A params collection as a copy elsewhere (the admission thread) keeps it: `synced` once its cache
 * has listed (with every object then), `object` for each change after.
 */
export type ParamsChange = { type: 'synced'; key: string; namespaced: boolean; objects: k8s.KubernetesObject[] } | { type: 'object'; key: string; object: k8s.KubernetesObject; deleted: boolean };

/** Whether a watched collection can be read: `unreadable` says why (the API server's words). */
export type Readiness = { state: 'ready' } | { state: 'loading' } | { state: 'unreadable'; reason: string };

/** The label that adds a ClusterRole's rules to the operator's params role (deploy/02-rbac.yaml). */
export const PARAMS_AGGREGATION_LABEL = 'admission.portcullis.dev/aggregate-to-params';

interface Collection {
  cache?: WatchedCache<k8s.KubernetesObject>;
  /** The resource's plural and group, once discovery has found it. */
  resource?: string;
  /** Whether the kind is namespaced, once discovery has found it. */
  namespaced?: boolean;
  synced: boolean;
  error?: string;
}

export class ObjectWatches {
  private readonly collections = new Map<string, Collection>();
  private readonly discovery: Discovery;
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly onChange: () => void;
  private readonly operatorNamespace: string;
  private readonly listeners: ((change: ParamsChange) => void)[] = [];
  private stopped = false;

  /** `onChange` runs whenever a watched object changes (suites may want to react). */
  constructor(kube: Kube, log: Logger, operatorNamespace: string, onChange: () => void = () => undefined) {
    this.kube = kube;
    this.log = log;
    this.operatorNamespace = operatorNamespace;
    this.onChange = onChange;
    this.discovery = kube.config.makeApiClient(Discovery);
  }

  /** Called with every synced collection and its objects, then on every change; the returned function stops it. */
  subscribe(listener: (change: ParamsChange) => void): () => void {
    for (const [key, collection] of this.collections) {
      if (collection.synced && collection.cache) listener({ type: 'synced', key, namespaced: collection.namespaced ?? true, objects: collection.cache.list() });
    }
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /** Starts watching the collection that holds `ref`; idempotent. Never a refused one (a second line of defence: such suites do not compile). */
  watch(ref: Omit<ObjectRef, 'name'>): void {
    if (paramsRefusal(ref, this.operatorNamespace)) return;
    const key = collectionKey(ref);
    if (this.collections.has(key)) return;
    const collection: Collection = { synced: false };
    this.collections.set(key, collection);
    void this.start(ref, collection);
  }

  /**
   * The params objects `ref` selects for a request in `requestNamespace` (api/params.ts), from the
   * watch cache of its collection: all namespaces when `ref.namespace` is unset.
   */
  select(ref: ParamsRef, requestNamespace: string | undefined): ParamsSelection {
    const found = this.cached(ref);
    if ('reason' in found) return { state: 'pending', reason: found.reason };
    const { cache, namespaced } = found;
    return selectParams(ref, requestNamespace, {
      namespaced,
      get: (name, namespace) => cache.get(name, namespace) as Record<string, unknown> | undefined,
      list: (namespace) => cache.list(namespace) as Record<string, unknown>[],
    });
  }

  /** The synced cache of the collection holding `ref`, or why there is none yet. */
  private cached(ref: Omit<ObjectRef, 'name'>): { cache: WatchedCache<k8s.KubernetesObject>; namespaced: boolean } | { reason: string } {
    const collection = this.collections.get(collectionKey(ref));
    if (!collection) return { reason: `${ref.kind} objects are not watched` };
    if (collection.error) return { reason: collection.error };
    if (!collection.synced || !collection.cache) return { reason: this.failure(ref, collection) ?? `${ref.kind} objects are still loading` };
    return { cache: collection.cache, namespaced: collection.namespaced ?? true };
  }

  /**
   * Whether the collection holding `ref` can be read now. Refused (403) or gone (404) counts even
   * after the first list (a role taken away, a CRD deleted); a broken connection does not: the
   * cache keeps what it has and its watch is restarted.
   */
  readiness(ref: Omit<ObjectRef, 'name'>): Readiness {
    const collection = this.collections.get(collectionKey(ref));
    if (!collection) return { state: 'loading' };
    if (collection.error) return { state: 'unreadable', reason: collection.error };
    const failed = collection.cache?.failure();
    const code = failed === undefined ? undefined : statusCode(failed);
    const reason = code === 403 || code === 404 ? this.failure(ref, collection) : undefined;
    if (reason) return { state: 'unreadable', reason };
    return collection.synced ? { state: 'ready' } : { state: 'loading' };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.collections.values()].map((c) => c.cache?.stop()));
  }

  /** The watch's latest failure in words; a refusal names the role that would grant it. */
  private failure(ref: Omit<ObjectRef, 'name'>, collection: Collection): string | undefined {
    const err = collection.cache?.failure();
    if (err === undefined) return undefined;
    const what = `cannot list and watch ${ref.kind} (${ref.apiVersion}): ${describeError(err)}`;
    if (statusCode(err) !== 403) return what;
    return `${what}; a cluster admin grants list and watch on ${collection.resource} with a ClusterRole labelled ${PARAMS_AGGREGATION_LABEL}: "true"`;
  }

  private async start(ref: Omit<ObjectRef, 'name'>, collection: Collection, attempt = 1): Promise<void> {
    let resource: k8s.V1APIResource | undefined;
    try {
      resource = await this.discovery.lookup(ref.apiVersion, ref.kind);
      if (!resource) throw new Error(`the API server serves no ${ref.kind} in ${ref.apiVersion}`);
    } catch (err) {
      // Not served (yet): the CRD may come later. Looked up again with backoff.
      collection.error = `cannot watch ${ref.kind} (${ref.apiVersion}): ${errorMessage(err)}`;
      this.log.warn('cannot watch params', { apiVersion: ref.apiVersion, kind: ref.kind, error: collection.error });
      setTimeout(
        () => {
          if (!this.stopped) void this.start(ref, collection, attempt + 1);
        },
        backoffMs(attempt, WATCH_RESTART),
      ).unref();
      return;
    }
    collection.error = undefined;
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0]! : '';
    collection.resource = group ? `${resource.name}.${group}` : resource.name;
    collection.namespaced = resource.namespaced;
    const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
    const scope = resource.namespaced && ref.namespace ? `/namespaces/${ref.namespace}` : '';
    if (this.stopped) return;
    // A failed list or watch is retried by the cache itself, and reported by failure() meanwhile.
    const key = collectionKey(ref);
    const cache = watchCache(this.kube.config, {
      path: `${base}${scope}/${resource.name}`,
      list: () => this.kube.objects.list(ref.apiVersion, ref.kind, resource.namespaced ? ref.namespace : undefined),
      log: this.log,
      onChange: (object, deleted) => {
        if (collection.synced) for (const listener of this.listeners) listener({ type: 'object', key, object, deleted });
        this.onChange();
      },
    });
    collection.cache = cache;
    await cache.synced;
    collection.synced = true;
    for (const listener of this.listeners) listener({ type: 'synced', key, namespaced: resource.namespaced, objects: cache.list() });
  }
}
