/**
 * Numeric type conversions as cel-go checks them (common/types: doubleToInt64Checked,
 * doubleToUint64Checked, int64ToUint64Checked): out of range is `integer overflow` or `unsigned
 * integer overflow`, where cel-js converts anyway or words it otherwise. Conversions from strings
 * keep cel-js's parsing; their errors are worded as cel-go's in engine/errors.ts.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { replaceBuiltin } from '../celjs/overloads.ts';
import { celError, UnsignedInt } from '../celjs/values.ts';

const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;
const MAX_UINT64 = 2 ** 64;

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

export function replaceConversionBuiltins(env: Environment): void {
  replaceBuiltin(env, 'int(1.5)', 'int(double): int', doubleToInt);
  replaceBuiltin(env, 'uint(1.5)', 'uint(double): uint', doubleToUint);
  replaceBuiltin(env, 'uint(1)', 'uint(int): uint', intToUint);
}
