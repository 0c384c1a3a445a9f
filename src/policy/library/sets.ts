/**
 * cel-go's sets extension, as Kubernetes enables it (ext.Sets()): sets.contains,
 * sets.equivalent and sets.intersects over lists of one element type, membership by CEL
 * equality (so 1 and 1.0 are the same element when the lists are untyped).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celEquals, celError } from '../celjs/values.ts';
import { celGoType } from '../celjs/static-types.ts';
import type { CallNode } from '../celjs/walk.ts';

function has(list: unknown[], value: unknown): boolean {
  return list.some((v) => celEquals(v, value));
}

function contains(list: unknown[], sublist: unknown[]): boolean {
  const l = [...list];
  for (const v of sublist) if (!has(l, v)) return false;
  return true;
}

function intersects(a: unknown[], b: unknown[]): boolean {
  const l = [...b];
  for (const v of a) if (has(l, v)) return true;
  return false;
}

class SetsNamespace {}

export function registerSets(env: Environment): void {
  env.registerType('SetsNamespace', SetsNamespace);
  env.registerConstant('sets', 'SetsNamespace', new SetsNamespace());
  // list, not list<T>: cel-js types an untyped list at run time by its first element, so a
  // placeholder would refuse ['a', 1] against [1]; the element types are checked at compile time
  env.registerFunction('SetsNamespace.contains(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) => contains(a, b));
  env.registerFunction('SetsNamespace.equivalent(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) => contains(a, b) && contains(b, a));
  env.registerFunction('SetsNamespace.intersects(list, list): bool', (_: unknown, a: unknown[], b: unknown[]) => intersects(a, b));
}

/** The API server's overloads take list(T), list(T): lists of known, different element types do not compile. */
export function validateSetsCall(call: CallNode): void {
  if (call.receiver?.type !== 'SetsNamespace' || call.args.length !== 2) return;
  const [a, b] = call.args.map((x) => x.type) as [string, string];
  const concrete = (t: string) => /^list<.*>$/.test(t) && !/\bdyn\b|<[A-Z]>/.test(t);
  if (concrete(a) && concrete(b) && a !== b) {
    throw celError(`found no matching overload for 'sets.${call.name}' applied to '(${celGoType(a)}, ${celGoType(b)})'`);
  }
}
