/**
 * registry: each suite's spec compiled once per generation into webhooks ready to answer
 * requests (CEL programs, handler configs), kept in a store that the control side fills and
 * the request side only reads. Nothing here does I/O.
 */
import { validateSpec, validateSuiteName, type FieldError } from '../api/validate.ts';
import type { AdmissionSuite, FailurePolicy, ParamsRef, WebhookSpec, WebhookType } from '../api/types.ts';
import type { AnyException } from '../api/exceptions.ts';
import { webhookFullName } from '../api/names.ts';
import { allowed, errored, markFailed, type AdmissionRequest, type Decision, type Outcome } from '../api/admission-review.ts';
import type { ObjectRef } from '../apiserver/params-watches.ts';
import { PARAMS_ERRORS, type ParamsSelection } from '../api/params.ts';
import { evaluateEach } from './each-params.ts';
import { findHandler } from '../handlers/registry.ts';
import { customHandler } from '../handlers/module-handlers.ts';
import { EMPTY_VIEW, HeldElsewhere, LookupNotReady, type ClusterView, type LookupKind } from '../handlers/handler.ts';
import { forbiddenMessage, NOT_READY } from '../handlers/errors.ts';
import { CompileError, firstLine } from '../policy/celjs/program.ts';
import { compileRules, evaluationTotals, type Allowance, type AuthorizingRulesAdmit, type RulesOptions } from '../policy/engine/rules.ts';
import type { MergeSchema } from '../policy/engine/apply-configuration.ts';
import { planMatchConditions } from '../policy/engine/match-conditions.ts';
import type { Authorizer } from '../api/authorization.ts';
import type { KindMapper } from '../api/kind-mapper.ts';
import { evaluateAuthorizing, type Answerers } from '../policy/engine/authorization.ts';
import { EXCEPTION_AUDIT_KEY, exceptionsAnnotation, exceptionWarning } from '../api/exceptions.ts';
import { protectedNamespaces, SYSTEM_NAMESPACES } from '../api/protected-namespaces.ts';
import type { Excuse, ExceptionStore } from './exceptions.ts';
import { podSecurity, validatePodSecurity } from '../handlers/pod-security.ts';
import type { PodSecurityConfig } from '../handlers/pod-security/config.ts';

export interface CompiledWebhook {
  suite: string;
  name: string;
  fullName: string;
  type: WebhookType;
  failurePolicy: FailurePolicy;
  /**
   * A Promise only while a webhook that uses `authorizer` waits for its checks. `allowance`: what
   * an AdmissionPolicy may spend on this request, in cost and time (registry/policy-webhook.ts).
   */
  admit(request: AdmissionRequest, allowance?: Allowance): Decision | Promise<Decision>;
  /** Where its answers are counted (resolved once, here, so the request path does no lookup). */
  observer: WebhookObserver;
  /** The kinds its built-in handler looks up (the shared lookup caches it needs); empty for CEL rules. */
  lookups: LookupKind[];
  /**
   * false: a large body is judged where it is read, not by the review worker (which loads no
   * handler modules: src/handler-modules, and holds no schema to merge an apply configuration by). Unset
   * for every webhook but a handler module's and one with ApplyConfiguration mutations.
   */
  offload?: false;
}

/** The metrics of one webhook (src/health/webhook-metrics.ts); NO_OBSERVER where nothing is counted. */
export interface WebhookObserver {
  answered(operation: string, outcome: Outcome, seconds: number, failurePolicy: FailurePolicy): void;
  /** One synchronous evaluation of its CEL rules: the time and the cost it spent. */
  evaluated(seconds: number, cost: number): void;
  /** A request it allowed with Warn or Audit failures (audit/live.ts): where the background audit keeps them. */
  shadowed?(request: AdmissionRequest, decision: Decision): void;
  /** A request an AdmissionException (`namespace`/`name`) let through (the uses per exception). */
  excepted?(namespace: string, name: string): void;
}

export const NO_OBSERVER: WebhookObserver = { answered: () => undefined, evaluated: () => undefined };

