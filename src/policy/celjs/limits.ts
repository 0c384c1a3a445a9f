/**
 * The API server's bounds on a CEL expression's size and depth, checked before cel-js parses it,
 * in the API server's words; and the depth of cel-js's tree every walk is kept safe at. Owns only
 * those bounds: parse.ts applies them. How each was found: below. The tokens it counts over are
 * lexer.ts'.
 */
import { Syntax, tokenize, type Token } from './lexer.ts';

/**
 * Found by trying kube-apiserver 1.37 (cel-go 0.29.2, no parser options of Kubernetes' own) with
 * ValidatingAdmissionPolicies, server-side dry run:
 * - more than 100,000 code points: `expression code point size exceeds limit: size: N, limit 100000`
 *   (cel-go's ExpressionSizeCodePointLimit default);
 * - a grammar rule nested more than 250 deep while parsing (cel-go's recursionListener over ANTLR's
 *   rule entries): `expression recursion limit exceeded: 250`. 249 parentheses, nested lists or
 *   maps, or 249 chained `a ? b :` pass, 250 do not; the right operand of a relation or of `+` /
 *   `*` nests the rule `relation` or `calc` once more (`true == (` passes 124 deep, not 125;
 *   `1 + 2 * (` 83, not 84), while a left-associative chain (`a + b + c`, `a.b.c`) does not nest;
 * - more than 250 nested operations of the kinds cel-go's visitor counts (a ternary, a relation,
 *   `+ - * / %`, a field selection, a method call, an index): `max recursion depth exceeded`
 *   (cel-go's maxRecursionDepth, 250): 250 chained `+` under a `>` is refused, 249 pass.
 * Both are reported at no location: `ERROR: <input>:-1:0: ...`. `&&` and `||` chains, `!` and `-`
 * runs are not bounded but by the size: cel-go balances the first and folds the second.
 * AST_DEPTH_LIMIT keeps every AST walk, compile step and evaluation safe on a 1 MiB stack (the main thread's).
 */

/** cel-go's ExpressionSizeCodePointLimit, which Kubernetes leaves at its default. */
export const CODE_POINT_LIMIT = 100_000;
/** cel-go's MaxRecursionDepth, which Kubernetes leaves at its default (both counters use it). */
export const RECURSION_LIMIT = 250;
/**
 * The deepest cel-js tree compiled; deeper is refused in the API server's words for depth, the same
 * verdict on every thread, never a thread's stack. Why 1,000: docs/adr/0020-cel-ast-depth-limit.md
 */
export const AST_DEPTH_LIMIT = 1000;

/** A refusal in the API server's words: `ERROR: <input>:-1:0: <message>`. */
export class CelLimitError extends Error {
  constructor(message: string) {
    super(`ERROR: <input>:-1:0: ${message}`);
  }
}

const RELATIONS = new Set(['<', '<=', '>=', '>', '==', '!=', 'in']);
/** The token kinds an operand may begin with. */
export const STARTS_OPERAND: ReadonlySet<string> = new Set(['literal', 'ident', '[', '{', '(', '.', '-', '!']);

/**
 * Follows CEL.g4's rules as ANTLR runs them, counting what cel-go counts: the nesting of the rules
 * `expr`, `relation` and `calc` (the only ones that can nest deeper than `expr`; ANTLR leaves and
 * re-enters a left-recursive rule at each step of a chain), and, returned by each step, the number
 * of counted operations above the deepest leaf. Recursion is only through `expr`, whose nesting is
 * bounded first, so this runs in a few hundred frames at most.
 */
class Recognizer {
  private i = 0;
  private expr = 0;
  private relation = 0;
  private calc = 0;
  /** Runs of `!` or `-` in front of an operand: [first, last] token indices. */
  readonly unaryRuns: [number, number][] = [];
  readonly tokens: Token[];
  constructor(tokens: Token[]) {
    this.tokens = tokens;
  }

  private peek(): string {
    return this.tokens[this.i]!.kind;
  }
  private next(): string {
    return this.tokens[this.i++]!.kind;
  }
  private expect(kind: string): void {
    if (this.next() !== kind) throw new Syntax(this.i - 1, kind);
  }
  private check(depth: number): void {
    if (depth > RECURSION_LIMIT) throw new CelLimitError(`expression recursion limit exceeded: ${RECURSION_LIMIT}`);
  }

  /** The whole expression: its visitor depth. */
  start(): number {
    const depth = this.parseExpr();
    if (this.peek() !== 'eof') throw new Syntax(this.i, 'eof');
    return depth;
  }

