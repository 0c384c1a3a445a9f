/**
 * Kubernetes' quantity library (apiserver pkg/cel/library/quantity.go): quantity(),
 * isQuantity(), sign(), compareTo, isLessThan, isGreaterThan, add and sub (with a quantity or an
 * int), asInteger, isInteger, asApproximateFloat. The CEL face only: parsing and arithmetic are
 * apimachinery's, ported in src/kubernetes/quantity.ts (Go's representation, exact values).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { COST_SIZE } from '../cost/calls.ts';
import { compare, goQuantityAdd, goQuantityApproximate, goQuantityAsInt64, goQuantityNegate, goQuantitySign, goQuantityValue, parseGoQuantity, QuantityError, type GoQuantity } from '../../kubernetes/quantity.ts';

/** A CEL `kubernetes.Quantity` value. */
export class QuantityValue {
  readonly celTypeName = 'kubernetes.Quantity';
  readonly repr: GoQuantity;
  /** How many digits it was written with (or its operands had, plus one); with its scale, what its arithmetic works over (a team's policy is charged by it, cost/calls.ts). */
  readonly digits: number;
  constructor(repr: GoQuantity, digits = 19) {
    this.repr = repr;
    this.digits = digits;
  }
  get [COST_SIZE](): number {
    return this.digits + Math.abs(this.repr.scale);
  }
  compareTo(other: QuantityValue): number {
    return compare(goQuantityValue(this.repr), goQuantityValue(other.repr));
  }
  equals(other: unknown): boolean {
    return other instanceof QuantityValue && this.compareTo(other) === 0;
  }
  sign(): number {
    return goQuantitySign(this.repr);
  }
}

/** quantity(s): Go's ParseQuantity, its refusal as a CEL error. */
export function parseQuantity(str: string): QuantityValue {
  try {
    return new QuantityValue(parseGoQuantity(str), Math.max(19, str.length));
  } catch (err) {
    if (err instanceof QuantityError) throw celError(err.message);
    throw err;
  }
}

function isQuantity(s: string): boolean {
  try {
    parseQuantity(s);
    return true;
  } catch {
    return false;
  }
}

export function registerQuantity(env: Environment): void {
  env.registerType('kubernetes.Quantity', QuantityValue);
  env.registerFunction('quantity(string): kubernetes.Quantity', parseQuantity);
  env.registerFunction('isQuantity(string): bool', isQuantity);
  env.registerFunction('sign(kubernetes.Quantity): int', (q: QuantityValue) => BigInt(q.sign()));
  env.registerFunction('kubernetes.Quantity.isGreaterThan(kubernetes.Quantity): bool', (a: QuantityValue, b: QuantityValue) => a.compareTo(b) === 1);
  env.registerFunction('kubernetes.Quantity.isLessThan(kubernetes.Quantity): bool', (a: QuantityValue, b: QuantityValue) => a.compareTo(b) === -1);
  env.registerFunction('kubernetes.Quantity.compareTo(kubernetes.Quantity): int', (a: QuantityValue, b: QuantityValue) => BigInt(a.compareTo(b)));
  env.registerFunction('kubernetes.Quantity.asApproximateFloat(): double', (q: QuantityValue) => goQuantityApproximate(q.repr));
  env.registerFunction('kubernetes.Quantity.asInteger(): int', (q: QuantityValue) => {
    const v = goQuantityAsInt64(q.repr);
    if (v === undefined) throw celError('cannot convert value to integer');
    return v;
  });
  env.registerFunction('kubernetes.Quantity.isInteger(): bool', (q: QuantityValue) => goQuantityAsInt64(q.repr) !== undefined);
  env.registerFunction('kubernetes.Quantity.add(kubernetes.Quantity): kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => new QuantityValue(goQuantityAdd(a.repr, b.repr), Math.max(a.digits, b.digits) + 1));
  env.registerFunction('kubernetes.Quantity.add(int): kubernetes.Quantity', (a: QuantityValue, n: bigint) => new QuantityValue(goQuantityAdd(a.repr, { int: n, scale: 0 }), a.digits + 1));
  env.registerFunction('kubernetes.Quantity.sub(kubernetes.Quantity): kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => new QuantityValue(goQuantityAdd(a.repr, goQuantityNegate(b.repr)), Math.max(a.digits, b.digits) + 1));
  env.registerFunction('kubernetes.Quantity.sub(int): kubernetes.Quantity', (a: QuantityValue, n: bigint) => new QuantityValue(goQuantityAdd(a.repr, { int: -n, scale: 0 }), a.digits + 1));
  env.registerOperator('kubernetes.Quantity == kubernetes.Quantity', (a: QuantityValue, b: QuantityValue) => a.equals(b));
}
