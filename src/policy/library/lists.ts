/**
 * Kubernetes' CEL list library (apiserver pkg/cel/library/lists.go, version 1 as in 1.37):
 * isSorted, sum, min, max, indexOf, lastIndexOf on lists, and includes on any value. Element
 * types are checked at compile time where they are known, as the API server's overloads do;
 * values of untyped fields are checked at run time with the API server's messages.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celCompare, celEquals, celError, Duration, isComparable, UnsignedInt } from '../celjs/values.ts';
import type { CallNode } from '../celjs/walk.ts';
import { celGoType, concrete, elementType } from '../celjs/static-types.ts';

export { celEquals };

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;

/** Element types whose values CEL can order (isSorted, min, max). */
const COMPARABLE = ['int', 'uint', 'double', 'bool', 'google.protobuf.Duration', 'google.protobuf.Timestamp', 'string', 'bytes'];
/** Element types `sum` adds. */
const SUMMABLE = ['int', 'uint', 'double', 'google.protobuf.Duration'];

function isSorted(list: unknown[]): boolean {
  let prev: unknown;
  let first = true;
  for (const next of list) {
    if (!isComparable(next)) throw celError('no such overload: isSorted(list)');
    // an order CEL does not define (1 against 'a') does not count as out of order, as in cel-go
    if (!first && celCompare(prev, next) === 1) return false;
    prev = next;
    first = false;
  }
  return true;
}

/** min (prefer = 1: take the next when the current is greater) and max (prefer = -1). */
function extreme(name: 'min' | 'max', prefer: 1 | -1) {
  return (list: unknown[]): unknown => {
    let result: unknown;
    let first = true;
    for (const next of list) {
      if (!isComparable(next)) throw celError(`no such overload: ${name}(list)`);
      if (first) result = next;
      else if (celCompare(result, next) === prefer) result = next;
      first = false;
    }
    if (first) throw celError(`${name} called on empty list`);
    return result;
  };
}

function add(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') {
    const s = a + b;
    if (s > INT64_MAX || s < INT64_MIN) throw celError('integer overflow');
    return s;
  }
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (a instanceof UnsignedInt && b instanceof UnsignedInt) {
    const s = a.value + b.value;
    if (s > UINT64_MAX) throw celError('unsigned integer overflow');
    return new UnsignedInt(s);
  }
  if (a instanceof Duration && b instanceof Duration) return a.addDuration(b);
  throw celError('no such overload');
}

function sum(list: unknown[]): unknown {
  if (list.length === 0) return 0n;
  const head = list[0];
  let acc: unknown;
  if (typeof head === 'bigint') acc = 0n;
  else if (typeof head === 'number') acc = 0;
  else if (head instanceof UnsignedInt) acc = new UnsignedInt(0n);
  else if (head instanceof Duration) acc = new Duration(0n, 0);
  else throw celError('no such overload: sum(list)');
  for (const v of list) acc = add(acc, v);
  return acc;
}

function includes(target: unknown, value: unknown): boolean {
  if (Array.isArray(target) || target instanceof Set) {
    for (const v of target) if (celEquals(v, value)) return true;
    return false;
  }
  return celEquals(target, value);
}

export function registerLists(env: Environment): void {
  // dyn results: cel-js resolves a placeholder result (list<T> -> T) of an untyped receiver to the
  // bare placeholder, which then breaks operator overload resolution (`x.sum() > 2.5`)
  env.registerFunction('list.isSorted(): bool', (l: unknown[]) => isSorted([...l]));
  env.registerFunction('list.sum(): dyn', (l: unknown[]) => sum([...l]));
  env.registerFunction('list.min(): dyn', (l: unknown[]) => extreme('min', 1)([...l]));
  env.registerFunction('list.max(): dyn', (l: unknown[]) => extreme('max', -1)([...l]));
  env.registerFunction('list.indexOf(dyn): int', (list: unknown[], value: unknown) => BigInt([...list].findIndex((v) => celEquals(v, value))));
  env.registerFunction('list.lastIndexOf(dyn): int', (list: unknown[], value: unknown) => BigInt([...list].findLastIndex((v) => celEquals(v, value))));
  env.registerFunction('dyn.includes(dyn): bool', includes);
}

/** The overload checks the API server makes where cel-js accepts any list (or element). */
export function validateListCall(call: CallNode): void {
  if (!call.receiver) return;
  const element = elementType(call.receiver.type);
  if (element === undefined || !concrete(element)) return;
  const allowed = call.name === 'sum' ? SUMMABLE : ['isSorted', 'min', 'max'].includes(call.name) ? COMPARABLE : undefined;
  if (allowed && call.args.length === 0 && !allowed.includes(element)) {
    throw celError(`found no matching overload for '${call.name}' applied to '${celGoType(call.receiver.type)}.()'`);
  }
  if ((call.name === 'indexOf' || call.name === 'lastIndexOf') && call.args.length === 1) {
    const arg = call.args[0]!.type;
    if (concrete(arg) && arg !== element && arg !== 'null') {
      throw celError(`found no matching overload for '${call.name}' applied to '${celGoType(call.receiver.type)}.(${celGoType(arg)})'`);
    }
  }
}
