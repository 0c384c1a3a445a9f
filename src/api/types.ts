/**
 * api: the AdmissionSuite and AdmissionPolicy resources as users write them (spec) and as the
 * operator reports them (status), and their defaults. Pure data: nothing here talks to the API server.
 */

import type { LabelSelector } from '../kubernetes/selectors.ts';

export const GROUP = 'admission.portcullis.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'AdmissionSuite';
export const PLURAL = 'admissionsuites';
export const API_VERSION = `${GROUP}/${VERSION}`;
/** The namespaced policy a team owns in its namespace (the contract's last section). */
export const POLICY_KIND = 'AdmissionPolicy';
export const POLICY_PLURAL = 'admissionpolicies';

export type FailurePolicy = 'Fail' | 'Ignore';
export type WebhookType = 'Validating' | 'Mutating';
export type ValidationAction = 'Deny' | 'Warn' | 'Audit';
export type Reason = 'Unauthorized' | 'Forbidden' | 'Invalid' | 'RequestEntityTooLarge';
/**
 * Where a webhook is enforced: Webhook (the operator answers the API server's calls), Native (the
 * API server enforces it itself, as a ValidatingAdmissionPolicy the operator writes; refused on
 * apply when it cannot be), Auto (native where it can be, else the webhook).
 */
export type Enforcement = 'Webhook' | 'Native' | 'Auto';

export type { LabelSelector } from '../kubernetes/selectors.ts';

export interface RuleWithOperations {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

/**
 * A rule with an optional list of object names, as ValidatingAdmissionPolicy's
 * NamedRuleWithOperations: with `resourceNames`, only requests on objects of those names match.
 * The API server's webhook rules have no names: the operator registers the rule without them and
 * checks the names in a matchCondition of its own (desired/objects.ts).
 */
export interface NamedRuleWithOperations extends RuleWithOperations {
  resourceNames?: string[];
}

export interface MatchCondition {
  name: string;
  expression: string;
}

export interface Validation {
  expression: string;
  message?: string;
  messageExpression?: string;
  reason?: Reason;
}

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/**
 * One mutation: Portcullis' own form (`patch` or `patchExpression`, with `condition`), or a
 * MutatingAdmissionPolicy `spec.mutations` entry pasted unchanged (`patchType` and its field).
 */
export interface Mutation {
  condition?: string;
  patch?: JsonPatchOperation[];
  patchExpression?: string;
  /** MAP's form: JSONPatch (`jsonPatch.expression`, a list of `JSONPatch{...}`) or ApplyConfiguration (not served yet). */
  patchType?: 'JSONPatch' | 'ApplyConfiguration';
  jsonPatch?: { expression: string };
  applyConfiguration?: { expression: string };
}

/** As ValidatingAdmissionPolicy's auditAnnotations: recorded by the API server as `<webhook name>/<key>`. */
export interface AuditAnnotation {
  key: string;
  valueExpression: string;
}

export interface Variable {
  name: string;
  expression: string;
}

/**
 * As ValidatingAdmissionPolicy's paramKind and paramRef together: exactly one of `name` and
 * `selector`; `namespace` unset means the request's namespace when the kind is namespaced.
 */
export interface ParamsRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name?: string;
  selector?: LabelSelector;
  notFoundAction?: 'Deny' | 'Allow';
}

export interface HandlerRef {
  name: string;
  config?: Record<string, unknown>;
}

