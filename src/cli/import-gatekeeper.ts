/**
 * `portcullis import` of Gatekeeper: a ConstraintTemplate (K8sNativeValidation) and its Constraints as
 * one AdmissionSuite, a webhook per Constraint, answering as Gatekeeper's webhook: its CEL environment
 * (`variables.params` inlined as a literal, so no Gatekeeper CRD is needed; `variables.anyObject`), the
 * source's variables, validations and matchConditions, and spec.match as Gatekeeper's matcher means it.
 * Pure: objects in, suites and notes out. The VAP and Kyverno import is native/import.ts'.
 */
import type { AdmissionSuite, LabelSelector, MatchCondition, NamedRuleWithOperations, ValidationAction, WebhookSpec } from '../api/types.ts';
import { API_VERSION, KIND } from '../api/types.ts';
import { uniqueName } from '../native/import.ts';
import { Resources } from './resources.ts';

type KubeObject = Record<string, any>;

const TEMPLATE_GROUP = 'templates.gatekeeper.sh';
const CONSTRAINT_GROUP = 'constraints.gatekeeper.sh';
const TEMPLATE_VERSIONS = new Set(['v1', 'v1beta1', 'v1alpha1']);
const CONSTRAINT_VERSIONS = new Set(['v1beta1', 'v1alpha1']);
const ENGINE = 'K8sNativeValidation';
/** The enforcement point of Gatekeeper's admission webhook, the one a suite takes the place of. */
const WEBHOOK_POINT = 'validation.gatekeeper.sh';

const groupVersion = (o: KubeObject): [string, string] => {
  const [group = '', version = ''] = String(o.apiVersion ?? '').split('/');
  return [group, version];
};
export const isConstraintTemplate = (o: KubeObject): boolean => o.kind === 'ConstraintTemplate' && groupVersion(o)[0] === TEMPLATE_GROUP && TEMPLATE_VERSIONS.has(groupVersion(o)[1]);
export const isConstraint = (o: KubeObject): boolean => groupVersion(o)[0] === CONSTRAINT_GROUP && CONSTRAINT_VERSIONS.has(groupVersion(o)[1]);
export const isGatekeeper = (o: KubeObject): boolean => isConstraintTemplate(o) || isConstraint(o);

/** The K8sNativeValidation source of a template (schema.Source), as Gatekeeper's JSON names its fields. */
interface Source {
  validations?: { expression?: string; message?: string; messageExpression?: string }[];
  failurePolicy?: 'Fail' | 'Ignore';
  /** Gatekeeper spells the field `matchCondition` (singular); the plural is read too. */
  matchCondition?: MatchCondition[];
  matchConditions?: MatchCondition[];
  variables?: { name: string; expression: string }[];
}

interface Match {
  kinds?: { apiGroups?: string[]; kinds?: string[] }[];
  scope?: string;
  namespaces?: string[];
  excludedNamespaces?: string[];
  labelSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  name?: string;
  source?: string;
}

export interface GatekeeperImport {
  suites: { suite: AdmissionSuite; source: string }[];
  notes: string[];
}

