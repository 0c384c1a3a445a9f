/**
 * Parsing a CEL expression as cel-go does where cel-js parses less: the one place expressions
 * are parsed for compiling and type checking. Owns the `has()` macro's operand rule and the other
 * node-level adjustments below, set on the tree for cel-js's checker; must not type-check or
 * evaluate anything itself.
 *
 * cel-go's `has()` takes a field selection whose operand is any expression
 * (`has(object.spec.containers[0].securityContext)`, `has({'a': 1}.a)`); cel-js takes only a chain
 * of selections from an identifier and refuses the rest as "has() invalid argument", so policies
 * the API server accepts would be refused. The macro's evaluation already runs any operand (the
 * last of `macroHasProps`); only its type check is narrower, and that is what is replaced here.
 *
 * What cel-go parses that cel-js does not is rewritten first into what it does (rewrite.ts); what
 * cel-js parses and Kubernetes' environment does not declare (`cel.bind`), or cel-go cannot plan (an
 * index by the literal null), is refused in cel-go's words.
 * Where cel-js's checker types less than cel-go's (an empty list as a quantifier's range, an optional
 * of unbound value type selected of) the node is typed dyn (each function below says why).
 *
 * Also bounds what is parsed as the API server bounds it (limits.ts: refused in its words before
 * cel-js sees it), and shapes cel-js's tree as cel-go's is: a chain of `&&` or `||` balanced (cel-js
 * nests one node per term, 20,000 deep in an expression the API server takes, deeper than any
 * stack), runs of `!` and `-` folded. So no walk, check or evaluation of what is admitted goes
 * deeper than limits.ts' AST_DEPTH_LIMIT, on any thread.
 */
import type { Environment, ParseResult } from '@marcbachmann/cel-js';
import { forEachNode, type RawNode } from './walk.ts';
import { AST_DEPTH_LIMIT, CelLimitError, astDepth, checkCelGoLimits } from './limits.ts';
import { restoreQuotedFields, rewriteForCelJs } from './rewrite.ts';
import { celGoSyntaxError } from './syntax-errors.ts';
import { celError, Optional, UnsignedInt } from './values.ts';

interface Checker {
  check(node: unknown, ctx: unknown): unknown;
  getType(name: string): unknown;
  createError(code: string, message: string, node: unknown): Error;
}

interface SelectNode {
  op: string;
  args: unknown[];
}

interface HasMacro {
  args: SelectNode[];
  macroHasProps?: SelectNode[];
  typeCheck: (checker: Checker, macro: HasMacro, ctx: unknown) => unknown;
  evaluate?: (ev: { run(node: unknown, ctx: unknown): unknown }, macro: HasMacro, ctx: unknown) => unknown;
}

/**
 * `has(optional.of({'c': 1}).c)` is true, `has({'k': optional.none()}.k.c)` false in cel-go (tried
 * on kube-apiserver 1.37): the field is looked for in the optional's value, none has no field.
 */
function evaluateHasOfOptional(ev: { run(node: unknown, ctx: unknown): unknown }, macro: HasMacro, ctx: unknown): unknown {
  const select = macro.args[0]!;
  let value = ev.run(select.args[0], ctx);
  if (value instanceof Promise) throw celError('has() of an optional: no asynchronous operand');
  if (value instanceof Optional) {
    if (!value.hasValue()) return false;
    value = value.value();
  }
  const field = String(select.args[1]);
  if (value instanceof Map) return value.has(field);
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Set)) return Object.hasOwn(value, field);
  throw celError(`invalid type for field selection: ${field}`);
}

