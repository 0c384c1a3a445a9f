/**
 * `portcullis import` of Kyverno's ClusterPolicy and Policy (kyverno.io/v1, v2beta1) with CEL rules: a
 * ClusterPolicy becomes one AdmissionSuite (a webhook per rule), a namespaced Policy an AdmissionPolicy
 * per rule, each answering as Kyverno's engine does (match/exclude, celPreconditions, variables,
 * autogen rules for pod controllers, applyRules One, Enforce/Audit per namespace; docs/offline.md).
 * What is not CEL is left out and said in `notes`, never approximated. Pure: objects in, suites,
 * policies and notes out; the VAP, ValidatingPolicy and Gatekeeper imports are not its.
 */
import type { AdmissionPolicy, AdmissionSuite, LabelSelector, MatchCondition, NamedRuleWithOperations, Validation, ValidationAction, WebhookSpec } from '../api/types.ts';
import { API_VERSION, KIND, POLICY_KIND } from '../api/types.ts';
import { paramsOf, uniqueName } from '../native/import.ts';

type KubeObject = Record<string, any>;

const VERSIONS = new Set(['kyverno.io/v1', 'kyverno.io/v2beta1']);
export const isKyvernoPolicy = (o: KubeObject): boolean => VERSIONS.has(String(o.apiVersion ?? '')) && (o.kind === 'ClusterPolicy' || o.kind === 'Policy');

/** A match or exclude entry's resources (kyvernov1.ResourceDescription). */
interface Resources {
  kinds?: string[];
  name?: string;
  names?: string[];
  namespaces?: string[];
  annotations?: Record<string, string>;
  selector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  operations?: string[];
}
interface Filter {
  resources?: Resources;
  subjects?: { kind?: string; name?: string; namespace?: string }[];
  roles?: string[];
  clusterRoles?: string[];
}
interface MatchBlock extends Filter {
  any?: Filter[];
  all?: Filter[];
}
interface Rule {
  name?: string;
  match?: MatchBlock;
  exclude?: MatchBlock;
  context?: unknown[];
  preconditions?: unknown;
  celPreconditions?: MatchCondition[];
  mutate?: unknown;
  generate?: unknown;
  verifyImages?: unknown;
  validate?: {
    message?: string;
    failureAction?: string;
    failureActionOverrides?: Override[];
    cel?: {
      expressions?: { expression?: string; message?: string; messageExpression?: string; reason?: Validation['reason'] }[];
      paramKind?: { apiVersion?: string; kind?: string };
      paramRef?: { name?: string; namespace?: string; selector?: LabelSelector; parameterNotFoundAction?: 'Deny' | 'Allow' };
      auditAnnotations?: WebhookSpec['auditAnnotations'];
      variables?: WebhookSpec['variables'];
    };
    [other: string]: unknown;
  };
}

export interface KyvernoImport {
  suites: { suite: AdmissionSuite; source: string }[];
  policies: { policy: AdmissionPolicy; source: string }[];
  notes: string[];
}

