/**
 * Where cel-go places a type-check error in an expression: the offset of a selection's `.`, an
 * operator's token, a call's `(`, an index's `[`, from a cel-js AST node's position. Shared by the
 * schema type check (typecheck/check.ts) and compile (engine/environment.ts), so both put the
 * caret where the API server does. Owns only the place; the words are the callers'.
 */

export interface PositionedNode {
  op: string;
  args: unknown;
  pos?: number;
  start?: number;
  end?: number;
}

const BINARY = new Set(['==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', 'in', '&&', '||']);

/** Where cel-go places an error: at a selection's `.`, an operator's token (a conditional's `?`), a call's `(`, an index's `[`. */
export function errorOffset(source: string, node: PositionedNode): number {
  const pos = node.pos ?? 0;
  const args = Array.isArray(node.args) ? (node.args as unknown[]) : [];
  const after = (from: number, token: string) => {
    const at = source.indexOf(token, from);
    return at < 0 ? pos : at;
  };
  if (node.op === '.' || node.op === '.?') return Math.max(0, source.lastIndexOf('.', pos - 1));
  if (BINARY.has(node.op)) {
    const left = args[0] as PositionedNode | undefined;
    return after(left?.end ?? pos, node.op);
  }
  if (node.op === 'call' || node.op === 'rcall') {
    const name = typeof args[0] === 'string' ? args[0] : '';
    const receiver = node.op === 'rcall' ? (args[1] as PositionedNode | undefined) : undefined;
    return after(after(receiver?.end ?? pos, name) + name.length, '(');
  }
  if (node.op === '[]' || node.op === '[?]') return after((args[0] as PositionedNode | undefined)?.end ?? pos, '[');
  if (node.op === '?:') return after((args[0] as PositionedNode | undefined)?.end ?? pos, '?');
  return pos;
}
