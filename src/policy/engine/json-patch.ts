/**
 * A MutatingAdmissionPolicy's JSONPatch, applied as the API server applies it (its JSON patch
 * library, gopkg.in/evanphx/json-patch.v4, under patchType JSONPatch): the operations' quirks and
 * its error words, which a refused request shows its user. Owns only applying such a patch to a
 * JSON value; the expression's evaluation and what an error does (failurePolicy) are rules.ts's.
 * Must not change the document it is given: it works on a copy.
 *
 * What the API server does, as this follows it:
 * - a step of a path through a missing key or a scalar: "<op> operation does not apply: doc is
 *   missing path" (add and remove quote the path, the others do not);
 * - add into an object sets the key; replace of a missing key of an object sets it too (the
 *   library looks the key up without refusing a missing one); remove of a missing key is refused;
 * - array indexes: `-` appends (add only), negative indexes count from the end, an index past the
 *   end is "invalid index referenced";
 * - test: a value that differs leaves the whole patch unapplied, without an error (the API
 *   server's JSONPatch mutator checks for that error and returns the object unchanged), and so
 *   does `value: null` against a missing key; a missing parent is an error;
 * - every error is prefixed "JSON Patch: ", as the mutator wraps it (kube-apiserver 1.37, tried).
 */

/** The sentinel of a test that failed: the patch is not applied. */
export class JsonPatchTestFailed extends Error {}

/** One operation as a `JSONPatch{...}` value yields it (strings absent are empty). */
export interface MapPatchOperation {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
  /** Whether `value` was set (a null value is a value). */
  hasValue: boolean;
}

type Container = Record<string, unknown> | unknown[];

const MISSING = 'missing value';
const INVALID_INDEX = 'invalid index referenced';

/**
 * `document` with `ops` applied; undefined when a test operation failed (the object stays as it
 * was). Throws an Error in the API server's words when an operation does not apply.
 */
export function applyMapJsonPatch(document: unknown, ops: readonly MapPatchOperation[]): unknown {
  let root = structuredClone(document) as unknown;
  for (const op of ops) {
    try {
      root = applyOne(root, op);
    } catch (err) {
      if (err instanceof JsonPatchTestFailed) return undefined;
      throw new Error(`JSON Patch: ${(err as Error).message}`);
    }
  }
  return root;
}