/** cel-js's has() type check with cel-go's rule: the argument is a selection, of any operand. */
function typeCheckHas(checker: Checker, macro: HasMacro, ctx: unknown): unknown {
  let node = macro.args[0]!;
  if (node.op !== '.') throw checker.createError('invalid_macro_argument', 'has() invalid argument', node);
  if (!macro.macroHasProps) {
    const props: SelectNode[] = [];
    while (node.op === '.' || node.op === '.?') {
      props.push(node);
      node = node.args[0] as SelectNode;
    }
    if (node.op === 'id') checker.check(node, ctx);
    // Another operand is typed up to the tested field: a selection on an optional value that no
    // `.?` step made is tested as cel-go tests it (cel-js's own walk would find every field of
    // an optional present): on the optional's value, false when it has none.
    else if (String(typeName(checker.check(macro.args[0]!.args[0], ctx))).startsWith('optional') && !props.some((p) => p.op === '.?')) macro.evaluate = evaluateHasOfOptional;
    props.push(node);
    macro.macroHasProps = props;
  }
  return checker.getType('bool');
}

const QUANTIFIERS = new Set(['all', 'exists', 'exists_one']);

/**
 * `[7, 8, 9][dyn(0u)]`: cel-go indexes a list by a uint it finds at run time, cel-js only by an int
 * (No such key: 0). A uint reaches an index only from a uint literal or a `uint()` call (request
 * values are ints or doubles), so only an index that holds one is looked at, and a uint there
 * indexes a list as the int it equals: no other index, the hot path's among them, changes.
 */
function mayBeUint(index: unknown): boolean {
  let found = false;
  forEachNode(index, (n) => {
    if ((n.op === 'value' && n.args instanceof UnsignedInt) || (n.op === 'call' && Array.isArray(n.args) && n.args[0] === 'uint')) found = true;
  });
  return found;
}

function indexListsByUint(node: RawNode): void {
  type Indexing = { left: unknown; right: unknown; handle(left: unknown, right: unknown, ast: unknown, ev: unknown): unknown };
  const indexing = node as RawNode & { setMeta?: (key: string, value: unknown) => unknown };
  if (typeof indexing.setMeta !== 'function') return;
  indexing.setMeta('evaluate', (ev: { run(node: unknown, ctx: unknown): unknown }, ast: Indexing, ctx: unknown) => {
    const left = ev.run(ast.left, ctx);
    const right = ev.run(ast.right, ctx);
    return ast.handle(left, right instanceof UnsignedInt && Array.isArray(left) ? BigInt(right.valueOf() as bigint) : right, ast, ev);
  });
}
const ONE_VARIABLE_MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/**
 * `{6: 'six', 7: 'seven'}.exists_one(k, k % 5 == 2)`: cel-js builds a map literal as a plain
 * object, its keys strings, so a one-variable macro over it sees `'6'` where cel-go sees 6 (and
 * fails: Variable 'k' is not of type 'int'). As the range of such a macro (never anywhere else, so
 * no other path changes), a map literal is built as a Map whose keys keep their values. Maps of
 * the request have string keys and never reach this.
 */
function keepMapLiteralKeys(range: unknown): void {
  const node = range as { op?: string; args?: unknown; setMeta?: (key: string, value: unknown) => unknown };
  if (node?.op !== 'map' || !Array.isArray(node.args) || node.args.length === 0 || typeof node.setMeta !== 'function') return;
  const entries = node.args as [unknown, unknown][];
  if (entries.every(([key]) => (key as { op?: string; args?: unknown }).op === 'value' && typeof (key as { args?: unknown }).args === 'string')) return;
  node.setMeta('evaluate', (ev: { run(node: unknown, ctx: unknown): unknown }, _ast: unknown, ctx: unknown) => {
    const pairs = entries.map(([key, value]) => [ev.run(key, ctx), ev.run(value, ctx)]);
    // an entry that awaits an authorizer check is awaited as cel-js awaits its own map's
    if (pairs.some(([k, v]) => k instanceof Promise || v instanceof Promise)) return Promise.all(pairs.map((pair) => Promise.all(pair))).then((done) => new Map(done as [unknown, unknown][]));
    return new Map(pairs as [unknown, unknown][]);
  });
}

