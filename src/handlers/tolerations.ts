/**
 * Pod tolerations as the in-tree plugins compare and merge them (k8s.io/kubernetes/pkg/apis/core
 * helper): two tolerations match when key, operator, value and effect are equal; adding one
 * replaces the matching one unless it is already the same. Pure; each handler decides which
 * tolerations to add.
 */
import type { PodSpec } from './pods.ts';

export type Toleration = NonNullable<PodSpec['tolerations']>[number];

/** upstream's Toleration.MatchToleration (an unset field is the empty string). */
export function matchToleration(a: Toleration, b: Toleration): boolean {
  return (a.key ?? '') === (b.key ?? '') && (a.operator ?? '') === (b.operator ?? '') && (a.value ?? '') === (b.value ?? '') && (a.effect ?? '') === (b.effect ?? '');
}

/** Equal as the API server's semantic equality sees them: matching, and the same tolerationSeconds. */
export function sameToleration(a: Toleration, b: Toleration): boolean {
  return matchToleration(a, b) && (a.tolerationSeconds ?? null) === (b.tolerationSeconds ?? null);
}

/** upstream's AddOrUpdateTolerationInPod: the list with `toleration` added or put in the place of the one it matches; undefined when nothing changes. */
export function addOrUpdateToleration(tolerations: Toleration[], toleration: Toleration): Toleration[] | undefined {
  const out: Toleration[] = [];
  let updated = false;
  for (const existing of tolerations) {
    if (matchToleration(toleration, existing)) {
      if (sameToleration(toleration, existing)) return undefined;
      out.push(toleration);
      updated = true;
      continue;
    }
    out.push(existing);
  }
  if (!updated) out.push(toleration);
  return out;
}