/** Each ClusterPolicy and Policy of `objects` with at least one CEL rule carried over. */
export function importKyverno(objects: KubeObject[]): KyvernoImport {
  const out: KyvernoImport = { suites: [], policies: [], notes: [] };
  for (const policy of objects.filter(isKyvernoPolicy)) {
    const label = `${policy.kind}/${policy.metadata?.namespace ? `${policy.metadata.namespace}/` : ''}${policy.metadata?.name}`;
    const spec = (policy.spec ?? {}) as KubeObject;
    const note = (text: string) => out.notes.push(`${label}: ${text}`);
    if (spec.admission === false) {
      note('its admission is false (background scans only), so Kyverno enforces it on no request; not imported');
      continue;
    }
    const webhooks: { name: string; webhook: WebhookSpec }[] = [];
    const taken = new Set<string>();
    // applyRules One: Kyverno stops at the first rule that applies (matched, its celPreconditions
    // met, evaluated); each later rule applies only where none before it did.
    const applyOne = spec.applyRules === 'One';
    const before: string[] = [];
    let undecided: string | undefined;
    for (const rule of [...((spec.rules ?? []) as Rule[]), ...autogenRules(policy)]) {
      const where = `rule ${rule.name}`;
      const made = undecided ? { why: `under applyRules One it applies only where rule ${undecided} does not, which cannot be said` } : ruleWebhook(rule, spec);
      const earlier = [...before];
      if (applyOne && !undecided) {
        const applies = appliesExpression(rule);
        if (applies === undefined) undecided = String(rule.name);
        else if (applies !== 'false') before.push(applies);
      }
      if ('why' in made) note(`${where}: ${made.why}; not imported`);
      else {
        if (applyOne && earlier.length) made.webhook.matchConditions = [{ name: 'kyverno-apply-one', expression: earlier.map((e) => `!(${e})`).join(' && ') }, ...(made.webhook.matchConditions ?? [])];
        const ruleName = String(rule.name ?? 'rule');
        if (!made.variants) webhooks.push({ name: ruleName, webhook: gated({ ...made.webhook, name: uniqueName(ruleName, taken) }) });
        for (const variant of made.variants ?? []) {
          const matchConditions = [...(made.webhook.matchConditions ?? []), { name: 'kyverno-failure-action', expression: variant.condition }];
          webhooks.push({ name: `${ruleName}-${variant.suffix}`, webhook: gated({ ...made.webhook, name: uniqueName(`${ruleName}-${variant.suffix}`, taken), matchConditions, validationActions: variant.validationActions }) });
        }
        const messages = (rule.validate?.cel?.expressions ?? []).map((e) => e.message || rule.validate?.message || '');
        if (messages.some((m) => m.trim().includes('\n'))) note(`${where}: its message's line breaks are said as spaces (a suite's message has none, as a ValidatingAdmissionPolicy's)`);
      }
    }
    if (webhooks.length === 0) continue;
    const name = String(policy.metadata?.name ?? '');
    if (policy.kind === 'ClusterPolicy') {
      // A suite's name is part of DNS names: at most 40 characters (api/validate.ts).
      const suiteName = name.length > 40 ? name.slice(0, 40).replace(/-+$/, '') : name;
      if (suiteName !== name) note(`its suite is named ${suiteName} (a suite's name is at most 40 characters)`);
      // Like a native policy, a Kyverno policy is never refused for its types: neither is the suite.
      const suite = { apiVersion: API_VERSION, kind: KIND, metadata: { name: suiteName }, spec: { typeCheckErrors: 'Warn', webhooks: webhooks.map((w) => w.webhook) } } as unknown as AdmissionSuite;
      out.suites.push({ suite, source: label });
      continue;
    }
    const namespace = policy.metadata?.namespace;
    if (!namespace) {
      note('it has no metadata.namespace, so where it applies is the namespace it is applied to: give one; not imported');
      continue;
    }
    const policyNames = new Set<string>();
    for (const { name: ruleName, webhook } of webhooks) {
      if (webhook.auditAnnotations?.length) note(`rule ${ruleName}: its auditAnnotations are not carried over (an AdmissionPolicy has none)`);
      const { rules, matchConditions, params, variables, validations, validationActions } = webhook;
      const policyObject = {
        apiVersion: API_VERSION,
        kind: POLICY_KIND,
        metadata: { name: uniqueName(`${name}-${ruleName}`, policyNames), namespace },
        spec: {
          type: 'Validating',
          typeCheckErrors: 'Warn',
          rules,
          ...(matchConditions ? { matchConditions } : {}),
          ...(params ? { params } : {}),
          ...(variables ? { variables } : {}),
          ...(validations ? { validations } : {}),
          validationActions,
        },
      } as unknown as AdmissionPolicy;
      out.policies.push({ policy: policyObject, source: `${label} rule ${ruleName}` });
    }
  }
  return out;
}

/**
 * Where `rule` applies, for applyRules One: its match and exclude and its celPreconditions (an
 * evaluation error is taken as applying); undefined where that cannot be said, 'false' for a rule
 * Kyverno never counts as applied (not a validate rule).
 */
function appliesExpression(rule: Rule): string | undefined {
  if (!rule.validate) return 'false';
  if (rule.context?.length || rule.preconditions !== undefined) return undefined;
  const match = matchExpression(rule.match, rule.exclude);
  if ('why' in match) return undefined;
  return [match.expression, ...(rule.celPreconditions ?? []).map((c) => `(${c.expression})`)].join(' && ');
}

/** The variable that says whether the rule applies, where matchConditions cannot say it. */
const APPLIES = 'kyverno_applies';

