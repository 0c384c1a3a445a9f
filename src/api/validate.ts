/**
 * The checks on a suite's spec, and on an AdmissionPolicy's (one webhook's rules, bounded by its
 * namespace and the cluster admin's limits), that need no compiler: shape, names, mutually
 * exclusive fields. Every problem is reported with its field path, all at once, so one apply
 * shows them all.
 */
import { nativeObstacles, requestedEnforcement } from './enforcement.ts';
import { mutationReachErrors } from './tenancy.ts';
import { parseDuration } from '../kubernetes/duration.ts';
import { DNS1123_LABEL, isCelIdentifier, isQualifiedName, LABEL_KEY } from '../kubernetes/validation.ts';
import { labelSelectorProblems } from '../kubernetes/selectors.ts';
import { DEFAULT_CERTIFICATE_DURATION_MS, type AdmissionPolicy, type NamedRuleWithOperations, type Mutation, type ParamsRef, type SuiteSpec, type WebhookSpec } from './types.ts';
import { needsResourceCondition, RESOURCE_MATCH_CONDITION } from './resource-match.ts';
import { reachesProtected, SELF_PROTECTION_CONDITION } from './self-protection.ts';

export interface FieldError {
  field: string;
  message: string;
  /** Set when the spec is valid but beyond what the cluster's administrator allows (AdmissionPolicies). */
  limit?: true;
  /** Set when a Mutating AdmissionPolicy's author may no longer change what it changes. */
  authorForbidden?: true;
}

const REASONS = new Set(['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge']);

export function validateSuiteName(name: string): FieldError[] {
  // The suite name is part of DNS names (service, webhook names) and of configuration names.
  return DNS1123_LABEL.test(name) && name.length <= 40 ? [] : [{ field: 'metadata.name', message: 'must be a DNS label of at most 40 characters' }];
}

/**
 * `operatorNamespace`, when known, adds the checks that depend on where the operator runs: what
 * it keeps and creates there bounds what a suite may name.
 */
export function validateSpec(spec: SuiteSpec | undefined, operatorNamespace?: string): FieldError[] {
  if (!spec) return [{ field: 'spec', message: 'is required' }];
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field, message });

  if (spec.service && spec.url) err('spec', 'exactly one of service and url may be set, not both');
  if (spec.enforcement !== undefined && !ENFORCEMENTS.includes(spec.enforcement)) err('spec.enforcement', `Unsupported value: ${JSON.stringify(spec.enforcement)}: supported values: "Webhook", "Native", "Auto"`);
  if (spec.typeCheckErrors !== undefined && !TYPE_CHECK_ERRORS.includes(spec.typeCheckErrors)) err('spec.typeCheckErrors', 'must be Warn or Deny');
  const serviceNamespace = spec.service?.namespace;
  if (operatorNamespace !== undefined && serviceNamespace !== undefined && serviceNamespace !== operatorNamespace) {
    // The shipped RBAC lets the operator manage Services only in its own namespace: such a suite could never become Ready.
    err('spec.service.namespace', `must be the operator's namespace (${operatorNamespace}) or unset: the operator creates the suite's Service and may manage Services only there, not in ${serviceNamespace}`);
  }
  if (spec.url !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(spec.url);
    } catch {
      err('spec.url', 'must be a URL');
    }
    if (url && (url.protocol !== 'https:' || url.username || url.search || url.hash)) {
      err('spec.url', 'must be an https URL with no user, query or fragment');
    }
    if (url && isIpAddress(url.hostname)) {
      // The API server sends no server name (SNI) to an IP, and each suite's certificate is chosen by server name.
      err('spec.url', `must name its host by DNS name, not an IP address (${url.hostname}): the API server sends no TLS server name to an IP, and Portcullis serves each suite's certificate by server name`);
    }
  }
  const cert = spec.certificate ?? {};
  const duration = cert.duration === undefined ? DEFAULT_CERTIFICATE_DURATION_MS : parseDuration(cert.duration);
  if (duration === undefined) err('spec.certificate.duration', `"${cert.duration}" is not a duration such as 2160h`);
  if (cert.renewBefore !== undefined) {
    const before = parseDuration(cert.renewBefore);
    if (before === undefined) err('spec.certificate.renewBefore', `"${cert.renewBefore}" is not a duration such as 720h`);
    else if (duration !== undefined && before >= duration) err('spec.certificate.renewBefore', 'must be shorter than duration');
  }
  if (spec.exceptions?.namespaces !== undefined) errors.push(...labelSelectorProblems(spec.exceptions.namespaces, 'spec.exceptions.namespaces'));
  if (!Array.isArray(spec.webhooks) || spec.webhooks.length === 0) {
    err('spec.webhooks', 'must list at least one webhook');
    return errors;
  }
  const seen = new Set<string>();
  spec.webhooks.forEach((webhook, i) => {
    const path = `spec.webhooks[${i}]`;
    if (seen.has(webhook.name)) err(`${path}.name`, `duplicate webhook name "${webhook.name}"`);
    seen.add(webhook.name);
    errors.push(...validateWebhook(webhook, path));
    if (webhook.enforcement !== undefined && !ENFORCEMENTS.includes(webhook.enforcement)) err(`${path}.enforcement`, `Unsupported value: ${JSON.stringify(webhook.enforcement)}: supported values: "Webhook", "Native", "Auto"`);
    if (requestedEnforcement({ spec }, webhook) === 'Native') {
      const why = nativeObstacles(webhook).map((o) => `${o.field}: ${o.reason}`);
      const where = webhook.enforcement === 'Native' ? `${path}.enforcement` : 'spec.enforcement';
      if (why.length > 0) err(where, `Invalid value: "Native": webhook ${webhook.name} cannot be enforced natively (${why.join('; ')}); use Webhook, or Auto to go native only where it can`);
    }
    const refusal = webhook.params && operatorNamespace !== undefined ? paramsRefusal(webhook.params, operatorNamespace) : undefined;
    if (refusal) err(`${path}.params`, refusal);
  });
  return errors;
}

