/**
 * The small value helpers the libraries share, over cel-js's runtime values: CEL type names,
 * errors in cel-go's words, equality and ordering (numbers across int, uint and double as cel-go
 * compares them). Values only: no environment, no AST, no cost.
 */
import { EvaluationError, Optional } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';

/** An evaluation error with cel-go's message. */
export function celError(message: string): EvaluationError {
  return new EvaluationError(message);
}

export { Duration, UnsignedInt, Optional };

/** The CEL type name of a runtime value, as cel-go prints it in messages. */
export function typeName(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'bigint':
      return 'int';
    case 'number':
      return 'double';
    case 'boolean':
      return 'bool';
  }
  if (value === null || value === undefined) return 'null_type';
  if (Array.isArray(value) || value instanceof Set) return 'list';
  if (value instanceof UnsignedInt) return 'uint';
  if (value instanceof Uint8Array) return 'bytes';
  if (value instanceof Date) return 'google.protobuf.Timestamp';
  if (value instanceof Duration) return 'google.protobuf.Duration';
  if (value instanceof Optional) return 'optional_type';
  const ctor = (value as object).constructor;
  if (ctor === Object || ctor === Map || ctor === undefined) return 'map';
  const named = (value as { celTypeName?: string }).celTypeName;
  return named ?? ctor.name;
}

export type Num = bigint | number | UnsignedInt;

export function isNumber(v: unknown): v is Num {
  return typeof v === 'bigint' || typeof v === 'number' || v instanceof UnsignedInt;
}

const TWO_63 = 9223372036854775808; // float64(math.MaxInt64), as Go compares a double with it
const TWO_64 = 18446744073709551616; // float64(math.MaxUint64)

const sign = (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * cel-go's order of two numbers (types/compare.go): -1, 0, 1, or undefined when one is NaN (each
 * caller says what NaN means to it). An int or uint meets a double as a double, after range
 * checks, as cel-go converts it.
 */
export function compareNumbers(a: Num, b: Num): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return Number.isNaN(a) || Number.isNaN(b) ? undefined : sign(a, b);
  if (typeof a === 'number') return compareDouble(a, b as bigint | UnsignedInt);
  if (typeof b === 'number') {
    const c = compareDouble(b, a);
    return c === undefined ? undefined : -c;
  }
  // int and uint: exactly
  return sign(a instanceof UnsignedInt ? a.value : a, b instanceof UnsignedInt ? b.value : (b as bigint));
}

function compareDouble(d: number, other: bigint | UnsignedInt): number | undefined {
  if (Number.isNaN(d)) return undefined;
  if (other instanceof UnsignedInt) {
    if (d < 0) return -1;
    if (d > TWO_64) return 1;
    return sign(d, Number(other.value));
  }
  if (d < -TWO_63) return -1;
  if (d > TWO_63) return 1;
  return sign(d, Number(other));
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Compares strings by code point (UTF-8 byte order), as cel-go does. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * The order of two comparable CEL values (-1, 0, 1), numbers compared across types as
 * Kubernetes enables; undefined when CEL defines no order between them.
 */
export function celCompare(a: unknown, b: unknown): number | undefined {
  if (isNumber(a) && isNumber(b)) {
    return compareNumbers(a, b);
  }
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  if (a instanceof Duration && b instanceof Duration) {
    if (a.seconds !== b.seconds) return a.seconds < b.seconds ? -1 : 1;
    return Math.sign(a.nanos - b.nanos);
  }
  const custom = (a as { compareTo?: (o: unknown) => number | undefined } | null)?.compareTo;
  if (typeof custom === 'function' && a !== null && b !== null && typeof b === 'object' && (a as object).constructor === (b as object).constructor) return custom.call(a, b);
  return undefined;
}

function objectsEqual(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  let size = 0;
  for (const key in a) {
    if (!Object.hasOwn(b, key) || !celEquals(a[key], b[key])) return false;
    size++;
  }
  for (const _ in b) size--;
  return size === 0;
}

function entriesOf(v: object): [unknown, unknown][] {
  return v instanceof Map ? [...v.entries()] : Object.entries(v);
}

/** CEL equality of runtime values: numbers by value across int/uint/double; lists in order; maps by keys. */
export function celEquals(a: unknown, b: unknown): boolean {
  if (a === b) return typeof a !== 'number' || !Number.isNaN(a);
  if (isNumber(a) && isNumber(b)) return compareNumbers(a, b) === 0;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) return a instanceof Uint8Array && b instanceof Uint8Array && compareBytes(a, b) === 0;
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (a instanceof Duration || b instanceof Duration) return a instanceof Duration && b instanceof Duration && celCompare(a, b) === 0;
  if (a instanceof Optional || b instanceof Optional) {
    if (!(a instanceof Optional && b instanceof Optional)) return false;
    return a.hasValue() === b.hasValue() && (!a.hasValue() || celEquals(a.value(), b.value()));
  }
  const aList = Array.isArray(a) || a instanceof Set;
  const bList = Array.isArray(b) || b instanceof Set;
  if (aList !== bList) return false;
  if (aList) {
    const x = [...(a as Iterable<unknown>)];
    const y = [...(b as Iterable<unknown>)];
    return x.length === y.length && x.every((v, i) => celEquals(v, y[i]));
  }
  const ctorA = a.constructor;
  const ctorB = b.constructor;
  const plainA = ctorA === Object || ctorA === Map || ctorA === undefined;
  const plainB = ctorB === Object || ctorB === Map || ctorB === undefined;
  if (plainA && plainB) {
    // JSON objects (the common case: Kubernetes objects) by key lookup; CEL maps with other keys by entries.
    if (ctorA !== Map && ctorB !== Map) return objectsEqual(a as Record<string, unknown>, b as Record<string, unknown>);
    const x = entriesOf(a);
    const y = entriesOf(b);
    if (x.length !== y.length) return false;
    return x.every(([k, v]) => y.some(([k2, v2]) => celEquals(k, k2) && celEquals(v, v2)));
  }
  if (ctorA !== ctorB) return false;
  const custom = (a as { equals?: (o: unknown) => boolean }).equals;
  return typeof custom === 'function' ? custom.call(a, b) : false;
}

/** Values CEL orders with <, as the lists and sort functions require. */
export function isComparable(v: unknown): boolean {
  return typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || v instanceof UnsignedInt || v instanceof Uint8Array || v instanceof Date || v instanceof Duration;
}

/** cel-go's (Go) type name of a value that cannot be a comprehension's range. */
export function goTypeName(v: unknown): string {
  if (typeof v === 'bigint') return 'types.Int';
  if (typeof v === 'number') return 'types.Double';
  if (typeof v === 'string') return 'types.String';
  if (typeof v === 'boolean') return 'types.Bool';
  if (v === null || v === undefined) return 'types.Null';
  if (v instanceof UnsignedInt) return 'types.Uint';
  if (v instanceof Uint8Array) return 'types.Bytes';
  if (v instanceof Date) return 'types.Timestamp';
  if (v instanceof Duration) return 'types.Duration';
  if (v instanceof Optional) return '*types.Optional';
  return typeName(v);
}
