/**
 * Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact rationals, so that limits,
 * requests and ratios compare the way resource.Quantity.Cmp does, with no floating point: the
 * arithmetic the built-in handlers and the CEL quantity library (policy/library/quantity.ts)
 * share, and the handlers' lenient parser (LimitRanger-style: trimmed text, JSON numbers). Below
 * them, apimachinery's strict ParseQuantity and the arithmetic of Go's representation, for the
 * CEL library, whose results depend on how Go stores a value. Pure: no I/O, nothing of CEL.
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
    for (const [suffix, power] of Object.entries(DECIMAL)
      .filter(([, p]) => p > 0)
      .reverse()) {
      const unit = pow(10n, power * 3);
      if (abs.num % unit === 0n) return `${prefix}${abs.num / unit}${suffix}`;
    }
    return `${prefix}${abs.num}`;
  }
  for (const [suffix, power] of [
    ['m', 3],
    ['u', 6],
    ['n', 9],
  ] as const) {
    const scaled = abs.num * pow(10n, power);
    if (scaled % abs.den === 0n) return `${prefix}${scaled / abs.den}${suffix}`;
  }
  // Below a nano: round up to the next nano, as Quantity does.
  return `${prefix}${(abs.num * 1_000_000_000n + abs.den - 1n) / abs.den}n`;
}

// ---------------------------------------------------------------------------------------------
// apimachinery's resource.Quantity as Go holds it, for the CEL quantity library: some results
// depend on the representation, not just the value (`quantity('1.0').isInteger()` is false,
// `quantity('1k').isInteger()` true), so parsing follows ParseQuantity to the letter, and the
// arithmetic follows int64Amount and inf.Dec. Not the handlers' lenient parser above.

/** A quantity Go's ParseQuantity refuses, in its words. */
export class QuantityError extends Error {}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

const ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC = 'unable to parse numeric part of quantity';
const ERR_SUFFIX = "unable to parse quantity's suffix";

/** How Go holds a quantity: an int64 times 10^scale, or an inf.Dec (unscaled / 10^scale). */
export type GoQuantity = { int: bigint; scale: number } | { dec: bigint; scale: number };

/** The exact value of a Go quantity. */
export function goQuantityValue(r: GoQuantity): Quantity {
  if ('int' in r) return r.scale >= 0 ? { num: r.int * 10n ** BigInt(r.scale), den: 1n } : { num: r.int, den: 10n ** BigInt(-r.scale) };
  return r.scale >= 0 ? { num: r.dec, den: 10n ** BigInt(r.scale) } : { num: r.dec * 10n ** BigInt(-r.scale), den: 1n };
}

/** -1, 0 or 1 as the quantity's sign. */
export function goQuantitySign(r: GoQuantity): number {
  const v = 'int' in r ? r.int : r.dec;
  return v < 0n ? -1 : v > 0n ? 1 : 0;
}

const SUFFIX_POW10: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const SUFFIX_POW2: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const SUFFIX_CHARS = 'eEinumkKMGTP';

/** parseQuantityString: sign, digits (leading zeros dropped), fraction, suffix. */
function split(str: string): { positive: boolean; value: string; num: string; denom: string; suffix: string } {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && str[i]! >= '0' && str[i]! <= '9') i++;
  const num = str.slice(pos, i) || '0';
  if (i >= end) return { positive, value: str, num: str.slice(pos, end), denom: '', suffix: '' };
  pos = i;
  let denom = '';
  if (str[pos] === '.') {
    pos++;
    let j = pos;
    while (j < end && str[j]! >= '0' && str[j]! <= '9') j++;
    denom = str.slice(pos, j);
    if (j >= end) return { positive, value: str, num, denom, suffix: '' };
    pos = j;
  }
  const value = str.slice(0, pos);
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(str[pos]!)) pos++;
  if (pos < end && (str[pos] === '-' || str[pos] === '+')) pos++;
  while (pos < end && str[pos]! >= '0' && str[pos]! <= '9') pos++;
  if (pos < end) throw new QuantityError(ERR_FORMAT);
  return { positive, value, num, denom, suffix: str.slice(suffixStart) };
}

/** quantitySuffixer.interpret */
function interpret(suffix: string): { base: 10 | 2; exponent: number; format: 'DecimalSI' | 'BinarySI' | 'DecimalExponent' } {
  if (Object.hasOwn(SUFFIX_POW10, suffix)) return { base: 10, exponent: SUFFIX_POW10[suffix]!, format: 'DecimalSI' };
  if (Object.hasOwn(SUFFIX_POW2, suffix)) return { base: 2, exponent: SUFFIX_POW2[suffix]!, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const parsed = BigInt(suffix.slice(1));
    if (parsed >= INT64_MIN && parsed <= INT64_MAX) return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: 'DecimalExponent' };
  }
  throw new QuantityError(ERR_SUFFIX);
}