export interface CompiledSuite {
  name: string;
  generation: number;
  /** Empty when the suite can work; otherwise nothing of it is served or registered. */
  errors: FieldError[];
  webhooks: Map<string, CompiledWebhook>;
}

/** Where a suite's `params` come from: watch caches, never an API call per request. */
export interface ParamsSource {
  watch(ref: Omit<ObjectRef, 'name'>): void;
  /** The objects `ref` selects for a request in `requestNamespace` (api/params.ts). */
  select(ref: ParamsRef, requestNamespace: string | undefined): ParamsSelection;
}

export const NO_PARAMS: ParamsSource = {
  watch: () => undefined,
  select: () => ({ state: 'pending', reason: 'params are not watched here' }),
};

/** What a suite is compiled against besides itself; each part has a stand-in for tests that do not need it. */
export interface CompileContext {
  view?: ClusterView;
  params?: ParamsSource;
  /** Answers CEL's `authorizer` checks (SubjectAccessReviews); without one they are evaluation errors. */
  authorizer?: Authorizer;
  /** Answers what a kind is served as (API discovery), for handlers that ask; without one they are told it is not available. */
  mapper?: KindMapper;
  /**
   * The operator's namespace, which bounds what a suite may name there (its Service, Secrets as
   * params: see validateSpec; a handler's config: Handler.parseConfig's context). Unset where those
   * suites were already refused (the review worker).
   */
  operatorNamespace?: string;
  /** Whether this operator enforces webhooks natively (--native-enforcement): a Native webhook is refused on apply where it does not. */
  nativeEnforcement?: boolean;
  /** The recorder of each webhook's answers and evaluations (the operator's Metrics); none by default. */
  observers?: { webhook(suite: string, webhook: string): WebhookObserver };
  /** The AdmissionExceptions held here, asked per request by the CEL validations of suites that accept them; none by default. */
  exceptions?: ExceptionStore;
  /** Now, in ms (the expiry of exceptions is compared with it); Date.now by default. */
  clock?: () => number;
  /**
   * The schemas of the kinds ApplyConfiguration mutations merge into (the operator's
   * OpenApiSchemas; OFFLINE_SCHEMAS where none can be read). Without it, such a mutation's request
   * is HeldElsewhere: answered where it is set (the main thread). Read per request.
   */
  mergeSchemas?: MergeSchemaSource;
}

/** Where a kind's schema comes from for ApplyConfiguration mutations; undefined: none known (lists merged whole, with a warning). */
export interface MergeSchemaSource {
  schema(kind: { group: string; version: string; kind: string }): MergeSchema | undefined | Promise<MergeSchema | undefined>;
}

/** No schema anywhere (`portcullis eval` and `test` without a cluster). */
export const OFFLINE_SCHEMAS: MergeSchemaSource = { schema: () => undefined };

export function compileSuite(suite: AdmissionSuite, context: CompileContext = {}): CompiledSuite {
  const { operatorNamespace } = context;
  const name = suite.metadata.name;
  const generation = suite.metadata.generation ?? 0;
  const errors = [...validateSuiteName(name), ...validateSpec(suite.spec, operatorNamespace)];
  const webhooks = new Map<string, CompiledWebhook>();
  if (errors.length === 0) {
    suite.spec.webhooks.forEach((spec, i) => {
      const failurePolicy = spec.failurePolicy ?? suite.spec.failurePolicy ?? 'Fail';
      const compiled = compileWebhook(name, spec, `spec.webhooks[${i}]`, failurePolicy, context, undefined, suite.spec.exceptions?.allowed === true ? suite : undefined);
      if ('errors' in compiled) errors.push(...compiled.errors);
      else webhooks.set(spec.name, compiled);
    });
  }
  return { name, generation, errors, webhooks: errors.length ? new Map() : webhooks };
}

