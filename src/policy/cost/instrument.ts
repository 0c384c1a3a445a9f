/**
 * Runtime cost of CEL evaluation, as the API server bounds it (apiserver `pkg/apis/cel/config.go`):
 * each expression may spend PER_CALL_LIMIT units (cel-go stops it with "operation cancelled:
 * actual cost limit exceeded"), and one evaluation of a policy RUNTIME_CEL_COST_BUDGET units
 * (validations first, messageExpressions get what is left).
 *
 * cel-js counts nothing and offers no evaluation hook, so `withCost` instruments a checked
 * program's AST once, at compile time, following cel-go's `interpreter/runtimecost.go` and
 * Kubernetes' `pkg/cel/library/cost.go`:
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
 * The counter is one module-level object (evaluation is synchronous): charging is an add and a
 * compare, nothing is allocated per step. `evaluate` (the wrapper `withCost` returns) turns an
 * overrun into CostLimitError, or CostBudgetError when the policy's budget is what ran out.
 */
import type { ParseResult } from '@marcbachmann/cel-js';
import { sortIsTracked } from '../library/lists-ext.ts';
import type { CheckedNode as Node } from '../celjs/types.ts';

/** Per expression (apiserver `PerCallLimit`). */
export const PER_CALL_LIMIT = 1_000_000;
/** Per policy evaluation (apiserver `RuntimeCELCostBudget`). */
export const RUNTIME_CEL_COST_BUDGET = 10_000_000;

/** cel-go's words when an expression passes its cost limit. */
export const COST_LIMIT_MESSAGE = 'operation cancelled: actual cost limit exceeded';
/** The API server's words when a policy evaluation runs out of its budget. */
export const COST_BUDGET_MESSAGE = 'validation failed due to running out of cost budget, no further validation rules will be run';

export class CostLimitError extends Error {
  constructor() {
    super(COST_LIMIT_MESSAGE);
    this.name = 'CostLimitError';
  }
}

export class CostBudgetError extends Error {
  constructor(message = COST_BUDGET_MESSAGE) {
    super(message);
    this.name = 'CostBudgetError';
  }
}

/**
 * The running count. `cost` only grows during one policy evaluation; `limit` is the cost at which
 * the expression being evaluated must stop (its start + PER_CALL_LIMIT, or the budget's end if
 * that comes first); `budgetEnd` is the policy's budget (Infinity outside a policy evaluation).
 */
export const meter = { cost: 0, limit: Infinity, budgetEnd: Infinity, overrunAt: -1 };

/** Adds `units`; true while the current expression is still within its limit. For custom looping macros. */
export function charge(units: number): boolean {
  return (meter.cost += units) <= meter.limit || overran();
}

/** Notes the cost at the first step past the limit (cel-go stops there; our loops wind down after it). */
function overran(): false {
  if (meter.overrunAt < 0) meter.overrunAt = meter.cost;
  return false;
}

export interface Budget {
  cost: number;
  limit: number;
  budgetEnd: number;
}

/**
 * What the instrumentation charges at run time beyond the static count, per AST node, so that the
 * compiled shortcut (`compiled.ts`) charges exactly the same: a comprehension's charge per
 * iteration, a conditional's per branch taken, and a sized call's or operator's cost beyond its 1
 * (given its operands, the receiver first, and its result).
 */
export const runtimeCharges = {
  perIteration: new WeakMap<object, number>(),
  branches: new WeakMap<object, readonly [whenTrue: number, whenFalse: number]>(),
  sized: new WeakMap<object, (operands: unknown[], result: unknown) => number>(),
};

/** Starts a policy evaluation with a fresh budget; returns what `closeBudget` restores. */
export function openBudget(budget: number = RUNTIME_CEL_COST_BUDGET): Budget {
  const saved = { cost: meter.cost, limit: meter.limit, budgetEnd: meter.budgetEnd };
  meter.cost = 0;
  meter.limit = Infinity;
  meter.budgetEnd = budget;
  meter.overrunAt = -1;
  return saved;
}

export function closeBudget(saved: Budget): void {
  meter.cost = saved.cost;
  meter.limit = saved.limit;
  meter.budgetEnd = saved.budgetEnd;
  meter.overrunAt = -1;
}

/** What is left of the current policy evaluation's budget. */
export function remainingBudget(): number {
  return meter.budgetEnd - meter.cost;
}

