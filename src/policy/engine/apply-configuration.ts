/**
 * A MutatingAdmissionPolicy's apply configuration merged into the object as the API server merges
 * it (apiserver mutating/patch/smd.go's ApplyStructuredMergeDiff over
 * sigs.k8s.io/structured-merge-diff's typed values): the patch checked against the kind's schema
 * ("field not declared in schema", a scalar of the wrong type), refused where it would set an
 * atomic list, map or struct ("may not mutate atomic arrays, maps or structs"), then merged:
 * scalars replaced, maps and structs merged key by key unless `x-kubernetes-map-type: atomic`,
 * lists keyed by `x-kubernetes-list-map-keys` (type map; a missing key takes its default) or by
 * value (type set) merged item by item in structured-merge-diff's order, other lists atomic. The
 * schema is the kind's OpenAPI v3 as the API server publishes it (built-in kinds: list types and
 * `x-kubernetes-patch-merge-key`/`patch-strategy` as kube-openapi's schemaconv reads them; CRDs:
 * their structural schema). Owns only that merge on JSON values; which schema, and what an error
 * does (failurePolicy), are the caller's (rules.ts). Without a schema (offline, nothing to read):
 * every field is accepted, maps merge key by key and lists are replaced whole, which the caller
 * says in a warning.
 */

import { CelLeftover } from '../library/apply-configuration.ts';

