/**
 * `string(double)` as cel-go prints a double: Go's %g with the shortest digits, so 3000000.0 is
 * "3e+06" and 0.0000003 is "3e-07" where JavaScript would print "3000000" and "3e-7".
 */
import type { Environment } from '@marcbachmann/cel-js';
import { replaceBuiltin } from '../celjs/overloads.ts';

/** Go's strconv.FormatFloat(x, 'g', -1, 64): exponent form below 1e-4 and from 1e6 (Go's rule for the shortest %g). */
export function formatDouble(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? '+Inf' : '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, exponent] = x.toExponential().split('e') as [string, string];
  const exp = Number(exponent);
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(x);
}

export function replaceDoubleBuiltins(env: Environment): void {
  replaceBuiltin(env, 'string(1.5)', 'string(double): string', formatDouble);
}
