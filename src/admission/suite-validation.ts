/**
 * The decision of the operator's own webhook on an AdmissionSuite, or an AdmissionPolicy, being
 * applied: refused when it cannot work (the registries' compile errors, naming fields), when it
 * names params its writer may not read (every params, on every write: checked whole), or when an expression of a suite does not type-check
 * against any kind it matches; served through the same chain as every suite's webhook
 * (chain.ts), with `failurePolicy: Ignore` as it is registered (controller/suite-validation-webhook.ts). Owns nothing else:
 * transport is server.ts's and chain.ts's, the access check is src/apiserver/params-access.ts's.
 */
import { authorizationUser, type AuthorizationUser } from '../api/authorization.ts';
import { allowed, denied, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { AdmissionPolicy, AdmissionSuite, ExpressionWarning, NamedRuleWithOperations, ParamsRef } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { CLUSTER_EXCEPTION_KIND, EXCEPTION_KIND, EXCEPTIONS, exceptionWrites, validateException, type AdmissionException, type ClusterAdmissionException, type ExceptionWrite } from '../api/exceptions.ts';
import { HeldElsewhere } from '../handlers/handler.ts';
import { protectedNamespaces, SYSTEM_NAMESPACES } from '../api/protected-namespaces.ts';
import { csrLockOutWarnings } from '../api/self-protection.ts';
import { NO_OBSERVER, type WebhookObserver } from '../registry/compile.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import type { PolicyRegistry } from '../registry/policies.ts';
import { typeCheckPolicy, typeCheckSuite, warningLine, type SchemaSource, type TypeCheckDefault } from '../registry/typecheck.ts';
import { policyParamsUses, suiteParamsUses } from '../apiserver/params-access.ts';
import type { ServedWebhook } from './chain.ts';

/** The schemas expressions are type-checked against, and what a type error does where a suite or policy does not say. */
export type TypeChecking = SchemaSource & { byDefault?: TypeCheckDefault };

/**
 * An accepted suite's or policy's type-check warnings, also in the apply's answer (kubectl prints
 * them), one per field: the field, then each kind's first line (the caret lines stay in status).
 */
function withTypeWarnings(decision: Decision, warnings: ExpressionWarning[] | undefined): Decision {
  if (!warnings?.length) return decision;
  const lines = warnings.map((w) => `${warningLine(w)} (see status.typeChecking)`);
  return { ...decision, warnings: lines };
}

/** An accepted suite's webhooks that are sent CertificateSigningRequests: what that risks (api/self-protection.ts), in the apply's answer. */
function withLockOutWarnings(decision: Decision, spec: AdmissionSuite['spec'] | undefined): Decision {
  const lines = csrLockOutWarnings(spec);
  return lines.length ? { ...decision, warnings: [...(decision.warnings ?? []), ...lines] } : decision;
}

/** Who may read which params (ParamsAccess), and may change what (PolicyAuthorRights). */
export interface ParamsAccessCheck {
  refusals(user: AuthorizationUser, uses: { field: string; ref: ParamsRef; namespacedOnly?: boolean }[]): Promise<FieldError[]>;
  /** Absent: Mutating policies' rules are not checked against their author's rights (unit tests without an API server). */
  mutationRefusals?(user: AuthorizationUser, namespace: string, rules: NamedRuleWithOperations[]): Promise<FieldError[]>;
  /** Absent where native enforcement is off: what the API server refuses of the suite's Native webhooks as policies (native/dry-run.ts). */
  nativeRefusals?(suite: AdmissionSuite, old: AdmissionSuite | undefined): Promise<FieldError[]>;
  /** What `user` may not write itself in `namespace` ('' : cluster-wide), one message each (PolicyAuthorRights.writeRefusals); absent where it is not asked (the admission thread: HeldElsewhere). */
  writeRefusals?(user: AuthorizationUser, namespace: string, writes: ExceptionWrite[]): Promise<string[]>;
}

/** The operator's own webhook as the chain serves it, counted by `observer` (the admission metrics, suite label empty). */
export function suiteValidationWebhook(registry: SuiteRegistry, paramsAccess?: ParamsAccessCheck, schemas?: TypeChecking, observer: WebhookObserver = NO_OBSERVER): ServedWebhook {
  return {
    suite: '',
    name: SUITE_VALIDATION.webhook,
    failurePolicy: 'Ignore',
    admit: (request) => validateSuiteRequest(request, registry, paramsAccess, schemas),
    observer,
  };
}

/** The twin for AdmissionPolicies (registered beside it, controller/suite-validation-webhook.ts). */
export function policyValidationWebhook(policies: Pick<PolicyRegistry, 'validate'>, paramsAccess?: ParamsAccessCheck, schemas?: TypeChecking, observer: WebhookObserver = NO_OBSERVER): ServedWebhook {
  return {
    suite: '',
    name: NAMESPACED.validationWebhook,
    failurePolicy: 'Ignore',
    admit: (request) => validatePolicyRequest(request, policies, paramsAccess, schemas),
    observer,
  };
}

/** `schemas`, when given, type-checks the policy as a suite's webhook (refused unless `spec.typeCheckErrors: Warn`). */
export async function validatePolicyRequest(request: AdmissionRequest, policies: Pick<PolicyRegistry, 'validate'>, paramsAccess?: ParamsAccessCheck, schemas?: TypeChecking): Promise<Decision> {
  const policy = request.object as unknown as AdmissionPolicy;
  // The API server fills in the namespace of the request, not always the object's.
  const named = { ...policy, metadata: { ...policy?.metadata, namespace: policy?.metadata?.namespace ?? request.namespace ?? '' } };
  const errors = policies.validate(named);
  // On every write, not only when params change: a writer who may not read them could otherwise change the messageExpression that shows them.
  const uses = policyParamsUses(named);
  if (errors.length === 0 && paramsAccess && uses.length > 0) errors.push(...(await paramsAccess.refusals(authorizationUser(request.userInfo), uses)));
  // Checked on every write, not only when the rules change: whoever writes a Mutating policy answers for what it changes.
  if (errors.length === 0 && paramsAccess?.mutationRefusals && policy.spec?.type === 'Mutating') {
    errors.push(...(await paramsAccess.mutationRefusals(authorizationUser(request.userInfo), named.metadata.namespace, policy.spec.rules ?? [])));
  }
  const checked = errors.length === 0 && schemas ? await typeCheckPolicy(named, schemas, schemas.byDefault) : undefined;
  if (checked) errors.push(...checked.errors);
  if (errors.length === 0) return withTypeWarnings(allowed(), checked?.warnings);
  const fields = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return denied(`AdmissionPolicy "${policy?.metadata?.name ?? ''}" is invalid: ${fields}`, 'Invalid');
}

/**
 * `schemas`, when given, type-checks the suite's expressions against the kinds its webhooks match
 * (registry/typecheck.ts): a definite error refuses it unless it sets `spec.typeCheckErrors: Warn`.
 */
export async function validateSuiteRequest(request: AdmissionRequest, registry: SuiteRegistry, paramsAccess?: ParamsAccessCheck, schemas?: TypeChecking): Promise<Decision> {
  const suite = request.object as unknown as AdmissionSuite;
  const errors = registry.validate(suite);
  if (errors.length === 0 && paramsAccess) {
    // Every params of the suite, on every write, whatever changed: whoever writes a suite answers for all it reads.
    const uses = suiteParamsUses(suite);
    if (uses.length > 0) errors.push(...(await paramsAccess.refusals(authorizationUser(request.userInfo), uses)));
  }
  if (errors.length === 0 && paramsAccess?.nativeRefusals) errors.push(...(await paramsAccess.nativeRefusals(suite, request.oldObject as unknown as AdmissionSuite | undefined)));
  // Only a suite that compiles is type-checked; a schema that cannot be read leaves its kinds unchecked (typecheck.ts).
  const checked = errors.length === 0 && schemas ? await typeCheckSuite(suite, schemas, schemas.byDefault) : undefined;
  if (checked) errors.push(...checked.errors);
  if (errors.length === 0) return withLockOutWarnings(withTypeWarnings(allowed(), checked?.warnings), suite.spec);
  const fields = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return denied(`AdmissionSuite "${suite?.metadata?.name ?? ''}" is invalid: ${fields}`, 'Invalid');
}

/**
 * The twin for AdmissionExceptions: refused when it stands in a protected namespace, names a suite
 * that takes no exception from there (one that does not opt in is protected), a webhook or
 * validation the suite does not have, or lacks its reason or expiry; and, with `paramsAccess`, when
 * its writer may not itself write all it lets through (writeRefusals). Judged against the suites as
 * this replica holds them.
 */
export function exceptionValidationWebhook(registry: Pick<SuiteRegistry, 'source' | 'context'>, observer: WebhookObserver = NO_OBSERVER, paramsAccess?: ParamsAccessCheck, schemas?: Pick<SchemaSource, 'kindsFor'>): ServedWebhook {
  return {
    suite: '',
    name: EXCEPTIONS.validationWebhook,
    // As registered (controller/suite-validation-webhook.ts): an internal error refuses the exception, never admits it.
    failurePolicy: 'Fail',
    admit: (request) => validateExceptionRequest(request, registry, paramsAccess, schemas),
    observer,
  };
}

export function validateExceptionRequest(request: AdmissionRequest, registry: Pick<SuiteRegistry, 'source' | 'context'>, paramsAccess?: ParamsAccessCheck, schemas?: Pick<SchemaSource, 'kindsFor'>): Decision | Promise<Decision> {
  const exception = request.object as unknown as AdmissionException | ClusterAdmissionException;
  const cluster = request.kind?.kind === CLUSTER_EXCEPTION_KIND;
  // The API server fills in the namespace of the request, not always the object's; a cluster exception has none.
  const namespace = cluster ? '' : (exception?.metadata?.namespace ?? request.namespace ?? '');
  const named = { ...exception, kind: cluster ? CLUSTER_EXCEPTION_KIND : EXCEPTION_KIND, metadata: { ...exception?.metadata, namespace } } as AdmissionException | ClusterAdmissionException;
  const { operatorNamespace, view } = registry.context;
  const suite = typeof exception?.spec?.suite === 'string' ? registry.source(exception.spec.suite) : undefined;
  const errors = validateException(named, {
    protectedNamespaces: operatorNamespace === undefined ? SYSTEM_NAMESPACES : protectedNamespaces(operatorNamespace),
    suite,
    namespaceLabels: (view.namespace(namespace)?.metadata?.labels ?? undefined) as Record<string, string> | undefined,
  });
  const refuse = (all: FieldError[]) => {
    if (all.length === 0) return allowed();
    const fields = all.map((e) => `${e.field}: ${e.message}`).join('; ');
    return denied(`${cluster ? CLUSTER_EXCEPTION_KIND : EXCEPTION_KIND} "${exception?.metadata?.name ?? ''}" is invalid: ${fields}`, 'Invalid');
  };
  if (errors.length > 0 || !paramsAccess) return refuse(errors);
  // Asked of the API server where the clients are; the admission thread hands it there.
  const ask = paramsAccess.writeRefusals;
  if (!ask) return Promise.reject(new HeldElsewhere('a SubjectAccessReview'));
  return coveredWrites(named.spec, suite, schemas).then(async (writes) => {
    const refused = await ask(authorizationUser(request.userInfo), namespace, writes);
    // Checked on every write, whatever changed: whoever writes an exception answers for all it lets through.
    return refuse(refused.length === 0 ? [] : [{ field: 'spec', message: `${refused.join('; ')}; an exception lets through only what its writer could write` }]);
  });
}

/**
 * The writes an exception covers: its webhook's rules, narrowed to the resources served as one of
 * `match.kinds` when it names kinds. A wildcard, or a resource whose kinds cannot be read, is kept
 * whole: asking about more than it covers refuses, never lets through.
 */
async function coveredWrites(spec: AdmissionException['spec'], suite: AdmissionSuite | undefined, schemas: Pick<SchemaSource, 'kindsFor'> | undefined): Promise<ExceptionWrite[]> {
  const writes = exceptionWrites(spec, suite);
  const kinds = spec.match?.kinds;
  if (!kinds?.length || !schemas) return writes;
  const kept = await Promise.all(
    writes.map(async (w) => {
      if (w.group === '*' || w.version === '*' || w.resource.includes('*')) return true;
      const served = await schemas.kindsFor(w.group, w.version, w.resource.split('/')[0]!).catch(() => []);
      return served.length === 0 || served.some((gvk) => kinds.includes(gvk.kind));
    }),
  );
  return writes.filter((_, i) => kept[i]);
}