/** Each template of `objects` with a K8sNativeValidation engine and at least one Constraint, as a suite named after it. */
export function importGatekeeper(objects: KubeObject[]): GatekeeperImport {
  const resources = new Resources(objects);
  const templates = objects.filter(isConstraintTemplate);
  const constraints = objects.filter(isConstraint);
  const suites: GatekeeperImport['suites'] = [];
  const notes: string[] = [];
  const kindOf = (t: KubeObject): string => String(t.spec?.crd?.spec?.names?.kind ?? '');
  const kinds = new Set(templates.map(kindOf));
  for (const constraint of constraints) {
    if (!kinds.has(constraint.kind)) notes.push(`${constraint.kind}/${constraint.metadata?.name}: its ConstraintTemplate (kind ${constraint.kind}) is not among the objects given; not imported`);
  }
  for (const template of templates) {
    const name = String(template.metadata?.name ?? '');
    const label = `ConstraintTemplate/${name}`;
    const code = (template.spec?.targets?.[0]?.code ?? []) as { engine?: string; source?: Source }[];
    const native = code.find((c) => c.engine === ENGINE);
    if (!native) {
      notes.push(`${label}: it has only Rego, which a suite cannot run (only a K8sNativeValidation engine's CEL is carried over); not imported`);
      continue;
    }
    if (template.spec.targets.length > 1) notes.push(`${label}: only its first target is read, as Gatekeeper reads it`);
    if (code.some((c) => c.engine === 'Rego')) notes.push(`${label}: its Rego is not carried over; the suite runs its K8sNativeValidation CEL`);
    const own = constraints.filter((c) => c.kind === kindOf(template));
    if (own.length === 0) {
      notes.push(`${label}: no Constraint of kind ${kindOf(template)} is among the objects given, so Gatekeeper enforces it nowhere; not imported`);
      continue;
    }
    const taken = new Set<string>();
    const webhooks: WebhookSpec[] = [];
    for (const constraint of own) {
      const made = webhookOf(native.source ?? {}, constraint, resources, uniqueName(String(constraint.metadata?.name ?? 'constraint'), taken));
      const where = `${constraint.kind}/${constraint.metadata?.name}`;
      notes.push(...made.notes.map((n) => `${where}: ${n}`));
      if (made.webhook) webhooks.push(made.webhook);
    }
    if (webhooks.length === 0) continue;
    // Like a native policy, a Gatekeeper template is never refused for its types: neither is the suite.
    const suite = { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { typeCheckErrors: 'Warn', webhooks } } as unknown as AdmissionSuite;
    suites.push({ suite, source: label });
  }
  return { suites, notes };
}

function webhookOf(source: Source, constraint: KubeObject, resources: Resources, name: string): { webhook?: WebhookSpec; notes: string[] } {
  const spec = (constraint.spec ?? {}) as { match?: Match; parameters?: unknown; enforcementAction?: string; scopedEnforcementActions?: { action?: string; enforcementPoints?: { name?: string }[] }[] };
  const notes: string[] = [];
  const actions = actionsOf(spec.enforcementAction, spec.scopedEnforcementActions, notes);
  if (!actions) return { notes };
  const match = spec.match ?? {};
  if (match.source && match.source !== 'All' && match.source !== 'Original') {
    notes.push(`its match.source is ${match.source}, which only Gatekeeper's expansion makes; not imported`);
    return { notes };
  }
  const { rules, conditions: kindConditions } = rulesOf(match.kinds, resources);
  const matchConditions = [...(source.matchCondition ?? source.matchConditions ?? []), ...kindConditions, ...matchOf(match)];
  const webhook: WebhookSpec = {
    name,
    type: 'Validating',
    rules,
    ...(nonEmpty(match.namespaceSelector) ? { namespaceSelector: match.namespaceSelector } : {}),
    ...(nonEmpty(match.labelSelector) ? { objectSelector: match.labelSelector } : {}),
    matchPolicy: 'Equivalent',
    failurePolicy: source.failurePolicy ?? 'Fail',
    ...(matchConditions.length ? { matchConditions } : {}),
    variables: [
      // Gatekeeper binds variables.params to the Constraint's spec.parameters (null when there are none).
      { name: 'params', expression: celLiteral(spec.parameters ?? null) },
      { name: 'anyObject', expression: 'request.operation == "DELETE" && object == null ? oldObject : object' },
      ...(source.variables ?? []),
    ],
    validations: (source.validations ?? []).map((v) => ({
      expression: v.expression ?? '',
      ...(v.message !== undefined ? { message: v.message } : {}),
      ...(v.messageExpression !== undefined ? { messageExpression: v.messageExpression } : {}),
    })),
    validationActions: actions,
  };
  return { webhook, notes };
}

