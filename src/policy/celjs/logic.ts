/**
 * `&&` and `||` as cel-go evaluates them: both sides are tried (commutative short-circuit), and
 * when neither side decides, the error reported is the left-most one. cel-js reports the right
 * side's error instead, so `has(object.data.ok) || variables.v == 'x'` on a DELETE (no object)
 * would be worded differently from the API server. Applied once per compiled program.
 */
import { forEachNode } from './walk.ts';

interface Evaluator {
  tryEval(ast: unknown, ctx: unknown): unknown;
}
interface LogicalNode {
  op: string;
  args: unknown[];
  left?: unknown;
  right?: unknown;
  evaluate?: (ev: Evaluator, ast: LogicalNode, ctx: unknown) => unknown;
}

/** Replaces the evaluation of every `&&` and `||` in the checked AST `root`. */
export function useCelGoLogic(root: unknown): void {
  forEachNode(root, (node) => {
    if (node.op === '||') (node as unknown as LogicalNode).evaluate = (ev, ast, ctx) => logical(true, ev, ast, ctx);
    else if (node.op === '&&') (node as unknown as LogicalNode).evaluate = (ev, ast, ctx) => logical(false, ev, ast, ctx);
  });
}

/** `decides` is the value that settles the operator: true for `||`, false for `&&`. */
function logical(decides: boolean, ev: Evaluator, ast: LogicalNode, ctx: unknown): boolean {
  const left = ev.tryEval(ast.left ?? ast.args[0], ctx);
  if (left === decides) return decides;
  const right = ev.tryEval(ast.right ?? ast.args[1], ctx);
  if (right === decides) return decides;
  if (typeof left === 'boolean' && typeof right === 'boolean') return !decides;
  throw asError(typeof left === 'boolean' ? right : left);
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error('no such overload');
}
