/**
 * registry: the AdmissionPolicies (a team's rules in its own namespace), each compiled once per
 * generation through the suites' compile path (compile.ts' compileWebhook) and kept by namespace
 * in name order, the order they are evaluated in (registry/policy-webhook.ts). The control side fills
 * it from the policy watch; the request side only reads it. Nothing here does I/O, and nothing
 * here decides a request.
 */
import type { AdmissionPolicy, LabelSelector, NamedRuleWithOperations, ParamsRef, WebhookSpec, WebhookType } from '../api/types.ts';
import { confinedAuthorizer } from '../api/tenancy.ts';
import { validatePolicy, type FieldError, type PolicyLimits } from '../api/validate.ts';
import { compileWebhook, type CompileContext, type CompiledWebhook } from './compile.ts';

/** One policy as compiled: served when `errors` is empty. */
export interface CompiledPolicy {
  namespace: string;
  name: string;
  generation: number;
  /** creationTimestamp in ms (0 when unknown): the oldest policies keep their place within the limits (withheld.ts). */
  created: number;
  type: WebhookType;
  /** With their resourceNames: the operator matches them itself (policy-webhook.ts), not the API server. */
  rules: NamedRuleWithOperations[];
  excludeResourceRules: NamedRuleWithOperations[];
  objectSelector?: LabelSelector;
  /** Empty when the policy is served; otherwise why not, each naming its field. */
  errors: FieldError[];
  /** Present when it is served. */
  webhook?: CompiledWebhook;
  /** Its params, read in its own namespace (as compiled), when it has any. */
  params?: ParamsRef;
  /** The object it was compiled from (the cache's own, not a copy): a tenant worker compiles it again. */
  source: AdmissionPolicy;
}

/** What policies are compiled against: the suites' context (no metrics: their labels would be namespaces and names), the admin's limits, and where none is served. */
export interface PolicyContext extends Omit<CompileContext, 'observers'> {
  limits: PolicyLimits;
  /** The namespaces never sent to any webhook (the operator's, kube-system, kube-node-lease). */
  protectedNamespaces: readonly string[];
}

/** Policies expressions fail as ValidatingAdmissionPolicy's default (and as a suite's): the request is denied. */
export const POLICY_FAILURE_POLICY = 'Fail';

export function compilePolicy(policy: AdmissionPolicy, context: PolicyContext): CompiledPolicy {
  const { namespace, name } = policy.metadata;
  const base = {
    namespace,
    name,
    generation: policy.metadata.generation ?? 0,
    created: policy.metadata.creationTimestamp ? new Date(policy.metadata.creationTimestamp).getTime() || 0 : 0,
    type: policy.spec?.type,
    rules: policy.spec?.rules ?? [],
    excludeResourceRules: policy.spec?.excludeResourceRules ?? [],
    source: policy,
    ...(policy.spec?.objectSelector ? { objectSelector: policy.spec.objectSelector } : {}),
  };
  const errors = validatePolicy(policy, context.limits, context.protectedNamespaces, context.operatorNamespace);
  if (errors.length > 0) return { ...base, errors };
  // Params are read in the policy's own namespace only (validatePolicy refused any other).
  const spec: WebhookSpec = { ...policy.spec, name, ...(policy.spec.params ? { params: { ...policy.spec.params, namespace } } : {}) };
  // Every matchCondition is the operator's to evaluate: the registered webhook is shared by every policy.
  const confined = { ...context, ...(context.authorizer ? { authorizer: confinedAuthorizer(namespace, context.authorizer) } : {}) };
  const compiled = compileWebhook(namespace, spec, 'spec', POLICY_FAILURE_POLICY, confined, { costBudget: context.limits.costBudget, allMatchConditions: true, strictCost: true });
  if ('errors' in compiled) return { ...base, errors: compiled.errors };
  return { ...base, errors: [], webhook: compiled, ...(spec.params ? { params: spec.params } : {}) };
}

/** `namespace/name`: a policy's key. */
export const policyKey = (p: Pick<CompiledPolicy, 'namespace' | 'name'>) => `${p.namespace}/${p.name}`;

/** What a PolicyRegistry tells its subscribers. */
export type PolicyChange = { policy: AdmissionPolicy } | { removed: { namespace: string; name: string } } | { withheld: [string, FieldError][] };

export class PolicyRegistry {
  /** namespace -> its policies, sorted by name. */
  private readonly byNamespace = new Map<string, CompiledPolicy[]>();
  /** Valid policies not served, by `namespace/name`: beyond the limits no team may break for others (withheld.ts). */
  private withheld = new Map<string, FieldError>();
  private readonly listeners: ((change: PolicyChange) => void)[] = [];
  readonly context: PolicyContext;

  constructor(context: PolicyContext) {
    this.context = context;
  }

  /** Brings the entry for `policy` up to its generation; returns the compiled policy. */
  sync(policy: AdmissionPolicy): CompiledPolicy {
    const { namespace, name } = policy.metadata;
    const current = this.get(namespace, name);
    if (current && current.generation === (policy.metadata.generation ?? 0)) return current;
    const compiled = compilePolicy(policy, this.context);
    const list = (this.byNamespace.get(namespace) ?? []).filter((p) => p.name !== name);
    list.push(compiled);
    // Name order, as the API server orders configurations: byte order, not the locale's.
    list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.byNamespace.set(namespace, list);
    for (const listener of this.listeners) listener({ policy });
    return compiled;
  }

  /** Told every policy compiled anew, removed, and every change of what is withheld: the tenant workers keep copies (admission/threads/policy-workers.ts). */
  subscribe(listener: (change: PolicyChange) => void): void {
    this.listeners.push(listener);
  }

  /** What is wrong with `policy`, as sync would find it, without serving it or starting any watch (the validation webhook asks this). */
  validate(policy: AdmissionPolicy): FieldError[] {
    const { params: _params, ...context } = this.context;
    return compilePolicy(policy, context).errors;
  }

  remove(namespace: string, name: string): void {
    const list = (this.byNamespace.get(namespace) ?? []).filter((p) => p.name !== name);
    if (list.length > 0) this.byNamespace.set(namespace, list);
    else this.byNamespace.delete(namespace);
    for (const listener of this.listeners) listener({ removed: { namespace, name } });
  }

  get(namespace: string, name: string): CompiledPolicy | undefined {
    return this.byNamespace.get(namespace)?.find((p) => p.name === name);
  }

  /** The policies of `namespace` that are served, in name order. */
  served(namespace: string): CompiledPolicy[] {
    const list = (this.byNamespace.get(namespace) ?? []).filter((p) => p.webhook !== undefined);
    return this.withheld.size === 0 ? list : list.filter((p) => !this.withheld.has(policyKey(p)));
  }

  /** Sets the valid policies that are not served (the reconciler decides them, withheld.ts). */
  withhold(withheld: Map<string, FieldError>): void {
    const same = withheld.size === this.withheld.size && [...withheld.keys()].every((k) => this.withheld.has(k));
    this.withheld = withheld;
    if (!same) for (const listener of this.listeners) listener({ withheld: [...withheld] });
  }

  /** Every withheld policy's key and why. */
  withheldEntries(): [string, FieldError][] {
    return [...this.withheld];
  }

  /** Why a valid policy is not served, if it is not. */
  withheldBecause(policy: Pick<CompiledPolicy, 'namespace' | 'name'>): FieldError | undefined {
    return this.withheld.get(policyKey(policy));
  }

  /** Every policy, served or not. */
  all(): CompiledPolicy[] {
    return [...this.byNamespace.values()].flat();
  }
}
