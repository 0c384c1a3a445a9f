/**
 * registry: the decision of the one webhook serving a type's AdmissionPolicies: the namespace's
 * matching policies in name order (Mutating: each on the one before's patch, one patch in all;
 * Validating: the first denial answers, all warnings and annotations kept). Never another namespace's
 * request nor a cluster-scoped one, checked here too. Each policy's cost budget, within the
 * namespace's budget and time for the request (an Allowance, cost/meter.ts); the policy that runs out
 * denies, by name. Pure: reads the policy registry, writes nothing.
 */
import jsonpatch from 'fast-json-patch';
import { allowed, denied, followedFailurePolicy, markFailed, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation, Reason, WebhookType } from '../api/types.ts';
import { NAMESPACED } from '../api/names.ts';
import { neverMutated } from '../api/tenancy.ts';
import { notCalledBecause, ruleMatches } from './match.ts';
import { NO_OBSERVER, type CompiledWebhook } from './compile.ts';
import type { ClusterView } from '../handlers/handler.ts';
import { judgesPodWrite, mutationViolation } from '../handlers/pod-security.ts';
import type { CompiledPolicy, PolicyRegistry } from './policies.ts';
import { Allowance } from '../policy/engine/rules.ts';
import type { PolicyLimits } from '../api/validate.ts';

/** A namespace's cost budget per request where the admin set none: so many policies' worth. */
export const NAMESPACE_BUDGET_POLICIES = 5;
/**
 * How long a namespace's policies may evaluate one request where the admin set no limit (the
 * tenant workers stop a worker that runs far past it). Why: docs/adr/0015-policy-deadline-and-clock-reads.md
 */
export const DEFAULT_POLICY_DEADLINE_MS = 500;

/** What one request's policies of one namespace may spend: the admin's limits, the namespace's share. */
function namespaceAllowance(limits: PolicyLimits): Allowance {
  return new Allowance(limits.namespaceCostBudget ?? NAMESPACE_BUDGET_POLICIES * limits.costBudget, limits.deadlineMs ?? DEFAULT_POLICY_DEADLINE_MS);
}

/** What the admission chain serves at NAMESPACED.paths[type]. */
export type NamespacedWebhook = Pick<CompiledWebhook, 'suite' | 'name' | 'failurePolicy' | 'admit' | 'observer'>;

/**
 * `context.view`, when present, gives the Namespaces' labels a Pod mutated by a team is judged with
 * (podSecurityOfMutation); `context.limits`, what each request's policies may spend.
 */
export function namespacedWebhook(type: WebhookType, policies: Pick<PolicyRegistry, 'served' | 'context'>): NamespacedWebhook {
  return {
    suite: '',
    name: NAMESPACED.webhook,
    failurePolicy: 'Fail',
    admit: (request) => {
      const matched = policiesFor(request, type, policies);
      if (matched.length === 0) return allowed();
      const { limits } = policies.context;
      const allowance = namespaceAllowance(limits);
      // each policy's own budget, drawn from the namespace's
      const admit = (policy: CompiledPolicy, req: AdmissionRequest) => policy.webhook!.admit(req, allowance.share(limits.costBudget));
      return type === 'Mutating' ? mutate(request, matched, admit, policies.context.view) : validate(request, matched, admit);
    },
    observer: NO_OBSERVER,
  };
}

/**
 * The policies that apply to `request`: none for a cluster-scoped object (a Namespace's request
 * carries its own name as namespace), else its namespace's of this type whose rules match.
 */
export function policiesFor(request: AdmissionRequest, type: WebhookType, policies: Pick<PolicyRegistry, 'served'>): CompiledPolicy[] {
  const namespace = request.namespace;
  if (!namespace || (request.resource.group === '' && request.resource.resource === 'namespaces')) return [];
  // Whatever a policy's rules say (they are refused on apply, tenancy.ts), no team changes what grants rights or routes traffic.
  if (type === 'Mutating' && neverMutated(request)) return [];
  return policies
    .served(namespace)
    .filter((p) => p.type === type && notCalledBecause({ name: p.name, rules: p.rules, objectSelector: p.objectSelector }, request, undefined) === undefined && !p.excludeResourceRules.some((rule) => ruleMatches(rule, request)));
}

/** A denial says which policy denied (they share one registered webhook name). */
function attributed(policy: CompiledPolicy, decision: Decision): Decision {
  const out = denied(`AdmissionPolicy ${policy.name}: ${decision.message ?? 'denied'}`, reasonOf(decision));
  if (decision.code !== undefined) out.code = decision.code;
  return followedFailurePolicy(decision) ? markFailed(out) : out;
}

