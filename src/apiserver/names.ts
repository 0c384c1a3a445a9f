/**
 * Which names are taken: a watch of one collection's object metadata only (the API server's
 * PartialObjectMetadata), every object of it, ours or not. Before it writes an object under a
 * name, the operator must know that no one else's object has that name; the caches of what it
 * made (label-selected, whole objects) cannot say so, and asking the API server cost a GET per
 * object of every new suite. Owns the metadata requests; what a name means is the caller's.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { watchCache, type WatchedCache } from './watch.ts';
import { getJson } from './get-json.ts';

const AS_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const AS_OBJECT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

export interface TakenNames {
  /** Whether an object has `name` (in `namespace`); undefined until the first list has arrived. */
  taken(name: string, namespace?: string): boolean | undefined;
  stop(): Promise<void>;
}

/** The taken names of the collection at `path` (e.g. /api/v1/namespaces/ns/secrets), kept by a metadata-only watch. */
export function watchTakenNames(config: k8s.KubeConfig, path: string, log: Logger): TakenNames {
  // The informer's watch asks through this config: its requests ask for metadata only.
  const metadataOnly = Object.create(config) as k8s.KubeConfig;
  metadataOnly.applySecurityAuthentication = async (context) => {
    await config.applySecurityAuthentication(context);
    context.setHeaderParam('Accept', AS_OBJECT);
  };
  let synced = false;
  const cache: WatchedCache<k8s.KubernetesObject> = watchCache(metadataOnly, {
    path,
    list: () => listMetadata(config, path),
    onChange: () => undefined,
    log,
  });
  void cache.synced.then(() => (synced = true));
  return {
    taken: (name, namespace) => (synced ? cache.get(name, namespace) !== undefined : undefined),
    stop: () => cache.stop(),
  };
}

function listMetadata(config: k8s.KubeConfig, path: string): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
  return getJson(config, path, AS_LIST);
}
