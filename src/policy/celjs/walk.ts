/**
 * Compile-time validation of literal arguments, as cel-go's AST validators and program-time
 * optimisations do in the API server: a walk over cel-js's checked AST that hands every function
 * call, with its literal arguments and static argument types, to the libraries' validators.
 */

/** A function call as the validators see it. */
export interface CallNode {
  name: string;
  /** Set for receiver-style calls (`x.f(...)`). */
  receiver?: ArgNode;
  args: ArgNode[];
}

export interface ArgNode {
  /** The literal value, when the argument is a literal (string, int, ...). */
  literal?: unknown;
  /** The elements, when the argument is a list literal. */
  elements?: ArgNode[];
  /** The static type cel-js's checker gave it (`int`, `list<string>`, `dyn`, ...). */
  type: string;
}

export interface RawNode {
  op: string;
  args: unknown;
  checkedType?: { name: string };
}

function isNode(v: unknown): v is RawNode {
  return typeof v === 'object' && v !== null && typeof (v as RawNode).op === 'string';
}

function argNode(node: RawNode): ArgNode {
  const out: ArgNode = { type: node.checkedType?.name ?? 'dyn' };
  if (node.op === 'value') out.literal = node.args;
  if (node.op === 'list' && Array.isArray(node.args)) out.elements = (node.args as unknown[]).filter(isNode).map(argNode);
  return out;
}

/** Calls `visit` for every call in the checked AST `root`, outermost first. */
export function forEachCall(root: unknown, visit: (call: CallNode) => void): void {
  forEachNode(root, (node) => {
    const args = node.args;
    if (node.op === 'call' && Array.isArray(args) && typeof args[0] === 'string' && Array.isArray(args[1])) {
      visit({ name: args[0], args: (args[1] as unknown[]).filter(isNode).map(argNode) });
    } else if (node.op === 'rcall' && Array.isArray(args) && typeof args[0] === 'string' && isNode(args[1]) && Array.isArray(args[2])) {
      visit({ name: args[0], receiver: argNode(args[1]), args: (args[2] as unknown[]).filter(isNode).map(argNode) });
    }
  });
}

/** Calls `visit` for every node of cel-js's checked AST `root`, macro expansions included, outermost first. */
export function forEachNode(root: unknown, visit: (node: RawNode) => void): void {
  const stack: unknown[] = [root];
  const seen = new Set<unknown>();
  while (stack.length) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const n of node) stack.push(n);
      continue;
    }
    if (!isNode(node)) {
      // macros keep their pieces in plain objects (comprehension steps, bind values, ...)
      if (node && typeof node === 'object' && node.constructor === Object) for (const v of Object.values(node)) if (typeof v === 'object') stack.push(v);
      continue;
    }
    visit(node);
    const args = node.args;
    if (node.op === 'value') continue;
    if (Array.isArray(args)) for (const a of args) stack.push(a);
    else if (typeof args === 'object' && args !== null) stack.push(args);
  }
}
