/**
 * Go-style durations ("2160h", "90m", "1h30m", "45s"), as Kubernetes users write them in specs
 * and flags (the suite's certificate lifetimes, the operator's configuration). Pure.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Milliseconds, or undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit!]!;
  return total;
}
