/**
 * API discovery: which resource a kind is served as, from the API server's resource lists
 * (`/api/v1`, `/apis/<group>/<version>`), kept per group version and asked again when a kind is
 * missing, as the API server's own DeferredDiscoveryRESTMapper does. Used where a kind must become
 * a resource: params (objects.ts, params-access.ts) and OwnerReferencesPermissionEnforcement's
 * owners (the KindMapper handed to the registry). Knows nothing about admission.
 */
import * as k8s from '@kubernetes/client-node';
import { groupVersionString, type KindMapper, type RestMapping } from '../api/kind-mapper.ts';
import { statusCode } from './client.ts';

/** KubernetesObjectApi keeps its discovery protected; this exposes it. */
export class Discovery extends k8s.KubernetesObjectApi {
  lookup(apiVersion: string, kind: string): Promise<k8s.V1APIResource | undefined> {
    return this.resource(apiVersion, kind);
  }
}

/**
 * RESTMapper.RESTMappings for one group version: the top-level resource serving `kind` (a kind
 * served only as a subresource, like Scale, has none). A group version that is not served has no
 * kinds; any other failure rejects with the API server's words.
 */
export class DiscoveryMapper implements KindMapper {
  private readonly discovery: Discovery;

  constructor(config: k8s.KubeConfig) {
    this.discovery = config.makeApiClient(Discovery);
  }

  async restMappings(group: string, version: string, kind: string): Promise<RestMapping[]> {
    const apiVersion = groupVersionString(group, version);
    const found = await this.discovery.lookup(apiVersion, kind).catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      throw err;
    });
    if (!found || found.name.includes('/')) throw new Error(`no matches for kind "${kind}" in version "${apiVersion}"`);
    return [{ resource: found.name, namespaced: found.namespaced }];
  }
}
