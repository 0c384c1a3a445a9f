/**
 * cel-go's lists extension as Kubernetes 1.37 enables it (ext.Lists(ext.ListsVersion(3)), cel-go
 * v0.29.2 ext/lists.go): slice, flatten, flatten(depth), lists.range, reverse, distinct, sort and
 * the sortBy macro; and the list functions of cel-go's optional library at its latest version
 * (Kubernetes enables cel.OptionalTypes() unversioned): first, last, optional.unwrap, unwrapOpt.
 * Results and errors are cel-go's, sort order included: sort and sortBy use a port of Go's
 * sort.Slice (pdqsort, not stable), so equal keys come out in the order the API server gives them.
 *
 * Typing: each function is declared on list<T> (so `[1, 2].reverse()` is a list<int>) and again
 * on an untyped list, which makes an untyped receiver's result list<dyn> (cel-js would otherwise
 * leave a bare placeholder) and lets `object.flatten()` take a list whose first element is not a
 * list. The overloads cel-go does not have for a known element type (`[1].flatten()`,
 * `[[1]].sort()`) are refused at compile time by validateListsExtCall, with cel-go's messages.
 *
 * Cost: slice, flatten, range, reverse, distinct and sort are charged in cost.ts (CALL_COSTS) as
 * cel-go's trackers do; sortBy charges its expansion here, as cel-go's cost tracker charges
 * `cel.bind(l, target, l.@sortByAssociatedKeys(l.map(v, key)))`.
 */
import { ParseError, type Environment } from '@marcbachmann/cel-js';
import { charge } from '../cost/meter.ts';
import { instrument } from '../cost/instrument.ts';
import { celCompare, celEquals, celError, goTypeName, isComparable, Optional, typeName } from '../celjs/values.ts';
import { celGoType, concrete, elementType, SORTABLE } from '../celjs/static-types.ts';
import type { CallNode } from '../celjs/walk.ts';
import type { Checker, Evaluator, Node, Scope, TypeDecl } from '../celjs/types.ts';


/** lists.range's limit (cel-go's defaultMaxRangeSize; Kubernetes does not set ListsMaxRangeSize). */
const MAX_RANGE_SIZE = 1_000_000n;

function isList(v: unknown): v is unknown[] | Set<unknown> {
  return Array.isArray(v) || v instanceof Set;
}

function slice(list: unknown[], start: bigint, end: bigint): unknown[] {
  if (start < 0n || end < 0n) throw celError(`cannot slice(${start}, ${end}), negative indexes not supported`);
  if (start > end) throw celError(`cannot slice(${start}, ${end}), start index must be less than or equal to end index`);
  const items = [...list];
  if (BigInt(items.length) < end) throw celError(`cannot slice(${start}, ${end}), list is length ${items.length}`);
  return items.slice(Number(start), Number(end));
}

function flatten(list: Iterable<unknown>, depth: bigint, out: unknown[] = []): unknown[] {
  if (depth < 0n) throw celError('level must be non-negative');
  for (const v of list) {
    if (!isList(v) || depth === 0n) out.push(v);
    else flatten(v, depth - 1n, out);
  }
  return out;
}

function range(n: bigint): bigint[] {
  if (n < 0n) throw celError(`lists.range: size must be non-negative, got ${n}`);
  if (n > MAX_RANGE_SIZE) throw celError(`lists.range: size ${n} exceeds maximum allowed (${MAX_RANGE_SIZE})`);
  const out = new Array<bigint>(Number(n));
  for (let i = 0; i < out.length; i++) out[i] = BigInt(i);
  return out;
}

function distinct(list: unknown[]): unknown[] {
  const unique: unknown[] = [];
  for (const v of list) if (!unique.some((u) => celEquals(v, u))) unique.push(v);
  return unique;
}


/** cel-go's sortListByAssociatedKeys: `list` in the order of `keys` (sort.Slice over the indices). */
export function sortByKeys(list: unknown[], keys: unknown[]): unknown[] {
  if (list.length !== keys.length) {
    throw celError(`@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got ${list.length} and ${keys.length} elements respectively`);
  }
  if (list.length === 0) return list;
  const type = typeName(keys[0]);
  if (!isComparable(keys[0])) throw celError('list elements must be comparable');
  const indices = keys.map((_, i) => i);
  let mismatch = false;
  goSortSlice(indices, (i, j) => {
    const a = keys[indices[i]!];
    const b = keys[indices[j]!];
    if (typeName(a) !== type || typeName(b) !== type) {
      mismatch = true;
      return false;
    }
    return celCompare(a, b) === -1;
  });
  if (mismatch) throw celError('list elements must have the same type');
  return indices.map((i) => list[i]);
}

