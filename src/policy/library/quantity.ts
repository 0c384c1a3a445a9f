/**
 * Kubernetes' quantity library (apiserver pkg/cel/library/quantity.go): quantity(),
 * isQuantity(), sign(), compareTo, isLessThan, isGreaterThan, add and sub (with a quantity or an
 * int), asInteger, isInteger, asApproximateFloat.
 *
 * Values are exact rationals, compared and added with the arithmetic of src/k8s/quantity.ts.
 * Parsing follows apimachinery's ParseQuantity to the letter, because some results depend on how
 * Go stores the parsed value, not just on the value: `quantity('1.0').isInteger()` is false and
 * `quantity('1k').isInteger()` true, so each value remembers Go's representation (an int64 with
 * a decimal scale, or an arbitrary-precision decimal rounded up to nano units). The handlers'
 * lenient parser (LimitRanger-style: trimmed text, JSON numbers) is not that parser.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { compare as compareExact, type Quantity as Exact } from '../../k8s/quantity.ts';

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

const ERR_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC = 'unable to parse numeric part of quantity';
const ERR_SUFFIX = "unable to parse quantity's suffix";

/** How Go holds a quantity: an int64 times 10^scale, or an inf.Dec (unscaled / 10^scale). */
type Representation = { int: bigint; scale: number } | { dec: bigint; scale: number };

/** A CEL `kubernetes.Quantity` value. */
export class QuantityValue {
  readonly celTypeName = 'kubernetes.Quantity';
  readonly repr: Representation;
  constructor(repr: Representation) {
    this.repr = repr;
  }
  exact(): Exact {
    const r = this.repr;
    if ('int' in r) return r.scale >= 0 ? { num: r.int * 10n ** BigInt(r.scale), den: 1n } : { num: r.int, den: 10n ** BigInt(-r.scale) };
    return r.scale >= 0 ? { num: r.dec, den: 10n ** BigInt(r.scale) } : { num: r.dec * 10n ** BigInt(-r.scale), den: 1n };
  }
  compareTo(other: QuantityValue): number {
    return compareExact(this.exact(), other.exact());
  }
  equals(other: unknown): boolean {
    return other instanceof QuantityValue && this.compareTo(other) === 0;
  }
  sign(): number {
    const v = 'int' in this.repr ? this.repr.int : this.repr.dec;
    return v < 0n ? -1 : v > 0n ? 1 : 0;
  }
}

const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
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
  if (pos < end) throw celError(ERR_FORMAT);
  return { positive, value, num, denom, suffix: str.slice(suffixStart) };
}

/** quantitySuffixer.interpret */
function interpret(suffix: string): { base: 10 | 2; exponent: number; format: 'DecimalSI' | 'BinarySI' | 'DecimalExponent' } {
  if (Object.hasOwn(DECIMAL, suffix)) return { base: 10, exponent: DECIMAL[suffix]!, format: 'DecimalSI' };
  if (Object.hasOwn(BINARY, suffix)) return { base: 2, exponent: BINARY[suffix]!, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const parsed = BigInt(suffix.slice(1));
    if (parsed >= INT64_MIN && parsed <= INT64_MAX) return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: 'DecimalExponent' };
  }
  throw celError(ERR_SUFFIX);
}

/** resource.ParseQuantity */
export function parseQuantity(str: string): QuantityValue {
  if (str === '') throw celError(ERR_FORMAT);
  if (str === '0') return new QuantityValue({ int: 0n, scale: 0 });
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
      if (result <= INT64_MAX) return new QuantityValue({ int: positive ? result : -result, scale });
    }
  }

  // the inf.Dec path: exact, rounded up (away from zero) to nano units
  const digits = value.replace(/^[+-]/, '');
  const dot = digits.indexOf('.');
  const unscaledText = dot < 0 ? digits : digits.slice(0, dot) + digits.slice(dot + 1);
  if (!/^[0-9]+$/.test(unscaledText)) throw celError(ERR_NUMERIC);
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
  return new QuantityValue({ dec: positive ? unscaled : -unscaled, scale: decScale });
}

function isQuantity(s: string): boolean {
  try {
    parseQuantity(s);
    return true;
  } catch {
    return false;
  }
}

/** int64Amount.AsInt64 */
function asInt64(q: QuantityValue): bigint | undefined {
  const r = q.repr;
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

function toDec(r: Representation): { dec: bigint; scale: number } {
  return 'int' in r ? { dec: r.int, scale: -r.scale } : r;
}

/** Quantity.Add / Quantity.Sub (sub adds the negation). */
function plus(q: QuantityValue, y: Representation): QuantityValue {
  const a = q.repr;
  if ('int' in a && 'int' in y) {
    const sum = addInt(a, y);
    if (sum) return new QuantityValue(sum);
  }
  const x = toDec(a);
  const z = toDec(y);
  const s = Math.max(x.scale, z.scale);
  return new QuantityValue({ dec: x.dec * 10n ** BigInt(s - x.scale) + z.dec * 10n ** BigInt(s - z.scale), scale: s });
}

function negate(r: Representation): Representation {
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
function approximate(q: QuantityValue): number {
  const r = q.repr;
  const [base, exponent] = 'int' in r ? [Number(r.int), r.scale] : [Number(r.dec), -r.scale];
  return exponent === 0 ? base : base * pow10(exponent);
}

export function registerQuantity(env: Environment): void {
  env.registerType('kubernetes.Quantity', QuantityValue);
  env.registerFunction('quantity(string): kubernetes.Quantity', parseQuantity);
  env.registerFunction('isQuantity(string): bool', isQuantity);
  env.registerFunction('sign(kubernetes.Quantity): int', (q: QuantityValue) => BigInt(q.sign()));
  env.registerFunction('kubernetes.Quantity.isGreaterThan(kubernetes.Quantity): bool', (a: QuantityValue, b: QuantityValue) => a.compareTo(b) === 1);
  env.registerFunction('kubernetes.Quantity.isLessThan(kubernetes.Quantity): bool', (a: QuantityValue, b: QuantityValue) => a.compareTo(b) === -1);
  env.registerFunction('kubernetes.Quantity.compareTo(kubernetes.Quantity): int', (a: QuantityValue, b: QuantityValue) => BigInt(a.compareTo(b)));
  env.registerFunction('kubernetes.Quantity.asApproximateFloat(): double', approximate);
  env.registerFunction('kubernetes.Quantity.asInteger(): int', (q: QuantityValue) => {
    const v = asInt64(q);
    if (v === undefined) throw celError('cannot convert value to integer');
    return v;
  });
  env.registerFunction('kubernetes.Quantity.isInteger(): bool', (q: QuantityValue) => asInt64(q) !== undefined);
  env.registerFunction('kubernetes.Quantity.add(kubernetes.Quantity): kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => plus(a, b.repr));
  env.registerFunction('kubernetes.Quantity.add(int): kubernetes.Quantity', (a: QuantityValue, n: bigint) => plus(a, { int: n, scale: 0 }));
  env.registerFunction('kubernetes.Quantity.sub(kubernetes.Quantity): kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => plus(a, negate(b.repr)));
  env.registerFunction('kubernetes.Quantity.sub(int): kubernetes.Quantity', (a: QuantityValue, n: bigint) => plus(a, { int: -n, scale: 0 }));
  env.registerOperator('kubernetes.Quantity == kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => a.equals(b));
}

