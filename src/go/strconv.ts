/**
 * Go's strconv and fmt renderings that cel-go's output depends on: Quote (%q), FormatFloat 'g'
 * with the shortest digits (string(double), %v), and the exact decimal renderings %f and %e,
 * which round the exact binary value half to even. Pure functions of their input.
 */
import { runes } from './utf8.ts';

/** Go's strconv.Quote (%q): escapes for `"`, `\` and control characters, \u/\U for non-printables. */
export function goQuote(s: string): string {
  let out = '"';
  for (const c of runes(s)) {
    const cp = c.codePointAt(0)!;
    if (c === '"' || c === '\\') out += `\\${c}`;
    else if (cp === 7) out += '\\a';
    else if (cp === 8) out += '\\b';
    else if (cp === 12) out += '\\f';
    else if (cp === 10) out += '\\n';
    else if (cp === 13) out += '\\r';
    else if (cp === 9) out += '\\t';
    else if (cp === 11) out += '\\v';
    else if (cp < 0x80 ? cp < 0x20 || cp === 0x7f : !PRINTABLE.test(c)) {
      if (cp < 0x80) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else out += cp > 0xffff ? `\\U${cp.toString(16).padStart(8, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += c;
  }
  return `${out}"`;
}
/** Go's unicode.IsPrint outside ASCII: letters, marks, numbers, punctuation and symbols. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

// Exact decimal rendering of doubles (Go's strconv rounds the exact binary value half to even;
// JS's toFixed/toExponential differ on ties and refuse large magnitudes).

/** |d| as an exact fraction num / den (den a power of two). */
function exactFraction(d: number): { num: bigint; den: bigint } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(d));
  const bits = view.getBigUint64(0);
  const exponent = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & 0xfffffffffffffn;
  let e: number;
  if (exponent === 0) e = -1074;
  else {
    mantissa |= 1n << 52n;
    e = exponent - 1075;
  }
  return e >= 0 ? { num: mantissa << BigInt(e), den: 1n } : { num: mantissa, den: 1n << BigInt(-e) };
}

/** num / den rounded to an integer, ties to even. */
function roundHalfEven(num: bigint, den: bigint): bigint {
  const q = num / den;
  const r2 = (num % den) * 2n;
  if (r2 > den || (r2 === den && q % 2n === 1n)) return q + 1n;
  return q;
}

/** Go's %.Nf; golang.org/x/text (the %f clause) drops the sign of -0, fmt (list members) keeps it. */
export function fixed(d: number, precision: number, negativeZero: boolean): string {
  const { num, den } = exactFraction(d);
  const digits = roundHalfEven(num * 10n ** BigInt(precision), den)
    .toString()
    .padStart(precision + 1, '0');
  const sign = d < 0 || (negativeZero && Object.is(d, -0)) ? '-' : '';
  return precision === 0 ? `${sign}${digits}` : `${sign}${digits.slice(0, -precision)}.${digits.slice(-precision)}`;
}

/** Go's %.Ne as mantissa digits and decimal exponent (no sign for -0, as golang.org/x/text prints it). */
export function exponential(d: number, precision: number): { sign: string; mantissa: string; exponent: number } {
  const sign = d < 0 ? '-' : '';
  if (d === 0) return { sign, mantissa: precision ? `0.${'0'.repeat(precision)}` : '0', exponent: 0 };
  const { num, den } = exactFraction(d);
  let exponent = Math.floor(Math.log10(Math.abs(d)));
  const pow = (n: number) => 10n ** BigInt(n);
  // make 10^exponent <= |d| < 10^(exponent+1) exactly
  const atLeast = (e: number) => (e >= 0 ? num >= pow(e) * den : num * pow(-e) >= den);
  while (!atLeast(exponent)) exponent--;
  while (atLeast(exponent + 1)) exponent++;
  const scale = precision - exponent;
  let digits = scale >= 0 ? roundHalfEven(num * pow(scale), den) : roundHalfEven(num, den * pow(-scale));
  if (digits >= pow(precision + 1)) {
    exponent++;
    digits /= 10n;
  }
  const text = digits.toString();
  return { sign, mantissa: precision ? `${text[0]}.${text.slice(1)}` : text, exponent };
}

/** Go's strconv.FormatFloat(f, 'g', -1, 64), which cel-go uses for string(double) and %v. */
export function formatDouble(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (d === Infinity) return '+Inf';
  if (d === -Infinity) return '-Inf';
  if (d === 0) return Object.is(d, -0) ? '-0' : '0';
  const [mantissa, expText] = d.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  // shortest digits; exponent form outside [1e-4, 1e6), as Go decides for precision -1
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(d);
}