/** resource.ParseQuantity, as Go holds the result; throws QuantityError with apimachinery's words. */
export function parseGoQuantity(str: string): GoQuantity {
  if (str === '') throw new QuantityError(ERR_FORMAT);
  if (str === '0') return { int: 0n, scale: 0 };
  const { positive, value, num, denom, suffix } = split(str);
  const { base, exponent, format } = interpret(suffix);

  // the int64 fast path
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (format === 'BinarySI') {
    if (exponent >= 0 && denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc(Math.fround(Math.fround(exponent * 3) / 10)) - 1;
    } else precision = -1;
  } else {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  }
  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const result = BigInt(num + denom) * mantissa;
      if (result <= INT64_MAX) return { int: positive ? result : -result, scale };
    }
  }

  // the inf.Dec path: exact, rounded up (away from zero) to nano units
  const digits = value.replace(/^[+-]/, '');
  const dot = digits.indexOf('.');
  const unscaledText = dot < 0 ? digits : digits.slice(0, dot) + digits.slice(dot + 1);
  if (!/^[0-9]+$/.test(unscaledText)) throw new QuantityError(ERR_NUMERIC);
  let unscaled = BigInt(unscaledText);
  let decScale = dot < 0 ? 0 : digits.length - dot - 1;
  if (base === 10) decScale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  if (unscaled !== 0n) {
    if (decScale < 9) unscaled *= 10n ** BigInt(9 - decScale);
    else if (decScale > 9) {
      const div = 10n ** BigInt(decScale - 9);
      unscaled = (unscaled + div - 1n) / div;
    }
    decScale = 9;
  }
  if (format === 'BinarySI' && unscaled > INT64_MAX * 1_000_000_000n) {
    unscaled = INT64_MAX;
    decScale = 0;
  }
  return { dec: positive ? unscaled : -unscaled, scale: decScale };
}

/** int64Amount.AsInt64: undefined where Go's answers "not an int64". */
export function goQuantityAsInt64(r: GoQuantity): bigint | undefined {
  if (!('int' in r)) return undefined;
  if (r.scale === 0) return r.int;
  if (r.scale < 0) return undefined;
  const v = r.int * 10n ** BigInt(r.scale);
  return v >= INT64_MIN && v <= INT64_MAX ? v : undefined;
}

function inRange(v: bigint): boolean {
  return v >= INT64_MIN && v <= INT64_MAX;
}

/** int64Amount.Add, or undefined where Go overflows into inf.Dec. */
function addInt(a: { int: bigint; scale: number }, b: { int: bigint; scale: number }): { int: bigint; scale: number } | undefined {
  if (b.int === 0n) return a;
  if (a.int === 0n) return b;
  const lo = Math.min(a.scale, b.scale);
  const x = a.int * 10n ** BigInt(a.scale - lo);
  const y = b.int * 10n ** BigInt(b.scale - lo);
  if (!inRange(x) || !inRange(y) || !inRange(x + y)) return undefined;
  return { int: x + y, scale: lo };
}

function toDec(r: GoQuantity): { dec: bigint; scale: number } {
  return 'int' in r ? { dec: r.int, scale: -r.scale } : r;
}

/** Quantity.Add (Quantity.Sub adds the negation). */
export function goQuantityAdd(a: GoQuantity, y: GoQuantity): GoQuantity {
  if ('int' in a && 'int' in y) {
    const sum = addInt(a, y);
    if (sum) return sum;
  }
  const x = toDec(a);
  const z = toDec(y);
  const s = Math.max(x.scale, z.scale);
  return { dec: x.dec * 10n ** BigInt(s - x.scale) + z.dec * 10n ** BigInt(s - z.scale), scale: s };
}

export function goQuantityNegate(r: GoQuantity): GoQuantity {
  return 'int' in r ? { int: -r.int, scale: r.scale } : { dec: -r.dec, scale: r.scale };
}

// math.Pow10 as Go computes it (table products, not correctly rounded beyond 1e31)
const POW10 = Array.from({ length: 32 }, (_, i) => Number(`1e${i}`));
const POW10_POS32 = Array.from({ length: 10 }, (_, i) => Number(`1e${i * 32}`));
const POW10_NEG32 = Array.from({ length: 11 }, (_, i) => Number(`1e-${i * 32}`));

function pow10(n: number): number {
  if (n >= 0 && n <= 308) return POW10_POS32[Math.trunc(n / 32)]! * POW10[n % 32]!;
  if (n >= -323 && n <= 0) return POW10_NEG32[Math.trunc(-n / 32)]! / POW10[-n % 32]!;
  return n > 0 ? Infinity : 0;
}

/** Quantity.AsApproximateFloat64 */
export function goQuantityApproximate(r: GoQuantity): number {
  const [base, exponent] = 'int' in r ? [Number(r.int), r.scale] : [Number(r.dec), -r.scale];
  return exponent === 0 ? base : base * pow10(exponent);
}