/**
 * Why a collection may never be read as a suite's `params`, or undefined when it may: the
 * operator's own Secrets hold the CA key and every serving key, and a suite's messageExpression
 * would hand them to whoever triggers a denial. A Secret watch with no namespace covers ours too.
 */
export function paramsRefusal(ref: Omit<ParamsRef, 'name'>, operatorNamespace: string): string | undefined {
  const coreSecrets = ref.apiVersion === 'v1' && ref.kind === 'Secret';
  if (coreSecrets && (!ref.namespace || ref.namespace === operatorNamespace)) {
    return `Secrets ${ref.namespace ? `in the operator's namespace (${operatorNamespace})` : "of all namespaces (the operator's included)"} are never served as params`;
  }
  return undefined;
}

function validateWebhook(webhook: WebhookSpec, path: string): FieldError[] {
  const named = DNS1123_LABEL.test(webhook.name ?? '') ? [] : [{ field: `${path}.name`, message: 'must be a DNS label' }];
  return [...named, ...validateRules(webhook, path)];
}

const ENFORCEMENTS: readonly string[] = ['Webhook', 'Native', 'Auto'];

/** `spec.typeCheckErrors`' values (Refuse: Deny's earlier name, still read). */
const TYPE_CHECK_ERRORS: readonly string[] = ['Warn', 'Deny', 'Refuse'];

/** What the cluster's administrator lets AdmissionPolicies do (the operator's flags; src/config.ts). */
export interface PolicyLimits {
  /** Whether Mutating policies are served. */
  mutations: boolean;
  /**
   * The CEL cost budget of one policy's evaluation of one request (the API server's is 10,000,000):
   * one budget across its matchConditions, validations, messageExpressions and audit annotations.
   */
  costBudget: number;
  /** The CEL cost one namespace's policies may spend together on one request (absent: 5 x costBudget). */
  namespaceCostBudget?: number;
  /** How long, in milliseconds, one namespace's policies may evaluate one request (absent: 500). */
  deadlineMs?: number;
  /** The largest spec, serialized as JSON (absent: no limit). */
  maxBytes?: number;
}

/**
 * An AdmissionPolicy's checks: its rules as a webhook's (field paths under `spec`), plus what
 * keeps it inside its namespace (namespaced resources only, params of its own namespace) and
 * inside the limits its cluster's administrator set. `protectedNamespaces` are those the
 * operator never serves (its own, kube-system, kube-node-lease), so a policy there could never work.
 */
