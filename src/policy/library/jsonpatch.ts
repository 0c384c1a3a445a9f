/**
 * MutatingAdmissionPolicy's JSONPatch values and `jsonpatch.escapeKey` (apiserver pkg/cel/library
 * jsonpatch and the mutation type JSONPatch), for the `patchType: JSONPatch` mutations a suite or
 * AdmissionPolicy pastes from a MAP. celjs/rewrite.ts writes `JSONPatch{...}` and
 * `jsonpatch.escapeKey(k)` as the calls registered here. Owns the values' shape only; applying
 * them is policy/engine/json-patch.ts's, and what a wrong one does is rules.ts's.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { forEachNode, type RawNode } from '../celjs/walk.ts';
import { JSONPATCH_ESCAPE_KEY, JSONPATCH_VALUE } from '../celjs/rewrite.ts';

/**
 * A value built by `JSONPatch{...}`: a map of its fields (read as one by fromCel), of the type
 * JSONPatch to the checker, so that a jsonPatch expression is found to yield list(JSONPatch) or not
 * on compile, as cel-go finds it.
 */
class JsonPatchValue extends Map<string, unknown> {}

export function isJsonPatchValue(value: unknown): boolean {
  return value instanceof JsonPatchValue;
}

function field(fields: unknown, name: string): unknown {
  return fields instanceof Map ? fields.get(name) : (fields as Record<string, unknown>)[name];
}

/** The fields of MAP's JSONPatch type, and the type each must be given (value: any). */
const FIELD_TYPES: Readonly<Record<string, string>> = { op: 'string', path: 'string', from: 'string', value: 'dyn' };

export function registerJsonPatch(env: Environment): void {
  env.registerType('JSONPatch', { ctor: JsonPatchValue, fields: FIELD_TYPES });
  env.registerFunction(`${JSONPATCH_VALUE}(map<string, dyn>): JSONPatch`, (fields: unknown) => {
    // As the message type declares them (the compile-time check finds the static cases)
    for (const name of ['op', 'path', 'from']) {
      const v = field(fields, name);
      if (v !== undefined && typeof v !== 'string') throw celError(`no such overload: JSONPatch.${name} must be a string`);
    }
    return new JsonPatchValue(fields instanceof Map ? fields : Object.entries(fields as Record<string, unknown>));
  });
  // RFC 6901: `~` as `~0` first, then `/` as `~1`
  env.registerFunction(`${JSONPATCH_ESCAPE_KEY}(string): string`, (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1'));
}

/**
 * What cel-go's checker refuses of MAP's patch types, on compile (`forEachNode` over the checked
 * AST): outside a mutation's expression (validations, variables, matchConditions: the API server
 * declares JSONPatch and the jsonpatch library only for `jsonPatch` and `applyConfiguration`
 * expressions) any use, as an undeclared reference; inside, a field of JSONPatch given a value of
 * another static type. Throws in cel-go's words (the caller prefixes `compilation failed: `).
 */
export function validatePatchTypes(root: unknown, patchTypes: boolean): void {
  forEachNode(root, (node) => {
    const args = node.args;
    if (node.op !== 'call' || !Array.isArray(args)) return;
    if (args[0] === JSONPATCH_ESCAPE_KEY && !patchTypes) throw new Error("undeclared reference to 'jsonpatch' (in container '')");
    if (args[0] !== JSONPATCH_VALUE) return;
    if (!patchTypes) throw new Error("undeclared reference to 'JSONPatch' (in container '')");
    const literal = (args[1] as RawNode[] | undefined)?.[0];
    if (literal?.op !== 'map' || !Array.isArray(literal.args)) return;
    for (const entry of literal.args as unknown[]) {
      const [key, value] = Array.isArray(entry) ? (entry as RawNode[]) : [];
      const name = key?.op === 'value' ? String(key.args) : undefined;
      const want = name === undefined ? undefined : FIELD_TYPES[name];
      const got = value?.checkedType?.name ?? 'dyn';
      if (want && want !== 'dyn' && got !== want && got !== 'dyn') throw new Error(`expected type of field '${name}' is '${want}' but provided type is '${celGoType(got)}'`);
    }
  });
}

/** A cel-js type as cel-go's FormatCELType prints it: list(string), map(string, int), null_type. */
export function celGoType(type: string): string {
  // a type parameter left unbound (the empty list's) is dyn to cel-go: `[]` is list(dyn)
  return type
    .replaceAll('<', '(')
    .replaceAll('>', ')')
    .replace(/\bnull\b/g, 'null_type')
    .replace(/\b[A-Z]\b/g, 'dyn');
}

/** A checker's message with the functions' names as a policy wrote them (cel-js knows them by their rewritten names). */
export function policyNames(message: string): string {
  return message.replaceAll(JSONPATCH_ESCAPE_KEY, 'jsonpatch.escapeKey').replaceAll(JSONPATCH_VALUE, 'JSONPatch');
}
