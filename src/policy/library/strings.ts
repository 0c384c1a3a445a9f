/**
 * cel-go's strings extension at version 2, as Kubernetes enables it (ext.Strings(StringsVersion(2))):
 * charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join,
 * format and strings.quote. Indices count code points (Go runes), not UTF-16 units; case mapping
 * is ASCII-only; trim removes Go's Unicode white space. Later additions (`reverse`, version 3)
 * are deliberately absent, so they fail to compile as in the API server.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { hasSurrogates, runes } from '../../go/utf8.ts';
import { exponential, fixed, formatDouble, goQuote } from '../../go/strconv.ts';
import { celError, compareStrings, Duration, typeName, UnsignedInt } from '../celjs/values.ts';
import { replaceBuiltin } from '../celjs/overloads.ts';
import { subMilliNanos } from './timestamps.ts';

function outOfRange(i: bigint | number): Error {
  return celError(`index out of range: ${i}`);
}

function charAt(s: string, index: bigint): string {
  const r = runes(s);
  if (index < 0n || index > BigInt(r.length)) throw outOfRange(index);
  return index === BigInt(r.length) ? '' : r[Number(index)]!;
}

function runeIndexOf(r: string[], sub: string[], from: number): number {
  outer: for (let i = from; i <= r.length - sub.length; i++) {
    for (let j = 0; j < sub.length; j++) if (r[i + j] !== sub[j]) continue outer;
    return i;
  }
  return -1;
}

function runeLastIndexOf(r: string[], sub: string[], from: number): number {
  outer: for (let i = Math.min(from, r.length - sub.length); i >= 0; i--) {
    for (let j = 0; j < sub.length; j++) if (r[i + j] !== sub[j]) continue outer;
    return i;
  }
  return -1;
}

function indexOf(s: string, sub: string, offset: bigint): bigint {
  if (offset < 0n) throw outOfRange(offset);
  const wide = hasSurrogates(s) || hasSurrogates(sub);
  const length = wide ? runes(s).length : s.length;
  if (sub === '') return offset > BigInt(length) ? BigInt(length) : offset;
  if (offset >= BigInt(length)) return -1n;
  if (!wide) return BigInt(s.indexOf(sub, Number(offset)));
  return BigInt(runeIndexOf(runes(s), runes(sub), Number(offset)));
}

function lastIndexOf(s: string, sub: string, offset?: bigint): bigint {
  const wide = hasSurrogates(s) || hasSurrogates(sub);
  const length = wide ? runes(s).length : s.length;
  if (offset === undefined) {
    if (sub === '') return BigInt(length);
    offset = BigInt(length - 1);
    if (offset < 0n) return -1n;
  }
  if (offset < 0n) throw outOfRange(offset);
  if (sub === '') return offset > BigInt(length) ? BigInt(length) : offset;
  if (offset >= BigInt(length)) return -1n;
  if (!wide) {
    const from = Math.min(Number(offset), length - sub.length);
    return from < 0 ? -1n : BigInt(s.lastIndexOf(sub, from));
  }
  return BigInt(runeLastIndexOf(runes(s), runes(sub), Number(offset)));
}

function substring(s: string, start: bigint, end?: bigint): string {
  const wide = hasSurrogates(s);
  const r = wide ? runes(s) : undefined;
  const length = BigInt(r ? r.length : s.length);
  if (end !== undefined && start > end) throw celError(`invalid substring range. start: ${start}, end: ${end}`);
  if (start < 0n || start > length) throw outOfRange(start);
  if (end === undefined) end = length;
  else if (end < 0n || end > length) throw outOfRange(end);
  return r ? r.slice(Number(start), Number(end)).join('') : s.slice(Number(start), Number(end));
}

/** Go's unicode.IsSpace: ASCII white space, U+0085, U+00A0 and the Unicode Z categories. */
const GO_SPACE = '\\t\\n\\v\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
const TRIM = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, 'g');

