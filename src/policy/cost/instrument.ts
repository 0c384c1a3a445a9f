/**
 * Instrumenting a checked program for cost, once at compile time, following cel-go's
 * `interpreter/runtimecost.go` and Kubernetes' `pkg/cel/library/cost.go` (cel-js counts nothing).
 * Owns the instrumentation only: charges go to the meter (meter.ts), sized calls' costs are
 * calls.ts's. What it charges, and `strict`'s way: see `withCost`.
 */
import type { ParseResult } from '@marcbachmann/cel-js';
import type { CheckedNode as Node } from '../celjs/types.ts';
import { CostLimitError, evaluate, meter, overran, tickWeight } from './meter.ts';
import { CALL_COSTS, LIST_CREATE, operatorCost, STRICT_CALL_COSTS, strictOperatorCost, traverse } from './calls.ts';

/**
 * What the instrumentation charges at run time beyond the static count, per AST node, so that the
 * compiled shortcut (policy/fast) charges exactly the same: a comprehension's charge per
 * iteration, a conditional's per branch taken, and a sized call's or operator's cost beyond its 1
 * (given its operands, the receiver first, and its result).
 */
export const runtimeCharges = {
  perIteration: new WeakMap<object, number>(),
  branches: new WeakMap<object, readonly [whenTrue: number, whenFalse: number]>(),
  sized: new WeakMap<object, (operands: unknown[], result: unknown) => number>(),
};

/**
 * Instruments a checked program for cost and returns it wrapped: same call signature, `ast` and
 * `check` as cel-js's. Call once per program, after `check()` (checking again would undo the
 * function-cost wrappers).
 *
 * - every identifier, field selection, index, function call and operator is 1, list literals 10,
 *   map literals 30, constants and `&&` `||` `?:` nothing. This static part is summed per AST
 *   region at compile time and charged as one number: once per evaluation for the expression
 *   outside comprehensions, once per iteration for a comprehension's loop step (plus the loop
 *   bookkeeping cel-go's expansion of the macro costs: `all` 3, `exists` 4). The branches of
 *   `?:` are charged when taken (a wrapper on its dispatch); the right side of `&&` / `||` is
 *   charged even when short-circuited (a few units more than cel-go).
 * - comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`): the per-iteration charge is
 *   made in the loop's `condition` callback, which cel-js calls before every step. Once the limit
 *   is passed the condition answers false, so every loop ends at once (no exception per
 *   iteration, which cel-js's quantifiers would catch and carry on past).
 * - functions whose work grows with their input (string concatenation and comparison,
 *   `contains`, `startsWith`, `matches`, `find`, `join`, `split`, `replace`, `lowerAscii`,
 *   `indexOf`, `sum`, `in` on a list, ...) are charged by size, as Kubernetes' cost model
 *   does, by wrapping the call node's dispatch (`handle`) after type-checking.
 *
 * The charges go to the meter (meter.ts); what each sized call costs is calls.ts's. What is
 * charged at run time beyond the static count is recorded in `runtimeCharges`, so that the
 * compiled shortcut (policy/fast) charges exactly the same.
 *
 * `strict` (a team's AdmissionPolicy): every call and operator whose work grows with its input is
 * charged by the real size of its arguments, whatever their static type (calls.ts's
 * STRICT_CALL_COSTS and `strictOperatorCost`), and charged before it runs, so that a call past the
 * limit never does its work; and each loop step and sized call counts a tick of the meter, which
 * reads the clock every so many (the namespace's deadline).
 */
export function withCost(program: ParseResult, shortcut?: (program: ParseResult) => ((activation: unknown) => unknown) | undefined, strict = false): ParseResult & { staticCost: number } {
  const staticCost = instrument(program.ast, strict);
  // a faster way to the same answer, given the instrumented program (policy/fast)
  const body = shortcut?.(program) ?? program;
  const run = ((activation?: unknown) => evaluate(body, staticCost, activation)) as ParseResult;
  run.ast = program.ast;
  run.check = program.check;
  return Object.assign(run, { staticCost });
}

/** The static cost of `root`, instrumenting its comprehensions and sized calls on the way (`strict`: as a team's policy is charged). */
export function instrument(root: unknown, strict = false): number {
  return new Instrumenter(root, strict).cost(root);
}

// ---------------------------------------------------------------------------------------------
// The AST walk, over cel-js's checked nodes (celjs/types.ts).

interface ComprehensionArgs {
  iterable: Node;
  init: Node;
  step: Node;
  condition?: (accu: unknown) => unknown;
}

