/**
 * The one retry delay of the operator: capped exponential backoff with jitter (three quarters to
 * five quarters of the step), so many failing watches or reconciles never retry in step. Used by
 * the watches (src/apiserver/watch.ts) and the work queue (src/controller/queue.ts); knows nothing of either.
 */

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** The delay before retry number `failures` (1 after the first failure). */
export function backoffMs(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  return step * (0.75 + random() / 2);
}
