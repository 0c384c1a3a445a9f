/**
 * The parts of cel-js's checker and evaluator that our macros reach (cel-js does not export
 * their types). One description, so a cel-js upgrade that changes them breaks in one place.
 */

export interface Node {
  op: string;
  args: unknown;
}
/**
 * A node of a checked program, as the cost instrumentation (cost/instrument.ts) and the compiled shortcut
 * (fast/compiler.ts) read it: `meta.alternate` is a macro's expansion (or a constant's value),
 * `meta.macro` a macro with its own evaluate (`has()` keeps its select chain in `macroHasProps`),
 * `handle` the dispatch the checker set for a call or operator.
 */
export interface CheckedNode extends Node {
  meta: { alternate?: CheckedNode; macro?: { macroHasProps?: CheckedNode[] } & Record<string, unknown> };
  handle?: (...args: never[]) => unknown;
  checkedType?: { name: string };
}
export interface TypeDecl {
  kind: string;
  name: string;
  keyType?: TypeDecl;
  valueType?: TypeDecl;
  hasPlaceholderType?: boolean;
  templated(registry: unknown, bind: Map<string, string>): TypeDecl;
}
export interface Registry {
  getListType(t: TypeDecl): TypeDecl;
  getMapType(k: TypeDecl, v: TypeDecl): TypeDecl;
}
export interface Checker {
  check(node: Node, ctx: unknown): TypeDecl;
  getType(name: string): TypeDecl;
  createError(code: string, message: string, node: Node): Error;
  formatType(t: TypeDecl): string;
  registry: Registry;
}
export interface Evaluator {
  run(node: Node, ctx: unknown): unknown;
  tryEval(node: Node, ctx: unknown): unknown;
}
export interface Scope {
  forkWithVariable(name: string, type: TypeDecl): Scope;
  reuse(parent: unknown): Scope;
  setIterValue(v: unknown, ev: Evaluator): Scope;
}