/**
 * A webhook whose conditions read the request's Namespace (a namespaceSelector, an override's):
 * matchConditions see no namespaceObject (as a ValidatingAdmissionPolicy's and Kyverno's own CEL
 * preconditions see none), so its conditions become a variable that every validation and audit
 * annotation is gated on; the rule is then judged only where it applies, as before.
 */
function gated(webhook: WebhookSpec): WebhookSpec {
  const conditions = webhook.matchConditions ?? [];
  if (!conditions.some((c) => c.expression.includes('namespaceObject'))) return webhook;
  const rest: WebhookSpec = { ...webhook };
  delete rest.matchConditions;
  return {
    ...rest,
    variables: [{ name: APPLIES, expression: conditions.map((c) => `(${c.expression})`).join(' && ') }, ...(webhook.variables ?? [])],
    validations: (webhook.validations ?? []).map((v) => ({ ...v, expression: `!variables.${APPLIES} || (${v.expression})` })),
    ...(webhook.auditAnnotations?.length ? { auditAnnotations: webhook.auditAnnotations.map((a) => ({ ...a, valueExpression: `variables.${APPLIES} ? (${a.valueExpression}) : null` })) } : {}),
  };
}

/** The parts of a validate rule that are not CEL, as Kyverno names them. */
const NOT_CEL: Record<string, string> = {
  pattern: 'a pattern (Kyverno overlay, not CEL)',
  anyPattern: 'an anyPattern (Kyverno overlay, not CEL)',
  deny: 'a deny with JMESPath conditions',
  foreach: 'a foreach with JMESPath',
  podSecurity: 'a podSecurity check (use the PodSecurity handler)',
  manifests: 'a manifests signature check',
  assert: 'an assert tree (kyverno-json)',
};

interface Variant {
  suffix: string;
  validationActions: ValidationAction[];
  condition: string;
}

function ruleWebhook(rule: Rule, spec: KubeObject): { webhook: WebhookSpec; variants?: Variant[] } | { why: string } {
  for (const kind of ['mutate', 'generate', 'verifyImages'] as const) if (rule[kind]) return { why: `it is a ${kind} rule; only validate rules with CEL are carried over` };
  const validate = rule.validate;
  if (!validate) return { why: 'it has no validate' };
  for (const [field, what] of Object.entries(NOT_CEL)) if (validate[field] !== undefined) return { why: `its validate has ${what}, which a suite cannot run` };
  const cel = validate.cel;
  if (!cel) return { why: 'its validate has no cel' };
  if (rule.context?.length) return { why: 'it has a context (JMESPath variables, API calls, ConfigMaps), which CEL here cannot read' };
  if (rule.preconditions !== undefined) return { why: 'its preconditions are JMESPath conditions (celPreconditions are carried over)' };
  const match = matchExpression(rule.match, rule.exclude);
  if ('why' in match) return match;
  const cases = failureActions(validate, spec);
  if ('why' in cases) return cases;
  // Kyverno reports an Audit failure as a warning only with emitWarning.
  const actionsOf = (action: string): ValidationAction[] => (action === 'enforce' ? ['Deny'] : spec.emitWarning ? ['Audit', 'Warn'] : ['Audit']);
  const distinct = [...new Set(cases.map((c) => c.action))];
  const validationActions = actionsOf(distinct[0]!);
  // An action that depends on the namespace: a webhook per action, each where the rule resolves to it.
  const resolved = cases.reduceRight((otherwise, c) => (c.when === 'true' ? JSON.stringify(c.action) : `(${c.when} ? ${JSON.stringify(c.action)} : ${otherwise})`), '""');
  const variants = distinct.length > 1 ? distinct.map((action) => ({ suffix: action, validationActions: actionsOf(action), condition: `${resolved} == ${JSON.stringify(action)}` })) : undefined;
  const params = paramsOf(cel, cel);
  if (params && 'why' in params) return params;
  const validations = (cel.expressions ?? []).map((v) => {
    const message = (v.message || validate.message)?.replace(/\s*\n\s*/g, ' ').trim();
    return { expression: v.expression ?? '', ...(message ? { message } : {}), ...(v.messageExpression ? { messageExpression: v.messageExpression } : {}), ...(v.reason ? { reason: v.reason } : {}) };
  });
  const webhook: WebhookSpec = {
    name: '',
    type: 'Validating',
    rules: [match.rule],
    matchPolicy: 'Equivalent',
    // Kyverno evaluates CEL with no failure policy of its own (validating.NewValidator's nil is Fail):
    // an expression that errors fails the rule, whatever spec.failurePolicy says of the webhook.
    failurePolicy: 'Fail',
    ...(spec.webhookTimeoutSeconds !== undefined ? { timeoutSeconds: spec.webhookTimeoutSeconds } : {}),
    matchConditions: [{ name: 'kyverno-match', expression: match.expression }, ...(rule.celPreconditions ?? [])],
    ...(params ? { params: params.params } : {}),
    ...(cel.variables?.length ? { variables: cel.variables } : {}),
    ...(validations.length ? { validations } : {}),
    ...(cel.auditAnnotations?.length ? { auditAnnotations: cel.auditAnnotations } : {}),
    validationActions,
  };
  return { webhook, ...(variants ? { variants } : {}) };
}

