/**
 * Ordering bytes (`<`, `<=`, `>`, `>=`), byte by byte and then by length, as cel-go's
 * Bytes.Compare: part of CEL's standard definitions, absent from cel-js. The order itself is
 * celjs/values.ts's `celCompare`.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celCompare } from '../celjs/values.ts';

export function registerBytes(env: Environment): void {
  const order: [string, (c: number) => boolean][] = [
    ['<', (c) => c < 0],
    ['<=', (c) => c <= 0],
    ['>', (c) => c > 0],
    ['>=', (c) => c >= 0],
  ];
  for (const [op, test] of order) env.registerOperator(`bytes ${op} bytes`, (a: Uint8Array, b: Uint8Array) => test(celCompare(a, b)!));
}