/** Go's strings.Replace: n < 0 replaces all; an empty `old` matches before every rune and at the end. */
function replace(s: string, old: string, replacement: string, n: bigint = -1n): string {
  if (n === 0n || old === replacement) return s;
  if (old === '') {
    const r = Array.from(s);
    const limit = n < 0n ? r.length + 1 : Number(n < BigInt(r.length + 1) ? n : BigInt(r.length + 1));
    let out = '';
    for (let i = 0; i <= r.length; i++) {
      if (i < limit) out += replacement;
      if (i < r.length) out += r[i];
    }
    return out;
  }
  if (n < 0n) return s.split(old).join(replacement);
  const parts = s.split(old);
  if (BigInt(parts.length - 1) <= n) return parts.join(replacement);
  const k = Number(n);
  return parts.slice(0, k + 1).join(replacement) + old + parts.slice(k + 1).join(old);
}

/** Go's strings.SplitN (n < 0: all; 0: none; an empty separator splits into runes). */
function split(s: string, sep: string, n: bigint = -1n): string[] {
  if (n === 0n) return [];
  if (sep === '') {
    const r = Array.from(s);
    if (n < 0n || n >= BigInt(r.length)) return r;
    const k = Number(n);
    return [...r.slice(0, k - 1), r.slice(k - 1).join('')];
  }
  const parts = s.split(sep);
  if (n < 0n || BigInt(parts.length) <= n) return parts;
  const k = Number(n);
  return [...parts.slice(0, k - 1), parts.slice(k - 1).join(sep)];
}

function join(list: unknown[], sep: string): string {
  for (const v of list) if (typeof v !== 'string') throw celError(`join: invalid input: ${formatPlain(v)}`);
  return (list as string[]).join(sep);
}

