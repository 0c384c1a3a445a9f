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
 * Cost: slice, flatten, range, reverse, distinct and sort are charged in cost/calls.ts (CALL_COSTS) as
 * cel-go's trackers do; sortBy charges its expansion here, as cel-go's cost tracker charges
 * `cel.bind(l, target, l.@sortByAssociatedKeys(l.map(v, key)))`. In a team's AdmissionPolicy
 * (`strict`), by real sizes whatever the key's static type, and before the sort (STRICT_CALL_COSTS).
 */
import { ParseError, type Environment } from '@marcbachmann/cel-js';
import { charge } from '../cost/meter.ts';
import { instrument } from '../cost/instrument.ts';
import { strictSortCost } from '../cost/calls.ts';
import { celCompare, celEquals, celError, goTypeName, isComparable, Optional, typeName } from '../celjs/values.ts';
import { celGoType, concrete, elementType, SORTABLE } from '../celjs/static-types.ts';
import type { CallNode } from '../celjs/walk.ts';
import { goSortSlice } from '../../go/sort.ts';
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
  const refused = (call.name === 'flatten' && !element.startsWith('list')) || (call.name === 'sort' && !SORTABLE.includes(element)) || (call.name === 'unwrapOpt' && !element.startsWith('optional'));
  if (refused) throw celError(`found no matching overload for '${call.name}' applied to '${celGoType(call.receiver.type)}.()'`);
}

// ---------------------------------------------------------------------------------------------
// sortBy: cel-go expands `target.sortBy(v, key)` to
// `cel.bind(@__sortBy_input__, target, @__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(v, key)))`.

/** What cost/instrument.ts's walk of macro objects must not see (it would charge the key once, not per element). */
interface SortByParts {
  variable: string;
  key: Node;
  scope: Scope | undefined;
  /** Whether cel-go resolves one @sortByAssociatedKeys overload (a comparable key type) and so charges by size. */
  tracked: boolean;
  /** The key's static cost, measured on first evaluation; constant: the key is a literal (`[key]` is then free). */
  cost: { key: number; constant: boolean } | undefined;
  /** Set by cost/instrument.ts in a team's policy: charged by size whatever the key's static type, the key instrumented as strictly. */
  strict?: boolean;
}

interface SortByMacro {
  /** The target: the one piece cost/instrument.ts sees, and charges once. */
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
    throw checker.createError('invalid_comprehension_range', `expression of type '${goType(target)}' cannot be range of a comprehension (must be list, map, or dynamic)`, m.receiver);
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
    const key = instrument(p.key, p.strict);
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
    if (!charge(stepCost)) return list; // cost/meter.ts reports the overrun
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
  if (p.strict) {
    // charged before the sort runs, as a team's sort() is (cost/calls.ts)
    if (!charge(strictSortCost(keys))) return list; // cost/meter.ts reports the overrun
  } else if (!p.tracked) charge(1);
  else {
    const size = keys.length;
    const factor = typeof keys[0] === 'string' || keys[0] instanceof Uint8Array ? 2.1 : 2;
    charge(Math.floor(size * size * factor) + 11);
  }
  return sortByKeys(list, keys);
}
