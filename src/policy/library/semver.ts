/**
 * Kubernetes' semver library (pkg/cel/library/semverlib.go, version 1 as in 1.37): semver() and
 * isSemver() (with or without normalize), and a kubernetes.Semver's major(), minor(), patch(),
 * compareTo, isLessThan, isGreaterThan and `==` (build metadata ignored). Parsing is blang/semver v4's
 * to the letter, errors included ("No Major.Minor.Patch elements found", ...); normalize is Kubernetes'
 * normalizeAndParse first (a leading "v" dropped, leading zeros trimmed, minor and patch filled with 0).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { COST_SIZE } from '../cost/calls.ts';

const UINT64_MAX = (1n << 64n) - 1n;
const DIGITS = /^[0-9]*$/;
const ALPHANUMERIC = /^[0-9A-Za-z-]*$/;

/** A pre-release identifier: numeric or alphanumeric. */
type PreRelease = { num: bigint } | { str: string };

/** A CEL `kubernetes.Semver` value. */
export class SemverValue {
  readonly celTypeName = 'kubernetes.Semver';
  readonly major: bigint;
  readonly minor: bigint;
  readonly patch: bigint;
  readonly pre: PreRelease[];
  readonly build: string[];

  /** What a comparison works over: its prerelease identifiers (a team's policy is charged by it, cost/calls.ts). */
  readonly [COST_SIZE]: number;

  constructor(major: bigint, minor: bigint, patch: bigint, pre: PreRelease[], build: string[]) {
    this.major = major;
    this.minor = minor;
    this.patch = patch;
    this.pre = pre;
    this.build = build;
    let size = 3;
    for (const p of pre) size += 'str' in p ? p.str.length : 1;
    this[COST_SIZE] = size;
  }

  /** blang/semver's Version.Compare: build metadata is not compared. */
  compareTo(o: SemverValue): number {
    for (const [a, b] of [
      [this.major, o.major],
      [this.minor, o.minor],
      [this.patch, o.patch],
    ] as const) {
      if (a !== b) return a > b ? 1 : -1;
    }
    if (this.pre.length === 0 || o.pre.length === 0) return this.pre.length === o.pre.length ? 0 : this.pre.length === 0 ? 1 : -1;
    const n = Math.min(this.pre.length, o.pre.length);
    for (let i = 0; i < n; i++) {
      const c = comparePre(this.pre[i]!, o.pre[i]!);
      if (c !== 0) return c;
    }
    return this.pre.length === o.pre.length ? 0 : this.pre.length < o.pre.length ? -1 : 1;
  }

  equals(o: unknown): boolean {
    return o instanceof SemverValue && this.compareTo(o) === 0;
  }

  toString(): string {
    const pre = this.pre.map((p) => ('num' in p ? String(p.num) : p.str)).join('.');
    return `${this.major}.${this.minor}.${this.patch}${pre ? `-${pre}` : ''}${this.build.length ? `+${this.build.join('.')}` : ''}`;
  }
}

function comparePre(a: PreRelease, b: PreRelease): number {
  if ('num' in a && 'num' in b) return a.num === b.num ? 0 : a.num > b.num ? 1 : -1;
  if ('num' in a) return -1;
  if ('num' in b) return 1;
  // Go compares strings bytewise; the identifiers are ASCII
  return a.str === b.str ? 0 : a.str > b.str ? 1 : -1;
}

/** Go's %q (strconv.Quote) for the ASCII-and-printable strings these messages quote. */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c >= 0x20 && c !== 0x7f) out += ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c === 7) out += '\\a';
    else if (c === 8) out += '\\b';
    else if (c === 12) out += '\\f';
    else if (c === 11) out += '\\v';
    else out += `\\x${c.toString(16).padStart(2, '0')}`;
  }
  return `${out}"`;
}

/** strconv.ParseUint(s, 10, 64) on a string of digits. */
function parseUint(s: string): bigint {
  if (s === '') throw celError(`strconv.ParseUint: parsing ${goQuote(s)}: invalid syntax`);
  const n = BigInt(s);
  if (n > UINT64_MAX) throw celError(`strconv.ParseUint: parsing ${goQuote(s)}: value out of range`);
  return n;
}

const hasLeadingZeroes = (s: string) => s.length > 1 && s[0] === '0';

/** Go's strings.SplitN(s, sep, n). */
function splitN(s: string, sep: string, n: number): string[] {
  const parts = s.split(sep);
  return parts.length <= n ? parts : [...parts.slice(0, n - 1), parts.slice(n - 1).join(sep)];
}