  // expr : conditionalOr ('?' conditionalOr ':' expr)?
  private parseExpr(): number {
    this.check(++this.expr);
    const condition = this.parseOr();
    let depth = condition;
    if (this.peek() === '?') {
      this.next();
      const whenTrue = this.parseOr();
      this.expect(':');
      depth = 1 + Math.max(condition, whenTrue, this.parseExpr());
    }
    this.expr--;
    return depth;
  }

  // conditionalOr and conditionalAnd: neither counted nor nested (cel-go balances them)
  private parseOr(): number {
    let depth = this.parseRelation();
    while (this.peek() === '||' || this.peek() === '&&') {
      this.next();
      depth = Math.max(depth, this.parseRelation());
    }
    return depth;
  }

  // relation : calc | relation op relation — the right operand nests `relation` once
  private parseRelation(): number {
    this.check(++this.relation);
    const operands = [this.parseCalc()];
    while (RELATIONS.has(this.peek())) {
      this.next();
      this.check(++this.relation);
      operands.push(this.parseCalc());
      this.relation--;
    }
    this.relation--;
    return chainDepth(operands);
  }

  // calc : unary | calc ('*'|'/'|'%') calc | calc ('+'|'-') calc
  private parseCalc(): number {
    this.check(++this.calc);
    const sums: number[] = [];
    let products = [this.parseCalcTerm(0)];
    let added = false;
    for (;;) {
      const op = this.peek();
      if (op === '+' || op === '-') {
        this.next();
        sums.push(chainDepth(products));
        added = true;
        products = [this.parseCalcTerm(1)];
      } else if (op === '*' || op === '/' || op === '%') {
        this.next();
        // calc(3) under the step of a `*` chain: under calc(2) too after a `+`
        products.push(this.parseCalcTerm(added ? 2 : 1));
      } else break;
    }
    sums.push(chainDepth(products));
    this.calc--;
    return chainDepth(sums);
  }

  private parseCalcTerm(nesting: number): number {
    this.calc += nesting;
    this.check(this.calc);
    const depth = this.parseUnary();
    this.calc -= nesting;
    return depth;
  }

  // unary : member | '!'+ member | '-'+ member (a literal may carry one more '-')
  private parseUnary(): number {
    const first = this.i;
    const kind = this.peek();
    if (kind === '!' || kind === '-') {
      while (this.peek() === kind) this.next();
      if (this.i - first > 1) this.unaryRuns.push([first, this.i - 1]);
      if (kind === '!' && this.peek() === '-' && this.tokens[this.i + 1]?.kind === 'literal') this.next();
    }
    return this.parseMember();
  }

  // member : primary | member '.' '?'? id ('(' exprList? ')')? | member '[' '?'? expr ']'
  private parseMember(): number {
    const steps: number[] = [];
    let depth = this.parsePrimary();
    for (;;) {
      if (this.peek() === '.') {
        this.next();
        let optional = false;
        if (this.peek() === '?') {
          this.next();
          optional = true;
        }
        if (this.next() !== 'ident') throw new Syntax(this.i - 1, optional ? 'ident?' : 'ident');
        if (!optional && this.peek() === '(') steps.push(this.parseArgs(')'));
        else steps.push(0);
      } else if (this.peek() === '[') {
        this.next();
        if (this.peek() === '?') this.next();
        steps.push(this.parseExpr());
        this.expect(']');
      } else break;
    }
    // each step is counted; the primary is under all of them, step j's arguments under k - j
    const k = steps.length;
    depth += k;
    steps.forEach((d, j) => (depth = Math.max(depth, k - j + d)));
    return depth;
  }

  private parsePrimary(): number {
    const kind = this.next();
    if (kind === 'literal') return 0;
    if (kind === '(') {
      const depth = this.parseExpr();
      this.expect(')');
      return depth;
    }
    if (kind === '[') return this.parseAggregate(']', false);
    if (kind === '{') return this.parseAggregate('}', true);
    if (kind === '.' || kind === 'ident') {
      if (kind === '.' && this.next() !== 'ident') throw new Syntax(this.i - 1, 'ident');
      if (this.peek() === '(') {
        this.next();
        return this.parseArgs(')', true);
      }
      // a message: a.b.C{field: value, ...}
      let j = this.i;
      while (this.tokens[j]?.kind === '.' && this.tokens[j + 1]?.kind === 'ident') j += 2;
      if (this.tokens[j]?.kind === '{') {
        this.i = j + 1;
        return this.parseFields();
      }
      return 0;
    }
    throw new Syntax(this.i - 1, 'operand');
  }