/** cel-go's loop bookkeeping per iteration beyond the step itself (`@not_strictly_false(...)`, `@result`). */
const LOOP_OVERHEAD: Record<string, number> = { all: 3, exists: 4 };
const MAP_CREATE = 30;
const SIZED_OPERATORS = new Set(['+', '==', '!=', '<', '<=', '>', '>=', 'in']);
const SCALAR_TYPES = new Set(['int', 'uint', 'double', 'bool', 'null', 'google.protobuf.Timestamp', 'google.protobuf.Duration']);

class Instrumenter {
  private readonly nodeClass: unknown;
  private readonly seen = new WeakSet<object>();
  private readonly strict: boolean;

  constructor(root: unknown, strict: boolean) {
    this.nodeClass = (root as object).constructor;
    this.strict = strict;
  }

  private isNode(v: unknown): v is Node {
    return typeof v === 'object' && v !== null && v.constructor === this.nodeClass;
  }

  /** A literal cel-go folds to a constant: `1`, `-1`, and lists and maps of those (`[[1], [-2]]`). */
  private isConstant(n: unknown): boolean {
    if (!this.isNode(n)) return false;
    if (n.op === 'value') return true;
    if (n.op === '-_') return this.isNode(n.args) && n.args.op === 'value';
    if (n.op === 'list') return (n.args as unknown[]).every((e) => this.isConstant(e));
    if (n.op === 'map') return (n.args as unknown[][]).every((e) => e.every((x) => this.isConstant(x)));
    return false;
  }

  private sum(nodes: unknown): number {
    let total = 0;
    if (Array.isArray(nodes)) for (const n of nodes) total += this.cost(n);
    return total;
  }

  cost(value: unknown): number {
    if (!this.isNode(value) || this.seen.has(value)) return 0;
    const node = value;
    this.seen.add(node);
    const meta = node.meta;
    if (meta.alternate) {
      const alternate = meta.alternate;
      if (alternate.op === 'comprehension' && node.op === 'rcall') return this.comprehension(alternate, (node.args as unknown[])[0] as string);
      return this.cost(alternate);
    }
    if (meta.macro) return this.macro(node, meta.macro);
    const args = node.args as never;
    switch (node.op) {
      case 'value':
        return 0;
      case 'id':
        return 1;
      case '.':
      case '.?':
        return 1 + this.cost((args as unknown[])[0]);
      case '[]':
      case '[?]':
        return 1 + this.sum(args);
      case '&&':
      case '||':
        return this.sum(args);
      case '?:':
        return this.ternary(node);
      case '-_':
        if ((args as Node).op === 'value') return 0; // a negative literal is a constant in cel-go
        return 1 + this.cost(args);
      case '!_':
        return 1 + this.cost(args);
      case 'list': {
        // a literal of constants is a constant in cel-go (OptOptimize)
        const elements = this.sum(args);
        return (args as Node[]).every((n) => this.isConstant(n)) ? 0 : LIST_CREATE + elements;
      }
      case 'map': {
        let total = 0;
        for (const entry of args as unknown[][]) total += this.sum(entry);
        return (args as Node[][]).every((e) => e.every((n) => this.isConstant(n))) ? 0 : MAP_CREATE + total;
      }
      case 'call': {
        const [name, callArgs] = args as [string, unknown[]];
        this.wrapCall(node, name, false);
        return 1 + this.sum(callArgs);
      }
      case 'rcall': {
        const [name, receiver, callArgs] = args as [string, unknown, unknown[]];
        this.wrapCall(node, name, true);
        return 1 + this.cost(receiver) + this.sum(callArgs);
      }
      case 'comprehension':
        return this.comprehension(node, '');
      case 'accuValue':
        return 0; // @result: only ever a branch of a conditional, which cel-go does not charge
      case 'accuInc':
        return 2; // @result + 1
      case 'accuPush':
        return 2 + LIST_CREATE + this.cost(args); // @result + [x]
      default:
        if (SIZED_OPERATORS.has(node.op)) this.wrapOperator(node);
        if (Array.isArray(args)) return 1 + this.sum(args);
        return 1 + this.cost(args);
    }
  }