export function validatePolicy(policy: AdmissionPolicy, limits: PolicyLimits, protectedNamespaces: readonly string[], operatorNamespace?: string): FieldError[] {
  const spec = policy.spec;
  if (!spec) return [{ field: 'spec', message: 'is required' }];
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field, message });
  const namespace = policy.metadata?.namespace ?? '';
  if (protectedNamespaces.includes(namespace)) {
    err('metadata.namespace', `no policy is served in ${namespace}: the operator's namespace, kube-system and kube-node-lease are never sent to admission webhooks, so the cluster can always be repaired`);
  }
  // The webhook spec's own checks; a policy has neither handler nor auditAnnotations (the CRD prunes them).
  errors.push(...validateRules({ ...spec, name: policy.metadata?.name ?? '' }, 'spec'));
  (Array.isArray(spec.rules) ? spec.rules : []).forEach((rule, i) => {
    if (rule.scope !== undefined && rule.scope !== 'Namespaced') err(`spec.rules[${i}].scope`, 'must be Namespaced or unset: a policy applies only to objects of its own namespace');
  });
  if (spec.params) {
    if (spec.params.namespace !== undefined && spec.params.namespace !== namespace) {
      err('spec.params.namespace', `must be the policy's own namespace (${namespace}) or unset: a policy reads nothing of another namespace`);
    }
    const refusal = operatorNamespace !== undefined ? paramsRefusal({ ...spec.params, namespace }, operatorNamespace) : undefined;
    if (refusal) err('spec.params', refusal);
  }
  if (spec.typeCheckErrors !== undefined && !TYPE_CHECK_ERRORS.includes(spec.typeCheckErrors)) err('spec.typeCheckErrors', 'must be Warn or Deny');
  if (spec.type === 'Mutating') errors.push(...mutationReachErrors(spec.rules));
  const bytes = limits.maxBytes === undefined ? 0 : JSON.stringify(spec).length;
  if (limits.maxBytes !== undefined && bytes > limits.maxBytes) {
    errors.push({ field: 'spec', message: `is ${bytes} bytes, more than the ${limits.maxBytes} the cluster's administrator allows a policy (the operator's --namespaced-policy-max-bytes)`, limit: true });
  }
  if (spec.type === 'Mutating' && !limits.mutations) {
    errors.push({ field: 'spec.type', message: "Mutating policies are turned off by the cluster's administrator (the operator's --namespaced-policy-mutations=false); only Validating policies are served", limit: true });
  }
  return errors;
}

/**
 * A mutation is one form: Portcullis' (`patch` or `patchExpression`) or a MutatingAdmissionPolicy
 * entry (`patchType` with its field, in MAP's words).
 */
function validateMutationForm(m: Mutation, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const forms = [m.patch !== undefined, m.patchExpression !== undefined, m.patchType !== undefined].filter(Boolean).length;
  if (forms !== 1) errors.push({ field: path, message: 'exactly one of patch, patchExpression and patchType must be set' });
  if (m.patchType === undefined) {
    if (m.jsonPatch !== undefined || m.applyConfiguration !== undefined) errors.push({ field: path, message: 'jsonPatch and applyConfiguration need patchType' });
    return errors;
  }
  if (m.condition !== undefined) errors.push({ field: `${path}.condition`, message: "a MutatingAdmissionPolicy mutation has no condition: use the webhook's matchConditions" });
  if (m.patchType === 'JSONPatch') {
    if (typeof m.jsonPatch?.expression !== 'string' || m.jsonPatch.expression.trim() === '') errors.push({ field: `${path}.jsonPatch`, message: 'must be specified when patchType is JSONPatch' });
    if (m.applyConfiguration !== undefined) errors.push({ field: `${path}.applyConfiguration`, message: 'must not be specified when patchType is JSONPatch' });
  } else if (m.patchType === 'ApplyConfiguration') {
    if (typeof m.applyConfiguration?.expression !== 'string' || m.applyConfiguration.expression.trim() === '') errors.push({ field: `${path}.applyConfiguration`, message: 'must be specified when patchType is ApplyConfiguration' });
    if (m.jsonPatch !== undefined) errors.push({ field: `${path}.jsonPatch`, message: 'must not be specified when patchType is ApplyConfiguration' });
  } else {
    errors.push({ field: `${path}.patchType`, message: 'Unsupported value: must be JSONPatch or ApplyConfiguration' });
  }
  return errors;
}