function number(part: string, what: 'major' | 'minor' | 'patch', What: string): bigint {
  if (!DIGITS.test(part)) throw celError(`Invalid character(s) found in ${what} number ${goQuote(part)}`);
  if (hasLeadingZeroes(part)) throw celError(`${What} number must not contain leading zeroes ${goQuote(part)}`);
  return parseUint(part);
}

/** blang/semver v4 Parse. */
export function parseSemver(s: string): SemverValue {
  if (s.length === 0) throw celError('Version string empty');
  const parts = splitN(s, '.', 3);
  if (parts.length !== 3) throw celError('No Major.Minor.Patch elements found');
  const major = number(parts[0]!, 'major', 'Major');
  const minor = number(parts[1]!, 'minor', 'Minor');
  let patchStr = parts[2]!;
  let build: string[] = [];
  let prerelease: string[] = [];
  const buildIndex = patchStr.indexOf('+');
  if (buildIndex !== -1) {
    build = patchStr.slice(buildIndex + 1).split('.');
    patchStr = patchStr.slice(0, buildIndex);
  }
  const preIndex = patchStr.indexOf('-');
  if (preIndex !== -1) {
    prerelease = patchStr.slice(preIndex + 1).split('.');
    patchStr = patchStr.slice(0, preIndex);
  }
  const patch = number(patchStr, 'patch', 'Patch');
  const pre: PreRelease[] = [];
  for (const p of prerelease) {
    if (p.length === 0) throw celError('Prerelease is empty');
    if (DIGITS.test(p)) {
      if (hasLeadingZeroes(p)) throw celError(`Numeric PreRelease version must not contain leading zeroes ${goQuote(p)}`);
      pre.push({ num: parseUint(p) });
    } else if (ALPHANUMERIC.test(p)) pre.push({ str: p });
    else throw celError(`Invalid character(s) found in prerelease ${goQuote(p)}`);
  }
  for (const b of build) {
    if (b.length === 0) throw celError('Build meta data is empty');
    if (!ALPHANUMERIC.test(b)) throw celError(`Invalid character(s) found in build meta data ${goQuote(b)}`);
  }
  return new SemverValue(major, minor, patch, pre, build);
}

/** Kubernetes' normalizeAndParse. */
export function normalizeAndParse(s: string): SemverValue {
  if (s.startsWith('v')) s = s.slice(1);
  const parts = splitN(s, '.', 3);
  for (let i = 0; i < parts.length; i++) {
    let p = parts[i]!;
    if (p.length > 1) {
      p = p.replace(/^0+/, '');
      if (p.length === 0 || !/^[0-9]/.test(p)) p = `0${p}`;
      parts[i] = p;
    }
  }
  if (parts.length < 3) {
    if (/[+-]/.test(parts[parts.length - 1]!)) throw celError('short version cannot contain PreRelease/Build meta data');
    while (parts.length < 3) parts.push('0');
  }
  return parseSemver(parts.join('.'));
}

function parse(s: string, normalize: boolean): SemverValue {
  return normalize ? normalizeAndParse(s) : parseSemver(s);
}

function valid(s: string, normalize: boolean): boolean {
  try {
    parse(s, normalize);
    return true;
  } catch {
    return false;
  }
}

/** types.Int(uint64): Go's conversion wraps. */
const toInt = (n: bigint) => BigInt.asIntN(64, n);

export function registerSemver(env: Environment): void {
  const T = 'kubernetes.Semver';
  env.registerType(T, SemverValue);
  env.registerFunction(`semver(string): ${T}`, (s: string) => parse(s, false));
  env.registerFunction(`semver(string, bool): ${T}`, (s: string, normalize: boolean) => parse(s, normalize));
  env.registerFunction('isSemver(string): bool', (s: string) => valid(s, false));
  env.registerFunction('isSemver(string, bool): bool', (s: string, normalize: boolean) => valid(s, normalize));
  env.registerFunction(`${T}.major(): int`, (v: SemverValue) => toInt(v.major));
  env.registerFunction(`${T}.minor(): int`, (v: SemverValue) => toInt(v.minor));
  env.registerFunction(`${T}.patch(): int`, (v: SemverValue) => toInt(v.patch));
  env.registerFunction(`${T}.isGreaterThan(${T}): bool`, (a: SemverValue, b: SemverValue) => a.compareTo(b) === 1);
  env.registerFunction(`${T}.isLessThan(${T}): bool`, (a: SemverValue, b: SemverValue) => a.compareTo(b) === -1);
  env.registerFunction(`${T}.compareTo(${T}): int`, (a: SemverValue, b: SemverValue) => BigInt(a.compareTo(b)));
  env.registerOperator(`${T} == ${T}`, (a: SemverValue, b: SemverValue) => a.equals(b));
}