  /** A comprehension costs its range once, its step (and cel-go's loop bookkeeping) per iteration. */
  private comprehension(node: Node, macro: string): number {
    const args = node.args as ComprehensionArgs;
    // the accumulator's initial value is a constant; the result is read once (`@result`)
    const once = this.cost(args.iterable) + 1;
    const perIteration = Math.max(1, (LOOP_OVERHEAD[macro] ?? 0) + this.cost(args.step));
    runtimeCharges.perIteration.set(node, perIteration);
    const condition = args.condition;
    if (this.strict) {
      // (as charge() does: a tick per step, the clock read every so many)
      const step = () => ((meter.cost += perIteration) <= meter.limit && --meter.ticks > 0) || overran();
      if (!condition) args.condition = step;
      else args.condition = (accu: unknown) => step() && condition(accu);
      return once;
    }
    // cel-js calls `condition` before each step; answering false ends the loop. Its own conditions
    // are `accu => accu` (all) and `accu => !accu` (exists), inlined here when they are those.
    if (!condition) args.condition = () => (meter.cost += perIteration) <= meter.limit || overran();
    else if (macro === 'all' && condition(true) === true && condition(false) === false) {
      args.condition = (accu: unknown) => ((meter.cost += perIteration) <= meter.limit || overran()) && accu;
    } else if (macro === 'exists' && condition(true) === false && condition(false) === true) {
      args.condition = (accu: unknown) => ((meter.cost += perIteration) <= meter.limit || overran()) && !accu;
    } else args.condition = (accu: unknown) => ((meter.cost += perIteration) <= meter.limit || overran()) && condition(accu);
    return once;
  }

  /** A conditional costs its condition, and the branch taken (charged when it is taken, as cel-go does). */
  private ternary(node: Node): number {
    const [condition, truthy, falsy] = node.args as Node[];
    const whenTrue = this.cost(truthy);
    const whenFalse = this.cost(falsy);
    const handle = node.handle as ((c: unknown, ev: unknown, ast: unknown, ctx: unknown) => unknown) | undefined;
    if (typeof handle !== 'function') return this.cost(condition) + Math.max(whenTrue, whenFalse);
    runtimeCharges.branches.set(node, [whenTrue, whenFalse]);
    if (whenTrue || whenFalse) {
      node.handle = ((c: unknown, ev: unknown, ast: unknown, ctx: unknown) => {
        meter.cost += c === true ? whenTrue : c === false ? whenFalse : 0;
        return handle(c, ev, ast, ctx);
      }) as never;
    }
    return this.cost(condition);
  }

  /** Macros with their own evaluate (has, cel.bind, optional or/orValue, ...): the AST pieces they hold. */
  private macro(node: Node, macro: Record<string, unknown>): number {
    // the macros of libraries/ instrument the parts they keep from this walk themselves, as this program is
    if (this.strict && typeof macro.parts === 'object' && macro.parts !== null) (macro.parts as { strict?: boolean }).strict = true;
    if (Array.isArray(macro.macroHasProps)) {
      // has(a.b.c): the presence test itself is free in Kubernetes (PresenceTestHasCost(false)); a.b is not
      const select = (macro.args as Node[] | undefined)?.[0];
      return select && Array.isArray(select.args) ? this.cost(select.args[0]) : 0;
    }
    let total = 0;
    for (const [key, value] of Object.entries(macro)) {
      if (key === 'ast' || value === node) continue;
      if (Array.isArray(value)) total += this.sum(value);
      else total += this.cost(value);
    }
    return total;
  }

  private wrapCall(node: Node, name: string, receiver: boolean): void {
    if (this.strict) return this.wrapStrictCall(node, name);
    const cost = CALL_COSTS[name];
    const handle = node.handle as ((a: unknown[], b: unknown, c: unknown) => unknown) | undefined;
    if (!cost || typeof handle !== 'function') return;
    if (name === 'startsWith' || name === 'endsWith') {
      // the cost is the prefix's: a short literal one costs 1, already counted
      const prefix = ((node.args as unknown[])[2] as Node[] | undefined)?.[0];
      if (prefix?.op === 'value' && typeof prefix.args === 'string' && traverse(prefix.args.length) <= 1) return;
    }
    const extraCost = (values: unknown[], result: unknown) => cost(values, result, receiver, node) - 1;
    runtimeCharges.sized.set(node, extraCost);
    // call: handle(args, ast, ev); rcall: handle([receiver, ...args], ev, ast)
    node.handle = ((values: unknown[], b: unknown, c: unknown) => {
      const result = handle(values, b, c);
      if (!(result instanceof Promise)) {
        const extra = extraCost(values, result);
        if (extra !== 0 && (meter.cost += extra) > meter.limit) throw (overran(), new CostLimitError());
      }
      return result;
    }) as never;
  }