/**
 * `[].all(e, e > 0)`: cel-go binds the empty literal's element type as the body needs it, cel-js
 * finds `>` on its unbound type parameter ambiguous and refuses it. As the range of a quantifier
 * (a bool, whatever the element), the empty literal is typed list<dyn>: the same answer, and the
 * same tree and cost (a `dyn([])` would add a call).
 */
function typeEmptyRangeDyn(range: unknown): void {
  const node = range as { op?: string; args?: unknown; setMeta?: (key: string, value: unknown) => unknown };
  if (node?.op !== 'list' || !Array.isArray(node.args) || node.args.length || typeof node.setMeta !== 'function') return;
  node.setMeta('check', (checker: Checker) => checker.getType('list<dyn>'));
}

const SELECTIONS = new Set(['.', '.?', '[]', '[?]']);
const OPTIONAL_MACROS = new Set(['optMap', 'optFlatMap']);

interface TypeLike {
  kind?: string;
  valueType?: TypeLike;
}
interface Checkable {
  op?: string;
  meta?: { check?: (checker: Checker, node: unknown, ctx: unknown) => unknown; macro?: { typeCheck: (checker: Checker, macro: unknown, ctx: unknown) => unknown } };
  setMeta?: (key: string, value: unknown) => unknown;
}

/**
 * `optional.none().?x`, `{}.?k.missing`: cel-go binds the type parameter of an optional whose value
 * type is unbound (the empty map's, optional.none()'s) as what is selected of it needs, and answers
 * optional.none(); cel-js refuses to select of it (Cannot index type 'undefined'). Where such an
 * optional is selected of, indexed or mapped, it is typed optional<dyn>: the same answers.
 */
function typeUnboundOptionalDyn(operand: unknown): void {
  const node = operand as Checkable;
  const meta = node?.meta;
  if (!meta || typeof node.setMeta !== 'function') return;
  const widen = (checker: Checker, type: unknown): unknown => {
    const t = type as TypeLike;
    return t?.kind === 'optional' && t.valueType?.kind === 'param' ? checker.getType('optional<dyn>') : type;
  };
  if (meta.macro) {
    const macro = meta.macro;
    const typeCheck = macro.typeCheck;
    macro.typeCheck = (checker, m, ctx) => widen(checker, typeCheck.call(macro, checker, m, ctx));
  } else if (meta.check) {
    const check = meta.check;
    node.setMeta('check', (checker: Checker, n: unknown, ctx: unknown) => widen(checker, check(checker, n, ctx)));
  }
}

function isNullLiteral(node: unknown): boolean {
  return typeof node === 'object' && node !== null && (node as SelectNode).op === 'value' && (node as SelectNode).args === null;
}

/** The identifier `cel`, cel-js's namespace of cel.bind. */
function isCelNamespace(node: unknown): boolean {
  return typeof node === 'object' && node !== null && (node as SelectNode).op === 'id' && (node as SelectNode).args === ('cel' as unknown);
}

function typeName(type: unknown): unknown {
  return typeof type === 'object' && type !== null && 'name' in type ? (type as { name: unknown }).name : type;
}

/**
 * Parses `source` in `env`, with `has()` as cel-go has it. Throws CelLimitError past the API
 * server's limits, and cel-js's parse errors.
 */
