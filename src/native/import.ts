/**
 * native/import, the reverse of compile.ts: a ValidatingAdmissionPolicy and its bindings (or a Kyverno
 * ValidatingPolicy, which binds itself) as an AdmissionSuite answering as the API server would: one
 * webhook per binding, matching what policy and binding both match, with the policy's conditions,
 * variables, validations, audit annotations and failurePolicy, and the binding's actions and params.
 * Pure; nothing is approximated: a binding a suite cannot say exactly is left out, the reason in `notes`.
 */
import type { AdmissionSuite, LabelSelector, NamedRuleWithOperations, ParamsRef, WebhookSpec } from '../api/types.ts';
import { API_VERSION, KIND } from '../api/types.ts';

/** The versions of admissionregistration.k8s.io whose policies and bindings read alike. */
const VERSIONS = new Set(['admissionregistration.k8s.io/v1', 'admissionregistration.k8s.io/v1beta1']);
/** Kyverno's ValidatingPolicy: a VAP's fields, its actions in its spec, applied wherever it matches. */
const KYVERNO_GROUP = 'policies.kyverno.io';

interface ImportableObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  spec?: Record<string, unknown>;
}

interface PolicySpec {
  failurePolicy?: 'Fail' | 'Ignore';
  paramKind?: { apiVersion?: string; kind?: string };
  matchConstraints?: MatchResources;
  matchConditions?: WebhookSpec['matchConditions'];
  variables?: WebhookSpec['variables'];
  validations?: WebhookSpec['validations'];
  auditAnnotations?: WebhookSpec['auditAnnotations'];
}

interface MatchResources {
  resourceRules?: NamedRuleWithOperations[];
  excludeResourceRules?: NamedRuleWithOperations[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  matchPolicy?: 'Exact' | 'Equivalent';
}

interface BindingSpec {
  policyName?: string;
  validationActions?: WebhookSpec['validationActions'];
  paramRef?: { name?: string; namespace?: string; selector?: LabelSelector; parameterNotFoundAction?: 'Deny' | 'Allow' };
  matchResources?: MatchResources;
}

export interface Imported {
  /** Each suite made, with what it was made of (`ValidatingAdmissionPolicy/NAME`, `ValidatingPolicy/NAME`). */
  suites: { suite: AdmissionSuite; source: string }[];
  /** What was not carried over, and why: `ValidatingAdmissionPolicy/NAME: ...` or `ValidatingAdmissionPolicyBinding/NAME: ...`. */
  notes: string[];
}

const isKyvernoPolicy = (object: ImportableObject): boolean => (object.apiVersion ?? '').split('/')[0] === KYVERNO_GROUP && object.kind === 'ValidatingPolicy';

export const isImportable = (object: ImportableObject): boolean => (VERSIONS.has(object.apiVersion ?? '') && (object.kind === 'ValidatingAdmissionPolicy' || object.kind === 'ValidatingAdmissionPolicyBinding')) || isKyvernoPolicy(object);

/** Each policy of `objects` with at least one binding, as a suite named after it. */
export function importPolicies(objects: ImportableObject[]): Imported {
  const importable = objects.filter(isImportable);
  const policies = importable.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
  const bindings = importable.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
  const notes: string[] = [];
  const suites: Imported['suites'] = [];
  const policyNames = new Set(policies.map((p) => p.metadata?.name));
  for (const binding of bindings) {
    const named = (binding.spec as BindingSpec | undefined)?.policyName;
    if (!policyNames.has(named)) notes.push(`ValidatingAdmissionPolicyBinding/${binding.metadata?.name}: its policy ${named ?? '(none)'} is not among the objects given; not imported`);
  }
  for (const policy of policies) {
    const name = policy.metadata?.name ?? '';
    const own = bindings.filter((b) => (b.spec as BindingSpec | undefined)?.policyName === name);
    if (own.length === 0) {
      notes.push(`ValidatingAdmissionPolicy/${name}: no binding names it, so the API server enforces it nowhere; not imported`);
      continue;
    }
    const taken = new Set<string>();
    const webhooks: WebhookSpec[] = [];
    for (const binding of own) {
      const made = webhookOf((policy.spec ?? {}) as PolicySpec, (binding.spec ?? {}) as BindingSpec, uniqueName(binding.metadata?.name ?? 'binding', taken));
      if ('why' in made) notes.push(`ValidatingAdmissionPolicyBinding/${binding.metadata?.name}: ${made.why}; not imported`);
      else webhooks.push(made.webhook);
    }
    if (webhooks.length === 0) continue;
    suites.push({ suite: suiteOf(name, webhooks), source: `ValidatingAdmissionPolicy/${name}` });
  }
  for (const policy of importable.filter(isKyvernoPolicy)) {
    const made = kyvernoWebhook(policy);
    if ('why' in made) notes.push(`ValidatingPolicy/${policy.metadata?.name}: ${made.why}; not imported`);
    else {
      notes.push(...made.notes.map((n) => `ValidatingPolicy/${policy.metadata?.name}: ${n}`));
      suites.push({ suite: suiteOf(policy.metadata?.name ?? '', [made.webhook]), source: `ValidatingPolicy/${policy.metadata?.name}` });
    }
  }
  return { suites, notes };
}

// A native policy is never refused for its types (they are warnings in its status): neither is the suite.
const suiteOf = (name: string, webhooks: WebhookSpec[]): AdmissionSuite => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { typeCheckErrors: 'Warn', webhooks } }) as unknown as AdmissionSuite;