  /** A call in a team's policy: charged by its arguments' real sizes, before it runs (a tick of the meter). */
  private wrapStrictCall(node: Node, name: string): void {
    const cost = STRICT_CALL_COSTS[name];
    const handle = node.handle as ((a: unknown[], b: unknown, c: unknown) => unknown) | undefined;
    if (!cost || typeof handle !== 'function') return;
    if (name === 'startsWith' || name === 'endsWith') {
      const prefix = ((node.args as unknown[])[2] as Node[] | undefined)?.[0];
      if (prefix?.op === 'value' && typeof prefix.args === 'string' && traverse(prefix.args.length) <= 1) return;
    }
    const extraCost = (values: unknown[]) => cost(values) - 1;
    runtimeCharges.sized.set(node, extraCost);
    node.handle = ((values: unknown[], b: unknown, c: unknown) => {
      const extra = extraCost(values);
      if (extra !== 0 && ((meter.cost += extra) > meter.limit || (meter.ticks -= tickWeight(extra)) <= 0) && !overran()) throw new CostLimitError();
      return handle(values, b, c);
    }) as never;
  }

  /**
   * cel-go charges `+` on strings, `<`... on strings and `in` on a list by size only when the
   * checker could pick the overload, i.e. when an operand's static type says which one; with
   * both operands dyn (most of `object`) it charges 1. `==` has one overload and is always sized.
   */
  private wrapOperator(node: Node): void {
    const handle = node.handle as ((l: unknown, r: unknown, ast: unknown, ev: unknown) => unknown) | undefined;
    if (typeof handle !== 'function') return;
    const [left, right] = node.args as Node[];
    const type = (n: Node | undefined) => n?.checkedType?.name ?? 'dyn';
    const op = node.op;
    if (SCALAR_TYPES.has(op === 'in' ? type(right) : type(left)) && (op === 'in' || SCALAR_TYPES.has(type(right)))) return;
    if (this.strict) return this.wrapStrictOperator(node, handle, type(left), type(right));
    const sequence = (t: string) => t === 'string' || t === 'bytes';
    const typedSequence = sequence(type(left)) || sequence(type(right));
    const typedList = type(right).startsWith('list');
    // what can only ever cost 1 needs no wrapper: `in` on a dyn, a comparison of non-strings, or
    // one against a scalar or a short literal (the size that counts is the smaller one's)
    const small = (n: Node | undefined) => SCALAR_TYPES.has(type(n)) || (n?.op === 'value' && typeof n.args === 'string' && traverse(n.args.length) <= 1);
    if (op === 'in' ? !typedList : op !== '+' && ((op !== '==' && op !== '!=' && !typedSequence) || small(left) || small(right))) return;
    const extraCost = (l: unknown, r: unknown) => (typeof l === 'string' || typeof l === 'object' || typeof r === 'object' ? operatorCost(op, l, r, typedSequence, typedList) - 1 : 0);
    runtimeCharges.sized.set(node, (operands) => extraCost(operands[0], operands[1]));
    node.handle = ((l: unknown, r: unknown, ast: unknown, ev: unknown) => {
      const result = handle(l, r, ast, ev);
      const extra = extraCost(l, r);
      if (extra !== 0 && (meter.cost += extra) > meter.limit) throw (overran(), new CostLimitError());
      return result;
    }) as never;
  }

  /**
   * An operator in a team's policy: by its operands' real sizes whatever their static types,
   * charged before it runs. Only what can never cost more than 1 goes unwrapped: `in` on a map,
   * an operand that is a scalar or a short literal (the smaller side bounds a comparison).
   */
  private wrapStrictOperator(node: Node, handle: (l: unknown, r: unknown, ast: unknown, ev: unknown) => unknown, left: string, right: string): void {
    const op = node.op;
    const [l, r] = node.args as Node[];
    const small = (n: Node | undefined, t: string) => SCALAR_TYPES.has(t) || (n?.op === 'value' && typeof n.args === 'string' && traverse(n.args.length) <= 1);
    if (op === 'in' ? right.startsWith('map') : op !== '+' && (small(l, left) || small(r, right))) return;
    const extraCost = (a: unknown, b: unknown) => strictOperatorCost(op, a, b) - 1;
    runtimeCharges.sized.set(node, (operands) => extraCost(operands[0], operands[1]));
    node.handle = ((a: unknown, b: unknown, ast: unknown, ev: unknown) => {
      const extra = extraCost(a, b);
      if (extra !== 0 && ((meter.cost += extra) > meter.limit || (meter.ticks -= tickWeight(extra)) <= 0) && !overran()) throw new CostLimitError();
      return handle(a, b, ast, ev);
    }) as never;
  }
}