function reasonOf(decision: Decision): Reason {
  return (decision.reason as Reason | undefined) ?? 'Forbidden';
}

/** Runs `step` over `items` in order, synchronously until one answers with a Promise; stops when `step` says so. */
function inOrder<T>(items: T[], step: (item: T, decision: Decision) => boolean, admit: (item: T) => Decision | Promise<Decision>, done: () => Decision): Decision | Promise<Decision> {
  const from = (start: number): Decision | Promise<Decision> => {
    for (let i = start; i < items.length; i++) {
      const decision = admit(items[i]!);
      if (decision instanceof Promise) return decision.then((d) => (step(items[i]!, d) ? from(i + 1) : done()));
      if (!step(items[i]!, decision)) return done();
    }
    return done();
  };
  return from(0);
}

type PolicyAdmit = (policy: CompiledPolicy, request: AdmissionRequest) => Decision | Promise<Decision>;

function validate(request: AdmissionRequest, matched: CompiledPolicy[], admit: PolicyAdmit): Decision | Promise<Decision> {
  const warnings: string[] = [];
  const annotations: Record<string, string> = {};
  const audited: unknown[] = [];
  let denial: Decision | undefined;
  return inOrder(
    matched,
    (policy, decision) => {
      warnings.push(...(decision.warnings ?? []));
      for (const [key, value] of Object.entries(decision.auditAnnotations ?? {})) {
        // VAP's validation_failure is a JSON list: the policies' lists are joined.
        if (key === 'validation_failure') audited.push(...(JSON.parse(value) as unknown[]));
        else annotations[`${policy.name}.${key}`] ??= value;
      }
      if (!decision.allowed) denial = attributed(policy, decision);
      return decision.allowed;
    },
    (policy) => admit(policy, request),
    () => {
      const decision = denial ?? allowed();
      if (warnings.length) decision.warnings = warnings;
      if (audited.length) annotations.validation_failure = JSON.stringify(audited);
      if (Object.keys(annotations).length) decision.auditAnnotations = annotations;
      return decision;
    },
  );
}

function mutate(request: AdmissionRequest, matched: CompiledPolicy[], admit: PolicyAdmit, view: ClusterView | undefined): Decision | Promise<Decision> {
  const original = request.object;
  if (!original) return allowed();
  let working: Record<string, unknown> = original;
  const warnings: string[] = [];
  let denial: Decision | undefined;
  let last: CompiledPolicy | undefined;
  return inOrder(
    matched,
    (policy, decision) => {
      warnings.push(...(decision.warnings ?? []));
      if (!decision.allowed) {
        denial = attributed(policy, decision);
        return false;
      }
      // Each policy sees the object as the ones before it left it (a copy: the request's object stays as it came).
      if (decision.patch?.length) {
        working = jsonpatch.applyPatch(working, decision.patch as jsonpatch.Operation[], false, false).newDocument;
        last = policy;
      }
      return true;
    },
    (policy) => admit(policy, working === original ? request : { ...request, object: working }),
    () => {
      const violation = denial || working === original ? undefined : podSecurityOfMutation(request, original, working, view);
      if (violation) denial = attributed(last!, denied(violation, 'Forbidden'));
      const decision = denial ?? (working === original ? allowed() : patched(jsonpatch.compare(original, working) as JsonPatchOperation[]));
      if (warnings.length) decision.warnings = warnings;
      return decision;
    },
  );
}

/**
 * A Pod the teams' mutations changed, judged as the author's own Pod would be (the handler's
 * mutationViolation), whoever wrote it: a writer Pod Security exempts by username must not carry a
 * team's change past it. Without the Namespace in the cache it is refused (fail closed, as the
 * configuration's failurePolicy); without a view (unit tests of other concerns) it is not judged.
 */
function podSecurityOfMutation(request: AdmissionRequest, original: Record<string, unknown>, mutated: Record<string, unknown>, view: ClusterView | undefined): string | undefined {
  if (!view || !judgesPodWrite(request)) return undefined;
  const namespace = view.namespace(request.namespace ?? '');
  if (!namespace) return `namespace ${request.namespace ?? ''} is not in the operator's cache yet, so a Pod this policy mutated cannot be judged under Pod Security; retry`;
  return mutationViolation((namespace.metadata?.labels ?? {}) as Record<string, string>, original, mutated);
}
