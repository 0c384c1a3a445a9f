/**
 * Comparing numbers across int, uint and double as cel-go does (cel.CrossTypeNumericComparisons), where
 * cel-js differs: ordering a NaN is the error "NaN values cannot be ordered" (cel-js: false); an int or
 * uint is compared with a double as a double after range checks (2^63-1 == 2^63.0); list elements and
 * map values compare with the same heterogeneous equality (`dyn([1u]) == dyn([1])`, `dyn(1u) in [1, 2]`:
 * true). Handlers replaced via celjs/overloads.ts; the order itself is celjs/values.ts' `compareNumbers`.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celEquals, celError, compareNumbers, isNumber, UnsignedInt, type Num } from '../celjs/values.ts';
import { replaceOperators } from '../celjs/overloads.ts';
import { firstLine } from '../celjs/program.ts';
import { OPTIONAL_LIST_ENTRY, OPTIONAL_MAP_ENTRY } from '../celjs/rewrite.ts';

function isList(v: unknown): v is unknown[] | Set<unknown> {
  return Array.isArray(v) || v instanceof Set;
}

function isMap(v: unknown): v is Map<unknown, unknown> | Record<string, unknown> {
  if (v instanceof Map) return true;
  return typeof v === 'object' && v !== null && (v.constructor === Object || v.constructor === undefined);
}

const MISSING = Symbol('missing');

/** The value of `key` in a CEL map, keys compared as CEL does (1, 1u and 1.0 are one key). */
function lookup(map: Map<unknown, unknown> | Record<string, unknown>, key: unknown): unknown {
  if (map instanceof Map) {
    if (map.has(key)) return map.get(key);
    if (isNumber(key)) for (const [k, v] of map) if (isNumber(k) && compareNumbers(k, key) === 0) return v;
    return MISSING;
  }
  // cel-js keeps the keys of map literals as strings ({1: 'a'} is {'1': 'a'})
  const name = typeof key === 'string' ? key : key instanceof UnsignedInt ? String(key.value) : String(key);
  return Object.hasOwn(map, name) ? map[name] : MISSING;
}

function size(map: Map<unknown, unknown> | Record<string, unknown>): number {
  return map instanceof Map ? map.size : Object.keys(map).length;
}

function entries(map: Map<unknown, unknown> | Record<string, unknown>): Iterable<[unknown, unknown]> {
  return map instanceof Map ? map : Object.entries(map);
}

/** CEL's heterogeneous equality, numbers compared as cel-go compares them, inside lists and maps too. */
export function numericEquals(a: unknown, b: unknown): boolean {
  if (isNumber(a) && isNumber(b)) return compareNumbers(a, b) === 0;
  if (isList(a) && isList(b)) {
    const x = Array.isArray(a) ? a : [...a];
    const y = Array.isArray(b) ? b : [...b];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!numericEquals(x[i], y[i])) return false;
    return true;
  }
  if (isMap(a) && isMap(b)) {
    if (size(a) !== size(b)) return false;
    for (const [k, v] of entries(a)) {
      const other = lookup(b, k);
      if (other === MISSING || !numericEquals(v, other)) return false;
    }
    return true;
  }
  return celEquals(a, b);
}

function includes(value: unknown, list: unknown[] | Set<unknown>): boolean {
  if (list instanceof Set && list.has(value)) return true;
  for (const v of list) if (numericEquals(value, v)) return true;
  return false;
}

function ordered(test: (c: number) => boolean) {
  return (a: Num, b: Num): boolean => {
    const c = compareNumbers(a, b);
    if (c === undefined) throw celError('NaN values cannot be ordered');
    return test(c);
  };
}

/** Expressions whose values show the replacement took (cel-js internals may change under an upgrade). */
const CHECKS: [string, unknown][] = [
  ['9223372036854775807 < 9223372036854775808.0', false],
  ['dyn(9223372036854775807) == dyn(9223372036854775808.0)', true],
  ['dyn([1u]) == dyn([1])', true],
  ['dyn({"a": 1}) != dyn({"a": 1.0})', false],
  ['dyn(1u) in [1, 2]', true],
  ['1.5 > 1 && 2u >= 1.5 && -1 < 0u', true],
];