/**
 * Runs one expression under its own per-call limit. Nested runs (a composited variable read
 * lazily by another expression) have their own limit, and their cost counts against the
 * policy's budget but not against the reading expression's limit, as in the API server.
 */
function evaluate(program: (activation: never) => unknown, staticCost: number, activation: unknown): unknown {
  const outerLimit = meter.limit;
  if (outerLimit === Infinity && meter.budgetEnd === Infinity) {
    meter.cost = 0; // a free-standing evaluation
    meter.overrunAt = -1;
  }
  const start = meter.cost;
  const callEnd = start + PER_CALL_LIMIT;
  meter.limit = callEnd < meter.budgetEnd ? callEnd : meter.budgetEnd;
  try {
    meter.cost += staticCost;
    let result: unknown;
    try {
      result = program(activation as never);
    } catch (err) {
      // (meter.limit, not the limit set above: nested runs move it on by what they spent)
      if (meter.cost > meter.limit) throw overrun();
      throw err;
    }
    if (meter.cost > meter.limit) throw overrun();
    return result;
  } finally {
    if (outerLimit === Infinity) meter.limit = Infinity;
    else {
      const shifted = outerLimit + (meter.cost - start);
      meter.limit = shifted < meter.budgetEnd ? shifted : meter.budgetEnd;
    }
  }
}

function overrun(): Error {
  // cel-go stops at the first step past the limit; what our loops did while winding down is not charged
  if (meter.overrunAt >= 0) meter.cost = meter.overrunAt;
  meter.overrunAt = -1;
  return meter.cost > meter.budgetEnd ? new CostBudgetError() : new CostLimitError();
}

/**
 * Instruments a checked program for cost and returns it wrapped: same call signature, `ast` and
 * `check` as cel-js's. Call once per program, after `check()` (checking again would undo the
 * function-cost wrappers).
 */
export function withCost(program: ParseResult, shortcut?: (program: ParseResult) => ((activation: unknown) => unknown) | undefined): ParseResult {
  const staticCost = instrument(program.ast);
  // a faster way to the same answer, given the instrumented program (compiled.ts)
  const body = shortcut?.(program) ?? program;
  const run = ((activation?: unknown) => evaluate(body, staticCost, activation)) as ParseResult;
  run.ast = program.ast;
  run.check = program.check;
  return run;
}

/** The static cost of `root`, instrumenting its comprehensions and sized calls on the way. */
export function instrument(root: unknown): number {
  return new Instrumenter(root).cost(root);
}

// ---------------------------------------------------------------------------------------------
// The AST walk, over cel-js's checked nodes (library/celjs.ts).

interface ComprehensionArgs {
  iterable: Node;
  init: Node;
  step: Node;
  condition?: (accu: unknown) => unknown;
}

/** cel-go's loop bookkeeping per iteration beyond the step itself (`@not_strictly_false(...)`, `@result`). */
const LOOP_OVERHEAD: Record<string, number> = { all: 3, exists: 4 };
const LIST_CREATE = 10;
const MAP_CREATE = 30;
const SIZED_OPERATORS = new Set(['+', '==', '!=', '<', '<=', '>', '>=', 'in']);
const SCALAR_TYPES = new Set(['int', 'uint', 'double', 'bool', 'null', 'google.protobuf.Timestamp', 'google.protobuf.Duration']);

class Instrumenter {
  private readonly nodeClass: unknown;
  private readonly seen = new WeakSet<object>();

  constructor(root: unknown) {
    this.nodeClass = (root as object).constructor;
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
    const sequence = (t: string) => t === 'string' || t === 'bytes';
    const typedSequence = sequence(type(left)) || sequence(type(right));
    const typedList = type(right).startsWith('list');
    // what can only ever cost 1 needs no wrapper: `in` on a dyn, a comparison of non-strings, or
    // one against a scalar or a short literal (the size that counts is the smaller one's)
    const small = (n: Node | undefined) => SCALAR_TYPES.has(type(n)) || (n?.op === 'value' && typeof n.args === 'string' && traverse(n.args.length) <= 1);
    if (op === 'in' ? !typedList : op !== '+' && ((op !== '==' && op !== '!=' && !typedSequence) || small(left) || small(right))) return;
    const extraCost = (l: unknown, r: unknown) =>
      typeof l === 'string' || typeof l === 'object' || typeof r === 'object' ? operatorCost(op, l, r, typedSequence, typedList) - 1 : 0;
    runtimeCharges.sized.set(node, (operands) => extraCost(operands[0], operands[1]));
    node.handle = ((l: unknown, r: unknown, ast: unknown, ev: unknown) => {
      const result = handle(l, r, ast, ev);
      const extra = extraCost(l, r);
      if (extra !== 0 && (meter.cost += extra) > meter.limit) throw (overran(), new CostLimitError());
      return result;
    }) as never;
  }
}

