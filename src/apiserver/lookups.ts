/**
 * The shared lookup caches: one watch cache per kind of cluster object that built-in handlers
 * look up (Pods, PriorityClasses, RuntimeClasses, StorageClasses, IngressClasses, Nodes; Ingresses and Deployments for handler modules), shared by all
 * of them, kept only while something uses the kind (`use` starts the missing ones and stops the
 * ones no longer named). Pods are indexed by namespace, since a handler asks for one namespace's.
 * Owns the watches and their indexes; which handler needs which kind is the registry's to say,
 * and it knows nothing of admission.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import type { Kube } from './client.ts';
import { watchCache, type WatchedCache } from './watch.ts';

/** Where each kind is served: its watch path and its list, as the operator's ClusterRole grants them. */
export const LOOKUP_RESOURCES = {
  Pod: { apiVersion: 'v1', path: '/api/v1/pods' },
  PriorityClass: { apiVersion: 'scheduling.k8s.io/v1', path: '/apis/scheduling.k8s.io/v1/priorityclasses' },
  RuntimeClass: { apiVersion: 'node.k8s.io/v1', path: '/apis/node.k8s.io/v1/runtimeclasses' },
  StorageClass: { apiVersion: 'storage.k8s.io/v1', path: '/apis/storage.k8s.io/v1/storageclasses' },
  IngressClass: { apiVersion: 'networking.k8s.io/v1', path: '/apis/networking.k8s.io/v1/ingressclasses' },
  Node: { apiVersion: 'v1', path: '/api/v1/nodes' },
  // For handler modules (src/handler-modules), granted by deploy/optional/handler-module-lookups.yaml: the examples read every Ingress, every Deployment.
  Ingress: { apiVersion: 'networking.k8s.io/v1', path: '/apis/networking.k8s.io/v1/ingresses' },
  Deployment: { apiVersion: 'apps/v1', path: '/apis/apps/v1/deployments' },
} as const;

export type CachedKind = keyof typeof LOOKUP_RESOURCES;

type Obj = k8s.KubernetesObject;

/** A kind's cache as a copy elsewhere (the admission thread) keeps it: its objects once synced, each change after, and its end. */
export type LookupChange = { type: 'synced'; kind: CachedKind; objects: Obj[] } | { type: 'object'; kind: CachedKind; object: Obj; deleted: boolean } | { type: 'stopped'; kind: CachedKind };

interface Entry {
  cache: WatchedCache<Obj>;
  synced: boolean;
  /** Pods only: namespace -> name -> object, kept from the watch's events. */
  byNamespace?: Map<string, Map<string, Obj>>;
}

export class LookupCaches {
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly entries = new Map<CachedKind, Entry>();
  private readonly listeners: ((change: LookupChange) => void)[] = [];

  constructor(kube: Kube, log: Logger) {
    this.kube = kube;
    this.log = log;
  }

  /** Called with every synced kind and its objects, then on every change; the returned function stops it. */
  subscribe(listener: (change: LookupChange) => void): () => void {
    for (const [kind, entry] of this.entries) if (entry.synced) listener({ type: 'synced', kind, objects: entry.cache.list() });
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  private tell(change: LookupChange): void {
    for (const listener of this.listeners) listener(change);
  }

  /** Keeps exactly `kinds` watched: starts those missing, stops the others. */
  use(kinds: Iterable<CachedKind>): void {
    const wanted = new Set(kinds);
    for (const kind of wanted) if (!this.entries.has(kind)) this.start(kind);
    for (const [kind, entry] of this.entries) {
      if (wanted.has(kind)) continue;
      this.entries.delete(kind);
      this.tell({ type: 'stopped', kind });
      this.log.info('lookup cache stopped: no suite uses it', { kind });
      void entry.cache.stop();
    }
  }

  /** The kinds watched now. */
  watched(): CachedKind[] {
    return [...this.entries.keys()];
  }

  /** Whether the kind's first list has arrived (false for a kind not watched). */
  synced(kind: CachedKind): boolean {
    return this.entries.get(kind)?.synced === true;
  }

  /** Resolves true once the kind has synced, false after `timeoutMs` or when it is not watched. */
  async whenSynced(kind: CachedKind, timeoutMs: number): Promise<boolean> {
    const entry = this.entries.get(kind);
    if (!entry) return false;
    if (entry.synced) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([entry.cache.synced.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The objects of a synced kind (of one namespace, for Pods); undefined while it has not synced. */
  list(kind: CachedKind, namespace?: string): Obj[] | undefined {
    const entry = this.entries.get(kind);
    if (!entry?.synced) return undefined;
    if (entry.byNamespace) {
      if (namespace === undefined) return [...entry.byNamespace.values()].flatMap((pods) => [...pods.values()]);
      return [...(entry.byNamespace.get(namespace)?.values() ?? [])];
    }
    const all = entry.cache.list();
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  async stop(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((e) => e.cache.stop()));
  }

  private start(kind: CachedKind): void {
    const { apiVersion, path } = LOOKUP_RESOURCES[kind];
    const byNamespace = kind === 'Pod' ? new Map<string, Map<string, Obj>>() : undefined;
    const index = (object: Obj, deleted: boolean) => {
      if (entry.synced) this.tell({ type: 'object', kind, object, deleted });
      if (!byNamespace) return;
      const namespace = object.metadata?.namespace ?? '';
      const name = object.metadata?.name ?? '';
      let pods = byNamespace.get(namespace);
      if (deleted) {
        pods?.delete(name);
        if (pods?.size === 0) byNamespace.delete(namespace);
        return;
      }
      if (!pods) byNamespace.set(namespace, (pods = new Map()));
      pods.set(name, object);
    };
    const cache = watchCache<Obj>(this.kube.config, {
      path,
      list: () => this.kube.objects.list(apiVersion, kind) as Promise<k8s.KubernetesListObject<Obj>>,
      log: this.log,
      onChange: index,
    });
    const entry: Entry = { cache, synced: false, byNamespace };
    this.entries.set(kind, entry);
    this.log.info('lookup cache started: a suite uses a handler that reads it', { kind });
    void cache.synced.then(() => {
      if (this.entries.get(kind) !== entry) return;
      entry.synced = true;
      this.tell({ type: 'synced', kind, objects: cache.list() });
    });
  }
}
