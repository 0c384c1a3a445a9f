/**
 * What a kind is served as, as the API server's RESTMapper answers it (apimachinery
 * `meta.RESTMapper.RESTMappings`): the one question about API discovery that a handler asks on
 * the request path (OwnerReferencesPermissionEnforcement, for an ownerReference's kind). The
 * handlers see this interface only; src/apiserver/discovery.ts answers it from the API server.
 */

/** One resource a kind is served as in a group version. */
export interface RestMapping {
  /** The plural resource name (`deployments`). */
  resource: string;
  namespaced: boolean;
}

/** Answers RESTMappings; rejects with the RESTMapper's words (`no matches for kind "X" in version "g/v"`) when none. */
export interface KindMapper {
  restMappings(group: string, version: string, kind: string): Promise<RestMapping[]>;
}

/** A RESTMapping question's answer as a request sees it: the mappings, or why there are none. */
export type MappingAnswer = { mappings: RestMapping[] } | { error: string };

/** apimachinery `schema.ParseGroupVersion`: `v1` is the core group's, `apps/v1` is apps'. */
export function parseGroupVersion(apiVersion: string): { group: string; version: string } | { error: string } {
  if (apiVersion === '' || apiVersion === '/') return { group: '', version: '' };
  const parts = apiVersion.split('/');
  if (parts.length === 1) return { group: '', version: apiVersion };
  if (parts.length === 2) return { group: parts[0]!, version: parts[1]! };
  return { error: `unexpected GroupVersion string: ${apiVersion}` };
}

/** apimachinery `GroupVersion.String()`. */
export function groupVersionString(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}