interface KyvernoSpec extends PolicySpec {
  validationActions?: WebhookSpec['validationActions'];
  evaluation?: { mode?: string; admission?: { enabled?: boolean } };
  webhookConfiguration?: { timeoutSeconds?: number };
  autogen?: { podControllers?: { controllers?: string[] } };
}

/**
 * A Kyverno ValidatingPolicy as one webhook: its VAP fields as a policy's, its own actions as a
 * binding's. What only Kyverno does (another payload than Kubernetes', rules generated for pod
 * controllers) is said; its extra CEL libraries are refused when the suite is checked.
 */
function kyvernoWebhook(policy: ImportableObject): { webhook: WebhookSpec; notes: string[] } | { why: string } {
  const spec = (policy.spec ?? {}) as KyvernoSpec;
  if (spec.evaluation?.mode && spec.evaluation.mode !== 'Kubernetes') return { why: `its evaluation.mode is ${spec.evaluation.mode}, not Kubernetes admission` };
  if (spec.evaluation?.admission?.enabled === false) return { why: 'its evaluation.admission.enabled is false (background scans only)' };
  if (spec.paramKind) return { why: 'it has a paramKind, which a ValidatingPolicy does not bind' };
  const notes: string[] = [];
  if (spec.autogen?.podControllers?.controllers?.length) {
    notes.push(`the rules Kyverno generates for ${spec.autogen.podControllers.controllers.join(', ')} (spec.autogen) are not carried over: add a webhook per controller`);
  }
  const made = webhookOf(spec, { validationActions: spec.validationActions ?? ['Deny'] }, uniqueName(policy.metadata?.name ?? 'policy', new Set()));
  if ('why' in made) return made;
  const timeout = spec.webhookConfiguration?.timeoutSeconds;
  return { webhook: { ...made.webhook, ...(timeout !== undefined ? { timeoutSeconds: timeout } : {}) }, notes };
}

function webhookOf(policy: PolicySpec, binding: BindingSpec, name: string): { webhook: WebhookSpec } | { why: string } {
  const constraints = policy.matchConstraints ?? {};
  const narrowed = binding.matchResources ?? {};
  let rules = constraints.resourceRules ?? [];
  if (narrowed.resourceRules?.length) {
    if ((narrowed.matchPolicy ?? 'Equivalent') !== (constraints.matchPolicy ?? 'Equivalent')) {
      return { why: `its matchResources.matchPolicy (${narrowed.matchPolicy ?? 'Equivalent'}) differs from its policy's (${constraints.matchPolicy ?? 'Equivalent'}), which one webhook cannot say` };
    }
    rules = rules.flatMap((a) => narrowed.resourceRules!.map((b) => intersectRules(a, b)).filter((r): r is NamedRuleWithOperations => r !== undefined));
    if (rules.length === 0) return { why: "its matchResources.resourceRules and its policy's resourceRules have no request in common" };
  }
  if (rules.length === 0) return { why: 'its policy matches no resource (matchConstraints.resourceRules is empty)' };
  const excluded = [...(constraints.excludeResourceRules ?? []), ...(narrowed.excludeResourceRules ?? [])];
  const params = paramsOf(policy, binding);
  if (params && 'why' in params) return params;
  const namespaceSelector = bothSelectors(constraints.namespaceSelector, narrowed.namespaceSelector);
  const objectSelector = bothSelectors(constraints.objectSelector, narrowed.objectSelector);
  const webhook: WebhookSpec = {
    name,
    type: 'Validating',
    rules,
    ...(excluded.length ? { excludeResourceRules: excluded } : {}),
    ...(namespaceSelector ? { namespaceSelector } : {}),
    ...(objectSelector ? { objectSelector } : {}),
    matchPolicy: constraints.matchPolicy ?? 'Equivalent',
    failurePolicy: policy.failurePolicy ?? 'Fail',
    ...(policy.matchConditions?.length ? { matchConditions: policy.matchConditions } : {}),
    ...(params ? { params: params.params } : {}),
    ...(policy.variables?.length ? { variables: policy.variables } : {}),
    ...(policy.validations?.length ? { validations: policy.validations } : {}),
    ...(policy.auditAnnotations?.length ? { auditAnnotations: policy.auditAnnotations } : {}),
    validationActions: binding.validationActions ?? ['Deny'],
  };
  return { webhook };
}

