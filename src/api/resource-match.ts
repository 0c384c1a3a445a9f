/**
 * A webhook's `resourceNames` and `excludeResourceRules` with VAP's meaning (policy/matching/matching.go):
 * judged when some rule matches and names the object (or none), and no exclude rule does. Registered
 * rules have neither, so they are split: the rules without names, and a matchCondition on `request` that
 * provably never errors (optional fields guarded by has()), so the API server decides exactly as VAP
 * would. Pure: a spec in, rules and condition out; the configuration is desired/objects.ts's.
 */
import type { MatchCondition, NamedRuleWithOperations, RuleWithOperations, WebhookSpec } from './types.ts';

export const RESOURCE_MATCH_CONDITION = 'portcullis-resource-match';

/** Whether the webhook needs the operator's resource matchCondition (it then takes one of the API server's 64). */
export function needsResourceCondition(webhook: Pick<WebhookSpec, 'rules' | 'excludeResourceRules'>): boolean {
  const excludes = Array.isArray(webhook.excludeResourceRules) && webhook.excludeResourceRules.length > 0;
  return excludes || (Array.isArray(webhook.rules) && webhook.rules.some((r) => Array.isArray(r?.resourceNames) && r.resourceNames.length > 0));
}

/** The rules as the API server's webhook rules take them: without resourceNames. */
export function registeredRules(webhook: Pick<WebhookSpec, 'rules'>): RuleWithOperations[] {
  return (webhook.rules ?? []).map(({ resourceNames: _names, ...rule }) => rule);
}

/** The matchCondition saying what the registered rules cannot, or undefined when they say it all. */
export function resourceCondition(webhook: Pick<WebhookSpec, 'rules' | 'excludeResourceRules'>): MatchCondition | undefined {
  if (!needsResourceCondition(webhook)) return undefined;
  const parts: string[] = [];
  // The API server only calls for requests some rule matches; which rule matched is asked again here, with its names.
  if (webhook.rules.some((r) => r.resourceNames?.length)) parts.push(`(${webhook.rules.map((r) => `(${ruleExpression(r)})`).join(' || ')})`);
  for (const rule of webhook.excludeResourceRules ?? []) parts.push(`!(${ruleExpression(rule)})`);
  return { name: RESOURCE_MATCH_CONDITION, expression: parts.join(' && ') };
}

const literal = (value: string) => JSON.stringify(value);
const list = (values: string[]) => `[${values.map(literal).join(', ')}]`;
const NAMESPACES = "(request.resource.group == '' && request.resource.version == 'v1' && request.resource.resource == 'namespaces')";

/** A rule (and its names) as the API server's rules.Matcher reads it, in CEL on `request`. */
function ruleExpression(rule: NamedRuleWithOperations): string {
  const terms: string[] = [];
  const only = (values: string[] | undefined) => (values ?? []).length > 0 && !(values ?? []).includes('*');
  if (only(rule.operations)) terms.push(`request.operation in ${list(rule.operations!)}`);
  if (only(rule.apiGroups)) terms.push(`request.resource.group in ${list(rule.apiGroups!)}`);
  if (only(rule.apiVersions)) terms.push(`request.resource.version in ${list(rule.apiVersions!)}`);
  const resources = (rule.resources ?? []).map(resourceExpression);
  if (!resources.includes('true')) terms.push(resources.length ? `(${resources.join(' || ')})` : 'false');
  if (rule.scope === 'Namespaced') terms.push(`(has(request.namespace) && !${NAMESPACES})`);
  if (rule.scope === 'Cluster') terms.push(`(!has(request.namespace) || ${NAMESPACES})`);
  if (rule.resourceNames?.length) terms.push(`(has(request.name) && request.name in ${list(rule.resourceNames)})`);
  return terms.length ? terms.join(' && ') : 'true';
}

/** One entry of `resources`: `pods`, `pods/status`, `pods/*`, `*`, `*\/scale`, `*\/*` (a `/*` matches no subresource too). */
function resourceExpression(entry: string): string {
  const slash = entry.indexOf('/');
  const resource = slash < 0 ? entry : entry.slice(0, slash);
  const sub = slash < 0 ? '' : entry.slice(slash + 1);
  const terms: string[] = [];
  if (resource !== '*') terms.push(`request.resource.resource == ${literal(resource)}`);
  if (sub === '') terms.push('!has(request.subResource)');
  else if (sub !== '*') terms.push(`(has(request.subResource) && request.subResource == ${literal(sub)})`);
  return terms.length ? terms.join(' && ') : 'true';
}