function optionalUnwrap(list: unknown[], name: string): unknown[] {
  const out: unknown[] = [];
  for (const v of list) {
    if (!(v instanceof Optional)) throw celError(`no such overload: ${name}(list)`);
    if (v.hasValue()) out.push(v.value());
  }
  return out;
}

class ListsNamespace {}

export function registerListsExt(env: Environment): void {
  // each on list<T> for typed receivers, and on an untyped list (see the file comment)
  const both = (name: string, params: string, result: (t: string) => string, handler: (...args: never[]) => unknown) => {
    env.registerFunction(`list<T>.${name}(${params}): ${result('T')}`, handler);
    env.registerFunction(`list.${name}(${params}): ${result('dyn')}`, handler);
  };
  const items = (l: Iterable<unknown>) => [...l];
  both('slice', 'int, int', (t) => `list<${t}>`, ((l: unknown[], s: bigint, e: bigint) => slice(l, s, e)) as never);
  env.registerFunction('list<list<T>>.flatten(): list<T>', (l: unknown[]) => flatten(l, 1n));
  env.registerFunction('list.flatten(): list', (l: unknown[]) => flatten(l, 1n));
  env.registerFunction('list.flatten(int): list', (l: unknown[], depth: bigint) => flatten(l, depth));
  both('reverse', '', (t) => `list<${t}>`, ((l: unknown[]) => items(l).reverse()) as never);
  both('distinct', '', (t) => `list<${t}>`, ((l: unknown[]) => distinct(items(l))) as never);
  both('sort', '', (t) => `list<${t}>`, ((l: unknown[]) => sortByKeys(items(l), items(l))) as never);
  both('first', '', (t) => `optional<${t}>`, ((l: unknown[]) => {
    const a = items(l);
    return a.length ? Optional.of(a[0]) : Optional.none();
  }) as never);
  both('last', '', (t) => `optional<${t}>`, ((l: unknown[]) => {
    const a = items(l);
    return a.length ? Optional.of(a[a.length - 1]) : Optional.none();
  }) as never);
  env.registerFunction('list<optional<T>>.unwrapOpt(): list<T>', (l: unknown[]) => optionalUnwrap(items(l), 'unwrapOpt'));
  env.registerFunction('list.unwrapOpt(): list', (l: unknown[]) => optionalUnwrap(items(l), 'unwrapOpt'));
  env.registerFunction('OptionalNamespace.unwrap(list<optional<T>>): list<T>', (_: unknown, l: unknown[]) => optionalUnwrap(items(l), 'optional.unwrap'));
  env.registerFunction('OptionalNamespace.unwrap(list): list', (_: unknown, l: unknown[]) => optionalUnwrap(items(l), 'optional.unwrap'));

  env.registerType('ListsNamespace', ListsNamespace);
  env.registerConstant('lists', 'ListsNamespace', new ListsNamespace());
  env.registerFunction('ListsNamespace.range(int): list<int>', (_: unknown, n: bigint) => range(n));

  env.registerFunction('list.sortBy(ast, ast): list', sortByMacro as never);
}

/** The overloads cel-go lacks for a list of a known element type. */
export function validateListsExtCall(call: CallNode): void {
  if (!call.receiver) return;
  if (call.name === 'unwrap' && call.receiver.type === 'OptionalNamespace' && call.args.length === 1) {
    const element = elementType(call.args[0]!.type);
    if (element !== undefined && concrete(element) && !element.startsWith('optional')) {
      throw celError(`found no matching overload for 'optional.unwrap' applied to '(${celGoType(call.args[0]!.type)})'`);
    }
    return;
  }
  if (call.args.length !== 0) return;
  const element = elementType(call.receiver.type);
  if (element === undefined || !concrete(element)) return;
  const refused =
    (call.name === 'flatten' && !element.startsWith('list')) ||
    (call.name === 'sort' && !SORTABLE.includes(element)) ||
    (call.name === 'unwrapOpt' && !element.startsWith('optional'));
  if (refused) throw celError(`found no matching overload for '${call.name}' applied to '${celGoType(call.receiver.type)}.()'`);
}

