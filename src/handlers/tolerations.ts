/**
 * Pod tolerations as the in-tree plugins compare and merge them (k8s.io/kubernetes/pkg/apis/core
 * helper): two tolerations match when key, operator, value and effect are equal; adding one
 * replaces the matching one unless it is already the same; merging two lists drops a toleration
 * another one covers (pkg/util/tolerations). Pure; each handler decides which tolerations to add.
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

/** upstream's isSuperset: whether `ss` tolerates whatever `t` does. */
export function isSuperset(ss: Toleration, t: Toleration): boolean {
  if (sameToleration(ss, t)) return true;
  if ((t.key ?? '') !== (ss.key ?? '') && ((ss.key ?? '') !== '' || ss.operator !== 'Exists')) return false;
  if ((t.effect ?? '') !== (ss.effect ?? '') && (ss.effect ?? '') !== '') return false;
  if (ss.effect === 'NoExecute' && ss.tolerationSeconds != null && (t.tolerationSeconds == null || t.tolerationSeconds > ss.tolerationSeconds)) return false;
  switch (ss.operator ?? '') {
    case 'Equal':
    case '':
      return t.operator === 'Equal' && (t.value ?? '') === (ss.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** upstream's MergeTolerations: both lists in order, a toleration covered by another dropped. */
export function mergeTolerations(first: Toleration[], second: Toleration[]): Toleration[] {
  const all = [...first, ...second];
  const merged: Toleration[] = [];
  all.forEach((t, i) => {
    if (merged.some((m) => isSuperset(m, t))) return;
    if (all.slice(i + 1).some((t2) => !sameToleration(t, t2) && isSuperset(t2, t))) return;
    merged.push(t);
  });
  return merged;
}

export function verifyAgainstWhitelist(tolerations: Toleration[], whitelist: Toleration[]): boolean {
  if (whitelist.length === 0 || tolerations.length === 0) return true;
  return tolerations.every((t) => whitelist.some((w) => isSuperset(w, t)));
}