/**
 * One webhook's spec (at `path`) compiled into what answers its requests, or the field errors
 * that keep it from working. Shared by the suites and the AdmissionPolicies (registry/policies.ts),
 * whose `options` say how a policy differs (RulesOptions: its cost budget, its matchConditions).
 * `excepted`: the suite, when it accepts AdmissionExceptions (its spec.exceptions): a Validating
 * webhook's CEL validations, or its PodSecurity handler's checks, then ask context.exceptions per
 * request.
 */
export function compileWebhook(
  owner: string,
  spec: WebhookSpec,
  path: string,
  failurePolicy: FailurePolicy,
  context: CompileContext,
  options?: RulesOptions,
  excepted?: Pick<AdmissionSuite, 'spec' | 'metadata'>,
): CompiledWebhook | { errors: FieldError[] } {
  const { view = EMPTY_VIEW, params = NO_PARAMS, authorizer, mapper, observers, operatorNamespace } = context;
  try {
    const observer = observers?.webhook(owner, spec.name) ?? NO_OBSERVER;
    const excusing = excepted && context.exceptions && spec.type === 'Validating' ? exceptionsOf(excepted, spec.name, context.exceptions, view, operatorNamespace, context.clock) : undefined;
    const admit = spec.handler
      ? compileHandler(spec, path, view, failurePolicy, { authorizer, mapper }, operatorNamespace, excusing && { excusing, observer })
      : measured(withContext(compileRules(owner, spec, path, failurePolicy, authorizer, options), spec, failurePolicy, view, params, excusing && { excusing, observer }, context, observer), observer);
    return {
      suite: owner,
      name: spec.name,
      fullName: webhookFullName(owner, spec.name),
      type: spec.type,
      failurePolicy,
      admit: guarded(admit, failurePolicy),
      observer,
      lookups: (spec.handler && findHandler(spec.handler.name)?.lookups) || [],
      // the review worker holds neither handler modules nor the schemas ApplyConfiguration mutations merge by
      ...((spec.handler && customHandler(spec.handler.name)) || appliesConfiguration(spec) ? { offload: false as const } : {}),
    };
  } catch (err) {
    if (err instanceof SpecError) return { errors: err.errors };
    if (err instanceof CompileError) return { errors: [{ field: err.field, message: err.message.slice(err.field.length + 2) }] };
    throw err;
  }
}

/** What went wrong under a webhook (its handler threw, the review worker was lost), answered by its failurePolicy. */
export function internalError(err: unknown, failurePolicy: FailurePolicy): Decision {
  return errored(`internal error: ${firstLine(err)}`, failurePolicy);
}

/**
 * A handler that throws (or rejects) is an error answered by failurePolicy, never a dead request;
 * but for HeldElsewhere, which the caller answers by asking where the data is held.
 */
function guarded(admit: (request: AdmissionRequest, allowance?: Allowance) => Decision | Promise<Decision>, failurePolicy: FailurePolicy) {
  const internal = (err: unknown) => {
    if (err instanceof HeldElsewhere) throw err;
    return internalError(err, failurePolicy);
  };
  return (request: AdmissionRequest, allowance?: Allowance): Decision | Promise<Decision> => {
    try {
      const decision = admit(request, allowance);
      return decision instanceof Promise ? decision.catch(internal) : decision;
    } catch (err) {
      return internal(err);
    }
  };
}

/**
 * CEL rules timed and costed per request, and their answer marked as following failurePolicy when
 * an expression errored (the verdict itself does not say so). Only a synchronous answer is
 * measured: an asynchronous one (`authorizer` checks) interleaves with other requests' evaluations.
 */
function measured(admit: (request: AdmissionRequest, allowance?: Allowance) => Decision | Promise<Decision>, observer: WebhookObserver) {
  return (request: AdmissionRequest, allowance?: Allowance): Decision | Promise<Decision> => measure(() => admit(request, allowance), observer);
}