/** A webhook's checks but its name (a policy's name is its object's, checked by the API server). */
function validateRules(webhook: WebhookSpec, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field: `${path}${field}`, message });
  if (webhook.type !== 'Validating' && webhook.type !== 'Mutating') err('.type', 'must be Validating or Mutating');
  if (!Array.isArray(webhook.rules) || webhook.rules.length === 0) err('.rules', 'must list at least one rule');
  else webhook.rules.forEach((rule, i) => errors.push(...validateRuleWildcards(rule, `${path}.rules[${i}]`), ...validateResourceNames(rule, `${path}.rules[${i}]`)));
  errors.push(...validateExcludeResourceRules(webhook, path));
  if (webhook.params !== undefined) errors.push(...validateParams(webhook.params, `${path}.params`));

  const hasRules = (webhook.validations?.length ?? 0) + (webhook.auditAnnotations?.length ?? 0) + (webhook.mutations?.length ?? 0) > 0;
  if (webhook.handler && hasRules) err('', 'a webhook has either a handler or validations/mutations, not both');
  if (!webhook.handler && !hasRules) err('', `needs a handler or ${webhook.type === 'Mutating' ? 'mutations' : 'validations'}`);
  if (webhook.type === 'Mutating' && webhook.validations?.length) err('.validations', 'only Validating webhooks have validations');
  if (webhook.type === 'Validating' && webhook.mutations?.length) err('.mutations', 'only Mutating webhooks have mutations');
  webhook.validations?.forEach((v, i) => {
    if (v.reason !== undefined && !REASONS.has(v.reason)) err(`.validations[${i}].reason`, 'must be one of Unauthorized, Forbidden, Invalid, RequestEntityTooLarge');
  });
  if (webhook.type === 'Mutating' && webhook.auditAnnotations?.length) err('.auditAnnotations', 'only Validating webhooks have auditAnnotations');
  const keys = new Set<string>();
  webhook.auditAnnotations?.forEach((a, i) => {
    // The API server records `<webhook name>/<key>`, which must be a qualified name.
    if (!LABEL_KEY.test(a.key ?? '') || a.key.length > 63) err(`.auditAnnotations[${i}].key`, 'must be a qualified name of at most 63 characters (letters, digits, -, _ and .)');
    if (keys.has(a.key)) err(`.auditAnnotations[${i}].key`, `duplicate key "${a.key}"`);
    keys.add(a.key);
  });
  errors.push(...validateMatchConditions(webhook, path));
  errors.push(...validateVariables(webhook, path));
  webhook.mutations?.forEach((m, i) => errors.push(...validateMutationForm(m, `${path}.mutations[${i}]`)));
  webhook.validations?.forEach((v, i) => {
    // VAP's check of a static message: one line once trimmed (CEL's newline characters).
    if (typeof v.message === 'string' && v.message.length > 0 && v.message.trim() === '') err(`.validations[${i}].message`, 'must be non-empty if specified');
    else if (typeof v.message === 'string' && /[\n\r]/.test(v.message.trim())) err(`.validations[${i}].message`, 'must not contain line breaks');
    if (typeof v.messageExpression === 'string' && v.messageExpression.length > 0 && v.messageExpression.trim() === '') err(`.validations[${i}].messageExpression`, 'must be non-empty if specified');
  });
  const actions = webhook.validationActions ?? [];
  if (actions.includes('Deny') && actions.includes('Warn')) err('.validationActions', 'Deny and Warn may not be used together');
  return errors;
}

/**
 * The API server takes at most 64 matchConditions per webhook, and the operator adds its own:
 * self-protection to a webhook whose rules could reach a protected resource (api/self-protection.ts),
 * and one for resourceNames or excludeResourceRules (api/resource-match.ts).
 */
const API_SERVER_MATCH_CONDITIONS = 64;

/** The names of the matchConditions the operator writes itself; a user's may not take them. */
const OPERATOR_CONDITIONS = new Set([SELF_PROTECTION_CONDITION.name, RESOURCE_MATCH_CONDITION]);

/** VAP's checks of a paramRef (validateParamRef), in its words, and of the kind it names. */
function validateParams(params: ParamsRef, path: string): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof params !== 'object' || params === null) return [{ field: path, message: 'must be an object' }];
  if (!params.apiVersion) errors.push({ field: `${path}.apiVersion`, message: 'Required value' });
  if (!params.kind) errors.push({ field: `${path}.kind`, message: 'Required value' });
  const hasName = typeof params.name === 'string' && params.name !== '';
  if (hasName) {
    for (const message of pathSegmentProblems(params.name!)) errors.push({ field: `${path}.name`, message });
    if (params.selector !== undefined) errors.push({ field: `${path}.name`, message: 'Forbidden: name and selector are mutually exclusive' });
  }
  if (params.selector !== undefined) errors.push(...labelSelectorProblems(params.selector, `${path}.selector`));
  if (!hasName && params.selector === undefined) errors.push({ field: path, message: 'Required value: one of name or selector must be specified' });
  if (params.notFoundAction !== undefined && params.notFoundAction !== 'Deny' && params.notFoundAction !== 'Allow') {
    errors.push({ field: `${path}.notFoundAction`, message: `Unsupported value: ${JSON.stringify(params.notFoundAction)}: supported values: "Allow", "Deny"` });
  }
  return errors;
}

