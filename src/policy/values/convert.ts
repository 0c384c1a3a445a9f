/**
 * JSON <-> CEL values. Kubernetes decodes whole JSON numbers as int64, so `replicas / 2` is
 * integer division and `type(x) == int` holds; here that means BigInt on the CEL side and plain
 * numbers on the JSON side.
 */
import type { Reads } from './reads.ts';

export function toCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(toCel);
  const out: Record<string, unknown> = {};
  for (const key in value) setOwn(out, key, toCel((value as Record<string, unknown>)[key]));
  return out;
}

/** `target[key] = value`, as an own property even for "__proto__" (which JSON.parse makes an ordinary key). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * The whole numbers of a request's JSON turned to BigInt where they stand, for the span of one
 * synchronous evaluation, then put back (why not a copy: docs/adr/0024-whole-numbers-converted-in-place.md).
 * Callers must `restore()` before anything else sees the JSON (a finally block).
 */
export class IntsInPlace {
  /** (container, key, original number) triples, in the order they were changed; made at the first (a compiled webhook converts nothing). */
  private changed: unknown[] | undefined;

  /** Converts `value` (a JSON tree) in place, the parts of it in `reads` (all by default), and returns it. */
  convert<T>(value: T, reads: Reads = true): T {
    if (value !== null && typeof value === 'object') this.walk(value as object, reads);
    return value;
  }

  restore(): void {
    const changed = this.changed;
    if (!changed) return;
    for (let i = changed.length - 3; i >= 0; i -= 3) (changed[i] as Record<string | number, unknown>)[changed[i + 1] as string] = changed[i + 2];
    changed.length = 0;
  }

  private walk(node: object, reads: Reads): void {
    if (reads !== true) {
      const { fields, elements } = reads;
      if (Array.isArray(node)) {
        // a list has no fields to select; its elements are read only by a comprehension over it
        if (elements) for (let i = 0; i < node.length; i++) this.visit(node, i, node[i], elements);
        return;
      }
      for (let i = 0; i < fields.length; i++) {
        const [key, below] = fields[i]!;
        if (Object.hasOwn(node, key)) this.visit(node, key, (node as Record<string, unknown>)[key], below);
      }
      // a map's values, read by a two-variable comprehension over it
      if (elements) for (const key in node) this.visit(node, key, (node as Record<string, unknown>)[key], elements);
      return;
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) this.visit(node, i, node[i], true);
      return;
    }
    for (const key in node) this.visit(node, key, (node as Record<string, unknown>)[key], true);
  }

  private visit(container: object, key: string | number, value: unknown, reads: Reads): void {
    if (typeof value === 'number') {
      if (Number.isInteger(value)) {
        (this.changed ??= []).push(container, key, value);
        (container as Record<string | number, unknown>)[key] = BigInt(value);
      }
    } else if (value !== null && typeof value === 'object') this.walk(value, reads);
  }
}

/**
 * Set on an activation whose JSON is still as parsed: converts it (in place, once) for cel-js.
 * Compiled programs (policy/fast) read whole JSON numbers as ints themselves, so a webhook whose
 * expressions all compile never pays for the conversion.
 */
export const CONVERT: unique symbol = Symbol('convert');

/** Converts the activation's JSON if that is still to be done. */
export function convertActivation(activation: unknown): void {
  (activation as { [CONVERT]?: () => void } | null | undefined)?.[CONVERT]?.();
}

export function fromCel(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(fromCel);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), fromCel(v)]));
  const out: Record<string, unknown> = {};
  for (const key in value) setOwn(out, key, fromCel((value as Record<string, unknown>)[key]));
  return out;
}