export function replaceNumericComparisons(env: Environment): void {
  const order: [string, (c: number) => boolean][] = [
    ['<', (c) => c < 0],
    ['<=', (c) => c <= 0],
    ['>', (c) => c > 0],
    ['>=', (c) => c >= 0],
  ];
  for (const [op, test] of order) {
    const handler = ordered(test);
    const handlers: Record<string, (...args: never[]) => unknown> = {};
    for (const pair of ['double double', 'int double', 'double int', 'uint double', 'double uint']) {
      const [l, r] = pair.split(' ');
      handlers[`${l} ${op} ${r}: bool`] = handler;
    }
    replaceOperators(env, `1.0 ${op} 1.0`, handlers);
  }
  const equal = (a: unknown, b: unknown) => numericEquals(a, b);
  const unequal = (a: unknown, b: unknown) => !numericEquals(a, b);
  const pairs = ['dyn<int> == dyn<double>', 'dyn<double> == dyn<int>', 'dyn<uint> == dyn<double>', 'dyn<double> == dyn<uint>', 'list<V> == list<V>', 'map<K, V> == map<K, V>'];
  replaceOperators(env, '1 == 1', Object.fromEntries(pairs.map((p) => [`${p}: bool`, equal])));
  replaceOperators(env, '1 != 1', Object.fromEntries(pairs.map((p) => [`${p.replace('==', '!=')}: bool`, unequal])));
  replaceOperators(env, '1 in [1]', { 'V in list<V>: bool': (value: unknown, list: unknown[] | Set<unknown>) => includes(value, list) });

  for (const [expression, want] of CHECKS) {
    const program = env.parse(expression);
    if (!program.check().valid || program({}) !== want) throw new Error(`replaceNumericComparisons: cel-js internals changed ('${expression}' is not ${String(want)})`);
  }
  const nan = env.parse('dyn(1) < double("NaN")');
  let ordersNaN = true;
  try {
    nan.check();
    nan({});
  } catch {
    ordersNaN = false;
  }
  if (ordersNaN) throw new Error('replaceNumericComparisons: cel-js internals changed (NaN is ordered)');
}

const OPERATOR_NAMES: Record<string, string> = { '-': '_-_', '+': '_+_', '*': '_*_', '/': '_/_', '%': '_%_', '==': '_==_', '!=': '_!=_', '<': '_<_', '<=': '_<=_', '>': '_>_', '>=': '_>=_', in: '@in' };

/**
 * cel-js's compile-time "no such overload: int == double" in cel-go's words, "found no matching
 * overload for '_==_' applied to '(int, double)'" (`2u == 2` and `1.0 == 1` do not compile in
 * either: cross-type equality is for dyn values). Other messages are returned as they are.
 */
export function celGoOverloadMessage(message: string): string {
  const goType = (t: string) =>
    t
      .replaceAll('<', '(')
      .replaceAll('>', ')')
      .replace(/^null$/, 'null_type');
  const unary = /^no such overload: ([-!])([\w.<>, ]+)$/.exec(message);
  if (unary) return `found no matching overload for '${unary[1]}_' applied to '(${goType(unary[2]!)})'`;
  const binary = /^no such overload: ([\w.<>, ]+?) (==|!=|<=|>=|<|>|\+|-|\*|\/|%|in) ([\w.<>, ]+)$/.exec(message);
  if (binary) return `found no matching overload for '${OPERATOR_NAMES[binary[2]!]}' applied to '(${goType(binary[1]!)}, ${goType(binary[3]!)})'`;
  return message;
}

interface CheckedCall {
  op?: string;
  args?: unknown;
  argTypes?: { name?: string }[];
}

/**
 * A type-check error in cel-go's words: a function call no overload takes, "found no matching
 * overload for 'slice' applied to 'list(int).(int, uint)'" (cel-js names the receiver's kind only,
 * so the types are read from the checked call node the error carries); otherwise as
 * celGoOverloadMessage.
 */
export function celGoCheckMessage(err: unknown): string {
  const message = firstLine(err);
  const node = (err as { node?: CheckedCall } | null)?.node;
  if (/^found no matching overload for '/.test(message) && node && Array.isArray(node.args) && Array.isArray(node.argTypes)) {
    const goType = (t: string | undefined) =>
      (t ?? 'dyn')
        .replaceAll('<', '(')
        .replaceAll('>', ')')
        .replaceAll('optional(', 'optional_type(')
        .replace(/^null$/, 'null_type');
    const args = node.argTypes.map((t) => goType(t?.name)).join(', ');
    if (node.op === 'rcall') {
      const [name, receiver] = node.args as [string, { checkedType?: { name?: string } } | undefined];
      const type = receiver?.checkedType?.name;
      const namespace = type && /^([A-Z][A-Za-z]*)Namespace$/.exec(type)?.[1];
      if (namespace) return `found no matching overload for '${namespace.toLowerCase()}.${name}' applied to '(${args})'`;
      return `found no matching overload for '${name}' applied to '${goType(type)}.(${args})'`;
    }
    if (node.op === 'call') {
      const name = (node.args as [string])[0];
      // an optional entry (`[?x]`, `{?k: x}`; celjs/rewrite.ts) that is not an optional, in cel-go's words
      const entry = name === OPTIONAL_LIST_ENTRY ? node.argTypes[0] : name === OPTIONAL_MAP_ENTRY ? node.argTypes[2] : undefined;
      if (entry) return `expected type 'optional_type(${goType(entry.name)})' but found '${goType(entry.name)}'`;
      return `found no matching overload for '${name}' applied to '(${args})'`;
    }
  }
  return celGoOverloadMessage(message);
}