  private parseArgs(close: string, opened = false): number {
    if (!opened) this.expect('(');
    let depth = 0;
    if (this.peek() !== close) {
      depth = this.parseExpr();
      while (this.peek() === ',') {
        this.next();
        depth = Math.max(depth, this.parseExpr());
      }
    }
    this.expect(close);
    return depth;
  }

  private parseAggregate(close: string, entries: boolean): number {
    let depth = 0;
    while (this.peek() !== close) {
      if (this.peek() === '?') this.next();
      // after a trailing comma ANTLR wants the close alone
      else if (this.i > 0 && this.tokens[this.i - 1]!.kind === ',' && !STARTS_OPERAND.has(this.peek())) throw new Syntax(this.i, `${close}!`);
      depth = Math.max(depth, this.parseExpr());
      if (entries) {
        this.expect(':');
        depth = Math.max(depth, this.parseExpr());
      }
      if (this.peek() !== ',') break;
      this.next();
    }
    // ANTLR expects either the close or another element here
    if (this.next() !== close) throw new Syntax(this.i - 1, `${close},`);
    return depth;
  }

  private parseFields(): number {
    let depth = 0;
    while (this.peek() !== '}') {
      if (this.peek() === '?') this.next();
      if (this.next() !== 'ident') throw new Syntax(this.i - 1, 'ident');
      this.expect(':');
      depth = Math.max(depth, this.parseExpr());
      if (this.peek() !== ',') break;
      this.next();
    }
    if (this.next() !== '}') throw new Syntax(this.i - 1, '},');
    return depth;
  }
}

/**
 * Follows `tokens` (tokenize's) as CEL.g4 does: throws Syntax at the first token it cannot take,
 * CelLimitError past the API server's bounds (syntax-errors.ts' way in).
 */
export function recognize(tokens: Token[]): void {
  new Recognizer(tokens).start();
}

/** A left-associative chain's counted depth: its operands' depths, the first two under every step. */
function chainDepth(operands: number[]): number {
  const k = operands.length - 1;
  let depth = 0;
  operands.forEach((d, i) => (depth = Math.max(depth, (i === 0 ? k : k - i + 1) + d)));
  return depth;
}

/**
 * Throws CelLimitError where the API server refuses `source` for its size or depth. Returns the
 * source cel-js is to parse: the same, with runs of `!` or `-` before an operand folded to their
 * parity as cel-go folds them (blanks in their place, so positions hold), which cel-js would
 * otherwise nest one node per sign. A source the recognizer cannot follow (a syntax error, for
 * cel-js to report) is returned as it is; the depth of cel-js's tree still bounds it (parse.ts).
 */
export function checkCelGoLimits(source: string): string {
  let size = 0;
  for (const _ of source) size++;
  if (size > CODE_POINT_LIMIT) throw new CelLimitError(`expression code point size exceeds limit: size: ${size}, limit ${CODE_POINT_LIMIT}`);
  let recognizer: Recognizer;
  let depth: number;
  try {
    recognizer = new Recognizer(tokenize(source));
    depth = recognizer.start();
  } catch (err) {
    if (err instanceof Syntax) return source;
    throw err;
  }
  if (depth > RECURSION_LIMIT) throw new CelLimitError('max recursion depth exceeded');
  if (!recognizer.unaryRuns.length) return source;
  // token offsets are UTF-16 units: split by unit, not code point
  const units = source.split('');
  for (const [first, last] of recognizer.unaryRuns) {
    const count = last - first + 1;
    const keep = count % 2;
    for (let t = first; t <= last - keep; t++) {
      const { start, end } = recognizer.tokens[t]!;
      for (let u = start; u < end; u++) units[u] = ' ';
    }
  }
  return units.join('');
}

/**
 * The depth of cel-js's tree `root` (nodes under nodes, macro expansions included), found without
 * recursion; stops counting past `limit`.
 */
export function astDepth(root: unknown, limit = AST_DEPTH_LIMIT): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 0]];
  const seen = new Set<unknown>();
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    const node = value as { op?: unknown; args?: unknown };
    const isNode = typeof node.op === 'string';
    const d = isNode ? depth + 1 : depth;
    if (d > max) max = d;
    if (max > limit) return max;
    if (Array.isArray(value)) {
      for (const v of value) stack.push([v, d]);
    } else if (isNode) {
      if (node.op !== 'value') stack.push([node.args, d]);
    } else if ((value as object).constructor === Object) {
      for (const v of Object.values(value)) stack.push([v, d]);
    }
  }
  return max;
}
