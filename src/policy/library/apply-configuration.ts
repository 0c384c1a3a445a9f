/**
 * MutatingAdmissionPolicy's apply-configuration values (apiserver pkg/cel/mutation/dynamic's
 * ObjectVal): `Object{...}` and `Object.spec.x{...}`, which celjs/rewrite.ts writes as calls of the
 * function registered here, for the `patchType: ApplyConfiguration` mutations a suite pastes from
 * a MAP. Owns the values (a map of their fields, with their type name kept by identity) and their
 * JSON with the API server's check of type names against their path; merging them into the
 * object is policy/engine/apply-configuration.ts', and what an error does is rules.ts'.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { OBJECT_VALUE } from '../celjs/rewrite.ts';
import { fromCel } from '../values/convert.ts';

/** The values built by `Object...{...}`, and each one's type name. */
const objectTypes = new WeakMap<object, string>();

/** The type name of an `Object...{...}` value, or undefined for any other value. */
export function objectTypeName(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null ? objectTypes.get(value) : undefined;
}

export function registerApplyConfiguration(env: Environment): void {
  env.registerFunction(`${OBJECT_VALUE}(string, dyn): map<string, dyn>`, (typeName: string, fields: unknown) => {
    // a fresh value each time: the literal's map may be shared by evaluations
    const value = new Map(fields instanceof Map ? fields : Object.entries(fields as Record<string, unknown>));
    objectTypes.set(value, typeName);
    return value;
  });
}

/**
 * A CEL map or list that the API server's conversion of an apply configuration leaves as CEL
 * values (dynamic.convertField takes `Value()` of a map's values and a list's elements: an
 * `Object...{}` there becomes JSON, a map or list literal does not), so that its typed conversion
 * refuses it: "expected map, got &{map[k:v]}". `text` is Go's %v of it.
 */
export class CelLeftover {
  readonly kind: 'map' | 'list';
  readonly text: string;
  constructor(kind: 'map' | 'list', text: string) {
    this.kind = kind;
    this.text = text;
  }
}

/** A CEL map value (cel-js holds map literals as Maps or plain objects). */
function isCelMap(v: unknown): v is Map<unknown, unknown> | Record<string, unknown> {
  if (v instanceof Map) return true;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function entriesOf(v: Map<unknown, unknown> | Record<string, unknown>): [unknown, unknown][] {
  return v instanceof Map ? [...v] : Object.entries(v);
}

/** Go's %v of a CEL value as fmt prints it inside a map (keys sorted). */
function goFormat(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (isCelMap(v)) {
    const parts = entriesOf(v).map(([k, x]) => [goFormat(k), goFormat(x)] as const);
    parts.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[${parts.map(([k, x]) => `${k}:${x}`).join(' ')}]`;
  }
  if (v === null) return 'NULL_VALUE';
  return String(fromCel(v));
}

/**
 * An apply configuration as JSON, as the API server converts it (an Object's fields JSON, the
 * values of a map literal and the elements of a list literal by `Value()`: CelLeftover where that
 * is a map or list literal), and the type names that do not match the path of fields they stand at
 * (ObjectVal.CheckTypeNamesMatchFieldPathNames: a list's elements and a map's values stand at the
 * list's or map's path), in the API server's words.
 */
export function applyConfigurationJson(value: unknown, fromRequest: (v: object) => boolean = () => false): { json: Record<string, unknown>; mismatches: string[] } {
  const mismatches: string[] = [];
  const walk = (v: unknown, path: string[]): void => {
    if (typeof v !== 'object' || v === null) return;
    const typeName = objectTypes.get(v);
    if (typeName !== undefined) {
      const expected = path.join('.');
      if (typeName !== expected) mismatches.push(`unexpected type name ${JSON.stringify(typeName)}, expected ${JSON.stringify(expected)}, which matches field name path from root Object type`);
      for (const [k, f] of v as Map<string, unknown>) walk(f, [...path, String(k)]);
      return;
    }
    if (Array.isArray(v)) for (const e of v) walk(e, path);
    else if (isCelMap(v)) for (const [, e] of entriesOf(v)) walk(e, path);
  };
  const root = objectTypes.get(value as object) ?? 'Object';
  walk(value, [root]);
  /** ObjectVal.ConvertToNative: each field by convertField. */
  const objectJson = (object: Map<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, f] of object) out[String(k)] = fieldJson(f);
    return out;
  };
  /**
   * convertField: an Object as JSON; a map or list of the request's (in cel-go backed by Go
   * values, not CEL ones) converted whole; a literal's elements and values by valueOf.
   */
  const fieldJson = (f: unknown): unknown => {
    if (objectTypeName(f) !== undefined) return objectJson(f as Map<string, unknown>);
    if (typeof f === 'object' && f !== null && fromRequest(f)) return fromCel(f);
    if (Array.isArray(f)) return f.map(valueOf);
    if (isCelMap(f)) return Object.fromEntries(entriesOf(f).map(([k, v]) => [String(k), valueOf(v)]));
    return fromCel(f);
  };
  /** ref.Val.Value(): an Object's JSON, the request's values and scalars as themselves, a map or list literal left as CEL (CelLeftover). */
  const valueOf = (v: unknown): unknown => {
    if (objectTypeName(v) !== undefined) return objectJson(v as Map<string, unknown>);
    if (typeof v === 'object' && v !== null && fromRequest(v)) return fromCel(v);
    if (Array.isArray(v)) return new CelLeftover('list', goFormat(v));
    if (isCelMap(v)) return new CelLeftover('map', goFormat(v));
    return fromCel(v);
  };
  return { json: objectJson(value as Map<string, unknown>), mismatches };
}