// ---------------------------------------------------------------------------------------------
// sortBy: cel-go expands `target.sortBy(v, key)` to
// `cel.bind(@__sortBy_input__, target, @__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(v, key)))`.

/** What cost.ts's walk of macro objects must not see (it would charge the key once, not per element). */
interface SortByParts {
  variable: string;
  key: Node;
  scope: Scope | undefined;
  /** Whether cel-go resolves one @sortByAssociatedKeys overload (a comparable key type) and so charges by size. */
  tracked: boolean;
  /** The key's static cost, measured on first evaluation; constant: the key is a literal (`[key]` is then free). */
  cost: { key: number; constant: boolean } | undefined;
}

interface SortByMacro {
  /** The target: the one piece cost.ts sees, and charges once. */
  receiver: Node;
  parts: SortByParts;
  async: false;
  typeCheck(checker: Checker, m: SortByMacro, ctx: Scope): TypeDecl;
  evaluate(ev: Evaluator, m: SortByMacro, ctx: unknown): unknown;
}

function sortByMacro({ args, receiver }: { args: Node[]; receiver: Node }): SortByMacro {
  // cel-go: a list, identifier, comprehension, call or select; in cel-js's AST, not a literal or a map
  if (receiver.op === 'value' || receiver.op === 'map') {
    throw new ParseError('sortBy can only be applied to a list, identifier, comprehension, call or select expression', receiver as never);
  }
  const variable = args[0]!;
  if (variable.op !== 'id' || typeof variable.args !== 'string') throw new ParseError('argument is not an identifier', variable as never);
  if (variable.args === '__result__' || variable.args === '@result') throw new ParseError('iteration variable overwrites accumulator variable', variable as never);
  return {
    receiver,
    parts: { variable: variable.args, key: args[1]!, scope: undefined, tracked: false, cost: undefined },
    async: false,
    typeCheck: sortByTypeCheck,
    evaluate: sortByEvaluate,
  };
}

function sortByTypeCheck(checker: Checker, m: SortByMacro, ctx: Scope): TypeDecl {
  const p = m.parts;
  const target = checker.check(m.receiver, ctx);
  const dyn = checker.getType('dyn');
  const goType = (t: TypeDecl) => celGoType(checker.formatType(t)).replaceAll('optional(', 'optional_type(');
  let element: TypeDecl;
  if (target.kind === 'dyn') element = dyn;
  else if (target.kind === 'list') element = target.valueType ?? dyn;
  else if (target.kind === 'map') element = target.keyType ?? dyn;
  else {
    throw checker.createError(
      'invalid_comprehension_range',
      `expression of type '${goType(target)}' cannot be range of a comprehension (must be list, map, or dynamic)`,
      m.receiver,
    );
  }
  p.scope = ctx.forkWithVariable(p.variable, element.kind === 'param' ? dyn : element);
  const key = checker.check(p.key, p.scope);
  // an empty literal's elements are of a type parameter in cel-go, which picks an overload for the key itself
  const keyIsParam = element.kind === 'param' && p.key.op === 'id' && p.key.args === p.variable;
  const keyName = checker.formatType(key);
  const sortable = key.kind === 'dyn' || key.kind === 'param' || SORTABLE.includes(keyName);
  if (target.kind === 'map' || !sortable) {
    const keys = `list(${goType(key)})`;
    throw checker.createError('no_matching_overload', `found no matching overload for '@sortByAssociatedKeys' applied to '${goType(target)}.(${keys})'`, m.receiver);
  }
  p.tracked = key.kind !== 'dyn' || keyIsParam;
  p.cost = undefined;
  return target.kind === 'list' ? target : checker.registry.getListType(dyn);
}

/** `@result + [key]`: the accumulator read, the list (free when the key is a literal), the addition. */
const MAP_STEP = 12;

