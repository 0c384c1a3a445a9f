/**
 * Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact rationals, so that limits,
 * requests and ratios compare the way resource.Quantity.Cmp does, with no floating point: the
 * arithmetic the built-in handlers and the CEL quantity library (policy/library/quantity.ts)
 * share, and the handlers' lenient parser (LimitRanger-style: trimmed text, JSON numbers). The
 * CEL library keeps apimachinery's strict ParseQuantity beside its values, because its results
 * depend on how Go stores the parsed value. Pure: no I/O, nothing of CEL.
 */

export interface Quantity {
  /** value = num / den, den > 0 */
  num: bigint;
  den: bigint;
}

const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -3, u: -2, m: -1, '': 0, k: 1, M: 2, G: 3, T: 4, P: 5, E: 6 };
const FORMAT = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$/;

function pow(base: bigint, exponent: number): bigint {
  return base ** BigInt(exponent);
}

/** The quantity written as `text`, or undefined when it is not one. */
export function parseQuantity(text: unknown): Quantity | undefined {
  if (typeof text === 'number' && Number.isFinite(text)) text = String(text);
  if (typeof text !== 'string') return undefined;
  const match = FORMAT.exec(text.trim());
  if (!match) return undefined;
  const [, sign, whole = '', fraction = '', suffix = ''] = match;
  if (whole === '' && fraction === '') return undefined;
  let num = BigInt(`${whole || '0'}${fraction}`);
  let den = pow(10n, fraction.length);
  if (suffix in BINARY) num *= pow(1024n, BINARY[suffix]!);
  else {
    const exponent = suffix in DECIMAL ? DECIMAL[suffix]! * 3 : Number(suffix.slice(1));
    if (Math.abs(exponent) > 1000) return undefined;
    if (exponent >= 0) num *= pow(10n, exponent);
    else den *= pow(10n, -exponent);
  }
  return normalise({ num: sign === '-' ? -num : num, den });
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  while (b) [a, b] = [b, a % b];
  return a;
}

function normalise(q: Quantity): Quantity {
  const g = gcd(q.num, q.den) || 1n;
  return { num: q.num / g, den: q.den / g };
}

export const ZERO: Quantity = { num: 0n, den: 1n };

export function compare(a: Quantity, b: Quantity): number {
  const left = a.num * b.den;
  const right = b.num * a.den;
  return left < right ? -1 : left > right ? 1 : 0;
}

export function add(a: Quantity, b: Quantity): Quantity {
  return normalise({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
}

export function sign(q: Quantity): number {
  return q.num < 0n ? -1 : q.num > 0n ? 1 : 0;
}

/** limit > request × ratio, on magnitudes (as the LimitRanger compares them). */
export function exceedsRatio(limit: Quantity, request: Quantity, ratio: Quantity): boolean {
  const abs = (n: bigint) => (n < 0n ? -n : n);
  return abs(limit.num) * request.den * ratio.den > abs(request.num) * ratio.num * limit.den;
}

/** limit / request with six decimals, as the LimitRanger's message shows it. */
export function ratioString(limit: Quantity, request: Quantity): string {
  const abs = (n: bigint) => (n < 0n ? -n : n);
  const num = abs(limit.num) * request.den * 1_000_000n;
  const den = limit.den * abs(request.num);
  const scaled = (num * 2n + den) / (den * 2n); // rounded half up
  const text = scaled.toString().padStart(7, '0');
  return `${text.slice(0, -6)}.${text.slice(-6)}`;
}

/**
 * A canonical-looking string for a computed quantity (a Pod's sum): a binary suffix when the
 * value is a whole number of Ki/Mi/..., else a decimal suffix (m, k, M, ...), else decimals.
 */
export function formatQuantity(q: Quantity): string {
  const negative = q.num < 0n;
  const abs: Quantity = { num: negative ? -q.num : q.num, den: q.den };
  const prefix = negative ? '-' : '';
  if (abs.num === 0n) return '0';
  if (abs.den === 1n) {
    for (const [suffix, power] of Object.entries(BINARY).reverse()) {
      const unit = pow(1024n, power);
      if (abs.num % unit === 0n) return `${prefix}${abs.num / unit}${suffix}`;
    }
    for (const [suffix, power] of Object.entries(DECIMAL).filter(([, p]) => p > 0).reverse()) {
      const unit = pow(10n, power * 3);
      if (abs.num % unit === 0n) return `${prefix}${abs.num / unit}${suffix}`;
    }
    return `${prefix}${abs.num}`;
  }
  for (const [suffix, power] of [['m', 3], ['u', 6], ['n', 9]] as const) {
    const scaled = abs.num * pow(10n, power);
    if (scaled % abs.den === 0n) return `${prefix}${scaled / abs.den}${suffix}`;
  }
  // Below a nano: round up to the next nano, as Quantity does.
  return `${prefix}${(abs.num * 1_000_000_000n + abs.den - 1n) / abs.den}n`;
}