// ---------------------------------------------------------------------------------------------
// Sizes and function costs, after cel-go's `costCall` and Kubernetes' `CostEstimator.CallCost`.

const STRING_TRAVERSAL = 0.1;
const REGEX_LENGTH = 0.25;

/** cel-go's `actualSize`: length of strings, bytes, lists and maps; 1 for anything else. */
export function actualSize(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (typeof v !== 'object' || v === null) return 1;
  if (Array.isArray(v) || v instanceof Uint8Array) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (v.constructor === Object || v.constructor === undefined) {
    let n = 0;
    for (const _ in v) n++;
    return n;
  }
  return 1;
}

/**
 * Kubernetes' `traversalCost`, remembered per container: CEL values never change, and a
 * comprehension asks for the same list's cost once per iteration (`list.indexOf(c)` inside a
 * `map` over that list), which would otherwise walk it n times.
 */
const traversalCosts = new WeakMap<object, number>();
function traversalCost(v: unknown): number {
  if (typeof v !== 'object' || v === null) return deepTraversalCost(v);
  let cost = traversalCosts.get(v);
  if (cost === undefined) traversalCosts.set(v, (cost = deepTraversalCost(v)));
  return cost;
}

/** Kubernetes' `traversalCost`: a string costs a tenth of its length, containers the sum of their elements. */
function deepTraversalCost(v: unknown): number {
  if (typeof v === 'string') return Math.floor(v.length * STRING_TRAVERSAL);
  if (v instanceof Uint8Array) return Math.floor(v.length * STRING_TRAVERSAL);
  if (Array.isArray(v)) {
    let cost = 0;
    for (const e of v) cost += deepTraversalCost(e);
    return cost;
  }
  if (v instanceof Set) {
    let cost = 0;
    for (const e of v) cost += deepTraversalCost(e);
    return cost;
  }
  if (v instanceof Map) {
    let cost = 0;
    for (const [k, e] of v) cost += deepTraversalCost(k) + deepTraversalCost(e);
    return cost;
  }
  if (typeof v === 'object' && v !== null && (v.constructor === Object || v.constructor === undefined)) {
    let cost = 0;
    for (const k in v) cost += deepTraversalCost(k) + deepTraversalCost((v as Record<string, unknown>)[k]);
    return cost;
  }
  return 1;
}

const traverse = (n: number) => Math.ceil(n * STRING_TRAVERSAL);
const regexCost = (s: unknown, re: unknown) => Math.ceil((1 + actualSize(s)) * STRING_TRAVERSAL) * Math.ceil(actualSize(re) * REGEX_LENGTH);

type CallCost = (args: unknown[], result: unknown, receiver: boolean, node: Node) => number;

