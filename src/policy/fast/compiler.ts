/**
 * A shortcut for the common shapes of admission expressions: a checked program compiled once to
 * one JavaScript function (as fastify compiles its serializers), which reads the request's JSON
 * through V8's own property caches instead of cel-js's tree walk and run-time overload lookup.
 *
 * A shortcut, never a second semantics. It covers field selection and indexing, `has()`, `==`
 * `!=` on values of one primitive type, `<` `<=` `>` `>=` on ints or doubles, `!` `&&` `||` `?:`,
 * `size()`, `startsWith` `endsWith` `contains` `matches` and `+` on strings, `in` on a map or a
 * list of strings, `all` / `exists` over lists and maps, and the composited variables whose own
 * expressions compile, each only where the value's kind makes its answer plainly cel-js's.
 * Anything else at run time (another kind of value, a missing key, an error, passing the cost
 * limit) throws BAIL, and the program is evaluated by cel-js from the same point: errors, and
 * their words, are always cel-js's. An expression with any other kind of node (`map`, `filter`,
 * optionals, the other libraries, `authorizer`) is not compiled at all.
 * Costs are charged as cost/instrument.ts's instrumentation charges them: its static sum is charged by the
 * caller, and loop, branch and sized-call charges come from `runtimeCharges`.
 *
 * The compiled code reads the request's JSON as parsed: a whole number is an int (as Kubernetes
 * decodes it), whether still a JS number or already a BigInt, and anything else a double. So a
 * webhook whose expressions all compile never converts the request (values/convert.ts, `CONVERT`); cel-js
 * converts it the first time it is needed.
 *
 * No text of the expression goes into the generated code as it was written: field names and
 * strings go in as JSON string literals, ints as digits, other constants through an array.
 *
 * This file generates the code; runtime.ts holds what the code calls, shortcut.ts puts it in
 * front of cel-js. The tests check every answer against cel-js's (test/support/compiled-differential.ts).
 */
import { meter, tick } from '../cost/meter.ts';
import { runtimeCharges } from '../cost/instrument.ts';
import type { CheckedNode as Node } from '../celjs/types.ts';
import { bail, celSize, numberKind, regexMatches, spent, within } from './runtime.ts';

export type CompiledProgram = (activation: unknown) => unknown;

/** The activation's variables a compiled program may read (dyn in VAP's environment). */
const ROOT_VARIABLES = new Set(['object', 'oldObject', 'request', 'params', 'namespaceObject']);

class Unsupported extends Error {}

/**
 * Compiles `ast` (checked and instrumented for cost); undefined when it has a node the shortcut
 * does not cover. `variables`: the composited variables it may read, those whose own expressions
 * compile (so their values are of the kinds the compiled code knows). `strict`: a team's policy,
 * whose loop steps and sized operations count the meter's ticks as its instrumentation does.
 */