export interface WebhookSpec {
  name: string;
  type: WebhookType;
  rules: NamedRuleWithOperations[];
  /** Requests matching any of these are not judged, even when `rules` match (VAP's excludeResourceRules). */
  excludeResourceRules?: NamedRuleWithOperations[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  matchConditions?: MatchCondition[];
  matchPolicy?: 'Exact' | 'Equivalent';
  failurePolicy?: FailurePolicy;
  timeoutSeconds?: number;
  sideEffects?: 'None' | 'NoneOnDryRun';
  reinvocationPolicy?: 'Never' | 'IfNeeded';
  admissionReviewVersions?: string[];
  params?: ParamsRef;
  variables?: Variable[];
  validations?: Validation[];
  validationActions?: ValidationAction[];
  auditAnnotations?: AuditAnnotation[];
  mutations?: Mutation[];
  handler?: HandlerRef;
  /** Where it is enforced; unset, the suite's `enforcement`, else Webhook. */
  enforcement?: Enforcement;
}

/** spec.certificate.duration when it is not given ("2160h", 90 days, as the contract says). */
export const DEFAULT_CERTIFICATE_DURATION_MS = 2160 * 3600_000;

/** What a type-check error (an expression that fails on every kind its webhook matches) does on apply. */
/** Warn (the default, as ValidatingAdmissionPolicy): warnings only; Deny: refused on apply; Refuse: Deny's earlier name. */
export type TypeCheckErrors = 'Warn' | 'Deny' | 'Refuse';

export interface SuiteSpec {
  /** Refuse (default): such a suite is refused on apply; Warn: accepted, reported in status.typeChecking only. */
  typeCheckErrors?: TypeCheckErrors;
  service?: { namespace?: string; name?: string; port?: number };
  url?: string;
  certificate?: { duration?: string; renewBefore?: string; keyAlgorithm?: 'ECDSA' | 'RSA' };
  failurePolicy?: FailurePolicy;
  timeoutSeconds?: number;
  namespaceSelector?: LabelSelector;
  /** The default of the webhooks' `enforcement` (Webhook when unset). */
  enforcement?: Enforcement;
  /** Whether AdmissionExceptions apply to its CEL validations (api/exceptions.ts); absent, none does. */
  exceptions?: SuiteExceptions;
  webhooks: WebhookSpec[];
}

/** A suite's opt-in to AdmissionExceptions: absent (or `allowed: false`), no exception applies to it. */
export interface SuiteExceptions {
  allowed: boolean;
  /** The namespaces whose exceptions it accepts; unset, every one but the protected ones. */
  namespaces?: LabelSelector;
}

/** A webhook as registered: its full name, its type, where it is enforced, and why not natively when asked. */
export interface WebhookStatus {
  name: string;
  type: WebhookType;
  enforcement?: 'Webhook' | 'Native';
  reason?: string;
}

/** One expression's type-checking result: the field (`spec.webhooks[0].validations[1].expression`) and what failed, per kind. */
export interface ExpressionWarning {
  fieldRef: string;
  warning: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface SuiteStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  certificate?: { notAfter?: string; caNotAfter?: string; renewalTime?: string };
  webhooks?: WebhookStatus[];
  /** As ValidatingAdmissionPolicy's: the expressions that do not type-check against the kinds their webhook matches. */
  typeChecking?: { expressionWarnings?: ExpressionWarning[] };
  /** How many are registered: `kubectl get` can show a number, not a list (printer columns show a list's first item only). */
  webhookCount?: number;
  /** The background audit of the objects already in the cluster (src/audit), per webhook and in all. */
  audit?: AuditStatus & { webhooks?: ({ name: string } & Pick<AuditStatus, 'evaluated' | 'failing'>)[] };
}

/** What the background audit found: objects judged, those with a failing result, when, and what it could not audit. */
export interface AuditStatus {
  evaluated: number;
  failing: number;
  lastRun?: string;
  message?: string;
}

export interface ObjectMeta {
  name: string;
  uid: string;
  generation?: number;
  resourceVersion?: string;
  /** Typed as client-node types it; from a watch of custom objects it is the API server's RFC 3339 text (read it with `new Date()`). */
  creationTimestamp?: Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface AdmissionSuite {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: SuiteSpec;
  status?: SuiteStatus;
}

/**
 * An AdmissionPolicy's spec: one webhook's rules, without what only a cluster admin may choose
 * (handler, namespaceSelector, failurePolicy, timeouts, how the API server reaches it). It is
 * served through the operator's own `portcullis--namespaced` configurations, only for objects of
 * the policy's namespace.
 */
export type PolicySpec = Pick<WebhookSpec, 'type' | 'rules' | 'excludeResourceRules' | 'objectSelector' | 'matchConditions' | 'params' | 'variables' | 'validations' | 'validationActions' | 'mutations'> & Pick<SuiteSpec, 'typeCheckErrors'>;

/** As a suite's; `typeChecking` is filled by the type checker as for a suite's webhooks. */
export interface PolicyStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  typeChecking?: { expressionWarnings?: { fieldRef: string; warning: string }[] };
  /** As a suite's, for the objects of its namespace. */
  audit?: AuditStatus;
}

export interface AdmissionPolicy {
  apiVersion: typeof API_VERSION;
  kind: typeof POLICY_KIND;
  metadata: ObjectMeta & { namespace: string };
  spec: PolicySpec;
  status?: PolicyStatus;
}
