/**
 * MutatingAdmissionPolicy's JSONPatch values and `jsonpatch.escapeKey` (apiserver pkg/cel/library
 * jsonpatch and the mutation type JSONPatch), for the `patchType: JSONPatch` mutations a suite or
 * AdmissionPolicy pastes from a MAP. celjs/rewrite.ts writes `JSONPatch{...}` and
 * `jsonpatch.escapeKey(k)` as the calls registered here. Owns the values' shape only; applying
 * them is policy/engine/json-patch.ts's, and what a wrong one does is rules.ts's.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { JSONPATCH_ESCAPE_KEY, JSONPATCH_VALUE } from '../celjs/rewrite.ts';

/** The values built by `JSONPatch{...}`: a map of its fields, known by identity. */
const jsonPatchValues = new WeakSet<object>();

export function isJsonPatchValue(value: unknown): boolean {
  return typeof value === 'object' && value !== null && jsonPatchValues.has(value);
}

function field(fields: unknown, name: string): unknown {
  return fields instanceof Map ? fields.get(name) : (fields as Record<string, unknown>)[name];
}

export function registerJsonPatch(env: Environment): void {
  env.registerFunction(`${JSONPATCH_VALUE}(map<string, dyn>): map<string, dyn>`, (fields: unknown) => {
    // As the message type declares them: op, path and from are strings (cel-go checks it on compile)
    for (const name of ['op', 'path', 'from']) {
      const v = field(fields, name);
      if (v !== undefined && typeof v !== 'string') throw celError(`no such overload: JSONPatch.${name} must be a string`);
    }
    const value = fields as object;
    jsonPatchValues.add(value);
    return value;
  });
  // RFC 6901: `~` as `~0` first, then `/` as `~1`
  env.registerFunction(`${JSONPATCH_ESCAPE_KEY}(string): string`, (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1'));
}