function sortByEvaluate(ev: Evaluator, m: SortByMacro, ctx: unknown): unknown {
  const p = m.parts;
  const target = ev.run(m.receiver, ctx);
  if (!p.cost) {
    const key = instrument(p.key);
    p.cost = { key, constant: key === 0 && (p.key.op === 'value' || p.key.op === '-_') };
  }
  const stepCost = p.cost.key + (p.cost.constant ? MAP_STEP - 10 : MAP_STEP);
  // the bind's two reads of the input, the map's result
  charge(3);
  if (!isList(target)) {
    if (target !== null && typeof target === 'object' && !(target instanceof Optional) && (target.constructor === Object || target instanceof Map)) {
      throw celError('no such overload: @sortByAssociatedKeys');
    }
    throw celError(`got '${goTypeName(target)}', expected iterable type`);
  }
  const list = [...target];
  const scope = p.scope!.reuse(ctx);
  const keys: unknown[] = [];
  let error: Error | undefined;
  for (const v of list) {
    if (!charge(stepCost)) return list; // cost.ts reports the overrun
    scope.setIterValue(v, ev);
    const k = ev.tryEval(p.key, scope);
    if (k instanceof Error) error ??= k;
    else keys.push(k);
  }
  if (error) {
    // cel-go's size tracker for a resolved overload takes the keys for a list: an error among them panics
    if (p.tracked) throw celError('internal error: interface conversion: *types.Err is not traits.Lister: missing method Add');
    charge(1);
    throw error;
  }
  if (!p.tracked) charge(1);
  else {
    const size = keys.length;
    const factor = typeof keys[0] === 'string' || keys[0] instanceof Uint8Array ? 2.1 : 2;
    charge(Math.floor(size * size * factor) + 11);
  }
  return sortByKeys(list, keys);
}


// ---------------------------------------------------------------------------------------------
// Go's sort.Slice (pdqsort_func, Go 1.19 and later), so that the order of equal keys is Go's.

type Less = (i: number, j: number) => boolean;

function goSortSlice(data: unknown[], less: Less): void {
  const n = data.length;
  const swap = (i: number, j: number) => {
    const t = data[i];
    data[i] = data[j];
    data[j] = t;
  };
  pdqsort({ less, swap }, 0, n, bitsLen(n));
}

interface LessSwap {
  less: Less;
  swap: (i: number, j: number) => void;
}

function bitsLen(n: number): number {
  return n === 0 ? 0 : Math.floor(Math.log2(n)) + 1;
}

function insertionSort(d: LessSwap, a: number, b: number): void {
  for (let i = a + 1; i < b; i++) for (let j = i; j > a && d.less(j, j - 1); j--) d.swap(j, j - 1);
}

function siftDown(d: LessSwap, lo: number, hi: number, first: number): void {
  let root = lo;
  for (;;) {
    let child = 2 * root + 1;
    if (child >= hi) return;
    if (child + 1 < hi && d.less(first + child, first + child + 1)) child++;
    if (!d.less(first + root, first + child)) return;
    d.swap(first + root, first + child);
    root = child;
  }
}

function heapSort(d: LessSwap, a: number, b: number): void {
  const first = a;
  const hi = b - a;
  for (let i = Math.floor((hi - 1) / 2); i >= 0; i--) siftDown(d, i, hi, first);
  for (let i = hi - 1; i >= 0; i--) {
    d.swap(first, first + i);
    siftDown(d, 0, i, first);
  }
}

const UNKNOWN_HINT = 0;
const INCREASING_HINT = 1;
const DECREASING_HINT = 2;

function pdqsort(d: LessSwap, a: number, b: number, limit: number): void {
  const maxInsertion = 12;
  let wasBalanced = true;
  let wasPartitioned = true;
  for (;;) {
    const length = b - a;
    if (length <= maxInsertion) {
      insertionSort(d, a, b);
      return;
    }
    if (limit === 0) {
      heapSort(d, a, b);
      return;
    }
    if (!wasBalanced) {
      breakPatterns(d, a, b);
      limit--;
    }
    let [pivot, hint] = choosePivot(d, a, b);
    if (hint === DECREASING_HINT) {
      reverseRange(d, a, b);
      pivot = b - 1 - (pivot - a);
      hint = INCREASING_HINT;
    }
    if (wasBalanced && wasPartitioned && hint === INCREASING_HINT) {
      if (partialInsertionSort(d, a, b)) return;
    }
    if (a > 0 && !d.less(a - 1, pivot)) {
      a = partitionEqual(d, a, b, pivot);
      continue;
    }
    const [mid, alreadyPartitioned] = partition(d, a, b, pivot);
    wasPartitioned = alreadyPartitioned;
    const leftLen = mid - a;
    const rightLen = b - mid;
    const balanceThreshold = Math.floor(length / 8);
    if (leftLen < rightLen) {
      wasBalanced = leftLen >= balanceThreshold;
      pdqsort(d, a, mid, limit);
      a = mid + 1;
    } else {
      wasBalanced = rightLen >= balanceThreshold;
      pdqsort(d, mid + 1, b, limit);
      b = mid;
    }
  }
}

