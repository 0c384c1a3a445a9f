/**
 * handlers: the built-in handlers (the classic admission plugins, as webhooks), one file each,
 * and their registry. A handler is a pure function of the request and its validated config.
 * Handlers must not import the controller or the admission server.
 */
import type { AdmissionRequest, Decision } from '../api/admission-review.ts';
import type { AuthorizationAttributes, AuthorizationDecision } from '../api/authorization.ts';
import type { MappingAnswer } from '../api/kind-mapper.ts';

export interface ServedResource {
  group: string;
  resource: string;
}

/**
 * Kinds of cluster object a handler may look up beyond Namespaces and LimitRanges. Each is served
 * from one watch cache shared by all handlers, started only while a suite uses a handler that
 * declares the kind in its `lookups`.
 */
export const LOOKUP_KINDS = ['Pod', 'PriorityClass', 'RuntimeClass', 'StorageClass', 'IngressClass', 'Node', 'Ingress', 'Deployment'] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];

/**
 * The read-only cluster state a handler may consult, served from the operator's watch caches
 * (never an API call on the request path), as upstream plugins read their informers.
 */
export interface ClusterView {
  /** A Namespace object (labels, annotations), or undefined when it is not (yet) known. */
  namespace(name: string): Record<string, any> | undefined;
  /** The LimitRange objects of a namespace. */
  limitRanges(namespace: string): Record<string, any>[];
  /**
   * The objects of a kind the handler declared in `lookups` (of one namespace, for Pods). Throws
   * LookupNotReady while the kind's cache has not synced: a handler never decides on a partial list.
   */
  list(kind: LookupKind, namespace?: string): Record<string, any>[];
  /**
   * Resolves true once every kind has synced, false after `timeoutMs` (where caches are not kept
   * here, as in the review worker, absent: a handler that found one not ready is answered at once).
   */
  whenReady?(kinds: LookupKind[], timeoutMs: number): Promise<boolean>;
  /**
   * The API server's answers to authorization checks (SubjectAccessReviews), all asked at once.
   * Only for a handler that declares `asks`, whose view has it per request: a check not answered
   * yet ends the handler's run, and the registry runs it again once the answers are in
   * (policy/engine/authorization.ts), so the handler stays a pure function of what it was told.
   */
  authorize?(checks: AuthorizationAttributes[]): AuthorizationDecision[];
  /** The resources each kind is served as (the API server's RESTMapper), as `authorize` asks: only with `asks`. */
  restMappings?(kinds: { group: string; version: string; kind: string }[]): MappingAnswer[];
}

/**
 * What a request reads is not held where it is being answered (the admission thread keeps no
 * lookup caches, and params only of collections it was sent): it is answered again where it is
 * held, the main thread. Evaluation is a pure function of what it reads, so running it again there
 * gives the answer it would have given. Never answered by failurePolicy (registry/compile.ts).
 */
export class HeldElsewhere extends Error {
  constructor(what: string) {
    super(`${what} is not held here`);
  }
}

/**
 * A lookup whose cache has not synced yet. The registry answers the request as the in-tree plugins
 * answer before their informers have synced ("not yet ready to handle request"), by failurePolicy.
 */
export class LookupNotReady extends Error {
  readonly kind: LookupKind | 'Namespace';
  /** 'Namespace': the request's namespace is not in the cache yet (created a moment ago). */
  constructor(kind: LookupKind | 'Namespace') {
    super(`the ${kind} cache has not synced`);
    this.kind = kind;
  }
}

/**
 * Where a suite is compiled, for a config whose sense depends on it: handed over by the registry
 * (registry/compile.ts), so a handler learns it without importing the controller.
 */
export interface ConfigContext {
  /**
   * The operator's namespace, which no suite webhook is ever called for (api/protected-namespaces.ts).
   * Unset where it is not known: the review worker, sent only suites the main thread accepted.
   */
  operatorNamespace?: string;
  /** The webhook's timeoutSeconds, when the suite sets it (a handler module's time budget is at most half of it). */
  timeoutSeconds?: number;
}

export const EMPTY_VIEW: ClusterView = { namespace: () => undefined, limitRanges: () => [], list: () => [] };

/**
 * A handler: the built-ins' shape, and the public one handler modules export (src/sdk). `Answer`:
 * what a side returns; built-ins answer synchronously, a module's handler may return a Promise
 * (src/handler-modules runs it in a worker of its own, where a throw, a rejection or a run past its time
 * budget is answered by the webhook's failurePolicy).
 */
export interface Handler<Config = Record<string, unknown>, Answer extends Decision | Promise<Decision> = Decision> {
  name: string;
  /** The resources the handler understands; a suite may not point it elsewhere. A group or resource of '*' means any. */
  resources: ServedResource[];
  /** The kinds `view.list` must serve for this handler; their caches start when a suite uses it. */
  lookups?: LookupKind[];
  /** Whether it puts questions to the API server per request (`view.authorize`, `view.restMappings`). */
  asks?: boolean;
  /**
   * Whether its validate side can judge a stored object as a CREATE of it, for the background
   * audit (src/audit): true when its answer depends on the object and the cluster, not on who asks.
   */
  audits?: boolean;
  /** Checks and defaults `config` (`context`: where the suite is compiled); returns problems as [field under config, message]. */
  parseConfig(config: Record<string, unknown>, context?: ConfigContext): { config: Config; errors: { field: string; message: string }[] };
  mutate?(request: AdmissionRequest, config: Config, view: ClusterView): Answer;
  validate?(request: AdmissionRequest, config: Config, view: ClusterView): Answer;
}