const nonEmpty = (s: LabelSelector | undefined): s is LabelSelector => !!s && (Object.keys(s.matchLabels ?? {}).length > 0 || (s.matchExpressions ?? []).length > 0);

const ACTIONS: Record<string, ValidationAction> = { deny: 'Deny', warn: 'Warn', dryrun: 'Audit' };

/** enforcementAction (deny, warn, dryrun; `scoped`: those of the webhook's enforcement point) as validationActions; undefined when Gatekeeper's webhook would not enforce it. */
function actionsOf(action: string | undefined, scoped: { action?: string; enforcementPoints?: { name?: string }[] }[] | undefined, notes: string[]): ValidationAction[] | undefined {
  const given = (action ?? 'deny').toLowerCase();
  if (given !== 'scoped') {
    const mapped = ACTIONS[given];
    if (!mapped) notes.push(`its enforcementAction ${action} is not one Gatekeeper knows (deny, warn, dryrun, scoped); not imported`);
    return mapped ? [mapped] : undefined;
  }
  const atWebhook = (scoped ?? []).filter((s) => (s.enforcementPoints ?? []).some((p) => p.name === WEBHOOK_POINT || p.name === '*'));
  const elsewhere = (scoped ?? []).flatMap((s) => (s.enforcementPoints ?? []).map((p) => p.name)).filter((p) => p !== WEBHOOK_POINT && p !== '*');
  if (elsewhere.length) notes.push(`its scoped enforcement at ${[...new Set(elsewhere)].join(', ')} is not carried over (a suite is the admission webhook only)`);
  const mapped = [...new Set(atWebhook.map((s) => ACTIONS[String(s.action).toLowerCase()]).filter((a): a is ValidationAction => a !== undefined))];
  if (mapped.length === 0) notes.push(`its scopedEnforcementActions name no deny, warn or dryrun at ${WEBHOOK_POINT}, so Gatekeeper's webhook does not enforce it; not imported`);
  // Deny and Warn together are what Gatekeeper's webhook does with both: a suite refuses Deny with Warn, so Deny stands.
  if (mapped.includes('Deny') && mapped.includes('Warn')) return mapped.filter((a) => a !== 'Warn');
  return mapped.length ? mapped : undefined;
}

/**
 * match.kinds as rules (CREATE and UPDATE, the operations Gatekeeper's webhook is registered for):
 * an empty or `*` list of kinds or groups matches any; named kinds of named groups become their
 * resources. Named kinds under any group cannot be a rule's resources, so that entry's rule takes
 * every resource and a matchCondition on request.kind says which kinds, as Gatekeeper compares them.
 */
function rulesOf(kinds: Match['kinds'], resources: Resources): { rules: NamedRuleWithOperations[]; conditions: MatchCondition[] } {
  const rule = (apiGroups: string[], names: string[]): NamedRuleWithOperations => ({ apiGroups, apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: names });
  const any = (list: string[] | undefined) => !list || list.length === 0 || list.includes('*');
  if (!kinds || kinds.length === 0) return { rules: [rule(['*'], ['*'])], conditions: [] };
  const rules: NamedRuleWithOperations[] = [];
  let needsCondition = false;
  for (const entry of kinds) {
    if (any(entry.kinds)) rules.push(rule(any(entry.apiGroups) ? ['*'] : entry.apiGroups!, ['*']));
    else if (any(entry.apiGroups)) {
      rules.push(rule(['*'], ['*']));
      needsCondition = true;
    } else for (const group of entry.apiGroups!) rules.push(rule([group], [...new Set(entry.kinds!.map((k) => resources.of(group, k)))]));
  }
  if (!needsCondition) return { rules, conditions: [] };
  const entries = kinds.map((e) => {
    const kindTest = any(e.kinds) ? 'true' : `request.kind.kind in ${celLiteral(e.kinds)}`;
    const groupTest = any(e.apiGroups) ? 'true' : `request.kind.group in ${celLiteral(e.apiGroups)}`;
    return `(${kindTest} && ${groupTest})`;
  });
  return { rules, conditions: [{ name: 'gatekeeper-match-kinds', expression: entries.join(' || ') }] };
}

