/** Status conditions as the Kubernetes API conventions have them: lastTransitionTime moves only when status does. */
import type { Condition } from '../api/types.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export function setConditions(existing: Condition[] | undefined, updates: ConditionInput[], generation: number, now: Date): Condition[] {
  const out = [...(existing ?? [])];
  for (const update of updates) {
    const index = out.findIndex((c) => c.type === update.type);
    const previous = index >= 0 ? out[index] : undefined;
    const next: Condition = {
      ...update,
      observedGeneration: generation,
      lastTransitionTime: previous && previous.status === update.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    if (index >= 0) out[index] = next;
    else out.push(next);
  }
  return out;
}
