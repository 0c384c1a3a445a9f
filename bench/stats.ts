/** Figures of the benches that time requests one by one: one way to read a quantile. */

/** The `q` quantile of `values` by nearest rank (NaN for none): a time some request really took. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * q))]!;
}
