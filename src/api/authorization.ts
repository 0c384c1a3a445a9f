/**
 * Authorization checks as CEL's `authorizer` asks them (apiserver `pkg/cel/library/authz.go`): the
 * attributes of one check, its answer, and the `Authorizer` the request side is handed. The policy
 * engine only ever sees this interface; src/kube implements it with SubjectAccessReviews.
 */
import { NAMESPACED } from './names.ts';

/** The user a check is made for: the request's user, or a service account (`authorizer.serviceAccount`). */
export interface AuthorizationUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/**
 * The author the guards recorded on a suite or AdmissionPolicy (who last wrote its spec: the
 * `author` and `author-groups` annotations, set by a MutatingAdmissionPolicy its writer cannot
 * forge), or undefined where none is recorded.
 */
export function recordedAuthor(metadata: { annotations?: Record<string, string> }): AuthorizationUser | undefined {
  const annotations = metadata.annotations ?? {};
  const username = annotations[NAMESPACED.authorAnnotation];
  if (!username) return undefined;
  const groups = (annotations[NAMESPACED.authorGroupsAnnotation] ?? '').split(',').filter((g) => g !== '');
  return { username, ...(groups.length ? { groups } : {}) };
}

/** The user of an AdmissionRequest's `userInfo`, as the API server's checks name it (empty parts left out). */
export function authorizationUser(info: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } | undefined): AuthorizationUser {
  const { username = '', uid, groups, extra } = info ?? {};
  const user: AuthorizationUser = { username };
  if (uid) user.uid = uid;
  if (groups?.length) user.groups = groups;
  if (extra && Object.keys(extra).length) user.extra = extra;
  return user;
}

/** A resource check (SubjectAccessReview `resourceAttributes`; the version is always `*`, as in the API server). */
export interface ResourceAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** Raw selectors, sent as `rawSelector`; the API server parses them (and ignores them when they do not parse). */
  fieldSelector?: string;
  labelSelector?: string;
}

/** A non-resource check (`nonResourceAttributes`). */
export interface NonResourceAttributes {
  verb: string;
  path: string;
}

export interface AuthorizationAttributes {
  user: AuthorizationUser;
  /** Exactly one of `resource` and `nonResource`. */
  resource?: ResourceAttributes;
  nonResource?: NonResourceAttributes;
}

/** A SubjectAccessReview's status: `allowed()`, `reason()`, and `evaluationError` for `errored()`/`error()`. */
export interface AuthorizationDecision {
  allowed: boolean;
  reason: string;
  /** Empty when the authorizer had no error. */
  evaluationError: string;
}

/** Answers one check; rejects when it cannot be asked at all (an evaluation error, then failurePolicy applies). */
export interface Authorizer {
  check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision>;
}

/**
 * A key equal for equivalent checks: groups and extra values sorted, as the API server's caching
 * authorizer (admission/plugin/authorizer/caching_authorizer.go) makes its keys.
 */
export function authorizationKey(attributes: AuthorizationAttributes): string {
  const { user, resource: r, nonResource: n } = attributes;
  const groups = user.groups?.length ? [...user.groups].sort() : [];
  const extra = user.extra
    ? Object.keys(user.extra)
        .sort()
        .map((k) => [k, [...(user.extra![k] ?? [])].sort()])
    : [];
  const check = r ? ['r', r.verb, r.group, r.resource, r.subresource, r.namespace, r.name, r.fieldSelector ?? '', r.labelSelector ?? ''] : ['n', n?.verb ?? '', n?.path ?? ''];
  return JSON.stringify([user.username, user.uid ?? '', groups, extra, check]);
}