/** cel-go's strings.quote: double quotes, CEL escapes for control characters, `"` and `\`. */
export function quote(s: string): string {
  let out = '"';
  for (const c of runes(s)) {
    switch (c) {
      case '\x07':
        out += '\\a';
        break;
      case '\b':
        out += '\\b';
        break;
      case '\f':
        out += '\\f';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\r':
        out += '\\r';
        break;
      case '\t':
        out += '\\t';
        break;
      case '\v':
        out += '\\v';
        break;
      case '\\':
        out += '\\\\';
        break;
      case '"':
        out += '\\"';
        break;
      default:
        out += c;
    }
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------------
// string.format, as version 1-3 of the extension does it with the en_US locale.

/** A timestamp as cel-go prints it (Go's RFC 3339 with nanoseconds, trailing zeros cut): also `string(t)`. */
export function formatTimestamp(d: Date): string {
  const sub = subMilliNanos(d);
  // RFC 3339 with up to nine fractional digits, trailing zeros dropped, as Go's RFC3339Nano
  const iso = sub ? d.toISOString().replace(/Z$/, `${String(sub).padStart(6, '0')}Z`) : d.toISOString();
  return iso.replace(/\.0+Z$/, 'Z').replace(/(\.\d*?)0+Z$/, '$1Z');
}

/** A duration as cel-go prints it (seconds, `s`): also `string(d)`. */
export function formatDuration(d: Duration): string {
  // cel-go prints durations as seconds with up to nine fractional digits
  const negative = d.seconds < 0n || d.nanos < 0;
  const seconds = d.seconds < 0n ? -d.seconds : d.seconds;
  const nanos = Math.abs(d.nanos);
  const frac = nanos ? `.${String(nanos).padStart(9, '0').replace(/0+$/, '')}` : '';
  return `${negative ? '-' : ''}${seconds}${frac}s`;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function formatBytes(b: Uint8Array): string {
  try {
    return UTF8.decode(b);
  } catch {
    throw new FormatError('could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string');
  }
}

class FormatError extends Error {}

const STRING_CLAUSE = 'string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given';

function isType(v: unknown): v is { name: string } {
  return v !== null && typeof v === 'object' && v.constructor?.name === 'Type';
}

/** %s of a value outside a list or map. */
function formatPlain(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return formatDouble(v);
  if (v === null) return 'null';
  if (v instanceof UnsignedInt) return String(v.value);
  if (v instanceof Uint8Array) return formatBytes(v);
  if (v instanceof Date) return formatTimestamp(v);
  if (v instanceof Duration) return formatDuration(v);
  if (Array.isArray(v) || v instanceof Set) return formatList([...v]);
  if (isType(v)) return v.name === 'null' ? 'null_type' : v.name;
  if (typeName(v) === 'map') return formatMap(v as object);
  throw new FormatError(`${STRING_CLAUSE} ${typeName(v)}`);
}

/** A value as it appears inside a formatted list or map: a CEL literal. */
function formatMember(v: unknown): string {
  if (typeof v === 'string') return goQuote(v);
  if (v instanceof Uint8Array) return `b${goQuote(formatBytes(v))}`;
  if (typeof v === 'number') return Number.isFinite(v) ? fixed(v, 6, true) : goQuote(formatDouble(v));
  if (v instanceof Date) return `timestamp(${goQuote(formatTimestamp(v))})`;
  if (v instanceof Duration) return `duration(${goQuote(formatDuration(v))})`;
  return formatPlain(v);
}

function formatList(list: unknown[]): string {
  return `[${list.map(formatMember).join(', ')}]`;
}

function formatMap(m: object): string {
  const entries = m instanceof Map ? [...m.entries()] : Object.entries(m);
  const pairs = entries.map(([k, v]) => {
    let key: string;
    if (typeof k === 'string') key = goQuote(k);
    else if (typeof k === 'bigint' || typeof k === 'boolean') key = String(k);
    else if (k instanceof UnsignedInt) key = String(k.value);
    else throw new FormatError(`no formatting function for map key of type ${typeName(k)}`);
    return [key, formatMember(v)] as const;
  });
  pairs.sort((a, b) => compareStrings(a[0], b[0]));
  return `{${pairs.map(([k, v]) => `${k}:${v}`).join(', ')}}`;
}

function asInteger(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (v instanceof UnsignedInt) return v.value;
  return undefined;
}

/** en_US grouping of the integral digits: 1234567.5 -> 1,234,567.5 */
function group(text: string): string {
  const [whole, frac] = text.split('.') as [string, string | undefined];
  const sign = whole.startsWith('-') ? '-' : '';
  const digits = whole.replace('-', '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${digits}${frac !== undefined ? `.${frac}` : ''}`;
}

function floatArg(v: unknown, clause: string): number {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  throw new FormatError(`${clause} clause can only be used on doubles, was given ${typeName(v)}`);
}

function nonFinite(d: number): string | undefined {
  if (Number.isNaN(d)) return 'NaN';
  if (d === Infinity) return '∞';
  if (d === -Infinity) return '-∞';
  return undefined;
}

const SUPERSCRIPT: Record<string, string> = { '0': '⁰', '1': '¹', '2': '²', '3': '³', '4': '⁴', '5': '⁵', '6': '⁶', '7': '⁷', '8': '⁸', '9': '⁹', '-': '⁻' };

/**
 * %e as cel-go asks golang.org/x/text to print it for en_US: 1.234500×10⁰⁴. cel-go passes the
 * clause's precision as the *width* (`%<n>e`), so the mantissa always has six decimals and a
 * precision pads the result with spaces on the left.
 */
function scientific(d: number, width: number | undefined): string {
  let text = nonFinite(d);
  if (text === undefined) {
    const { sign, mantissa, exponent } = exponential(d, 6);
    const exp = `${exponent < 0 ? '-' : ''}${String(Math.abs(exponent)).padStart(2, '0')}`;
    text = `${sign}${mantissa}×10${[...exp].map((c) => SUPERSCRIPT[c]).join('')}`;
  }
  const length = [...text].length;
  return width !== undefined && width > length ? ' '.repeat(width - length) + text : text;
}

function clause(verb: string, precision: number | undefined, v: unknown): string {
  switch (verb) {
    case 's':
      return formatPlain(v);
    case 'd': {
      const i = asInteger(v);
      if (i === undefined) throw new FormatError(`decimal clause can only be used on integers, was given ${typeName(v)}`);
      return String(i);
    }
    case 'f': {
      const d = floatArg(v, 'fixed-point');
      return nonFinite(d) ?? group(fixed(d, precision ?? 6, false));
    }
    case 'e':
      return scientific(floatArg(v, 'scientific'), precision);
    case 'b': {
      if (typeof v === 'boolean') return v ? '1' : '0';
      const i = asInteger(v);
      if (i === undefined) throw new FormatError(`only integers and bools can be formatted as binary, was given ${typeName(v)}`);
      return i.toString(2);
    }
    case 'x':
    case 'X': {
      let out: string;
      const i = asInteger(v);
      if (i !== undefined) out = i.toString(16);
      else if (typeof v === 'string') out = Buffer.from(v, 'utf8').toString('hex');
      else if (v instanceof Uint8Array) out = Buffer.from(v).toString('hex');
      else throw new FormatError(`only integers, byte buffers, and strings can be formatted as hex, was given ${typeName(v)}`);
      return verb === 'X' ? out.toUpperCase() : out;
    }
    case 'o': {
      const i = asInteger(v);
      if (i === undefined) throw new FormatError(`octal clause can only be used on integers, was given ${typeName(v)}`);
      return i.toString(8);
    }
  }
  throw new Error('unreachable');
}

/**
 * Walks a format string as cel-go's parseFormatString (extension versions 1-3) does: `%%`, and
 * `%s %d %f %e %b %x %X %o` with an optional precision `.N`. `onClause` formats one argument;
 * it throws FormatError for an argument of the wrong type. Returns the formatted text.
 */
function walkFormat(template: string, argCount: number, onClause: (verb: string, precision: number | undefined, index: number) => string): { text: string; used: number } {
  let text = '';
  let argIndex = 0;
  for (let i = 0; i < template.length;) {
    if (template[i] !== '%') {
      text += template[i++];
      continue;
    }
    if (template[i + 1] === '%') {
      text += '%';
      i += 2;
      continue;
    }
    if (argIndex >= argCount) throw celError(`index ${argIndex} out of range`);
    if (i + 1 >= template.length) throw celError('unexpected end of string');
    let j = i + 1;
    let precision: number | undefined;
    if (template[j] === '.') {
      j++;
      let digits = '';
      for (;;) {
        if (j >= template.length) throw celError('could not parse formatting clause: error while parsing precision: could not find end of precision specifier');
        if (!/[0-9]/.test(template[j]!)) break;
        digits += template[j++];
      }
      if (digits === '') throw celError('could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing "": invalid syntax');
      precision = Number(digits);
    }
    const verb = String.fromCodePoint(template.codePointAt(j)!);
    if (!'sdfebxXo'.includes(verb)) throw celError(`could not parse formatting clause: unrecognized formatting clause "${verb}"`);
    try {
      text += onClause(verb, precision, argIndex);
    } catch (err) {
      if (err instanceof FormatError) throw celError(`error during formatting: ${err.message}`);
      throw err;
    }
    argIndex++;
    i = j + 1;
  }
  return { text, used: argIndex };
}

/** `template.format(args)` */
export function format(template: string, args: readonly unknown[]): string {
  return walkFormat(template, args.length, (verb, precision, i) => clause(verb, precision, args[i])).text;
}

/** The clauses each static argument type can fill (cel-go's stringFormatValidator); dyn fits all. */
const CLAUSE_TYPES: Record<string, string[]> = {
  s: ['list', 'map', 'int', 'uint', 'double', 'bool', 'string', 'google.protobuf.Timestamp', 'google.protobuf.Duration', 'bytes', 'type', 'null'],
  d: ['int', 'uint'],
  f: ['double', 'string'],
  e: ['double', 'string'],
  b: ['int', 'uint', 'bool'],
  x: ['int', 'uint', 'string', 'bytes'],
  X: ['int', 'uint', 'string', 'bytes'],
  o: ['int', 'uint'],
};
const CLAUSE_NAMES: Record<string, string> = {
  d: 'decimal clause can only be used on integers',
  f: 'fixed-point clause can only be used on doubles',
  e: 'scientific clause can only be used on doubles',
  b: 'only integers and bools can be formatted as binary',
  x: 'only integers, byte buffers, and strings can be formatted as hex',
  X: 'only integers, byte buffers, and strings can be formatted as hex',
  o: 'octal clause can only be used on integers',
};

/** The kind of a static type name: list<int> -> list, map<string, int> -> map. */
function kindOf(type: string): string {
  return type.replace(/<.*$/, '');
}

/** A static type as cel-go names it in messages. */
function celGoTypeName(type: string): string {
  const kind = kindOf(type);
  if (kind === 'optional') return 'optional_type';
  if (kind === 'null') return 'null_type';
  return kind;
}

/**
 * Compile-time check of `'literal'.format([literal list])`, as Kubernetes' environment does it:
 * a bad clause, an argument of the wrong static type, too few or too many arguments.
 * `types` are the static type names of the list's elements.
 */
export function checkFormatCall(template: string, types: readonly string[]): void {
  const { used } = walkFormat(template, types.length, (verb, _precision, i) => {
    const kind = kindOf(types[i]!);
    if (kind !== 'dyn' && !CLAUSE_TYPES[verb]!.includes(kind)) {
      throw new FormatError(`${verb === 's' ? STRING_CLAUSE.replace(/, was given$/, '') : CLAUSE_NAMES[verb]!}, was given ${celGoTypeName(types[i]!)}`);
    }
    return '';
  });
  if (types.length > used) throw celError(`too many arguments supplied to string.format (expected ${used}, got ${types.length})`);
}

class StringsNamespace {}

export function registerStrings(env: Environment): void {
  env.registerFunction('string.charAt(int): string', charAt);
  env.registerFunction('string.replace(string, string): string', (s: string, o: string, n: string) => replace(s, o, n));
  env.registerFunction('string.replace(string, string, int): string', replace);
  env.registerFunction('string.format(list): string', (s: string, args: unknown[]) => format(s, [...args]));
  env.registerType('StringsNamespace', StringsNamespace);
  env.registerConstant('strings', 'StringsNamespace', new StringsNamespace());
  env.registerFunction('StringsNamespace.quote(string): string', (_: unknown, s: string) => quote(s));
}

/** cel-js ships these with JS semantics; each is replaced by cel-go's. Runs after every registration. */
export function replaceStringBuiltins(env: Environment): void {
  replaceBuiltin(env, '"".indexOf("")', 'string.indexOf(string): int', (s: string, sub: string) => indexOf(s, sub, 0n));
  replaceBuiltin(env, '"".indexOf("", 0)', 'string.indexOf(string, int): int', indexOf);
  replaceBuiltin(env, '"".lastIndexOf("")', 'string.lastIndexOf(string): int', (s: string, sub: string) => lastIndexOf(s, sub));
  replaceBuiltin(env, '"".lastIndexOf("", 0)', 'string.lastIndexOf(string, int): int', lastIndexOf);
  replaceBuiltin(env, '"".lowerAscii()', 'string.lowerAscii(): string', (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase()));
  replaceBuiltin(env, '"".upperAscii()', 'string.upperAscii(): string', (s: string) => s.replace(/[a-z]+/g, (m) => m.toUpperCase()));
  replaceBuiltin(env, '"".trim()', 'string.trim(): string', (s: string) => s.replace(TRIM, ''));
  replaceBuiltin(env, '"".substring(0)', 'string.substring(int): string', (s: string, start: bigint) => substring(s, start));
  replaceBuiltin(env, '"".substring(0, 0)', 'string.substring(int, int): string', substring);
  replaceBuiltin(env, '"".split("")', 'string.split(string): list<string>', (s: string, sep: string) => split(s, sep));
  replaceBuiltin(env, '"".split("", 0)', 'string.split(string, int): list<string>', split);
  replaceBuiltin(env, '[""].join()', 'list<string>.join(): string', (l: unknown[]) => join([...l], ''));
  replaceBuiltin(env, '[""].join("")', 'list<string>.join(string): string', (l: unknown[], sep: string) => join([...l], sep));
}