/** One evaluation timed and costed, as `measured` says, if it answers synchronously. */
function measure(evaluate: () => Decision | Promise<Decision>, observer: WebhookObserver): Decision | Promise<Decision> {
  const { cost, errors } = evaluationTotals;
  const started = performance.now();
  const decision = evaluate();
  if (decision instanceof Promise) return decision;
  observer.evaluated((performance.now() - started) / 1e3, evaluationTotals.cost - cost);
  return evaluationTotals.errors === errors ? decision : markFailed(decision);
}

/**
 * Binds `params` and `namespaceObject` for each request, as VAP does: the rules run once per
 * selected params object (each-params.ts); none selected answers by `notFoundAction`; a reference
 * that cannot select for this request (a namespaced kind, no namespace, a cluster-scoped request)
 * is a configuration error, answered by failurePolicy as the API server answers a binding's;
 * and, where AdmissionExceptions may apply (`excusing`), the ones that cover the request, whose
 * use the answer then says (excused).
 */
function withContext(
  rules: AuthorizingRulesAdmit,
  spec: WebhookSpec,
  failurePolicy: FailurePolicy,
  view: ClusterView,
  params: ParamsSource,
  exceptions: { excusing: Excusing; observer: WebhookObserver } | undefined,
  context: CompileContext,
  observer: WebhookObserver,
) {
  const judged = withSchema(bound(rules, spec, failurePolicy, view, params), spec, failurePolicy, context, observer);
  if (!exceptions) return judged;
  const { excusing } = exceptions;
  return (request: AdmissionRequest, allowance?: Allowance): Decision | Promise<Decision> => {
    const excuse = excusing(request);
    if (!excuse) return judged(request, allowance);
    const decision = judged(request, allowance, excuse);
    return decision instanceof Promise ? decision.then((d) => excused(d, excuse.used, observer)) : excused(decision, excuse.used, observer);
  };
}

/** Finds, per request, the AdmissionExceptions that cover it; undefined, at the cost of one Map lookup, while none names the webhook. */
type Excusing = (request: AdmissionRequest) => Excuse | undefined;

function exceptionsOf(suite: Pick<AdmissionSuite, 'spec' | 'metadata'>, webhook: string, exceptions: ExceptionStore, view: ClusterView, operatorNamespace: string | undefined, clock: () => number = Date.now): Excusing {
  // Never sent to a webhook of ours anyway (desired/objects.ts): said again here, so no exception can matter there.
  const guarded = operatorNamespace === undefined ? SYSTEM_NAMESPACES : protectedNamespaces(operatorNamespace);
  const context = {
    now: 0,
    namespaceLabels: (namespace: string) => (view.namespace(namespace)?.metadata?.labels ?? undefined) as Record<string, string> | undefined,
    protectedNamespaces: guarded,
  };
  return (request) => {
    if (!exceptions.names(suite.metadata.name, webhook)) return undefined;
    // The clock at this request: an exception ends at its `expires`, to the second, with no reconcile.
    context.now = clock();
    return exceptions.excuse(suite, webhook, request, context);
  };
}

/**
 * PodSecurity where AdmissionExceptions may name its controls: the checks they cover are let
 * through where the handler decides (validatePodSecurity), and the answer says so as a CEL
 * webhook's does. While none names the webhook, one Map lookup more than the handler alone.
 */
function excusedPodSecurity(config: PodSecurityConfig, view: ClusterView, exceptions: { excusing: Excusing; observer: WebhookObserver }) {
  const { excusing, observer } = exceptions;
  return (request: AdmissionRequest): Decision => {
    const excuse = excusing(request);
    if (!excuse) return validatePodSecurity(request, config, view);
    return excused(validatePodSecurity(request, config, view, excuse), excuse.used, observer);
  };
}

/** A decision some exception let through: the warning (kubectl prints it) and the audit annotation (the API server's audit log) name each exception used, and each use is counted. */
function excused(decision: Decision, used: readonly AnyException[], observer: WebhookObserver): Decision {
  if (!decision.allowed || used.length === 0) return decision;
  for (const exception of used) observer.excepted?.(exception.metadata.namespace, exception.metadata.name);
  return {
    ...decision,
    warnings: [...(decision.warnings ?? []), ...used.map(exceptionWarning)],
    auditAnnotations: { ...decision.auditAnnotations, [EXCEPTION_AUDIT_KEY]: exceptionsAnnotation(used) },
  };
}

