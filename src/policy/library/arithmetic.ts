/**
 * Arithmetic within cel-go's ranges (common/types/overflow.go), where cel-js computes past them: `-i`,
 * `i / -1` and `i % -1` of the smallest int; durations as Go's int64 nanoseconds through `+` and `-`;
 * timestamps within years 1 to 9999 after a duration; out of range is cel-go's error (`integer
 * overflow`, `timestamp overflow`). Also `duration + timestamp` (cel-js declares it a duration).
 * Conversions are conversions.ts's; timestamps stay Dates with sub-millisecond nanoseconds beside them (timestamps.ts).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { replaceOperators, retypeOperator } from '../celjs/overloads.ts';
import { celError, Duration } from '../celjs/values.ts';
import { durationNanos, fitsDuration } from './conversions.ts';
import { subMilliNanos, withSubMilliNanos } from './timestamps.ts';

const MIN_INT64 = -(2n ** 63n);
const NANOS_PER_SECOND = 1_000_000_000n;
const NANOS_PER_MILLI = 1_000_000n;
// seconds from the epoch of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (cel-go's minUnixTime, maxUnixTime)
const MIN_UNIX_SECONDS = -62135596800n;
const MAX_UNIX_SECONDS = 253402300799n;

const floorDiv = (a: bigint, b: bigint) => (a % b !== 0n && a < 0n !== b < 0n ? a / b - 1n : a / b);

function negate(i: bigint): bigint {
  if (i === MIN_INT64) throw celError('integer overflow');
  return -i;
}

function divide(a: bigint, b: bigint): bigint {
  if (b === 0n) throw celError('division by zero');
  if (a === MIN_INT64 && b === -1n) throw celError('integer overflow');
  return a / b;
}

function modulo(a: bigint, b: bigint): bigint {
  if (b === 0n) throw celError('modulus by zero');
  if (a === MIN_INT64 && b === -1n) throw celError('integer overflow');
  return a % b;
}

function durationOf(nanos: bigint): Duration {
  if (!fitsDuration(nanos)) throw celError('integer overflow');
  // cel-js's own durations keep the sign in both parts (its parser's and fromMilliseconds')
  return new Duration(nanos / NANOS_PER_SECOND, Number(nanos % NANOS_PER_SECOND));
}

function timestampOf(nanos: bigint): Date {
  const seconds = floorDiv(nanos, NANOS_PER_SECOND);
  if (seconds < MIN_UNIX_SECONDS || seconds > MAX_UNIX_SECONDS) throw celError('timestamp overflow');
  const millis = floorDiv(nanos, NANOS_PER_MILLI);
  return withSubMilliNanos(new Date(Number(millis)), Number(nanos - millis * NANOS_PER_MILLI));
}

const timestampNanos = (t: Date) => BigInt(t.getTime()) * NANOS_PER_MILLI + BigInt(subMilliNanos(t));

const D = 'google.protobuf.Duration';
const T = 'google.protobuf.Timestamp';

/** Expressions whose values show the replacements took (cel-js internals may change under an upgrade). */
const CHECKS: [string, string][] = [
  ['-(-9223372036854775807 - 1)', 'integer overflow'],
  ["duration('9000000000s') + duration('9000000000s')", 'integer overflow'],
  ["timestamp('9999-12-31T23:59:59Z') + duration('1s')", 'timestamp overflow'],
];

export function replaceArithmetic(env: Environment): void {
  replaceOperators(env, '-1', { '-_int: int': negate });
  replaceOperators(env, '1 / 1', { 'int / int: int': divide });
  replaceOperators(env, '1 % 1', { 'int % int: int': modulo });
  const add = (a: Duration | Date, b: Duration | Date) => {
    if (a instanceof Date) return timestampOf(timestampNanos(a) + durationNanos(b as Duration));
    if (b instanceof Date) return timestampOf(timestampNanos(b) + durationNanos(a));
    return durationOf(durationNanos(a) + durationNanos(b));
  };
  retypeOperator(env, `duration('1s') + duration('1s')`, `${D} + ${T}: ${D}`, `${T} + ${D}: ${T}`);
  replaceOperators(env, `duration('1s') + duration('1s')`, { [`${D} + ${D}: ${D}`]: add, [`${T} + ${D}: ${T}`]: add, [`${D} + ${T}: ${T}`]: add });
  replaceOperators(env, `duration('1s') - duration('1s')`, {
    [`${D} - ${D}: ${D}`]: (a: Duration, b: Duration) => durationOf(durationNanos(a) - durationNanos(b)),
    [`${T} - ${T}: ${D}`]: (a: Date, b: Date) => durationOf(timestampNanos(a) - timestampNanos(b)),
    [`${T} - ${D}: ${T}`]: (a: Date, b: Duration) => timestampOf(timestampNanos(a) - durationNanos(b)),
  });

  const typed = env.parse("duration('1s') + timestamp(0) == timestamp(1)");
  if (!typed.check().valid || typed({}) !== true) throw new Error('replaceArithmetic: cel-js internals changed (duration + timestamp is not a timestamp)');
  for (const [expression, want] of CHECKS) {
    let got = 'no error';
    try {
      env.parse(expression)({});
    } catch (err) {
      got = (err as Error).message;
    }
    if (!got.startsWith(want)) throw new Error(`replaceArithmetic: cel-js internals changed ('${expression}' gave ${got})`);
  }
}
