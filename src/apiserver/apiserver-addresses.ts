/**
 * The API server's own addresses: where its webhook calls come from, so that the admission
 * endpoint sizes their connections by the suites it serves and never refuses them for being many
 * (admission/connection-limits.ts). In a cluster, the endpoints of the `kubernetes` Service, the
 * EndpointSlices the API servers themselves write in `default` (one address per API server;
 * watched, so a replica added or moved is known); in local mode, the loopback. Owns the watch and
 * the set; what an address is allowed is the endpoint's.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { watchCache, type WatchedCache } from './watch.ts';
import { getJson } from './get-json.ts';

/** The local control plane's API server calls from the loopback. */
export const LOOPBACK = ['127.0.0.1', '::1'] as const;

const SLICES = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
const SERVICE_LABEL = 'kubernetes.io/service-name=kubernetes';

interface EndpointSlice extends k8s.KubernetesObject {
  endpoints?: { addresses?: string[]; conditions?: { ready?: boolean } }[];
}

export interface ApiServerAddresses {
  /** The addresses now, kept current: the endpoint reads it per connection. */
  readonly set: ReadonlySet<string>;
  /** Called with the addresses now, then on every change; the returned function stops it. */
  subscribe(listener: (addresses: string[]) => void): () => void;
  stop(): Promise<void>;
}

/** Fixed addresses (local mode: LOOPBACK). */
export function fixedApiServerAddresses(addresses: readonly string[]): ApiServerAddresses {
  const set = new Set(addresses);
  return {
    set,
    subscribe: (listener) => {
      listener([...set]);
      return () => undefined;
    },
    stop: async () => undefined,
  };
}

/**
 * The addresses of the `kubernetes` Service's EndpointSlices, watched. An address not ready is
 * kept: an API server starting or draining still calls webhooks. Until the first list has
 * arrived (or while it is refused: the Role in `default`, config/base/rbac.yaml) the set is
 * empty, and the API server's connections are counted as anyone's, as before.
 */
export function watchApiServerAddresses(config: k8s.KubeConfig, log: Logger): ApiServerAddresses {
  const set = new Set<string>();
  const listeners: ((addresses: string[]) => void)[] = [];
  const refresh = () => {
    const now = new Set(cache.list().flatMap((slice) => (slice.endpoints ?? []).flatMap((e) => e.addresses ?? [])));
    if (now.size === set.size && [...now].every((a) => set.has(a))) return;
    set.clear();
    for (const address of now) set.add(address);
    log.info("the API server's addresses", { addresses: [...set] });
    for (const listener of listeners) listener([...set]);
  };
  const cache: WatchedCache<EndpointSlice> = watchCache<EndpointSlice>(config, {
    path: SLICES,
    labelSelector: SERVICE_LABEL,
    list: () => getJson(config, `${SLICES}?labelSelector=${encodeURIComponent(SERVICE_LABEL)}`),
    onChange: () => refresh(),
    log,
  });
  void cache.synced.then(refresh);
  return {
    set,
    subscribe: (listener) => {
      listener([...set]);
      listeners.push(listener);
      return () => void listeners.splice(listeners.indexOf(listener), 1);
    },
    stop: () => cache.stop(),
  };
}