export function compileProgram(ast: unknown, variables: ReadonlySet<string> = new Set(), strict = false): CompiledProgram | undefined {
  const compiler = new Compiler(variables, strict);
  let body: string;
  try {
    const lines: string[] = [];
    const result = compiler.node(ast as Node, new Map(), lines);
    body = `${compiler.declarations()}\n${lines.join('\n')}\nX.variables = S;\nreturn ${result};`;
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
  let factory: (...helpers: unknown[]) => CompiledProgram;
  try {
    factory = makeFactory(body);
  } catch {
    return undefined; // code generation disallowed (node --disallow-code-generation-from-strings): cel-js answers
  }
  return factory(compiler.constants, meter, spent, bail, numberKind, Object.hasOwn, celSize, within, regexMatches, tick);
}

/** The generated function: on BAIL (or any error) the cost goes back to where it was, but for what the variables it read spent. */
function makeFactory(body: string): (...helpers: unknown[]) => CompiledProgram {
  return new Function(
    'K',
    'M',
    'X',
    'B',
    'N',
    'hasOwn',
    'size',
    'within',
    'matches',
    'T',
    `"use strict";\nreturn function compiled(A) {\nconst C = M.cost;\nlet S = 0, c;\ntry {\n${body}\n} catch (e) {\nM.cost = C + S;\nX.variables = S;\nthrow e;\n}\n};`,
  ) as (...helpers: unknown[]) => CompiledProgram;
}

/**
 * JS text that throws BAIL when `t`, read from a map or list, is not a value cel-js accepts:
 * absent (undefined), Object.prototype's (a function), or an object it has no type for (a JSON
 * object with its own "constructor" key).
 */
const requireValue = (t: string) => `if (${t} === undefined || (typeof ${t} === 'object' ? ${t} !== null && (c = ${t}.constructor) !== Object && c !== Array && c !== undefined : typeof ${t} === 'function')) B();`;

/** JS text: `t` is a JSON map (cel-js's plain-object maps). */
const isMapText = (t: string) => `typeof ${t} === 'object' && ${t} !== null && ((c = ${t}.constructor) === Object || c === undefined)`;

/** JS text that throws BAIL unless `t` is a JSON map. */
const requireMap = (t: string) => `if (!(${isMapText(t)})) B();`;

/**
 * requireMap(t) for a `t` about to be read as a map. When the statement just emitted loaded `t` and
 * ended in its requireValue, that check is dropped: every map passes it, and nothing ran between
 * (a select or has() follows its operand's load at once), so the same inputs still bail.
 */
function mapOnly(t: string, out: string[]): string {
  const last = out.length - 1;
  const check = ` ${requireValue(t)}`;
  if (last >= 0 && out[last]!.endsWith(check)) out[last] = out[last]!.slice(0, -check.length);
  return requireMap(t);
}

/** JS text over two operands (temporaries or literals): when an operator's answer is plainly cel-js's, and what it is. */
type Operands = (l: string, r: string) => string;
const COMPARISONS = new Set(['<', '<=', '>', '>=']);
const STRING_TESTS: Record<string, string> = { startsWith: 'startsWith', endsWith: 'endsWith', contains: 'includes' };

class Compiler {
  /** What the generated code reads as K[i]. */
  readonly constants: unknown[] = [];
  private readonly variables: ReadonlySet<string>;
  private readonly temps: string[] = [];
  /** The number kind (as N gives it) of each numeric literal's JS text. */
  private readonly literalKinds = new Map<string, number>();
  /** What follows a charge: BAIL past the limit, and in a team's policy also at a tick whose clock read is past the deadline. */
  private readonly pastLimit: string;

  constructor(variables: ReadonlySet<string>, strict: boolean) {
    this.variables = variables;
    this.pastLimit = strict ? ' > M.limit || (--M.ticks <= 0 && !T())' : ' > M.limit';
  }

  declarations(): string {
    return this.temps.length ? `let ${this.temps.join(', ')};` : '';
  }

  private temp(): string {
    const name = `t${this.temps.length}`;
    this.temps.push(name);
    return name;
  }

  private constant(value: unknown): string {
    this.constants.push(value);
    return `K[${this.constants.length - 1}]`;
  }

  /**
   * Emits into `out` the statements that compute `node`, and returns a JS expression (a temporary
   * or a literal) for its value. `scope` maps comprehension variables to their temporaries.
   */
  node(node: Node, scope: Map<string, string>, out: string[]): string {
    if (node.meta.alternate) return this.macro(node, scope, out);
    if (node.meta.macro) return this.has(node, scope, out);
    const args = node.args;
    switch (node.op) {
      case 'value':
        return this.literal(args);
      case 'id':
        return this.identifier(node, scope, out);
      case '.': {
        const [left, name] = args as [Node, string];
        if (typeof name !== 'string' || name === '__proto__' || left.checkedType?.name !== 'dyn') throw new Unsupported();
        if (left.op === 'id' && left.args === 'variables' && !scope.has('variables')) return this.variable(name, out);
        return this.select(this.node(left, scope, out), name, out);
      }
      case '&&':
      case '||':
        return this.logical(node.op, args as [Node, Node], scope, out);
      case '?:':
        return this.conditional(node, scope, out);
      case '!_': {
        const value = this.node(args as Node, scope, out);
        const t = this.temp();
        out.push(`if (typeof ${value} !== 'boolean') B(); ${t} = !${value};`);
        return t;
      }
      case '-_': {
        const operand = args as Node;
        // (a negative int literal within int64, as cel-js folds it)
        const n = operand.args;
        if (operand.op !== 'value' || !((typeof n === 'number' && !Number.isInteger(n)) || (typeof n === 'bigint' && n < 2n ** 63n))) throw new Unsupported();
        return typeof n === 'bigint' ? this.intLiteral(-n) : this.numberLiteral(this.constant(-(n as number)), 2);
      }
      case '==':
      case '!=':
        return this.binary(
          node,
          scope,
          out,
          (l, r) => this.sameKind(l, r, true),
          (l, r) => `${l} ${node.op} ${r}`,
        );
      case 'in':
        return this.membership(node, scope, out);
      case '[]':
        return this.index(node, scope, out);
      case '+':
        // strings only: int arithmetic has overflow errors, lists are copied
        return this.binary(
          node,
          scope,
          out,
          (l, r) => `typeof ${l} === 'string' && typeof ${r} === 'string'`,
          (l, r) => `${l} + ${r}`,
        );
      case 'call':
        return this.call(node, scope, out);
      case 'rcall':
        return this.receiverCall(node, scope, out);
      default:
        if (COMPARISONS.has(node.op))
          return this.binary(
            node,
            scope,
            out,
            (l, r) => this.sameKind(l, r, false),
            (l, r) => `${l} ${node.op} ${r}`,
          );
        throw new Unsupported();
    }
  }

  private literal(value: unknown): string {
    if (typeof value === 'string') return JSON.stringify(value);
    if (typeof value === 'boolean' || value === null) return String(value);
    if (typeof value === 'bigint') return this.intLiteral(value);
    // (a whole double such as 2.0 would read as an int here: left to cel-js)
    if (typeof value === 'number' && !Number.isInteger(value)) return this.numberLiteral(this.constant(value), 2);
    throw new Unsupported();
  }

  /** An int as a JS number where that is exact: compared with the JSON's numbers without a BigInt. */
  private intLiteral(value: bigint): string {
    const exact = value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER);
    return this.numberLiteral(exact ? `(${value})` : `(${value}n)`, 1);
  }

  private numberLiteral(text: string, kind: number): string {
    this.literalKinds.set(text, kind);
    return text;
  }

  /**
   * JS text: the two operands are ints (a BigInt and a number compare exactly in JS, so ints of
   * either form need no conversion), or doubles, or (for `equality`) strings, bools or nulls.
   * What a literal operand is, is known here.
   */
  private sameKind(l: string, r: string, equality: boolean): string {
    const known = (t: string) => (t.startsWith('"') ? 'string' : t === 'true' || t === 'false' ? 'boolean' : undefined);
    if (equality && (known(l) || known(r))) return known(l) ? `typeof ${r} === '${known(l)}'` : `typeof ${l} === '${known(r)}'`;
    const kl = this.literalKinds.get(l);
    const kr = this.literalKinds.get(r);
    const numbers = kl && kr ? String(kl === kr) : kl ? `N(${r}) === ${kl}` : kr ? `N(${l}) === ${kr}` : `N(${l}) !== 0 && N(${l}) === N(${r})`;
    if (!equality || kl || kr) return numbers;
    return `(typeof ${l} === typeof ${r} && (typeof ${l} === 'string' || typeof ${l} === 'boolean')) || (${l} === null && ${r} === null) || (${numbers})`;
  }

  private identifier(node: Node, scope: Map<string, string>, out: string[]): string {
    const name = node.args as string;
    const local = scope.get(name);
    if (local) return local;
    if (!ROOT_VARIABLES.has(name) || node.checkedType?.name !== 'dyn') throw new Unsupported();
    const t = this.temp();
    out.push(`${t} = A.${name}; ${requireValue(t)}`);
    return t;
  }

  /**
   * `variables.name`: its getter evaluates the variable's program once per request (a failure is
   * rethrown on every read, for cel-js to word); what that costs is kept in S.
   */
  private variable(name: string, out: string[]): string {
    if (!this.variables.has(name)) throw new Unsupported();
    const t = this.temp();
    const before = this.temp();
    out.push(`${before} = M.cost; try { ${t} = A.variables[${JSON.stringify(name)}]; } catch { S += M.cost - ${before}; B(); }`, `S += M.cost - ${before}; ${requireValue(t)}`);
    return t;
  }

  /** `left.name` on a JSON map: a present key's value; anything else is cel-js's to answer. */
  private select(left: string, name: string, out: string[]): string {
    const t = this.temp();
    out.push(`${mapOnly(left, out)} ${t} = ${left}[${JSON.stringify(name)}]; ${requireValue(t)}`);
    return t;
  }

  /** has(a.b.c): a.b must be present (else cel-js's no-such-key error), c is tested. */
  private has(node: Node, scope: Map<string, string>, out: string[]): string {
    const props = node.meta.macro?.macroHasProps;
    if (node.op !== 'call' || (node.args as unknown[])[0] !== 'has' || !Array.isArray(props) || props.length < 2) throw new Unsupported();
    let value = this.node(props[props.length - 1]!, scope, out);
    for (let i = props.length - 2; i >= 1; i--) {
      const select = props[i]!;
      const name = (select.args as unknown[])[1];
      if (select.op !== '.' || typeof name !== 'string' || name === '__proto__') throw new Unsupported();
      value = this.select(value, name, out);
    }
    const last = props[0]!;
    const name = (last.args as unknown[])[1];
    if (last.op !== '.' || typeof name !== 'string' || name === '__proto__') throw new Unsupported();
    const t = this.temp();
    const present = this.temp();
    out.push(`${mapOnly(value, out)} ${t} = hasOwn(${value}, ${JSON.stringify(name)}); if (${t}) { ${present} = ${value}[${JSON.stringify(name)}]; ${requireValue(present)} }`);
    return t;
  }

  /** `&&` / `||`: a left side that decides is the answer; otherwise both must be bools. */
  private logical(op: '&&' | '||', [left, right]: [Node, Node], scope: Map<string, string>, out: string[]): string {
    const decides = op === '||';
    const t = this.temp();
    out.push(`${t} = ${this.node(left, scope, out)};`);
    const inner: string[] = [];
    const r = this.node(right, scope, inner);
    out.push(`if (${t} === ${!decides}) {`, ...inner, `${t} = ${r}; if (typeof ${t} !== 'boolean') B();`, `} else if (${t} !== ${decides}) B();`);
    return t;
  }

  private conditional(node: Node, scope: Map<string, string>, out: string[]): string {
    const [condition, whenTrue, whenFalse] = node.args as [Node, Node, Node];
    const charges = runtimeCharges.branches.get(node);
    if (!charges) throw new Unsupported();
    const c = this.node(condition, scope, out);
    const t = this.temp();
    const branch = (n: Node, charge: number) => {
      const inner: string[] = [];
      const value = this.node(n, scope, inner);
      return [...(charge ? [`if ((M.cost += ${charge}) > M.limit) B();`] : []), ...inner, `${t} = ${value};`];
    };
    out.push(`if (${c} === true) {`, ...branch(whenTrue, charges[0]), `} else if (${c} === false) {`, ...branch(whenFalse, charges[1]), `} else B();`);
    return t;
  }

  private binary(node: Node, scope: Map<string, string>, out: string[], accepts: Operands, result: Operands, rightText?: string): string {
    const [left, right] = node.args as [Node, Node];
    const l = this.node(left, scope, out);
    const r = rightText ?? this.node(right, scope, out);
    const t = this.temp();
    out.push(`if (!(${accepts(l, r)})) B(); ${t} = ${result(l, r)};`);
    this.chargeSized(node, [l, r], t, out);
    return t;
  }

  /**
   * A string `in` a map's keys or a list of strings (a list literal of string constants is one
   * constant list, as cel-go folds it); ints, and lists of other things, are left to cel-js.
   */
  private membership(node: Node, scope: Map<string, string>, out: string[]): string {
    const right = (node.args as Node[])[1]!;
    let list: string | undefined;
    if (right.op === 'list') {
      const elements = right.args as Node[];
      if (!elements.every((e) => e.op === 'value' && typeof e.args === 'string')) throw new Unsupported();
      list = this.constant(Object.freeze(elements.map((e) => e.args)));
    }
    return this.binary(
      node,
      scope,
      out,
      (l) => `typeof ${l} === 'string'`,
      (l, r) => `within(${l}, ${r}, ${list !== undefined})`,
      list,
    );
  }

  /** `m[key]` on a JSON map with a string key (as `m.key`), `l[i]` on a list with an int index in range. */
  private index(node: Node, scope: Map<string, string>, out: string[]): string {
    const [left, right] = node.args as [Node, Node];
    if (left.checkedType?.name !== 'dyn') throw new Unsupported();
    const l = this.node(left, scope, out);
    const r = this.node(right, scope, out);
    const t = this.temp();
    out.push(
      `if (typeof ${r} === 'string' && ${r} !== '__proto__' && ${isMapText(l)}) {`,
      `${t} = ${l}[${r}];`,
      `} else if (Array.isArray(${l}) && N(${r}) === 1 && ${r} >= 0 && ${r} < ${l}.length) ${t} = ${l}[Number(${r})];`,
      `else B(); ${requireValue(t)}`,
    );
    return t;
  }

  /** A sized call or operator costs what cost/instrument.ts's wrapper of it would charge. */
  private chargeSized(node: Node, operands: string[], result: string, out: string[]): void {
    const sized = runtimeCharges.sized.get(node);
    if (sized) out.push(`if ((M.cost += ${this.constant(sized)}([${operands.join(', ')}], ${result}))${this.pastLimit}) B();`);
  }

  private call(node: Node, scope: Map<string, string>, out: string[]): string {
    const [name, callArgs] = node.args as [string, Node[]];
    if (name === 'matches' && callArgs.length === 2) {
      const [subject, pattern] = callArgs.map((a) => this.node(a, scope, out)) as [string, string];
      const t = this.temp();
      out.push(`if (typeof ${subject} !== 'string' || typeof ${pattern} !== 'string') B(); ${t} = matches(${subject}, ${pattern});`);
      this.chargeSized(node, [subject, pattern], t, out);
      return t;
    }
    if (name !== 'size' || callArgs.length !== 1) throw new Unsupported();
    const value = this.node(callArgs[0]!, scope, out);
    const t = this.temp();
    out.push(`${t} = size(${value});`);
    this.chargeSized(node, [value], t, out);
    return t;
  }

  private receiverCall(node: Node, scope: Map<string, string>, out: string[]): string {
    const [name, receiver, callArgs] = node.args as [string, Node, Node[]];
    const t = this.temp();
    if (name === 'size' && callArgs.length === 0) {
      const value = this.node(receiver, scope, out);
      out.push(`${t} = size(${value});`);
      this.chargeSized(node, [value], t, out);
      return t;
    }
    const method = STRING_TESTS[name];
    if ((!method && name !== 'matches') || callArgs.length !== 1) throw new Unsupported();
    const value = this.node(receiver, scope, out);
    const arg = this.node(callArgs[0]!, scope, out);
    const call = method ? `${value}.${method}(${arg})` : `matches(${value}, ${arg})`;
    out.push(`if (typeof ${value} !== 'string' || typeof ${arg} !== 'string') B(); ${t} = ${call};`);
    this.chargeSized(node, [value, arg], t, out);
    return t;
  }

  /** `all` and `exists` with one variable, as cel-js runs its quantifier loop, charged as cost/instrument.ts charges it. */
  private macro(node: Node, scope: Map<string, string>, out: string[]): string {
    const comprehension = node.meta.alternate!;
    const macro = (node.args as unknown[])[0];
    const args = comprehension.args as { kind?: string; iterable: Node; iterVarName: string; step: Node; iterVar2Name?: unknown };
    const perIteration = runtimeCharges.perIteration.get(comprehension);
    if (node.op !== 'rcall' || comprehension.op !== 'comprehension' || (macro !== 'all' && macro !== 'exists')) throw new Unsupported();
    if (args.kind !== 'quantifier' || args.iterVar2Name !== undefined || typeof args.iterVarName !== 'string' || perIteration === undefined) throw new Unsupported();
    if (args.iterable.checkedType?.name !== 'dyn') throw new Unsupported();
    const range = this.node(args.iterable, scope, out);
    const items = this.temp();
    const i = this.temp();
    const element = this.temp();
    const accu = this.temp();
    // cel-js's loop: while elements remain, charge an iteration and go on only while the
    // accumulator has not decided (all: true, exists: false); a map is ranged over by its keys
    const goOn = macro === 'all';
    out.push(
      `if (Array.isArray(${range})) ${items} = ${range}; else { ${requireMap(range)} ${items} = Object.keys(${range}); }`,
      `${accu} = ${goOn};`,
      `for (${i} = 0; ${i} < ${items}.length; ${i}++) {`,
      `if ((M.cost += ${perIteration})${this.pastLimit}) B();`,
      `if (${accu} !== ${goOn}) break;`,
      `${element} = ${items}[${i}]; ${requireValue(element)}`,
    );
    const inner: string[] = [];
    const step = this.node(args.step, new Map(scope).set(args.iterVarName, element), inner);
    out.push(...inner, `${accu} = ${step}; if (typeof ${accu} !== 'boolean') B();`, '}');
    return accu;
  }
}