interface Override {
  action?: string;
  namespaces?: string[];
  namespaceSelector?: LabelSelector;
}

const ACTIONS = new Set(['Enforce', 'Audit', 'enforce', 'audit']);

/**
 * The rule's failure action as Kyverno resolves it for a request (failureActionForRule): its
 * failureActionOverrides, its failureAction, the policy's validationFailureActionOverrides, the
 * policy's validationFailureAction (Audit), the first that holds; an override with an action
 * Kyverno does not know is passed over, as it passes it over.
 */
function failureActions(validate: NonNullable<Rule['validate']>, spec: KubeObject): { when: string; action: string }[] | { why: string } {
  const cases: { when: string; action: string }[] = [];
  const overrides = (list: Override[] | undefined) => {
    for (const o of list ?? []) if (ACTIONS.has(String(o.action))) cases.push({ when: overrideTest(o), action: String(o.action).toLowerCase() });
  };
  overrides(validate.failureActionOverrides);
  let last = validate.failureAction;
  if (last === undefined) {
    overrides(spec.validationFailureActionOverrides as Override[] | undefined);
    last = spec.validationFailureAction ?? 'Audit';
  }
  if (!ACTIONS.has(String(last))) return { why: `its failure action ${last} is not Enforce or Audit` };
  cases.push({ when: 'true', action: String(last).toLowerCase() });
  return cases.slice(0, cases.findIndex((c) => c.when === 'true') + 1);
}

/** matchOverride: no namespaces given, any namespace (the selector if given); else one of them, and the selector. */
function overrideTest(o: Override): string {
  const selector = o.namespaceSelector ? selectorTest(o.namespaceSelector, `(${NAMESPACE_LABELS})`) : 'true';
  if (o.namespaces === undefined) return selector;
  const namespace = `${OBJECT}.metadata.?namespace.orValue("")`;
  const named = o.namespaces.length ? `(${o.namespaces.map((n) => globTest(n, namespace)).join(' || ')})` : 'false';
  return selector === 'true' ? named : `(${named} && ${selector})`;
}

/** The object Kyverno matches a request by: the old one on a DELETE. */
const OBJECT = '(object != null ? object : oldObject)';
const LABELS = `${OBJECT}.metadata.?labels.orValue({})`;
const NAMESPACE_LABELS = 'namespaceObject != null ? namespaceObject.metadata.?labels.orValue({}) : {}';
const IS_NAMESPACE = `${OBJECT}.?kind.orValue("") == "Namespace"`;
const ALL_OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/**
 * match and exclude as one CEL condition, as MatchesResourceDescription reads them, and the rule
 * that sends the webhook every request it could match: every resource (and subresource when a kind
 * names one, or Pod, whose ephemeralcontainers Kyverno matches), for the operations named
 * (Kyverno registers a validate rule without operations for all four).
 */
