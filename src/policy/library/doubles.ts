/**
 * `string(double)` as cel-go prints a double: Go's %g with the shortest digits, so 3000000.0 is
 * "3e+06" and 0.0000003 is "3e-07" where JavaScript would print "3000000" and "3e-7".
 */
import type { Environment } from '@marcbachmann/cel-js';
import { replaceBuiltin } from '../celjs/overloads.ts';
import { formatDouble } from '../../go/strconv.ts';

export function replaceDoubleBuiltins(env: Environment): void {
  replaceBuiltin(env, 'string(1.5)', 'string(double): string', formatDouble);
}
