/**
 * registry: which valid AdmissionPolicies are withheld so no team can break the others': at most
 * `perNamespace` served in a namespace, and the shared `portcullis--namespaced` configurations under
 * `configurationBytes` (etcd stores an object whole, 1.5 MiB by default: one too large would stop every
 * team's new policy). The oldest are kept, so a new policy never pushes out an enforced one; a withheld
 * one is `Ready=False`, `ExceedsLimits`, served again when room is made. Pure: the caller measures.
 */
import type { FieldError } from '../api/validate.ts';
import type { WebhookType } from '../api/types.ts';
import { policyKey, type CompiledPolicy } from './policies.ts';

export interface ServingLimits {
  perNamespace: number;
  configurationBytes: number;
}

/** Oldest first (then by namespace and name), the order in which policies keep their place. */
function byAge(a: CompiledPolicy, b: CompiledPolicy): number {
  if (a.created !== b.created) return a.created < b.created ? -1 : 1;
  const ka = policyKey(a);
  const kb = policyKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * The served-to-be policies (valid ones) that must be withheld, each with why. `size(type, kept)`
 * is the serialized size of the configuration of that type for `kept`; it grows with them, so the
 * largest prefix (by age) that fits is found by bisection.
 */
export function withheldPolicies(valid: CompiledPolicy[], limits: ServingLimits, size: (type: WebhookType, kept: CompiledPolicy[]) => number): Map<string, FieldError> {
  const withheld = new Map<string, FieldError>();
  const counts = new Map<string, number>();
  const kept: CompiledPolicy[] = [];
  for (const policy of [...valid].sort(byAge)) {
    const count = (counts.get(policy.namespace) ?? 0) + 1;
    counts.set(policy.namespace, count);
    if (count > limits.perNamespace) {
      withheld.set(policyKey(policy), {
        field: 'metadata.namespace',
        message: `namespace ${policy.namespace} already has ${limits.perNamespace} policies served, the most the cluster's administrator allows (the operator's --namespaced-policies-per-namespace); it is served when one of the older ones is deleted`,
        limit: true,
      });
    } else kept.push(policy);
  }
  for (const type of ['Mutating', 'Validating'] as const) {
    const ofType = kept.filter((p) => p.type === type);
    if (ofType.length === 0 || size(type, ofType) <= limits.configurationBytes) continue;
    // The largest n such that the n oldest fit (size only grows with more policies).
    let low = 0;
    let high = ofType.length - 1;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (size(type, ofType.slice(0, middle)) <= limits.configurationBytes) low = middle;
      else high = middle - 1;
    }
    for (const policy of ofType.slice(low)) {
      withheld.set(policyKey(policy), {
        field: 'spec.rules',
        message: `the shared ${type} configuration would pass ${limits.configurationBytes} bytes with the namespaces and rules of the policies up to this one (oldest first); older policies keep their place, and it is served when room is made`,
        limit: true,
      });
    }
  }
  return withheld;
}
