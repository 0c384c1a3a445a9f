/**
 * Which params objects a webhook's `params` selects for one request, as ValidatingAdmissionPolicy's
 * CollectParams (k8s.io/apiserver .../policy/generic/policy_dispatcher.go) picks them: the named
 * object or every object the selector selects; in `namespace`, or, when that is unset and the
 * kind is namespaced, in the request's namespace. What to do with none is the caller's
 * (`notFoundAction`). Pure: the objects come from a store the caller fills (watch caches in the
 * operator, the given files offline); no I/O.
 */
import { selects } from '../kubernetes/selectors.ts';
import type { ParamsRef } from './types.ts';

type KubeObject = Record<string, unknown>;

/** A params kind's objects as a watch cache holds them. */
export interface ParamsStore {
  /** Whether the kind is namespaced (as discovery says). */
  namespaced: boolean;
  get(name: string, namespace?: string): KubeObject | undefined;
  /** Every object, or those of one namespace. */
  list(namespace?: string): KubeObject[];
}

/**
 * `selected`: the objects to evaluate the rules against, once each, in namespace/name order (none:
 * notFoundAction answers); `pending`: the store cannot answer yet; `misconfigured`: the reference
 * cannot select anything for this request (VAP's configuration errors, which follow failurePolicy).
 */
export type ParamsSelection = { state: 'selected'; objects: KubeObject[] } | { state: 'pending'; reason: string } | { state: 'misconfigured'; reason: string };

/** The API server's words (a binding's configuration errors), so a suite and a VAP read alike. */
export const PARAMS_ERRORS = {
  clusterScopedRequest: 'cannot use namespaced paramRef in policy binding that matches cluster-scoped resources',
  namespaceOfClusterKind: 'paramRef.namespace must not be provided for a cluster-scoped `paramKind`',
  notFoundDeny: 'no params found for policy binding with `Deny` parameterNotFoundAction',
} as const;

/** The collection a params reference reads (its kind, and its namespace where it names one): what a watch cache holds. */
export function collectionKey(ref: { apiVersion: string; kind: string; namespace?: string }): string {
  return `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}`;
}

export function selectParams(ref: ParamsRef, requestNamespace: string | undefined, store: ParamsStore): ParamsSelection {
  let namespace: string | undefined;
  if (store.namespaced) {
    namespace = ref.namespace || requestNamespace || undefined;
    if (!namespace) return { state: 'misconfigured', reason: PARAMS_ERRORS.clusterScopedRequest };
  } else if (ref.namespace) {
    return { state: 'misconfigured', reason: PARAMS_ERRORS.namespaceOfClusterKind };
  }
  if (ref.name !== undefined && ref.name !== '') {
    const object = store.get(ref.name, namespace);
    return { state: 'selected', objects: object ? [object] : [] };
  }
  const objects = store.list(namespace).filter((o) => selects(ref.selector, labelsOf(o)));
  // The API server's order is its cache's (unordered); ours is fixed, so the first denial is too.
  return { state: 'selected', objects: objects.sort((a, b) => orderKey(a).localeCompare(orderKey(b))) };
}

function labelsOf(object: KubeObject): Record<string, string> {
  return ((object.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {}) as Record<string, string>;
}

function orderKey(object: KubeObject): string {
  const metadata = (object.metadata ?? {}) as { namespace?: string; name?: string };
  return `${metadata.namespace ?? ''}/${metadata.name ?? ''}`;
}