/** Whether a webhook has ApplyConfiguration mutations (which merge by the request's kind's schema). */
export function appliesConfiguration(spec: Pick<WebhookSpec, 'type' | 'handler' | 'mutations'>): boolean {
  return spec.type === 'Mutating' && !spec.handler && (spec.mutations ?? []).some((m) => m.patchType === 'ApplyConfiguration');
}

type Bound = (request: AdmissionRequest, allowance?: Allowance, excuse?: Excuse, mergeSchema?: MergeSchema) => Decision | Promise<Decision>;

/**
 * A webhook with ApplyConfiguration mutations given the schema of each request's kind
 * (context.mergeSchemas, read per request); HeldElsewhere where none is set here, or where the
 * source's copy lacks it (the admission thread's: the main thread then answers, reading it). A
 * schema read asynchronously (the main thread's) is waited for first, so the evaluation after it
 * is measured as any synchronous one (`measure`: the metrics, followed failurePolicy), not passed
 * over as an asynchronous answer. Any other webhook as it is.
 */
function withSchema(judged: Bound, spec: WebhookSpec, failurePolicy: FailurePolicy, context: CompileContext, observer: WebhookObserver): Bound {
  if (!appliesConfiguration(spec)) return judged;
  const unread = (kind: string | undefined, err: unknown) => {
    if (err instanceof HeldElsewhere) throw err;
    return errored(`the schema of ${kind} could not be read: ${firstLine(err)}`, failurePolicy, 'Invalid');
  };
  return (request, allowance, excuse) => {
    const source = context.mergeSchemas;
    const kind = request.kind;
    if (!source) throw new HeldElsewhere(`the schema of ${kind?.kind ?? 'the kind'}`);
    let schema: MergeSchema | undefined | Promise<MergeSchema | undefined>;
    try {
      schema = kind ? source.schema(kind) : undefined;
    } catch (err) {
      return unread(kind?.kind, err);
    }
    if (!(schema instanceof Promise)) return judged(request, allowance, excuse, schema);
    return schema.then(
      (read) => measure(() => judged(request, allowance, excuse, read), observer),
      (err: unknown) => unread(kind?.kind, err),
    );
  };
}

/** The rules with `params` and `namespaceObject` bound, as withContext says. */
function bound(rules: AuthorizingRulesAdmit, spec: WebhookSpec, failurePolicy: FailurePolicy, view: ClusterView, params: ParamsSource): Bound {
  const ref = spec.params;
  if (ref) params.watch(ref);
  const { readsNamespaceObject } = rules;
  return (request: AdmissionRequest, allowance?: Allowance, excuse?: Excuse, mergeSchema?: MergeSchema): Decision | Promise<Decision> => {
    const namespaceObject = readsNamespaceObject && request.namespace ? view.namespace(request.namespace) : undefined;
    if (!ref) return rules(request, { namespaceObject, allowance, excuse, mergeSchema });
    const found = params.select(ref, request.namespace || undefined);
    if (found.state === 'pending') return errored(`params of webhook ${spec.name} are not available: ${found.reason}`, failurePolicy, 'Invalid');
    if (found.state === 'misconfigured') return errored(`failed to configure binding: ${found.reason}`, failurePolicy, 'Invalid');
    if (found.objects.length === 0) {
      if ((ref.notFoundAction ?? 'Deny') === 'Allow') return allowed();
      return errored(`failed to configure binding: ${PARAMS_ERRORS.notFoundDeny}`, failurePolicy, 'Invalid');
    }
    // (an AdmissionPolicy's allowance is shared by its evaluations for every params object)
    return evaluateEach(spec.type, request, found.objects, (req, object) => rules(req, { params: object, namespaceObject, allowance, excuse, mergeSchema }));
  };
}