function matchExpression(match: MatchBlock | undefined, exclude: MatchBlock | undefined): { expression: string; rule: NamedRuleWithOperations } | { why: string } {
  const filters = (block: MatchBlock | undefined) => (block?.any?.length ? block.any : block?.all?.length ? block.all : block ? [block] : []);
  for (const filter of [...filters(match), ...filters(exclude)]) {
    if (filter.roles?.length || filter.clusterRoles?.length) return { why: 'its match or exclude names roles or clusterRoles, which Kyverno reads from RBAC bindings and a suite cannot' };
  }
  if (!match) return { why: 'it has no match' };
  const matched = filters(match);
  const operations = new Set<string>();
  let subresources = false;
  for (const filter of matched) {
    for (const op of filter.resources?.operations?.length ? filter.resources.operations : ALL_OPERATIONS) operations.add(op);
    for (const kind of filter.resources?.kinds ?? []) {
      const [, , name, sub] = parseKind(kind);
      if (sub !== '' || wildcard(name, 'Pod')) subresources = true;
    }
  }
  const test = (filter: Filter) => filterTest(filter);
  const matchTest = match.any?.length ? `(${matched.map(test).join(' || ')})` : `(${matched.map(test).join(' && ')})`;
  let excludeTest = 'false';
  if (exclude) {
    // An empty entry excludes nothing (matchesResourceDescriptionExcludeHelper).
    const tests = filters(exclude).map((f) => (isEmpty(f.resources) && !f.subjects?.length ? 'false' : test(f)));
    excludeTest = tests.length === 0 ? 'false' : exclude.all?.length ? `(${tests.join(' && ')})` : `(${tests.join(' || ')})`;
  }
  const rule: NamedRuleWithOperations = { apiGroups: ['*'], apiVersions: ['*'], operations: ALL_OPERATIONS.filter((o) => operations.has(o)) as NamedRuleWithOperations['operations'], resources: subresources ? ['*/*'] : ['*'] };
  return { expression: excludeTest === 'false' ? matchTest : `${matchTest} && !${excludeTest}`, rule };
}

/** A list of strings as a CEL list literal. */
const strings = (list: string[]): string => `[${list.map((s) => JSON.stringify(s)).join(', ')}]`;

const isEmpty = (r: Resources | undefined) => !r || Object.values(r).every((v) => v === undefined || (Array.isArray(v) && v.length === 0));

/**
 * One entry of match or exclude (doesResourceMatchConditionBlock): every condition given holds, the
 * request's user among its subjects if it names any; an entry with neither matches nothing.
 */
function filterTest(filter: Filter): string {
  const subjects = filter.subjects ?? [];
  if (isEmpty(filter.resources) && subjects.length === 0) return 'false';
  const r = filter.resources ?? {};
  const tests: string[] = [];
  if (r.operations?.length) tests.push(`request.operation in ${strings(r.operations)}`);
  if (r.kinds?.length) tests.push(`(${r.kinds.map(kindTest).join(' || ')})`);
  const name = `(${OBJECT}.metadata.?name.orValue("") != "" ? ${OBJECT}.metadata.name : ${OBJECT}.metadata.?generateName.orValue(""))`;
  if (r.name) tests.push(globTest(r.name, name));
  if (r.names?.length) tests.push(`(${r.names.map((n) => globTest(n, name)).join(' || ')})`);
  if (r.namespaces?.length) {
    const namespace = `(${IS_NAMESPACE} ? ${OBJECT}.metadata.?name.orValue("") : ${OBJECT}.metadata.?namespace.orValue(request.?namespace.orValue("")))`;
    tests.push(`(${r.namespaces.map((n) => globTest(n, namespace)).join(' || ')})`);
  }
  if (r.annotations && Object.keys(r.annotations).length) {
    const annotations = `${OBJECT}.metadata.?annotations.orValue({})`;
    // Every annotation given matches some annotation of the object, key and value as wildcards.
    for (const [key, value] of Object.entries(r.annotations)) tests.push(`${annotations}.exists(k, ${globTest(key, 'k')} && ${globTest(value, `${annotations}[k]`)})`);
  }
  if (r.selector) tests.push(selectorTest(r.selector, LABELS));
  // A namespaceSelector never matches a Namespace; a cluster-scoped object is judged by no labels.
  if (r.namespaceSelector) tests.push(`!(${IS_NAMESPACE}) && ${selectorTest(r.namespaceSelector, `(${NAMESPACE_LABELS})`)}`);
  if (subjects.length) tests.push(`(${subjects.map(subjectTest).join(' || ')})`);
  return tests.length ? `(${tests.join(' && ')})` : 'true';
}