/** A kind's schema: its component's name in `components` (as apiserver/openapi-state.ts' KindSchema). */
export interface MergeSchema {
  ref: string;
  components: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

type Json = Record<string, unknown>;

/** A schema node as structured-merge-diff types it. */
type Atom =
  | { kind: 'scalar'; scalar: 'numeric' | 'string' | 'boolean' | 'untyped' }
  | { kind: 'map'; fields: Map<string, Json> | undefined; element: Json | 'deduced' | undefined; atomic: boolean }
  | { kind: 'list'; element: Json | 'deduced'; relationship: 'atomic' | 'set' | 'map'; keys: string[] }
  | { kind: 'deduced' };

/** A failure in structured-merge-diff's words, at its path (`.spec.replicas`). */
class MergeError extends Error {}

/**
 * `patch` (the expression's JSON) applied to `object`: the merged object. Throws an Error in the
 * API server's words ("error applying patch: ...").
 */
export function applyConfiguration(object: Json, patch: Json, schema: MergeSchema | undefined): Json {
  // The patch takes the object's apiVersion and kind, as the API server sets them on it.
  const rhs: Json = { ...patch, apiVersion: object.apiVersion, kind: object.kind };
  const root: Json | 'deduced' = schema ? { $ref: `#/components/schemas/${schema.ref}` } : 'deduced';
  const errors: string[] = [];
  validate(rhs, root, schema, '', errors);
  if (errors.length) throw new Error(`error applying patch: failed to convert patch object to typed object: ${joined(errors)}`);
  if (!schema) return mergeValue(object, rhs, 'deduced', undefined, true) as Json;
  const atomics: string[] = [];
  findAtomics(rhs, root, schema, '', atomics);
  if (atomics.length) throw new Error(`error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: ${atomics.join(', ')}`);
  try {
    return (mergeValue(object, rhs, root, schema, false) ?? {}) as Json;
  } catch (err) {
    if (err instanceof MergeError) throw new Error(`error applying patch: failed to merge patch: ${err.message}`);
    throw err;
  }
}

/** ValidationErrors.Error(): one as it is, several listed. */
function joined(errors: string[]): string {
  return errors.length === 1 ? errors[0]! : ['errors:', ...errors.map((e) => `  ${e}`)].join('\n');
}

/** A `$ref` (or the one `allOf` of a reference, as OpenAPI v3 writes a field of a named type) followed, the field's own extensions kept over the named type's. */
function deref(node: Json, schema: MergeSchema): Json {
  let current = node;
  for (let depth = 0; depth < 64; depth++) {
    const ref = typeof current.$ref === 'string' ? current.$ref : Array.isArray(current.allOf) && current.allOf.length === 1 && typeof (current.allOf[0] as Json).$ref === 'string' ? ((current.allOf[0] as Json).$ref as string) : undefined;
    if (ref === undefined) return current;
    const target = schema.components[ref.replace('#/components/schemas/', '')];
    if (!target) return current;
    const { $ref: _r, allOf: _a, ...own } = current;
    current = { ...target, ...own };
  }
  return current;
}

function atomOf(node: Json | 'deduced', schema: MergeSchema | undefined): Atom {
  if (node === 'deduced' || !schema) return { kind: 'deduced' };
  const n = deref(node, schema);
  if (n['x-kubernetes-int-or-string'] === true) return { kind: 'scalar', scalar: 'untyped' };
  const type = n.type;
  if (type === 'array') {
    const listType = n['x-kubernetes-list-type'];
    const element = (n.items as Json | undefined) ?? 'deduced';
    const mergeKey = n['x-kubernetes-patch-merge-key'];
    const strategy = String(n['x-kubernetes-patch-strategy'] ?? '').split(',');
    if (listType === 'map') return { kind: 'list', element, relationship: 'map', keys: (n['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [] };
    if (listType === 'set') return { kind: 'list', element, relationship: 'set', keys: [] };
    if (listType === undefined && strategy.includes('merge')) {
      // schemaconv: a merge strategy without a list type is keyed by its merge key, or a set
      return typeof mergeKey === 'string' ? { kind: 'list', element, relationship: 'map', keys: [mergeKey] } : { kind: 'list', element, relationship: 'set', keys: [] };
    }
    return { kind: 'list', element, relationship: 'atomic', keys: [] };
  }
  const properties = n.properties as Record<string, Json> | undefined;
  const additional = n.additionalProperties;
  const preserve = n['x-kubernetes-preserve-unknown-fields'] === true;
  if (type === 'object' || properties || additional !== undefined) {
    if (!properties && additional === undefined && !preserve && type === 'object') return { kind: 'deduced' };
    const element = typeof additional === 'object' && additional !== null ? (additional as Json) : additional === true || preserve ? 'deduced' : undefined;
    return { kind: 'map', fields: properties ? new Map(Object.entries(properties)) : undefined, element, atomic: n['x-kubernetes-map-type'] === 'atomic' };
  }
  if (type === 'string') return { kind: 'scalar', scalar: 'string' };
  if (type === 'integer' || type === 'number') return { kind: 'scalar', scalar: 'numeric' };
  if (type === 'boolean') return { kind: 'scalar', scalar: 'boolean' };
  return { kind: 'deduced' };
}

function isMap(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof CelLeftover);
}

/** Go's %T / %#v of an unstructured value, as structured-merge-diff's errors print it. */
function goType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64';
  if (Array.isArray(v)) return '[]interface {}';
  if (v === null) return '<nil>';
  return 'map[string]interface {}';
}

function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/**
 * validatingObjectWalker: the patch as ObjectToTyped checks it. Without a schema only what the
 * API server refuses whatever the schema: a map or list literal nested in another (CelLeftover).
 */
function validate(v: unknown, node: Json | 'deduced', schema: MergeSchema | undefined, path: string, errors: string[]): void {
  if (v === null || v === undefined) return;
  const atom = atomOf(node, schema);
  const at = (message: string) => errors.push(path ? `${path}: ${message}` : message);
  if (v instanceof CelLeftover) {
    const expected = atom.kind === 'list' ? 'list' : atom.kind === 'map' ? 'map' : atom.kind === 'deduced' ? v.kind : undefined;
    if (expected) at(`expected ${expected}, got &{${v.text}}`);
    else at(`expected ${atom.kind === 'scalar' ? atom.scalar : 'scalar'}, got &value.valueUnstructured{Value:${v.text}}`);
    return;
  }
  switch (atom.kind) {
    case 'deduced':
      // a field that keeps unknown fields, or no schema: any value, but literals left as CEL
      if (Array.isArray(v)) v.forEach((item, i) => validate(item, 'deduced', schema, `${path}[${i}]`, errors));
      else if (isMap(v)) for (const [key, value] of Object.entries(v)) validate(value, 'deduced', schema, `${path}.${key}`, errors);
      return;
    case 'scalar':
      if (atom.scalar === 'numeric' && typeof v !== 'number') at(`expected numeric (int or float), got ${goType(v)}`);
      else if (atom.scalar === 'string' && typeof v !== 'string') at(`expected string, got &value.valueUnstructured{Value:${goValue(v)}}`);
      else if (atom.scalar === 'boolean' && typeof v !== 'boolean') at(`expected boolean, got ${goValue(v)}`);
      else if (atom.scalar === 'untyped' && typeof v === 'object') at(`expected any scalar, got ${goValue(v)}`);
      return;
    case 'list': {
      if (!Array.isArray(v)) return void at(`expected list, got ${goValue(v)}`);
      const seen = new Set<string>();
      v.forEach((item, i) => {
        let step = `[${i}]`;
        if (atom.relationship !== 'atomic') {
          let key: string;
          try {
            [key, step] = itemKey(atom, item, schema);
          } catch (err) {
            return void at(`element ${i}: ${(err as Error).message}`);
          }
          if (seen.has(key)) at(`duplicate entries for key ${step}`);
          seen.add(key);
        }
        validate(item, atom.element, schema, `${path}${step}`, errors);
      });
      return;
    }
    case 'map': {
      if (!isMap(v)) return void at(`expected map, got ${goValue(v)}`);
      for (const [key, value] of Object.entries(v)) {
        const field = atom.fields?.get(key);
        if (!field && atom.element === undefined) {
          errors.push(`${path}.${key}: field not declared in schema`);
          return;
        }
        validate(value, field ?? atom.element!, schema, `${path}.${key}`, errors);
      }
      return;
    }
  }
}

/** findAtomics: the paths of the atomic lists, maps and structs the patch sets. */
function findAtomics(v: unknown, node: Json | 'deduced', schema: MergeSchema | undefined, path: string, out: string[]): void {
  const atom = atomOf(node, schema);
  if (isMap(v) && (atom.kind === 'map' || atom.kind === 'deduced')) {
    if (atom.kind === 'map' && atom.atomic) out.push(path);
    if (atom.kind === 'map') {
      for (const [key, value] of Object.entries(v)) {
        const field = atom.fields?.get(key);
        if (field) findAtomics(value, field, schema, `${path}.${key}`, out);
      }
    }
  }
  if (Array.isArray(v) && (atom.kind === 'list' || atom.kind === 'deduced')) {
    // an untyped list (in a field whose schema keeps unknown fields) is atomic
    if (atom.kind === 'deduced' || atom.relationship === 'atomic') out.push(path);
    if (atom.kind === 'list') v.forEach((item, i) => findAtomics(item, atom.element, schema, `${path}[${i}]`, out));
  }
}

/** A list item's path element: its key (for comparing) and its printed form. */
function itemKey(atom: Extract<Atom, { kind: 'list' }>, item: unknown, schema: MergeSchema | undefined): [string, string] {
  if (atom.relationship === 'set' || atom.keys.length === 0) {
    if (isMap(item)) throw new Error("associative list without keys has an element that's a map type");
    if (Array.isArray(item)) throw new Error("associative list without keys has an element that's a list type");
    return [JSON.stringify(item), `[=${goValue(item)}]`];
  }
  if (!isMap(item)) throw new Error('associative list with keys may not have non-map elements');
  const element = atom.element !== 'deduced' && schema ? deref(atom.element, schema) : undefined;
  const parts: [string, unknown][] = [];
  for (const key of atom.keys) {
    if (Object.hasOwn(item, key) && item[key] !== null) parts.push([key, item[key]]);
    else {
      const fieldSchema = (element?.properties as Record<string, Json> | undefined)?.[key];
      const byDefault = fieldSchema && schema ? deref(fieldSchema, schema).default : undefined;
      if (byDefault === undefined) throw new Error(`associative list with keys has an element that omits key field ${JSON.stringify(key)} (and doesn't have default value)`);
      parts.push([key, byDefault]);
    }
  }
  return [JSON.stringify(parts), `[${parts.map(([k, v]) => `${k}=${goValue(v)}`).join(',')}]`];
}

/**
 * mergingWalker with keep-RHS: `lhs` the object's value, `rhs` the patch's (undefined: absent).
 * Returns the merged value, undefined where neither side has one (or a merged map or list came
 * out empty, as structured-merge-diff leaves it out).
 */
function mergeValue(lhs: unknown, rhs: unknown, node: Json | 'deduced', schema: MergeSchema | undefined, offline: boolean): unknown {
  if (rhs === undefined) return lhs;
  if (lhs === undefined) return rhs;
  const atom = atomOf(node, schema);
  if (isMap(lhs) && isMap(rhs) && (atom.kind === 'map' || atom.kind === 'deduced')) {
    const empty = Object.keys(lhs).length === 0 && Object.keys(rhs).length === 0;
    if ((atom.kind === 'map' && atom.atomic) || empty) return rhs;
    const out: Json = {};
    for (const key of new Set([...Object.keys(lhs), ...Object.keys(rhs)])) {
      const field = atom.kind === 'map' ? (atom.fields?.get(key) ?? atom.element ?? 'deduced') : 'deduced';
      const merged = mergeValue(lhs[key], rhs[key], field, schema, offline);
      if (merged !== undefined) out[key] = merged;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (Array.isArray(lhs) && Array.isArray(rhs) && atom.kind === 'list' && atom.relationship !== 'atomic' && (lhs.length || rhs.length)) {
    return mergeList(lhs, rhs, atom, schema, offline);
  }
  // scalars, atomic lists and maps (offline: every list), and a side that is null: the patch's value
  return rhs;
}

/** visitListItems: the object's items in their order, the patch's merged into them, its new ones placed as structured-merge-diff places them. */
function mergeList(lhs: unknown[], rhs: unknown[], atom: Extract<Atom, { kind: 'list' }>, schema: MergeSchema | undefined, offline: boolean): unknown[] | undefined {
  const index = (list: unknown[], allowDuplicates: boolean) => {
    const keys: string[] = [];
    const observed = new Map<string, unknown>();
    list.forEach((item, i) => {
      let key: string;
      try {
        key = itemKey(atom, item, schema)[0];
      } catch (err) {
        throw new MergeError(`element ${i}: ${(err as Error).message}`);
      }
      if (observed.has(key)) {
        if (!allowDuplicates) throw new MergeError(`duplicate entries for key ${itemKey(atom, item, schema)[1]}`);
        // duplicated items are not merged with the new value
        observed.set(key, null);
      } else observed.set(key, item);
      keys.push(key);
    });
    return { keys, observed };
  };
  const r = index(rhs, false);
  const l = index(lhs, true);
  const sharedOrder = r.keys.filter((k) => l.observed.has(k));
  let nextShared = sharedOrder.shift();
  const mergedRhs = new Set<string>();
  const out: unknown[] = [];
  const push = (value: unknown) => {
    if (value !== undefined) out.push(value);
  };
  let lI = 0;
  let rI = 0;
  while (lI < l.keys.length || rI < r.keys.length) {
    if (lI < l.keys.length && rI < r.keys.length) {
      const pe = l.keys[lI]!;
      if (pe === r.keys[rI]) {
        mergedRhs.add(pe);
        push(mergeValue(l.observed.get(pe) ?? undefined, r.observed.get(pe), atom.element, schema, offline));
        lI++;
        rI++;
        nextShared = sharedOrder.shift();
        continue;
      }
      if (r.observed.has(pe) && nextShared !== undefined && nextShared !== pe) {
        lI++;
        continue;
      }
    }
    if (lI < l.keys.length) {
      const pe = l.keys[lI]!;
      if (!r.observed.has(pe)) {
        push(lhs[lI]);
        lI++;
        continue;
      } else if (mergedRhs.has(pe)) lI++;
    }
    if (rI < r.keys.length) {
      const pe = r.keys[rI]!;
      mergedRhs.add(pe);
      const left = l.observed.get(pe);
      push(mergeValue(left === null ? undefined : left, r.observed.get(pe), atom.element, schema, offline));
      rI++;
      if (nextShared !== undefined && nextShared === pe) nextShared = sharedOrder.shift();
    }
  }
  return out.length ? out : undefined;
}
