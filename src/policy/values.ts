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

/**
 * toCel, remembering each object it converts in `converted`: mutations are evaluated on objects
 * that share every untouched part with the one before (copy-on-write), so only the changed
 * path is converted again.
 */
export function toCelShared(value: unknown, converted: WeakMap<object, unknown>): unknown {
  if (value === null || typeof value !== 'object') return toCel(value);
  let out = converted.get(value);
  if (out !== undefined) return out;
  if (Array.isArray(value)) out = value.map((v) => toCelShared(v, converted));
  else {
    const fields: Record<string, unknown> = {};
    for (const key in value) fields[key] = toCelShared((value as Record<string, unknown>)[key], converted);
    out = fields;
  }
  converted.set(value, out);
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
