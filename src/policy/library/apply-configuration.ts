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
 * An apply configuration as JSON, and the type names that do not match the path of fields they
 * stand at (ObjectVal.CheckTypeNamesMatchFieldPathNames: a list's elements and a map's values
 * stand at the list's or map's path), in the API server's words.
 */
export function applyConfigurationJson(value: unknown): { json: Record<string, unknown>; mismatches: string[] } {
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
    else if (v instanceof Map) for (const e of v.values()) walk(e, path);
  };
  const root = objectTypes.get(value as object) ?? 'Object';
  walk(value, [root]);
  return { json: fromCel(value) as Record<string, unknown>, mismatches };
}
