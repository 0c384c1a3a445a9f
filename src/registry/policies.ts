/**
 * registry: the AdmissionPolicies (a team's rules in its own namespace), each compiled once per
 * generation through the suites' compile path (compile.ts' compileWebhook) and kept by namespace
 * in name order, the order they are evaluated in (registry/namespaced.ts). The control side fills
 * it from the policy watch; the request side only reads it. On the operator's replicas it also
 * follows the leader's verdict (`followLeader`): a generation is served only once the status the
 * leader wrote for that same generation says it is, so every replica withholds what the leader
 * withholds (the limits, an author who may no longer change what it changes) and none serves a
 * generation the leader has not judged. Nothing here does I/O, and nothing here decides a request.
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
  /** With their resourceNames: the operator matches them itself (namespaced.ts), not the API server. */
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
  /**
   * Served only as the leader's status says (`follow`): the operator's replicas, leader included.
   * Absent (the `portcullis` command, the tenant workers, which are told what is withheld), what
   * compiles is served.
   */
  followLeader?: boolean;
}

/** What the leader's status says of one generation: served, or not and why. */
export interface LeaderVerdict {
  generation: number;
  served: boolean;
  /** Ready's reason and message, when not served. */
  why?: string;
}

/**
 * The leader's verdict in `policy`'s status, if it has judged any generation of it. Served under
 * the two Ready states the leader gives a valid policy it serves (controller/namespaced.ts):
 * `True/Served`, and `False/WaitingForEndpoint` (served as soon as the configuration is
 * registered). Any other, including a reason a later version adds, withholds it: a verdict that
 * cannot be read fails closed.
 */
export function leaderVerdict(policy: Pick<AdmissionPolicy, 'status'>): LeaderVerdict | undefined {
  const generation = policy.status?.observedGeneration;
  if (generation === undefined) return undefined;
  const ready = policy.status?.conditions?.find((c) => c.type === 'Ready');
  // A Ready condition left from another generation says nothing of this one.
  if (!ready || (ready.observedGeneration !== undefined && ready.observedGeneration !== generation)) return { generation, served: false, why: 'no Ready condition for this generation' };
  if ((ready.status === 'True' && ready.reason === 'Served') || (ready.status === 'False' && ready.reason === 'WaitingForEndpoint')) return { generation, served: true };
  return { generation, served: false, why: `${ready.reason}: ${ready.message}` };
}

/** Policies expressions fail as ValidatingAdmissionPolicy's default (and as a suite's): the request is denied. */
const POLICY_FAILURE_POLICY = 'Fail';

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
  /** The leader's verdict on each policy, by `namespace/name`, from its status (`follow`). */
  private readonly verdicts = new Map<string, LeaderVerdict>();
  /** Compiled policies whose generation the leader has not judged served, by `namespace/name`, and why (`followLeader` only). */
  private readonly unjudged = new Map<string, FieldError>();
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
    const changed = this.judge(compiled);
    for (const listener of this.listeners) listener({ policy });
    if (changed) this.announceWithheld();
    return compiled;
  }

  /**
   * What the leader's status says of `policy` (every event of the policy watch, whether or not its
   * author gate let the generation in): followed only with `followLeader`. Cheap when the verdict
   * is unchanged (a status write of the audit's counts): nothing is told.
   */
  follow(policy: AdmissionPolicy, deleted = false): void {
    if (!this.context.followLeader) return;
    const key = policyKey(policy.metadata);
    const before = this.verdicts.get(key);
    const verdict = deleted ? undefined : leaderVerdict(policy);
    if (verdict) this.verdicts.set(key, verdict);
    else this.verdicts.delete(key);
    if (before?.generation === verdict?.generation && before?.served === verdict?.served && before?.why === verdict?.why) return;
    const compiled = this.get(policy.metadata.namespace, policy.metadata.name);
    if (compiled && this.judge(compiled)) this.announceWithheld();
  }

  /** Brings `unjudged` in line for `compiled`; whether the set of keys withheld changed. */
  private judge(compiled: CompiledPolicy): boolean {
    if (!this.context.followLeader) return false;
    const key = policyKey(compiled);
    const had = this.unjudged.has(key);
    const verdict = this.verdicts.get(key);
    if (!compiled.webhook || (verdict?.generation === compiled.generation && verdict.served)) {
      this.unjudged.delete(key);
    } else {
      const message =
        verdict?.generation === compiled.generation
          ? `withheld by the leader: ${verdict.why}`
          : `generation ${compiled.generation} is served once the leader has judged it (its status is of ${verdict ? `generation ${verdict.generation}` : 'none yet'})`;
      this.unjudged.set(key, { field: 'status', message });
    }
    return had !== this.unjudged.has(key);
  }

  /** Tells the subscribers (the tenant workers) every policy withheld, for whichever reason. */
  private announceWithheld(): void {
    const entries = this.withheldEntries();
    for (const listener of this.listeners) listener({ withheld: entries });
  }

  /** Told every policy compiled anew, removed, and every change of what is withheld: the tenant workers keep copies (admission/threads/tenants.ts). */
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
    // Its verdict stays (the author gate may serve it again): the watch forgets it when it is deleted (`follow`).
    const judged = this.unjudged.delete(policyKey({ namespace, name }));
    for (const listener of this.listeners) listener({ removed: { namespace, name } });
    if (judged) this.announceWithheld();
  }

  get(namespace: string, name: string): CompiledPolicy | undefined {
    return this.byNamespace.get(namespace)?.find((p) => p.name === name);
  }

  /** The policies of `namespace` that are served, in name order. */
  served(namespace: string): CompiledPolicy[] {
    const list = (this.byNamespace.get(namespace) ?? []).filter((p) => p.webhook !== undefined);
    if (this.withheld.size === 0 && this.unjudged.size === 0) return list;
    return list.filter((p) => {
      const key = policyKey(p);
      return !this.withheld.has(key) && !this.unjudged.has(key);
    });
  }

  /** Sets the valid policies that are not served (the reconciler decides them, withheld.ts). */
  withhold(withheld: Map<string, FieldError>): void {
    const same = withheld.size === this.withheld.size && [...withheld.keys()].every((k) => this.withheld.has(k));
    this.withheld = withheld;
    if (!same) this.announceWithheld();
  }

  /** Every withheld policy's key and why: the reconciler's, and those the leader has not judged served (the tenant workers withhold the same). */
  withheldEntries(): [string, FieldError][] {
    if (this.unjudged.size === 0) return [...this.withheld];
    return [...this.withheld, ...[...this.unjudged].filter(([key]) => !this.withheld.has(key))];
  }

  /** Why a valid policy is not served by the reconciler's own verdict (withhold), if it is not; what the leader's status says is not asked here, it is what the reconciler writes. */
  withheldBecause(policy: Pick<CompiledPolicy, 'namespace' | 'name'>): FieldError | undefined {
    return this.withheld.get(policyKey(policy));
  }

  /** Every policy, served or not. */
  all(): CompiledPolicy[] {
    return [...this.byNamespace.values()].flat();
  }
}