/** apimachinery's IsPathSegmentName: what VAP accepts as a paramRef name or a resourceName. */
function pathSegmentProblems(name: string): string[] {
  if (name === '.' || name === '..') return [`may not be '${name}'`];
  return [...(name.includes('/') ? ["may not contain '/'"] : []), ...(name.includes('%') ? ["may not contain '%'"] : [])];
}

/**
 * What the API server refuses in a rule's lists (admissionregistration validateRuleWithOperations:
 * a wildcard beside other values, an empty value, overlapping subresource wildcards), in its words,
 * so such a suite is refused on apply instead of failing when its configuration is written.
 */
function validateRuleWildcards(rule: NamedRuleWithOperations, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const invalid = (field: string, value: unknown, detail: string) => errors.push({ field: `${path}.${field}`, message: `Invalid value: ${JSON.stringify(value)}: ${detail}` });
  const list = (key: 'operations' | 'apiGroups' | 'apiVersions' | 'resources') => (Array.isArray(rule?.[key]) ? (rule[key] as unknown[]).filter((v): v is string => typeof v === 'string') : []);
  const alone = (key: 'operations' | 'apiGroups' | 'apiVersions', what: string) => {
    const values = list(key);
    if (values.length > 1 && values.includes('*')) invalid(key, values, `if '*' is present, must not specify other ${what}`);
  };
  alone('operations', 'operations');
  alone('apiGroups', 'API groups');
  alone('apiVersions', 'API versions');
  list('apiVersions').forEach((v, i) => v === '' && errors.push({ field: `${path}.apiVersions[${i}]`, message: 'Required value' }));
  const resources = list('resources');
  const wildcardSubresources = new Set<string>();
  const wildcardResources = new Set<string>();
  let withoutSubresource = false;
  resources.forEach((value, i) => {
    if (value === '') return errors.push({ field: `${path}.resources[${i}]`, message: 'Required value' });
    const slash = value.indexOf('/');
    if (slash < 0) {
      withoutSubresource = value !== '*';
      return;
    }
    const [resource, sub] = [value.slice(0, slash), value.slice(slash + 1)];
    if (wildcardSubresources.has(resource)) invalid(`resources[${i}]`, value, `if '${resource}/*' is present, must not specify ${value}`);
    if (wildcardResources.has(sub)) invalid(`resources[${i}]`, value, `if '*/${sub}' is present, must not specify ${value}`);
    if (sub === '*') wildcardSubresources.add(resource);
    if (resource === '*') wildcardResources.add(sub);
  });
  if (resources.length > 1 && resources.includes('*/*')) invalid('resources', resources, "if '*/*' is present, must not specify other resources");
  if (resources.includes('*') && withoutSubresource) invalid('resources', resources, "if '*' is present, must not specify other resources without subresources");
  return errors;
}

/** A rule's resourceNames as VAP's validateNamedRuleWithOperations checks them. */
function validateResourceNames(rule: NamedRuleWithOperations, path: string): FieldError[] {
  if (rule.resourceNames === undefined) return [];
  if (!Array.isArray(rule.resourceNames)) return [{ field: `${path}.resourceNames`, message: 'must be a list of names' }];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  rule.resourceNames.forEach((name, i) => {
    const field = `${path}.resourceNames[${i}]`;
    if (typeof name !== 'string' || name === '') return errors.push({ field, message: 'Required value' });
    for (const message of pathSegmentProblems(name)) errors.push({ field, message });
    if (seen.has(name)) errors.push({ field, message: `Duplicate value: ${JSON.stringify(name)}` });
    seen.add(name);
  });
  return errors;
}

/**
 * excludeResourceRules never reach the API server as rules (the operator writes them as a
 * matchCondition), so what it would check of a rule is checked here: each list given, and a
 * known scope.
 */