export function parseExpression(env: Environment, source: string): ParseResult {
  // What cel-go parses and cel-js does not (quoted field names, optional entries, raw bytes, ...)
  // rewritten into what it does: rewrite.ts
  const { source: rewritten, quoted } = rewriteForCelJs(checkCelGoLimits(source));
  let program: ParseResult;
  try {
    program = env.parse(rewritten);
  } catch (err) {
    // cel-js words a syntax error its own way, at no place: said as cel-go says it, where it is
    throw celGoSyntaxError(source) ?? err;
  }
  restoreQuotedFields(program.ast, quoted);
  const logic: LogicNode[] = [];
  forEachNode(program.ast, (node) => {
    if (node.op === '&&' || node.op === '||') logic.push(node as LogicNode);
    const args = node.args as unknown[];
    if (node.op === 'rcall' && Array.isArray(args) && args[0] === 'bind' && isCelNamespace(args[1])) {
      // cel-js's own macro; Kubernetes enables no ext.Bindings, and cel-go's checker finds no `cel`
      throw new Error("undeclared reference to 'cel' (in container '')");
    }
    if (node.op === 'rcall' && Array.isArray(args) && QUANTIFIERS.has(args[0] as string)) typeEmptyRangeDyn(args[1]);
    if (node.op === 'rcall' && Array.isArray(args) && ONE_VARIABLE_MACROS.has(args[0] as string) && Array.isArray(args[2]) && args[2].length <= 3) keepMapLiteralKeys(args[1]);
    if (node.op === '[]' && Array.isArray(args) && mayBeUint(args[1])) indexListsByUint(node);
    if (SELECTIONS.has(node.op) && Array.isArray(args)) typeUnboundOptionalDyn(args[0]);
    if ((node.op === '[]' || node.op === '[?]') && Array.isArray(args) && isNullLiteral(args[1])) {
      // cel-go plans a constant index as a qualifier, and has none for null: the API server
      // refuses it on apply in these words (tried on kube-apiserver 1.37: `{null: false}[null]`)
      throw new Error('program instantiation failed: invalid qualifier type: types.Null');
    }
    if (node.op === 'rcall' && Array.isArray(args) && OPTIONAL_MACROS.has(args[0] as string)) typeUnboundOptionalDyn(args[1]);
    if (node.op !== 'call' || !Array.isArray(args) || args[0] !== 'has') return;
    const macro = (node as unknown as { meta?: { macro?: HasMacro } }).meta?.macro;
    if (macro && typeof macro.typeCheck === 'function') macro.typeCheck = typeCheckHas;
  });
  balanceLogic(logic);
  // What the source's limits let through is never deeper; this holds for a source they could not
  // follow (cel-js takes some that cel-go's grammar does not), before anything walks the tree.
  if (astDepth(program.ast) > AST_DEPTH_LIMIT) throw new CelLimitError('max recursion depth exceeded');
  return program;
}

interface LogicNode extends RawNode {
  args: [RawNode, RawNode];
  start: number;
  end: number;
  pos: number;
}

/**
 * Each chain of `&&` (or `||`), which cel-js nests to the left one term at a time, as cel-go's
 * parser builds it: a balanced tree of the same terms in the same order (parser/helper.go's
 * logicManager.balancedTree), made of the chain's own nodes.
 */
function balanceLogic(nodes: LogicNode[]): void {
  const inner = new Set<RawNode>();
  for (const node of nodes) if (node.args[0].op === node.op) inner.add(node.args[0]);
  for (const top of nodes) {
    if (inner.has(top)) continue;
    const spine: LogicNode[] = [];
    let node: RawNode = top;
    while (node.op === top.op && (node === top || inner.has(node))) {
      spine.push(node as LogicNode);
      node = (node as LogicNode).args[0];
    }
    if (spine.length < 3) continue; // two terms or three: cel-js's shape is cel-go's
    const terms = [node, ...spine.toReversed().map((n) => n.args[1])];
    const free = spine.slice(1);
    const build = (lo: number, hi: number, into: LogicNode): LogicNode => {
      const mid = Math.floor((lo + hi + 1) / 2);
      const left = mid === lo ? terms[mid]! : build(lo, mid - 1, free.pop()!);
      const right = mid === hi ? terms[mid + 1]! : build(mid + 1, hi, free.pop()!);
      into.args = [left, right];
      into.start = (left as LogicNode).start;
      into.pos = into.start;
      into.end = (right as LogicNode).end;
      return into;
    };
    build(0, terms.length - 2, top);
  }
}