/** CheckSubjects: a User or ServiceAccount by the username, a Group by any of the user's groups (wildcards in the subject). */
function subjectTest(subject: { kind?: string; name?: string; namespace?: string }): string {
  const username = 'request.userInfo.?username.orValue("")';
  if (subject.kind === 'Group') return `request.userInfo.?groups.orValue([]).exists(g, ${globTest(subject.name ?? '', 'g')})`;
  if (subject.kind === 'ServiceAccount') return globTest(`system:serviceaccount:${subject.namespace ?? ''}:${subject.name ?? ''}`, username);
  // Kyverno matches a subject of another kind with no user.
  return subject.kind === 'User' ? globTest(subject.name ?? '', username) : 'false';
}

/** ParseKindSelector: `Kind`, `version/Kind`, `Kind/sub`, `group/version/Kind[/sub]`, `Kind.sub`, `*`s anywhere. */
function parseKind(input: string): [string, string, string, string] {
  let parts = input.split('/');
  parts = [...parts.slice(0, -1), ...parts[parts.length - 1]!.split('.')];
  const version = /^(v\d+((alpha|beta)\d+)?|\*)$/;
  switch (parts.length) {
    case 1:
      return ['*', '*', parts[0]!, ''];
    case 2:
      if (parts[0] === '*' && parts[1] === '*') return ['*', '*', '*', '*'];
      if (parts[0] === '*' && parts[1]!.toLowerCase() === parts[1]) return ['*', '*', '*', parts[1]!];
      if (version.test(parts[0]!)) return ['*', parts[0]!, parts[1]!, ''];
      return ['*', '*', parts[0]!, parts[1]!];
    case 3:
      if (version.test(parts[0]!)) return ['*', parts[0]!, parts[1]!, parts[2]!];
      return [parts[0]!, parts[1]!, parts[2]!, ''];
    case 4:
      return [parts[0]!, parts[1]!, parts[2]!, parts[3]!];
    default:
      return ['', '', '', ''];
  }
}

/** Kyverno's wildcard (ext/wildcard: `*` any run, `?` one character) as an anchored regular expression. */
const globRegex = (glob: string): string =>
  `^${glob
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('')}$`;

/** The wildcard on two literals, where the import itself must know (a kind that names Pod). */
const wildcard = (pattern: string, text: string): boolean => new RegExp(globRegex(pattern), 's').test(text);

/** CheckKind: group, version and kind of the request's kind, then its subresource; a Pod's ephemeralcontainers match a Pod. */
function kindTest(kind: string): string {
  const [group, version, name, sub] = parseKind(kind);
  const subresource = 'request.?subResource.orValue("")';
  const gvk = [globTest(group, 'request.kind.group'), globTest(version, 'request.kind.version'), globTest(name, 'request.kind.kind')].filter((t) => t !== 'true');
  let subTest = globTest(sub, subresource);
  if (wildcard(name, 'Pod') && wildcard(group, '') && wildcard(version, 'v1')) {
    subTest = `(${subTest} || (request.kind.group == "" && request.kind.version == "v1" && request.kind.kind == "Pod" && ${subresource} == "ephemeralcontainers"))`;
  }
  return `(${[...gvk, subTest].join(' && ')})`;
}

/** Kyverno's wildcard as CEL: exact text compared, else the regular expression. */
function globTest(glob: string, subject: string): string {
  if (glob === '*') return 'true';
  if (!/[*?]/.test(glob)) return `${subject} == ${JSON.stringify(glob)}`;
  return `${subject}.matches(${JSON.stringify(`(?s)${globRegex(glob)}`)})`;
}

/** A label selector over a map of labels, as the API server's labels.Selector reads it. */
function selectorTest(selector: LabelSelector, labels: string): string {
  const tests: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) tests.push(`(${JSON.stringify(key)} in ${labels} && ${labels}[${JSON.stringify(key)}] == ${JSON.stringify(value)})`);
  for (const e of selector.matchExpressions ?? []) {
    const key = JSON.stringify(e.key);
    const values = strings(e.values ?? []);
    if (e.operator === 'In') tests.push(`(${key} in ${labels} && ${labels}[${key}] in ${values})`);
    else if (e.operator === 'NotIn') tests.push(`(!(${key} in ${labels}) || !(${labels}[${key}] in ${values}))`);
    else if (e.operator === 'Exists') tests.push(`(${key} in ${labels})`);
    else tests.push(`!(${key} in ${labels})`);
  }
  return tests.length ? `(${tests.join(' && ')})` : 'true';
}

