/**
 * What the compiled shortcut's generated code calls at run time (compiler.ts hands these to each
 * generated function): BAIL, the checks that a value is one the shortcut can answer for as cel-js
 * would, and the few operations it does not inline. Nothing here generates code or evaluates CEL.
 */
import type { RE2JS } from 're2js';
import { compileRegex } from '../library/regex.ts';

/** Thrown by compiled code to hand the evaluation back to cel-js. */
export const BAIL: unique symbol = Symbol('bail');

/**
 * What the last compiled run spent on the composited variables it read (each is evaluated once per
 * request, by its own program, whose cost stays charged when the run hands over to cel-js).
 */
export const spent = { variables: 0 };

export function bail(): never {
  throw BAIL;
}

/** A string in a JSON map's keys, or in a list of strings; BAIL for anything else. `literal`: a list literal (of a static type: cel-js looks no further). */
export function within(key: string, container: unknown, literal: boolean): boolean {
  if (!literal) dispatchable(container);
  if (Array.isArray(container)) {
    let found = false;
    for (const element of container) {
      if (typeof element !== 'string') throw BAIL;
      if (element === key) found = true;
    }
    return found;
  }
  if (isPlainMap(container)) return Object.hasOwn(container, key);
  throw BAIL;
}

/** RE2 `matches` as the regex library answers it (patterns cached); a pattern that does not compile is cel-js's error to give. */
export function regexMatches(subject: string, pattern: string): boolean {
  let re: RE2JS;
  try {
    re = compileRegex(pattern);
  } catch {
    throw BAIL;
  }
  return re.test(subject);
}

/** 1 for a CEL int (a BigInt, or a whole number of JSON not yet converted), 2 for a double, 0 for anything else. */
export function numberKind(v: unknown): number {
  if (typeof v === 'bigint') return 1;
  if (typeof v === 'number') return Number.isInteger(v) ? 1 : 2;
  return 0;
}

/**
 * BAIL unless cel-js can find the run-time type of `v` to pick an overload: it looks down the first
 * element of each list and the first value of each map (debugTypeDeep), and has no type for a
 * JSON object with its own "constructor" key.
 */
export function dispatchable(v: unknown): void {
  for (;;) {
    if (typeof v !== 'object' || v === null) return;
    const c = v.constructor;
    if (c === Array) {
      if ((v as unknown[]).length === 0) return;
      v = (v as unknown[])[0];
    } else if (c === Object || c === undefined) {
      let first: unknown = undefined;
      for (const key in v) {
        first = (v as Record<string, unknown>)[key];
        break;
      }
      if (first === undefined) return;
      v = first;
    } else throw BAIL;
  }
}

/** cel-js's size() of a string (code points), list or map, as an int in a JS number; BAIL for anything else. */
export function celSize(v: unknown): number {
  dispatchable(v);
  if (typeof v === 'string') {
    if (!SURROGATE.test(v)) return v.length;
  } else if (Array.isArray(v)) return v.length;
  else if (isPlainMap(v)) {
    let n = 0;
    for (const _ in v) n++;
    return n;
  }
  throw BAIL;
}
const SURROGATE = /[\uD800-\uDFFF]/;

export function isPlainMap(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const c = v.constructor;
  return c === Object || c === undefined;
}
