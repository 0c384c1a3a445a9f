/**
 * Kubernetes' CEL list library (apiserver pkg/cel/library/lists.go), the part policies reach for
 * first: indexOf / lastIndexOf with CEL equality. The rest of the library is still to come.
 */
import type { Environment } from '@marcbachmann/cel-js';

/** CEL equality of JSON-shaped values: int and double compare by value; maps by keys; lists in order. */
export function celEquals(a: unknown, b: unknown): boolean {
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) return Number(a) === Number(b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => celEquals(v, (b as unknown[])[i]));
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((k) => Object.hasOwn(b, k) && celEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export function registerLists(env: Environment): void {
  env.registerFunction('list.indexOf(dyn): int', (list: unknown[], value: unknown) => BigInt(list.findIndex((v) => celEquals(v, value))));
  env.registerFunction('list.lastIndexOf(dyn): int', (list: unknown[], value: unknown) => BigInt(list.findLastIndex((v) => celEquals(v, value))));
}