/** The object of the request (the old one on a DELETE), and the namespace Gatekeeper matches it by: a Namespace's own name, else the request's. */
const OBJECT = '(object != null ? object : oldObject)';
const IS_NAMESPACE = '(request.kind.group == "" && request.kind.kind == "Namespace")';
// A cluster-scoped object's request has no namespace field (the API server omits it when empty).
const REQUEST_NAMESPACE = 'request.?namespace.orValue("")';
const NAMESPACE = `(${IS_NAMESPACE} ? ${OBJECT}.metadata.?name.orValue("") : ${REQUEST_NAMESPACE})`;

/** Gatekeeper's wildcard (pkg/wildcard): `*` at the start, the end, or both; else the exact text. */
function globTest(glob: string, subject: string, generateName = false): string {
  const quoted = (s: string) => JSON.stringify(s);
  const front = glob.startsWith('*');
  const back = glob.endsWith('*') && glob.length > (front ? 1 : 0);
  const core = glob.slice(front ? 1 : 0, back ? -1 : undefined);
  if (front && (back || glob === '*')) return `${subject}.contains(${quoted(core)})`;
  // A generateName is a prefix: only a glob ending in `*` can match it, as Gatekeeper's MatchesGenerateName.
  if (generateName) return back ? `${subject}.startsWith(${quoted(core)})` : 'false';
  if (front) return `${subject}.endsWith(${quoted(core)})`;
  if (back) return `${subject}.startsWith(${quoted(core)})`;
  return `${subject} == ${quoted(glob)}`;
}

const anyGlob = (globs: string[], subject: string) => `(${globs.map((g) => globTest(g, subject)).join(' || ')})`;

/** namespaces, excludedNamespaces, name and scope: what the API server's rules and selectors cannot say, as matchConditions. */
function matchOf(match: Match): MatchCondition[] {
  const conditions: MatchCondition[] = [];
  // A cluster-scoped object other than a Namespace has no namespace, and Gatekeeper lets it match both lists.
  const namespaced = `(${IS_NAMESPACE} || ${REQUEST_NAMESPACE} != "")`;
  if (match.namespaces?.length) conditions.push({ name: 'gatekeeper-match-namespaces', expression: `!${namespaced} || ${anyGlob(match.namespaces, NAMESPACE)}` });
  if (match.excludedNamespaces?.length) conditions.push({ name: 'gatekeeper-match-excluded-namespaces', expression: `!${namespaced} || !${anyGlob(match.excludedNamespaces, NAMESPACE)}` });
  if (match.name) {
    const name = `${OBJECT}.metadata.?name.orValue("")`;
    const generateName = `${OBJECT}.metadata.?generateName.orValue("")`;
    conditions.push({ name: 'gatekeeper-match-name', expression: `${globTest(match.name, name)} || (${generateName} != "" && ${globTest(match.name, generateName, true)})` });
  }
  if (match.scope === 'Cluster') conditions.push({ name: 'gatekeeper-match-scope', expression: `${IS_NAMESPACE} || ${REQUEST_NAMESPACE} == ""` });
  if (match.scope === 'Namespaced') conditions.push({ name: 'gatekeeper-match-scope', expression: `!${IS_NAMESPACE} && ${REQUEST_NAMESPACE} != ""` });
  return conditions;
}

/**
 * A JSON value as a CEL literal: every entry `dyn` so that lists and maps of mixed types compile as
 * cel-go reads the Constraint's parameters (dyn); whole numbers as ints, others as doubles.
 */
export function celLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : /[.eE]/.test(String(value)) ? String(value) : `${value}.0`;
  if (Array.isArray(value)) return `[${value.map((v) => `dyn(${celLiteral(v)})`).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${JSON.stringify(k)}: dyn(${celLiteral(v)})`)
    .join(', ')}}`;
}