function decodeKey(key: string): string {
  return key.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The container holding the last key of `path`, and that key; undefined when a step is missing (the library's findObject). */
function findParent(root: unknown, path: string): [Container, string] | undefined {
  const split = path.split('/');
  if (split.length < 2) return undefined;
  let node = root;
  for (const part of split.slice(1, -1)) {
    if (node === null || typeof node !== 'object') return undefined;
    const next = get(node as Container, decodeKey(part));
    if (next === undefined || next === null || typeof next !== 'object') return undefined;
    node = next;
  }
  if (node === null || typeof node !== 'object') return undefined;
  return [node as Container, decodeKey(split[split.length - 1]!)];
}

/** Go's strconv.Atoi, with its error words. */
function atoi(key: string): number {
  if (!/^[+-]?[0-9]+$/.test(key)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  const n = Number(key);
  if (!Number.isSafeInteger(n)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(key)}: value out of range`);
  return n;
}

/** A value of `c` at `key`: undefined for a missing key of an object; throws for an array index that does not exist. */
function get(c: Container, key: string): unknown {
  if (!Array.isArray(c)) return Object.hasOwn(c, key) ? c[key] : undefined;
  const idx = atoi(key);
  if (idx >= c.length) throw new Error(`Unable to access invalid index: ${idx}: ${INVALID_INDEX}`);
  // a negative index reads from the end in the library's get only through Go's slice (which panics); it refuses it
  if (idx < 0) throw new Error(`Unable to access invalid index: ${idx}: ${INVALID_INDEX}`);
  return c[idx];
}

function add(c: Container, key: string, value: unknown): void {
  if (!Array.isArray(c)) {
    c[key] = value;
    return;
  }
  if (key === '-') {
    c.push(value);
    return;
  }
  let idx: number;
  try {
    idx = atoi(key);
  } catch (err) {
    throw new Error(`value was not a proper array index: '${key}': ${(err as Error).message}`);
  }
  const size = c.length + 1;
  if (idx >= size || idx < -size) throw new Error(`Unable to access invalid index: ${idx}: ${INVALID_INDEX}`);
  if (idx < 0) idx += size;
  c.splice(idx, 0, value);
}

function remove(c: Container, key: string): void {
  if (!Array.isArray(c)) {
    if (!Object.hasOwn(c, key)) throw new Error(`Unable to remove nonexistent key: ${key}: ${MISSING}`);
    delete c[key];
    return;
  }
  let idx = atoi(key);
  if (idx >= c.length || idx < -c.length) throw new Error(`Unable to access invalid index: ${idx}: ${INVALID_INDEX}`);
  if (idx < 0) idx += c.length;
  c.splice(idx, 1);
}

function applyOne(root: unknown, op: MapPatchOperation): unknown {
  const value = op.hasValue ? structuredClone(op.value) : null;
  switch (op.op) {
    case 'add': {
      const found = findParent(root, op.path);
      if (!found) throw new Error(`add operation does not apply: doc is missing path: "${op.path}": ${MISSING}`);
      try {
        add(found[0], found[1], value);
      } catch (err) {
        throw new Error(`error in add for path: '${op.path}': ${(err as Error).message}`);
      }
      return root;
    }
    case 'remove': {
      const found = findParent(root, op.path);
      if (!found) throw new Error(`remove operation does not apply: doc is missing path: "${op.path}": ${MISSING}`);
      try {
        remove(found[0], found[1]);
      } catch (err) {
        throw new Error(`error in remove for path: '${op.path}': ${(err as Error).message}`);
      }
      return root;
    }
    case 'replace': {
      const found = findParent(root, op.path);
      if (!found) throw new Error(`replace operation does not apply: doc is missing path: ${op.path}: ${MISSING}`);
      const [c, key] = found;
      try {
        get(c, key);
      } catch {
        throw new Error(`replace operation does not apply: doc is missing key: ${op.path}: ${MISSING}`);
      }
      if (Array.isArray(c)) c[atoi(key)] = value;
      else c[key] = value;
      return root;
    }
    case 'move':
    case 'copy': {
      const from = op.from ?? '';
      const source = findParent(root, from);
      if (!source) throw new Error(`${op.op} operation does not apply: doc is missing from path: ${from}: ${MISSING}`);
      let moved: unknown;
      try {
        moved = get(source[0], source[1]);
        if (op.op === 'move') remove(source[0], source[1]);
      } catch (err) {
        throw new Error(op.op === 'move' ? `error in move for path: '${source[1]}': ${(err as Error).message}` : `error in copy for from: '${from}': ${(err as Error).message}`);
      }
      const target = findParent(root, op.path);
      if (!target) throw new Error(`${op.op} operation does not apply: doc is missing destination path: ${op.path}: ${MISSING}`);
      try {
        add(target[0], target[1], moved === undefined ? null : op.op === 'copy' ? structuredClone(moved) : moved);
      } catch (err) {
        throw new Error(op.op === 'move' ? `error in move for path: '${op.path}': ${(err as Error).message}` : `error while adding value during copy: ${(err as Error).message}`);
      }
      return root;
    }
    case 'test': {
      const found = findParent(root, op.path);
      if (!found) throw new Error(`test operation does not apply: is missing path: ${op.path}: ${MISSING}`);
      let current: unknown;
      try {
        current = get(found[0], found[1]);
      } catch (err) {
        throw new Error(`error in test for path: '${op.path}': ${(err as Error).message}`);
      }
      // The library compares its nodes: a missing key matches only an op without value (a value
      // of null is a node, kube-apiserver 1.37 tried: test-null-absent), and a present null only a null
      if (current === undefined && !op.hasValue) return root;
      if (current === undefined || !op.hasValue || !jsonEqual(current, op.value)) throw new JsonPatchTestFailed(`testing value ${op.path} failed`);
      return root;
    }
    default:
      throw new Error(`Unexpected kind: ${op.op}`);
  }
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * The object as the next mutation of a MutatingAdmissionPolicy sees it, after the API server's
 * dispatcher decoded the patched JSON into the kind's Go type and encodes it again for the next
 * patch (mutating/patch/json_patch.go: runtime.Encode of the typed object): for a built-in kind,
 * a Go map or slice field tagged `omitempty` that is empty or null is no longer there, so an empty
 * map one mutation added is not a parent the next can add into ("doc is missing path"). A custom
 * resource stays unstructured and keeps it. Only the fields every built-in kind has (ObjectMeta's)
 * and ConfigMap's and Secret's top-level maps are known here: which field deeper in a kind is a Go
 * map (dropped when empty) rather than a struct (kept as `{}`) takes the kind's schema, which the
 * request path does not hold. Returns `object` itself when nothing is dropped.
 */
export function asTypedRoundTrip(object: Record<string, unknown>, kind: { group: string; kind: string } | undefined): Record<string, unknown> {
  if (!kind || !isBuiltInGroup(kind.group)) return object;
  const topLevel = kind.group === '' ? OMITEMPTY_TOP_LEVEL[kind.kind] : undefined;
  const metadata = object.metadata;
  const dropMeta = isObject(metadata) ? OMITEMPTY_METADATA.filter((f) => Object.hasOwn(metadata, f) && isEmpty(metadata[f])) : [];
  const dropTop = (topLevel ?? []).filter((f) => Object.hasOwn(object, f) && isEmpty(object[f]));
  if (!dropMeta.length && !dropTop.length) return object;
  const copy: Record<string, unknown> = { ...object };
  for (const f of dropTop) delete copy[f];
  if (dropMeta.length) {
    const meta = { ...(metadata as Record<string, unknown>) };
    for (const f of dropMeta) delete meta[f];
    copy.metadata = meta;
  }
  return copy;
}

/** ObjectMeta's Go maps and slices, all `omitempty`. */
const OMITEMPTY_METADATA = ['labels', 'annotations', 'finalizers', 'ownerReferences', 'managedFields'];
/** The top-level Go maps of the core kinds that have them, all `omitempty`. */
const OMITEMPTY_TOP_LEVEL: Readonly<Record<string, readonly string[]>> = { ConfigMap: ['data', 'binaryData'], Secret: ['data', 'stringData'] };

/** A group the API server serves from Go types: the core and the unqualified groups, and *.k8s.io (a CRD may not take one unapproved). */
function isBuiltInGroup(group: string): boolean {
  return !group.includes('.') || group.endsWith('.k8s.io');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isEmpty(value: unknown): boolean {
  return value === null || (Array.isArray(value) ? value.length === 0 : isObject(value) && Object.keys(value).length === 0);
}