class SpecError extends Error {
  readonly errors: FieldError[];
  constructor(errors: FieldError[]) {
    super(errors.map((e) => `${e.field}: ${e.message}`).join('; '));
    this.errors = errors;
  }
}

/**
 * How long a request waits for a lookup cache that has not synced (a suite just applied, an
 * operator just started) before it is answered as not ready; well within the API server's
 * default webhook timeout of 10 s.
 */
export const LOOKUP_READY_WAIT_MS = 3_000;

function compileHandler(
  spec: WebhookSpec,
  path: string,
  view: ClusterView,
  failurePolicy: FailurePolicy,
  answerers: Answerers,
  operatorNamespace: string | undefined,
  exceptions?: { excusing: Excusing; observer: WebhookObserver },
): (request: AdmissionRequest) => Decision | Promise<Decision> {
  const ref = spec.handler!;
  // Its matchConditions all go to the API server: compiled here only to be refused on apply if they cannot work there.
  planMatchConditions(spec, path, spec.failurePolicy ?? 'Fail');
  const handler = findHandler(ref.name);
  if (!handler) {
    // A domain-qualified name is a handler module's (src/handler-modules): the operator has loaded none by that name.
    const message = ref.name.includes('/') ? `no handler named "${ref.name}" is loaded (--handler-modules)` : `no built-in handler named "${ref.name}"`;
    throw new SpecError([{ field: `${path}.handler.name`, message }]);
  }
  const side = spec.type === 'Mutating' ? handler.mutate : handler.validate;
  if (!side) {
    throw new SpecError([{ field: `${path}.type`, message: `handler ${handler.name} has no ${spec.type.toLowerCase()} side` }]);
  }
  const errors: FieldError[] = [];
  spec.rules.forEach((rule, r) => {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const base = resource.split('/')[0];
        if (!handler.resources.some((s) => (s.group === '*' || s.group === group) && (s.resource === '*' || s.resource === base))) {
          errors.push({ field: `${path}.rules[${r}]`, message: `handler ${handler.name} does not serve ${group || 'core'}/${resource}` });
        }
      }
    }
  });
  // Where the operator runs bounds what a config may name (NamespaceProtection's namespaces).
  const parsed = handler.parseConfig(ref.config ?? {}, { operatorNamespace, ...(spec.timeoutSeconds !== undefined ? { timeoutSeconds: spec.timeoutSeconds } : {}) });
  errors.push(...parsed.errors.map((e) => ({ field: `${path}.handler.config.${e.field}`, message: e.message })));
  if (errors.length) throw new SpecError(errors);
  // A handler that asks the API server runs until its questions are answered, with a view that asks.
  const run = handler.asks
    ? (request: AdmissionRequest) =>
        evaluateAuthorizing(answerers, (session) => side.call(handler, request, parsed.config, { ...view, authorize: (checks) => session.decideAll(checks), restMappings: (kinds) => session.restMappings(kinds) }))
    : exceptions && handler === podSecurity
      ? excusedPodSecurity(parsed.config as PodSecurityConfig, view, exceptions)
      : (request: AdmissionRequest) => side.call(handler, request, parsed.config, view);
  // Before its caches have synced a handler is not run on a partial list: the request waits for
  // them a little, then is refused as the in-tree plugins refuse it, by failurePolicy.
  const notReady = (request: AdmissionRequest) => errored(forbiddenMessage(request, NOT_READY), failurePolicy);
  const retried = (request: AdmissionRequest) => {
    try {
      return run(request);
    } catch (err) {
      if (err instanceof LookupNotReady) return notReady(request);
      throw err;
    }
  };
  return (request) => {
    try {
      return run(request);
    } catch (err) {
      if (!(err instanceof LookupNotReady)) throw err;
      const waiting = err.kind === 'Namespace' ? undefined : view.whenReady?.(handler.lookups ?? [err.kind], LOOKUP_READY_WAIT_MS);
      if (!waiting) return notReady(request);
      return waiting.then((ready) => (ready ? retried(request) : notReady(request)));
    }
  };
}
