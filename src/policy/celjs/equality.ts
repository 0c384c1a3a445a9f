/**
 * `==` with a map or list read from the request's object on the left, as the API server evaluates
 * it: its values of `object` and `oldObject` compare only with values of their own kind or null,
 * and raise `no such overload` otherwise (apiserver pkg/cel/common: MaybeNoSuchOverloadErr), where
 * cel-js (and cel-go's own literals) say false. Not `params` (the API server's ConfigMap data is a
 * plain CEL map there: false, as the differential test shows), nor `request` and `namespaceObject`
 * (typed in the API server, so such a comparison is refused on write there; dyn here).
 * `!=` is not affected: cel-go's is "Equal is not true", so the error reads as true.
 * Which operand came from the request is known from the syntax: a field or index chain from one
 * of those variables, optional steps (`.?f`, `[?i]`) and `orValue()`/`value()` of such a chain
 * included (present, its value is the request's; absent, a literal default such as `[]` has no
 * elements to compare). Applied once per compiled program, beside logic.ts.
 */
import type { RawNode } from './walk.ts';
import { celError } from './values.ts';

/** The activation variables that hold the API server's own values of the object (not CEL values). */
const REQUEST_ROOTS = new Set(['object', 'oldObject']);

type Handle = (left: unknown, right: unknown, ast: unknown, ev: unknown) => unknown;
interface BinaryNode extends RawNode {
  handle?: Handle;
}

/** The steps of a chain into a value: field and index, and their optional forms. */
const STEPS = new Set(['.', '[]', '.?', '[?]']);
/** The calls that take a value out of an optional chain. */
const UNWRAPS = new Set(['orValue', 'value']);

/**
 * True when `node` is `object`, `object.a`, `object.a[0]`, `object.?a.orValue(x)`, ..., or such a
 * chain from `variables.<name>` for a name in `variables` (variables that are themselves such a
 * chain), or from a comprehension variable in `locals` (an element or value of such a chain).
 */
export function readsRequestValue(node: unknown, variables: ReadonlySet<string> = NONE, locals: ReadonlySet<string> = NONE): boolean {
  const n = node as RawNode | undefined;
  if (!n || typeof n !== 'object') return false;
  if (n.op === 'id') return REQUEST_ROOTS.has(n.args as string) || locals.has(n.args as string);
  if (n.op === 'rcall' && Array.isArray(n.args) && UNWRAPS.has(n.args[0] as string)) return readsRequestValue(n.args[1], variables, locals);
  if (STEPS.has(n.op as string) && Array.isArray(n.args)) {
    const base = n.args[0] as RawNode | undefined;
    if (n.op === '.' && base?.op === 'id' && base.args === 'variables') return variables.has(n.args[1] as string);
    return readsRequestValue(base, variables, locals);
  }
  return false;
}
const NONE: ReadonlySet<string> = new Set();

/** A map or list of the request compared with a value of another kind (null aside): cel-go's error. */
export function crossKindEquality(left: unknown, right: unknown): boolean {
  if (left === null || right === null || typeof left !== 'object' || left instanceof Promise || right instanceof Promise) return false;
  if (Array.isArray(left)) return !Array.isArray(right);
  if ((left as object).constructor !== Object) return false;
  return typeof right !== 'object' || Array.isArray(right) || ((right as object).constructor !== Object && !(right instanceof Map));
}

/** The macros whose variables range over their receiver's elements (or a map's keys, and values in the two-variable form). */
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'filter', 'map', 'transformList', 'transformMap', 'transformMapEntry']);

/**
 * Makes every `==` of the checked AST `root` whose left side reads the request raise as cel-go
 * does; `variables` names the variables that hold a value of the request as it is.
 */
export function useCelGoEquality(root: unknown, variables?: ReadonlySet<string>): void {
  walk(root, variables ?? NONE, NONE);
}

function walk(node: unknown, variables: ReadonlySet<string>, locals: ReadonlySet<string>): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n, variables, locals);
    return;
  }
  const n = node as RawNode | undefined;
  if (!n || typeof n !== 'object' || typeof n.op !== 'string' || n.op === 'value') return;
  const args = n.args;
  if (n.op === 'rcall' && Array.isArray(args) && COMPREHENSIONS.has(args[0] as string) && Array.isArray(args[2])) {
    walk(args[1], variables, locals);
    const parts = args[2] as RawNode[];
    // The iteration variables: one (element, or a map's key) or two (index or key, then the value).
    const names = parts
      .slice(0, parts.length === 2 ? 1 : 2)
      .filter((p) => p?.op === 'id')
      .map((p) => p.args as string);
    const inner = new Set(locals);
    for (const name of names) inner.delete(name);
    // A key of a map is a string, never compared across kinds as a request value would be: naming it too is harmless.
    if (elementsOfRequest(args[1], variables, locals)) inner.add(names[names.length - 1]!);
    walk(parts.slice(names.length), variables, inner);
    return;
  }
  if (n.op === '==' && Array.isArray(args) && readsRequestValue(args[0], variables, locals)) wrap(n as BinaryNode);
  if (Array.isArray(args)) walk(args, variables, locals);
  else if (typeof args === 'object' && args !== null) walk(args, variables, locals);
}

/**
 * True when the elements (or a map's values) of `node` are values of the request as they are: a
 * chain into the request, or `filter` of one, or `map` of one to a chain from its variable.
 */
function elementsOfRequest(node: unknown, variables: ReadonlySet<string>, locals: ReadonlySet<string>): boolean {
  if (readsRequestValue(node, variables, locals)) return true;
  const n = node as RawNode | undefined;
  if (!n || n.op !== 'rcall' || !Array.isArray(n.args) || !Array.isArray(n.args[2])) return false;
  const [name, receiver, parts] = n.args as [string, RawNode, RawNode[]];
  if (!elementsOfRequest(receiver, variables, locals)) return false;
  if (name === 'filter') return true;
  if (name !== 'map' || parts.length !== 2 || parts[0]?.op !== 'id') return false;
  return readsRequestValue(parts[1], variables, new Set([...locals, parts[0].args as string]));
}

function wrap(binary: BinaryNode): void {
  const handle = binary.handle;
  if (!handle) return;
  binary.handle = (left, right, ast, ev) => {
    if (crossKindEquality(left, right)) throw celError('no such overload');
    return handle(left, right, ast, ev);
  };
}