function partition(d: LessSwap, a: number, b: number, pivot: number): [number, boolean] {
  d.swap(a, pivot);
  let i = a + 1;
  let j = b - 1;
  while (i <= j && d.less(i, a)) i++;
  while (i <= j && !d.less(j, a)) j--;
  if (i > j) {
    d.swap(j, a);
    return [j, true];
  }
  d.swap(i, j);
  i++;
  j--;
  for (;;) {
    while (i <= j && d.less(i, a)) i++;
    while (i <= j && !d.less(j, a)) j--;
    if (i > j) break;
    d.swap(i, j);
    i++;
    j--;
  }
  d.swap(j, a);
  return [j, false];
}

function partitionEqual(d: LessSwap, a: number, b: number, pivot: number): number {
  d.swap(a, pivot);
  let i = a + 1;
  let j = b - 1;
  for (;;) {
    while (i <= j && !d.less(a, i)) i++;
    while (i <= j && d.less(a, j)) j--;
    if (i > j) break;
    d.swap(i, j);
    i++;
    j--;
  }
  return i;
}

function partialInsertionSort(d: LessSwap, a: number, b: number): boolean {
  const maxSteps = 5;
  const shortestShifting = 50;
  let i = a + 1;
  for (let step = 0; step < maxSteps; step++) {
    while (i < b && !d.less(i, i - 1)) i++;
    if (i === b) return true;
    if (b - a < shortestShifting) return false;
    d.swap(i, i - 1);
    if (i - a >= 2) {
      for (let j = i - 1; j >= 1; j--) {
        if (!d.less(j, j - 1)) break;
        d.swap(j, j - 1);
      }
    }
    if (b - i >= 2) {
      for (let j = i + 1; j < b; j++) {
        if (!d.less(j, j - 1)) break;
        d.swap(j, j - 1);
      }
    }
  }
  return false;
}

const MASK64 = (1n << 64n) - 1n;

function breakPatterns(d: LessSwap, a: number, b: number): void {
  const length = b - a;
  if (length < 8) return;
  let random = BigInt(length);
  const modulus = 1 << bitsLen(length);
  const half = Math.floor(length / 4) * 2;
  for (let idx = a + half - 1; idx <= a + half + 1; idx++) {
    random ^= (random << 13n) & MASK64;
    random ^= random >> 7n;
    random ^= (random << 17n) & MASK64;
    let other = Number(random & BigInt(modulus - 1));
    if (other >= length) other -= length;
    d.swap(idx, a + other);
  }
}

function choosePivot(d: LessSwap, a: number, b: number): [number, number] {
  const shortestNinther = 50;
  const maxSwaps = 4 * 3;
  const l = b - a;
  const swaps = { n: 0 };
  let i = a + Math.floor(l / 4) * 1;
  let j = a + Math.floor(l / 4) * 2;
  let k = a + Math.floor(l / 4) * 3;
  if (l >= 8) {
    if (l >= shortestNinther) {
      i = medianAdjacent(d, i, swaps);
      j = medianAdjacent(d, j, swaps);
      k = medianAdjacent(d, k, swaps);
    }
    j = median(d, i, j, k, swaps);
  }
  if (swaps.n === 0) return [j, INCREASING_HINT];
  if (swaps.n === maxSwaps) return [j, DECREASING_HINT];
  return [j, UNKNOWN_HINT];
}

function order2(d: LessSwap, a: number, b: number, swaps: { n: number }): [number, number] {
  if (d.less(b, a)) {
    swaps.n++;
    return [b, a];
  }
  return [a, b];
}

function median(d: LessSwap, a: number, b: number, c: number, swaps: { n: number }): number {
  [a, b] = order2(d, a, b, swaps);
  [b, c] = order2(d, b, c, swaps);
  [a, b] = order2(d, a, b, swaps);
  return b;
}

function medianAdjacent(d: LessSwap, a: number, swaps: { n: number }): number {
  return median(d, a - 1, a, a + 1, swaps);
}

function reverseRange(d: LessSwap, a: number, b: number): void {
  for (let i = a, j = b - 1; i < j; i++, j--) d.swap(i, j);
}
