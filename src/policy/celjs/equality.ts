/**
 * `==` with a map or list read from the request's object on the left, as the API server evaluates
 * it: its values of `object` and `oldObject` compare only with values of their own kind or null,
 * and raise `no such overload` otherwise (apiserver pkg/cel/common: MaybeNoSuchOverloadErr), where
 * cel-js (and cel-go's own literals) say false. Not `params` (the API server's ConfigMap data is a
 * plain CEL map there: false, as the differential test shows), nor `request` and `namespaceObject`
 * (typed in the API server, so such a comparison is refused on write there; dyn here).
 * `!=` is not affected: cel-go's is "Equal is not true", so the error reads as true.
 * Which operand came from the request is known from the syntax: a field or index chain from one
 * of those variables. Applied once per compiled program, beside logic.ts.
 */
import { forEachNode, type RawNode } from './walk.ts';
import { celError } from './values.ts';

/** The activation variables that hold the API server's own values of the object (not CEL values). */
const REQUEST_ROOTS = new Set(['object', 'oldObject']);

type Handle = (left: unknown, right: unknown, ast: unknown, ev: unknown) => unknown;
interface BinaryNode extends RawNode {
  handle?: Handle;
}

/**
 * True when `node` is `object`, `object.a`, `object.a[0]`, ... (no optional steps), or such a
 * chain from `variables.<name>` for a name in `variables` (variables that are themselves such a chain).
 */
export function readsRequestValue(node: unknown, variables: ReadonlySet<string> = NONE): boolean {
  const n = node as RawNode | undefined;
  if (!n || typeof n !== 'object') return false;
  if (n.op === 'id') return REQUEST_ROOTS.has(n.args as string);
  if ((n.op === '.' || n.op === '[]') && Array.isArray(n.args)) {
    const base = n.args[0] as RawNode | undefined;
    if (n.op === '.' && base?.op === 'id' && base.args === 'variables') return variables.has(n.args[1] as string);
    return readsRequestValue(base, variables);
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

/**
 * Makes every `==` of the checked AST `root` whose left side reads the request raise as
 * cel-go does; `variables` names the variables that hold a value of the request as it is.
 */
export function useCelGoEquality(root: unknown, variables?: ReadonlySet<string>): void {
  forEachNode(root, (node) => {
    if (node.op !== '==' || !Array.isArray(node.args) || !readsRequestValue(node.args[0], variables)) return;
    const binary = node as BinaryNode;
    const handle = binary.handle;
    if (!handle) return;
    binary.handle = (left, right, ast, ev) => {
      if (crossKindEquality(left, right)) throw celError('no such overload');
      return handle(left, right, ast, ev);
    };
  });
}
