/**
 * Watch caches of arbitrary kinds, started on demand (a suite's `params` may name any kind):
 * discovery finds the resource, a watch keeps the collection in memory, and lookups never call
 * the API server on the request path.
 */
import * as k8s from '@kubernetes/client-node';
import { paramsRefusal } from '../api/validate.ts';
import type { Logger } from '../log.ts';
import type { Kube } from './client.ts';
import { watchCache, type WatchedCache } from './watch.ts';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export type Lookup = { state: 'found'; object: Record<string, unknown> } | { state: 'absent' } | { state: 'pending'; reason: string };

/** KubernetesObjectApi keeps its discovery protected; this exposes it. */
export class Discovery extends k8s.KubernetesObjectApi {
  lookup(apiVersion: string, kind: string): Promise<k8s.V1APIResource | undefined> {
    return this.resource(apiVersion, kind);
  }
}

interface Collection {
  cache?: WatchedCache<k8s.KubernetesObject>;
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

  /** `onChange` runs whenever a watched object changes (suites may want to react). */
  constructor(kube: Kube, log: Logger, operatorNamespace: string, onChange: () => void = () => undefined) {
    this.kube = kube;
    this.log = log;
    this.operatorNamespace = operatorNamespace;
    this.onChange = onChange;
    this.discovery = kube.config.makeApiClient(Discovery);
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

  get(ref: ObjectRef): Lookup {
    const collection = this.collections.get(collectionKey(ref));
    if (!collection) return { state: 'pending', reason: `${ref.kind} objects are not watched` };
    if (collection.error) return { state: 'pending', reason: collection.error };
    if (!collection.synced || !collection.cache) return { state: 'pending', reason: `${ref.kind} objects are still loading` };
    const object = collection.cache.get(ref.name, ref.namespace);
    return object ? { state: 'found', object: object as Record<string, unknown> } : { state: 'absent' };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.collections.values()].map((c) => c.cache?.stop()));
  }

  private async start(ref: Omit<ObjectRef, 'name'>, collection: Collection): Promise<void> {
    try {
      const resource = await this.discovery.lookup(ref.apiVersion, ref.kind);
      if (!resource) throw new Error(`the API server serves no ${ref.kind} in ${ref.apiVersion}`);
      const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
      const scope = resource.namespaced && ref.namespace ? `/namespaces/${ref.namespace}` : '';
      collection.cache = watchCache(this.kube.config, {
        path: `${base}${scope}/${resource.name}`,
        list: () => this.kube.objects.list(ref.apiVersion, ref.kind, resource.namespaced ? ref.namespace : undefined),
        log: this.log,
        onChange: () => this.onChange(),
      });
      await collection.cache.synced;
      collection.synced = true;
    } catch (err) {
      collection.error = `cannot watch ${ref.kind} (${ref.apiVersion}): ${(err as Error).message}`;
      this.log.warn('cannot watch params', { apiVersion: ref.apiVersion, kind: ref.kind, error: collection.error });
    }
  }
}

function collectionKey(ref: Omit<ObjectRef, 'name'>): string {
  return `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}`;
}
