/**
 * Type conversions as cel-go checks them (common/types' *Checked): out of range is `integer overflow` or
 * `unsigned integer overflow`. Also those cel-js lacks (`int(uint)`, `int(timestamp)`, `string(timestamp)`,
 * `string(duration)`, identities), bytes to string only from valid UTF-8, `duration(string)` only within
 * Go's time.Duration (±292 years). From strings otherwise cel-js's parsing, errors worded in
 * engine/errors.ts. A literal `duration()` or `timestamp()` cannot convert is refused at compile time, as
 * the API server's cel.ValidateDurationLiterals and ValidateTimestampLiterals do.
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { CallNode } from '../celjs/walk.ts';
import { builtinHandler, replaceBuiltin } from '../celjs/overloads.ts';
import { celError, Duration, UnsignedInt } from '../celjs/values.ts';
import { formatDuration, formatTimestamp } from './strings.ts';
import { subMilliNanosOf, withSubMilliNanos } from './timestamps.ts';

const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;
const MAX_UINT64 = 2 ** 64;
const MAX_INT64_BIG = 2n ** 63n - 1n;
const MIN_INT64_BIG = -(2n ** 63n);

function doubleToInt(d: number): bigint {
  // float64(math.MinInt64) and float64(math.MaxInt64) are both out, as in cel-go
  if (!Number.isFinite(d) || d <= MIN_INT64 || d >= MAX_INT64) throw celError('integer overflow');
  return BigInt(Math.trunc(d));
}

function doubleToUint(d: number): UnsignedInt {
  if (!Number.isFinite(d) || d < 0 || d >= MAX_UINT64) throw celError('unsigned integer overflow');
  return new UnsignedInt(BigInt(Math.trunc(d)));
}

function intToUint(i: bigint): UnsignedInt {
  if (i < 0n) throw celError('unsigned integer overflow');
  return new UnsignedInt(i);
}

function uintToInt(u: UnsignedInt): bigint {
  if (u.value > MAX_INT64_BIG) throw celError('integer overflow');
  return u.value;
}

/** The nanoseconds of a duration, and whether Go's time.Duration (int64 nanoseconds) holds them. */
export function durationNanos(d: Duration): bigint {
  return d.seconds * 1_000_000_000n + BigInt(d.nanos);
}
export function fitsDuration(nanos: bigint): boolean {
  return nanos >= MIN_INT64_BIG && nanos <= MAX_INT64_BIG;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function bytesToString(b: Uint8Array): string {
  try {
    return UTF8.decode(b);
  } catch {
    throw celError('invalid UTF-8 in bytes, cannot convert to string');
  }
}

/** The conversions cel-js does not declare; before any replacement (celjs/overloads.ts). */
export function registerConversions(env: Environment): void {
  env.registerFunction('int(uint): int', uintToInt);
  // Go's t.Unix(): whole seconds, rounded down
  env.registerFunction('int(google.protobuf.Timestamp): int', (t: Date) => BigInt(Math.floor(t.getTime() / 1000)));
  env.registerFunction('string(google.protobuf.Timestamp): string', formatTimestamp);
  env.registerFunction('string(google.protobuf.Duration): string', formatDuration);
  env.registerFunction('duration(google.protobuf.Duration): google.protobuf.Duration', (d: Duration) => d);
  env.registerFunction('timestamp(google.protobuf.Timestamp): google.protobuf.Timestamp', (t: Date) => t);
}

/** The conversions of string literals validateConversionCall tries: cel-js's (pure functions), as replaced here. */
const literalConversions = new Map<string, (s: string) => unknown>();

export function replaceConversionBuiltins(env: Environment): void {
  replaceBuiltin(env, 'int(1.5)', 'int(double): int', doubleToInt);
  replaceBuiltin(env, 'uint(1.5)', 'uint(double): uint', doubleToUint);
  replaceBuiltin(env, 'uint(1)', 'uint(int): uint', intToUint);
  replaceBuiltin(env, 'string(b"")', 'string(bytes): string', bytesToString);
  const parseDuration = builtinHandler(env, 'duration("1s")', 'duration(string): google.protobuf.Duration') as (s: string) => Duration;
  const duration = (s: string) => {
    const d = parseDuration(s);
    // time.ParseDuration's overflow: the same error as any string it cannot parse
    if (!fitsDuration(durationNanos(d))) throw celError("type conversion error from 'string' to 'google.protobuf.Duration'");
    return d;
  };
  replaceBuiltin(env, 'duration("1s")', 'duration(string): google.protobuf.Duration', duration);
  literalConversions.set('duration', duration);
  const parseTimestamp = builtinHandler(env, 'timestamp("2000-01-01T00:00:00Z")', 'timestamp(string): google.protobuf.Timestamp') as (s: string) => Date;
  // cel-js's Date keeps milliseconds; the digits below them are kept beside it (timestamps.ts)
  const timestamp = (s: string) => withSubMilliNanos(parseTimestamp(s), subMilliNanosOf(s));
  replaceBuiltin(env, 'timestamp("2000-01-01T00:00:00Z")', 'timestamp(string): google.protobuf.Timestamp', timestamp);
  literalConversions.set('timestamp', timestamp);
}

/** `duration('...')` and `timestamp('...')` of a literal that does not convert: cel-go's validator error. */
export function validateConversionCall(call: CallNode): void {
  const convert = call.receiver ? undefined : literalConversions.get(call.name);
  const literal = call.args[0]?.literal;
  if (!convert || call.args.length !== 1 || typeof literal !== 'string') return;
  try {
    convert(literal);
  } catch {
    throw celError(`invalid ${call.name} argument`);
  }
}
