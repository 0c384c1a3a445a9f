/**
 * JSON <-> CEL values. Kubernetes decodes whole JSON numbers as int64, so `replicas / 2` is
 * integer division and `type(x) == int` holds; here that means BigInt on the CEL side and plain
 * numbers on the JSON side.
 */

export function toCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(toCel);
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = toCel((value as Record<string, unknown>)[key]);
  return out;
}

export function fromCel(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(fromCel);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), fromCel(v)]));
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = fromCel((value as Record<string, unknown>)[key]);
  return out;
}
