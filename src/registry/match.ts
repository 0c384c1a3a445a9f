/**
 * Which registered webhooks the API server would call for a request: the rules and namespace and object
 * selectors the operator registers (desired/objects.ts, self-protection included), evaluated as the API
 * server does. Used offline (cli/evaluate.ts), on the request path to tell AdmissionPolicies apart
 * (registry/policy-webhook.ts), and by the audit. matchConditions (the `resourceNames` one included) are the
 * policy engine's (compileMatchConditions). Pure; no I/O.
 */
import { outcomeOf, type AdmissionRequest } from '../api/admission-review.ts';
import { API_VERSION, KIND, type FailurePolicy, type LabelSelector, type MatchCondition, type NamedRuleWithOperations, type RuleWithOperations } from '../api/types.ts';
import { selects } from '../kubernetes/selectors.ts';
import { compileSuite } from './compile.ts';

export interface RegisteredWebhook {
  name: string;
  rules?: RuleWithOperations[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  matchConditions?: MatchCondition[];
  failurePolicy?: FailurePolicy;
}

/** Why the API server would not call the webhook, or undefined when it would (before matchConditions). */
export function notCalledBecause(webhook: RegisteredWebhook, request: AdmissionRequest, namespaceLabels: Record<string, string> | undefined): string | undefined {
  if (!(webhook.rules ?? []).some((rule) => ruleMatches(rule, request))) return 'no rule matches the request';
  if (namespaceLabels && !selects(webhook.namespaceSelector, namespaceLabels)) return 'namespaceSelector does not select the namespace';
  const labels = (object: unknown) => (object as { metadata?: { labels?: Record<string, string> } } | null | undefined)?.metadata?.labels ?? {};
  // The API server calls the webhook when either the object or the old object is selected.
  const candidates = [request.object, request.oldObject].filter((o) => o);
  if (candidates.length && !candidates.some((o) => selects(webhook.objectSelector, labels(o)))) return 'objectSelector does not select the object';
  return undefined;
}

export function ruleMatches(rule: RuleWithOperations, request: AdmissionRequest): boolean {
  const any = (list: string[] | undefined, value: string) => (list ?? []).some((v) => v === '*' || v === value);
  if (!any(rule.operations, request.operation)) return false;
  if (!any(rule.apiGroups, request.resource.group)) return false;
  if (!any(rule.apiVersions, request.resource.version)) return false;
  const resource = request.resource.resource;
  const sub = request.subResource;
  const matchesResource = (rule.resources ?? []).some((r) => {
    const [base, subPattern] = r.split('/');
    // `*/*` and `pods/*` match the object itself too, as the API server's rules.Matcher reads them.
    if (sub === undefined || sub === '') return (subPattern === undefined || subPattern === '*') && (base === '*' || base === resource);
    return subPattern !== undefined && (base === '*' || base === resource) && (subPattern === '*' || subPattern === sub);
  });
  if (!matchesResource) return false;
  const scope = rule.scope ?? '*';
  if (scope === 'Cluster' && request.namespace) return false;
  if (scope === 'Namespaced' && !request.namespace) return false;
  // Registered rules have no names (resource-match.ts moves them to a matchCondition); a policy's rules keep theirs.
  const names = (rule as NamedRuleWithOperations).resourceNames;
  if (names?.length && !(request.name && names.includes(request.name))) return false;
  return true;
}

/**
 * A webhook's matchConditions, which the API server evaluates in CEL before calling it: compiled
 * by the policy engine as the validations of a probe webhook (their environment is the same).
 * Answers why the webhook would not be called (a condition false, or errored), or undefined when
 * it would. `owner` names the suite (or `admissionpolicies`) for the probe's messages.
 */
export function compileMatchConditions(owner: string, rules: RuleWithOperations[], conditions: MatchCondition[], failurePolicy: FailurePolicy, operatorNamespace: string): (request: AdmissionRequest) => Promise<string | undefined> {
  if (conditions.length === 0) return async () => undefined;
  const probe = compileSuite(
    {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: owner, uid: '', generation: 1 },
      spec: { webhooks: [{ name: 'match', type: 'Validating', failurePolicy: 'Fail', rules, validations: conditions.map((c) => ({ expression: c.expression, message: c.name })) }] },
    },
    { operatorNamespace },
  );
  const webhook = probe.webhooks.get('match');
  if (!webhook) {
    const message = `matchConditions do not compile: ${probe.errors.map((e) => e.message).join('; ')}`;
    return async () => message;
  }
  return async (request) => {
    const decision = await webhook.admit(request);
    if (outcomeOf(decision) === 'error') return failurePolicy === 'Ignore' ? `matchConditions errored (failurePolicy Ignore): ${decision.message ?? ''}` : `matchConditions errored: ${decision.message ?? ''}`;
    return decision.allowed ? undefined : `matchCondition ${decision.message} is false`;
  };
}