function validateExcludeResourceRules(webhook: WebhookSpec, path: string): FieldError[] {
  const rules = webhook.excludeResourceRules;
  if (rules === undefined) return [];
  if (!Array.isArray(rules)) return [{ field: `${path}.excludeResourceRules`, message: 'must be a list of rules' }];
  const errors: FieldError[] = [];
  rules.forEach((rule, i) => {
    const field = `${path}.excludeResourceRules[${i}]`;
    for (const key of ['operations', 'apiGroups', 'apiVersions', 'resources'] as const) {
      const values = rule?.[key];
      if (!Array.isArray(values) || values.length === 0) errors.push({ field: `${field}.${key}`, message: 'Required value' });
      else if (values.some((v) => typeof v !== 'string')) errors.push({ field: `${field}.${key}`, message: 'must be a list of strings' });
    }
    if (rule?.scope !== undefined && !['Cluster', 'Namespaced', '*'].includes(rule.scope)) {
      errors.push({ field: `${field}.scope`, message: `Unsupported value: ${JSON.stringify(rule.scope)}: supported values: "*", "Cluster", "Namespaced"` });
    }
    errors.push(...validateRuleWildcards(rule ?? {}, field), ...validateResourceNames(rule ?? {}, field));
  });
  return errors;
}

/** VAP's checks of matchConditions that need no compiler, in its words (the compiler's are policy/engine/match-conditions.ts). */
function validateMatchConditions(webhook: WebhookSpec, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const conditions = webhook.matchConditions ?? [];
  if (!Array.isArray(conditions)) return [{ field: `${path}.matchConditions`, message: 'must be a list' }];
  const ours = [...(reachesProtected(webhook.rules, webhook.handler?.name) ? ['self-protection'] : []), ...(needsResourceCondition(webhook) ? ['one for resourceNames and excludeResourceRules'] : [])];
  const max = API_SERVER_MATCH_CONDITIONS - ours.length;
  if (conditions.length > max) {
    const why = ours.length === 0 ? '' : `, and Portcullis adds its own: ${ours.join(', and ')}`;
    errors.push({ field: `${path}.matchConditions`, message: `Too many: ${conditions.length}: must have at most ${max} items (the API server takes 64 per webhook${why})` });
  }
  const names = new Set<string>();
  conditions.forEach((condition, i) => {
    const field = `${path}.matchConditions[${i}]`;
    if (typeof condition.expression !== 'string' || condition.expression.trim() === '') errors.push({ field: `${field}.expression`, message: 'Required value' });
    const name = typeof condition.name === 'string' ? condition.name : '';
    if (name === '') errors.push({ field: `${field}.name`, message: 'Required value' });
    else {
      for (const message of isQualifiedName(name)) errors.push({ field: `${field}.name`, message });
      if (OPERATOR_CONDITIONS.has(name)) errors.push({ field: `${field}.name`, message: 'the operator writes a matchCondition of this name itself' });
      if (names.has(name)) errors.push({ field: `${field}.name`, message: `Duplicate value: ${JSON.stringify(name)}` });
      names.add(name);
    }
  });
  return errors;
}

/** VAP's checks of variable names, in its words: each is read as `variables.<name>`, so a CEL identifier, and unique. */
function validateVariables(webhook: WebhookSpec, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const variables = webhook.variables ?? [];
  if (!Array.isArray(variables)) return [{ field: `${path}.variables`, message: 'must be a list' }];
  const names = new Set<string>();
  variables.forEach((variable, i) => {
    const field = `${path}.variables[${i}]`;
    const name = typeof variable.name === 'string' ? variable.name : '';
    if (name.trim() === '') errors.push({ field: `${field}.name`, message: 'Required value: name is not specified' });
    else if (!isCelIdentifier(name)) errors.push({ field: `${field}.name`, message: `Invalid value: ${JSON.stringify(name)}: must be a valid CEL identifier` });
    else if (names.has(name)) errors.push({ field: `${field}.name`, message: `Duplicate value: ${JSON.stringify(name)}` });
    names.add(name);
    if (typeof variable.expression !== 'string' || variable.expression.trim() === '') errors.push({ field: `${field}.expression`, message: 'Required value: expression is not specified' });
  });
  return errors;
}

/** An IPv4 literal, or an IPv6 one as URL writes it ([…]). */
function isIpAddress(hostname: string): boolean {
  return hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}