/** A policy's paramKind and a binding's paramRef as a webhook's params (Kyverno's CEL rules hold both). */
export function paramsOf(policy: Pick<PolicySpec, 'paramKind'>, binding: Pick<BindingSpec, 'paramRef'>): { params: ParamsRef } | { why: string } | undefined {
  const kind = policy.paramKind;
  const ref = binding.paramRef;
  if (!kind) return ref ? { why: 'it gives a paramRef to a policy with no paramKind' } : undefined;
  if (!ref) return { why: 'its policy has a paramKind and it gives no paramRef' };
  if (!kind.apiVersion || !kind.kind) return { why: 'its policy has a paramKind without apiVersion or kind' };
  return {
    params: {
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      ...(ref.name !== undefined ? { name: ref.name } : {}),
      ...(ref.selector !== undefined ? { selector: ref.selector } : {}),
      ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}),
      notFoundAction: ref.parameterNotFoundAction ?? 'Deny',
    },
  };
}

/** A selector matching what both match (undefined: everything). matchLabels become `In` expressions only where the two disagree. */
export function bothSelectors(a: LabelSelector | undefined, b: LabelSelector | undefined): LabelSelector | undefined {
  const empty = (s: LabelSelector | undefined) => !s || (!Object.keys(s.matchLabels ?? {}).length && !(s.matchExpressions ?? []).length);
  if (empty(a)) return empty(b) ? undefined : b;
  if (empty(b)) return a;
  const labels: Record<string, string> = { ...(a!.matchLabels ?? {}) };
  const expressions = [...(a!.matchExpressions ?? []), ...(b!.matchExpressions ?? [])];
  for (const [key, value] of Object.entries(b!.matchLabels ?? {})) {
    if (key in labels && labels[key] !== value) expressions.push({ key, operator: 'In', values: [value] });
    else labels[key] = value;
  }
  return { ...(Object.keys(labels).length ? { matchLabels: labels } : {}), ...(expressions.length ? { matchExpressions: expressions } : {}) };
}

/** One list of a rule (`*` is every entry): what both lists match, undefined for nothing. */
function bothLists(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  const all = (list: string[] | undefined) => !list || list.includes('*');
  if (all(a)) return b ?? a;
  if (all(b)) return a;
  const common = a!.filter((x) => b!.includes(x));
  return common.length ? common : undefined;
}

/**
 * Resource patterns as the API server's rules.Matcher reads them: `res` or `res/sub`, each part `*`
 * for any; no subresource part matches the object itself only, `res/*` the object and all its
 * subresources. A pattern per pair that matches exactly what both match.
 */
function bothResources(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  const both = (x: string, y: string) => (x === '*' ? y : y === '*' || y === x ? x : undefined);
  const out = new Set<string>();
  for (const x of a ?? []) {
    for (const y of b ?? []) {
      const [rx = '', sx = ''] = x.split('/');
      const [ry = '', sy = ''] = y.split('/');
      const resource = both(rx, ry);
      const sub = both(sx, sy);
      if (resource !== undefined && sub !== undefined) out.add(sub === '' ? resource : `${resource}/${sub}`);
    }
  }
  return out.size ? [...out] : undefined;
}

/** A rule matching exactly the requests both rules match; undefined when none does. */
export function intersectRules(a: NamedRuleWithOperations, b: NamedRuleWithOperations): NamedRuleWithOperations | undefined {
  const operations = bothLists(a.operations, b.operations);
  const apiGroups = bothLists(a.apiGroups, b.apiGroups);
  const apiVersions = bothLists(a.apiVersions, b.apiVersions);
  const resources = bothResources(a.resources, b.resources);
  if (!operations || !apiGroups || !apiVersions || !resources) return undefined;
  const scopeA = a.scope ?? '*';
  const scopeB = b.scope ?? '*';
  if (scopeA !== '*' && scopeB !== '*' && scopeA !== scopeB) return undefined;
  const scope = scopeA === '*' ? scopeB : scopeA;
  let resourceNames = a.resourceNames?.length ? a.resourceNames : b.resourceNames;
  if (a.resourceNames?.length && b.resourceNames?.length) {
    resourceNames = a.resourceNames.filter((n) => b.resourceNames!.includes(n));
    if (!resourceNames.length) return undefined;
  }
  return { operations, apiGroups, apiVersions, resources, ...(a.scope || b.scope ? { scope } : {}), ...(resourceNames?.length ? { resourceNames } : {}) };
}

/** A binding's name as a webhook's (a DNS label, 63 at most), unique in its suite. */
export function uniqueName(binding: string, taken: Set<string>): string {
  const base =
    binding
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 63)
      .replace(/-+$/, '') || 'binding';
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 63 - String(n).length - 1).replace(/-+$/, '')}-${n}`;
  taken.add(name);
  return name;
}