// pkg/autogen/v1: the rules Kyverno adds for the controllers that make Pods.
const CONTROLLERS = ['DaemonSet', 'Deployment', 'Job', 'StatefulSet', 'ReplicaSet', 'ReplicationController'];
const POD_AND_CONTROLLERS = new Set(['Pod', ...CONTROLLERS, 'CronJob']);
const POD_CEL: [string, string][] = [
  ['object.spec', 'object.spec.template.spec'],
  ['oldObject.spec', 'oldObject.spec.template.spec'],
  ['object.metadata', 'object.spec.template.metadata'],
  ['oldObject.metadata', 'oldObject.spec.template.metadata'],
];
const CRONJOB_CEL: [string, string][] = POD_CEL.map(([from, to]) => [from, to.replace('.spec.template.', '.spec.jobTemplate.spec.template.')]);

const descriptions = (block: MatchBlock | undefined): Resources[] => (block ? [block.resources ?? {}, ...(block.any ?? []).map((f) => f.resources ?? {}), ...(block.all ?? []).map((f) => f.resources ?? {})] : []);
const kindsOf = (block: MatchBlock | undefined): string[] => descriptions(block).flatMap((r) => r.kinds ?? []);
const hasPod = (kinds: string[]) => kinds.some((k) => parseKind(k)[2] === 'Pod');

/** The autogen-NAME and autogen-cronjob-NAME rules of a policy, as computeRules makes them (CanAutoGen, the controllers annotation). */
function autogenRules(policy: KubeObject): Rule[] {
  const rules = (policy.spec?.rules ?? []) as Rule[];
  let needed = false;
  for (const rule of rules) {
    if (rule.generate) return [];
    for (const r of [...descriptions(rule.match), ...descriptions(rule.exclude)]) {
      if (r.name || r.names?.length || r.selector || r.annotations || ((r.kinds?.length ?? 0) > 1 && hasPod(r.kinds!))) return [];
      if ((r.kinds ?? []).some((k) => POD_AND_CONTROLLERS.has(parseKind(k)[2]))) needed = true;
    }
  }
  if (!needed) return [];
  const annotation = policy.metadata?.annotations?.['pod-policies.kyverno.io/autogen-controllers'] as string | undefined;
  const wanted = annotation === undefined ? [...CONTROLLERS, 'CronJob'] : annotation.split(',');
  if (wanted.includes('none')) return [];
  const all = wanted.includes('all');
  const controllers = all ? CONTROLLERS : CONTROLLERS.filter((c) => wanted.includes(c));
  const cronJob = all || annotation === undefined || annotation.includes('CronJob');
  if (controllers.length === 0 && !cronJob) return [];
  const out: Rule[] = [];
  for (const rule of rules) {
    if (String(rule.name ?? '').startsWith('autogen-') || !rule.validate?.cel) continue;
    const excluded = kindsOf(rule.exclude);
    if (!hasPod(kindsOf(rule.match)) || (excluded.length && !hasPod(excluded))) continue;
    if (controllers.length) out.push(generated(rule, `autogen-${rule.name}`, [...controllers].sort(), POD_CEL, true));
    if (cronJob) out.push(generated(rule, `autogen-cronjob-${rule.name}`, ['CronJob'], CRONJOB_CEL, false));
  }
  return out;
}

/** A rule for other kinds: its kinds in the entries naming Pod (every entry, for CronJob), its text shifted to the template. */
function generated(rule: Rule, name: string, kinds: string[], replacements: [string, string][], podEntriesOnly: boolean): Rule {
  const withKinds = (block: MatchBlock | undefined, exclude: boolean): MatchBlock | undefined => {
    if (!block) return block;
    const swap = (f: Filter): Filter => (!podEntriesOnly || hasPod(f.resources?.kinds ?? []) ? { ...f, resources: { ...f.resources, kinds } } : f);
    if (block.any?.length) return { ...block, any: block.any.map(swap) };
    if (block.all?.length) return { ...block, all: block.all.map(swap) };
    if (exclude && !(block.resources?.kinds ?? []).length) return block;
    return { ...block, resources: { ...block.resources, kinds } };
  };
  const renamed: Rule = { ...rule, name: name.slice(0, 63), match: withKinds(rule.match, false), exclude: withKinds(rule.exclude, true) };
  let text = JSON.stringify(renamed);
  for (const [from, to] of replacements) text = text.split(from).join(to);
  return JSON.parse(text) as Rule;
}