/** Total cost of one call (the 1 of the call itself is already in the static count). `args` include the receiver first. */
const CALL_COSTS: Record<string, CallCost> = {
  startsWith: (a) => traverse(actualSize(a[1])),
  endsWith: (a) => traverse(actualSize(a[1])),
  // string.contains(sub), or sets.contains(list, list) (a call on the `sets` namespace in cel-js)
  contains: (a) => (a.length === 3 ? setsCost(a, 1) : traverse(actualSize(a[0])) * traverse(actualSize(a[1]))),
  intersects: (a) => setsCost(a, 1),
  equivalent: (a) => setsCost(a, 2),
  matches: (a) => regexCost(a[0], a[1]),
  find: (a) => regexCost(a[0], a[1]),
  findAll: (a) => regexCost(a[0], a[1]),
  // strings.quote(s) is a call on the `strings` namespace in cel-js: its string is the last argument
  quote: (a) => traverse(actualSize(a[a.length - 1])),
  format: (a) => traverse(actualSize(a[0])),
  isSorted: (a) => traversalCost(a[0]),
  sum: (a) => traversalCost(a[0]),
  max: (a) => traversalCost(a[0]),
  min: (a) => traversalCost(a[0]),
  indexOf: (a) => traversalCost(a[0]),
  lastIndexOf: (a) => traversalCost(a[0]),
  includes: (a) => traversalCost(a[0]),
  url: (a) => traverse(actualSize(a[0])),
  lowerAscii: (a) => traverse(actualSize(a[0])),
  upperAscii: (a) => traverse(actualSize(a[0])),
  substring: (a) => traverse(actualSize(a[0])),
  trim: (a) => traverse(actualSize(a[0])),
  replace: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL),
  split: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL),
  join: (_, result) => Math.ceil(actualSize(result) * 2 * STRING_TRAVERSAL),
  cidr: (a) => traverse(actualSize(a[0])),
  ip: (a) => traverse(actualSize(a[0])),
  isIP: (a) => traverse(actualSize(a[0])),
  isCIDR: (a) => traverse(actualSize(a[0])),
  quantity: (a) => traverse(actualSize(a[0])),
  isQuantity: (a) => traverse(actualSize(a[0])),
  semver: (a) => traverse(actualSize(a[0])),
  isSemver: (a) => traverse(actualSize(a[0])),
  isCanonical: (a) => Math.ceil(actualSize(a[a.length - 1]) * 2 * STRING_TRAVERSAL),
  containsIP: (a) => traverse(2 * actualSize(a[0])) + (typeof a[1] === 'string' ? traverse(a[1].length) : 0),
  containsCIDR: (a) => traverse(2 * actualSize(a[0])) + traverse(actualSize(a[0])) + 1 + (typeof a[1] === 'string' ? traverse(a[1].length) : 0),
  // an authorization check (a SubjectAccessReview) costs enough to allow two per expression
  check: () => 350_000,
  // the lists extension (version 3): by the size of what they allocate (cel-go ext/lists.go)
  slice: (_, result) => allocatingList(1, actualSize(result)),
  range: (_, result) => allocatingList(1, actualSize(result)),
  reverse: (_, result) => allocatingList(1, actualSize(result)),
  flatten: (a) => allocatingList(typeof a[1] === 'bigint' ? Number(a[1]) : 1, actualSize(a[0])),
  distinct: (a) => selfCompare(a[0]),
  // cel-go's tracker charges sort only when the checker resolved one overload (a known element type)
  sort: (a, _, __, node) => (sortIsTracked(((node.args as unknown[])[1] as Node | undefined)?.checkedType?.name) ? selfCompare(a[0]) : 1),
};

/** cel-go's sets: the product of the two lists' sizes (after the namespace receiver). */
function setsCost(a: unknown[], factor: number): number {
  return 1 + Math.floor(actualSize(a[a.length - 2]) * actualSize(a[a.length - 1]) * factor);
}

function allocatingList(factor: number, size: number): number {
  return Math.floor(size * (factor < 0 ? 1 : factor)) + 1 + LIST_CREATE;
}

function selfCompare(list: unknown): number {
  const size = actualSize(list);
  const first = Array.isArray(list) ? list[0] : undefined;
  return allocatingList(isSequence(first) ? 2 + STRING_TRAVERSAL : 2, size * size);
}

function isSequence(v: unknown): boolean {
  return typeof v === 'string' || v instanceof Uint8Array;
}

/** Total cost of one operator application, as cel-go's `costCall` has it. */
function operatorCost(op: string, l: unknown, r: unknown, typedSequence: boolean, typedList: boolean): number {
  switch (op) {
    case '+':
      if (typedSequence && isSequence(l)) return traverse(actualSize(l) + actualSize(r));
      // cel-go concatenates lists lazily and charges 1; cel-js copies them, so a list is charged by
      // size, typed or not (this only tells once lists reach millions of elements, and keeps a chain
      // of doublings from exhausting memory)
      if (Array.isArray(l)) return traverse(actualSize(l) + actualSize(r));
      return 1;
    case '==':
    case '!=':
      return traverse(Math.min(actualSize(l), actualSize(r)));
    case 'in':
      return typedList && (Array.isArray(r) || r instanceof Set) ? actualSize(r) : 1;
    default:
      // < <= > >=
      if (typedSequence && isSequence(l)) return traverse(Math.min(actualSize(l), actualSize(r)));
      return 1;
  }
}
