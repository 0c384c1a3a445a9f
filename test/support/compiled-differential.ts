/**
 * The differential check of the compiled CEL shortcut (src/policy/fast): every answer the
 * shortcut gives is compared with cel-js's own answer from the same cost, value and cost, and the
 * differences kept for the tests to fail on (verify-compiled.ts's root hooks, and the tests that
 * count the answers checked). Test-only: src/ only offers the observer slot.
 */
import type { ParseResult } from '@marcbachmann/cel-js';
import { meter } from '../../src/policy/cost/meter.ts';
import { CONVERT, toCel } from '../../src/policy/values/convert.ts';
import type { CompiledProgram } from '../../src/policy/fast/compiler.ts';
import { numberKind } from '../../src/policy/fast/runtime.ts';
import { observeShortcut, type ShortcutObserver } from '../../src/policy/fast/shortcut.ts';

/** Every shortcut answer checked against cel-js's, and the differences found (for the tests to fail on). */
export const verification = { on: false, differences: [] as string[], answers: 0 };

/** Turns the check of every shortcut answer on (the root hooks in verify-compiled.ts) or off. */
export function verifyCompiled(on: boolean): void {
  verification.on = on;
  observeShortcut(on ? observer : undefined);
}

const observer: ShortcutObserver = {
  threw(err, compiled) {
    verification.differences.push(`threw ${String(err)}\n${compiled.toString()}`);
  },
  answered: verify,
};

/**
 * cel-js's answer from the same cost, on a converted copy of the activation: the activation itself
 * stays as the compiled programs after this one would have found it.
 */
function verify(program: ParseResult, activation: unknown, charged: number, result: unknown, compiled: CompiledProgram, onVariables: number): void {
  verification.answers++;
  const cost = meter.cost;
  meter.cost = charged;
  let expected: unknown;
  try {
    const a = activation as Record<string | symbol, unknown>;
    const converted = a[CONVERT] ? { ...a, [CONVERT]: undefined, object: toCel(a.object), oldObject: toCel(a.oldObject), request: toCel(a.request) } : a;
    expected = program(converted as never);
  } catch (err) {
    expected = err;
  }
  // (cel-js reads the variables already computed, and does not pay for them again)
  meter.cost += onVariables;
  if (!sameValue(result, expected) || meter.cost !== cost) {
    const show = (v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Error ? `error ${v.message}` : typeof v === 'object' ? '(an object)' : JSON.stringify(v));
    verification.differences.push(`shortcut ${show(result)} at cost ${cost - charged}, cel-js ${show(expected)} at cost ${meter.cost - charged}\n${compiled.toString()}`);
  }
  meter.cost = cost;
}

/** The same answer: identical, or the same JSON (its whole numbers as BigInts or as numbers, when verify compared a converted copy). */
function sameValue(a: unknown, b: unknown, inJson = false): boolean {
  // (== compares a BigInt and a number exactly)
  if (inJson && numberKind(a) === 1 && numberKind(b) === 1) return a == b;
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null || a === b) return Object.is(a, b);
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((e, i) => sameValue(e, b[i], true));
  const keys = Object.keys(a);
  return !Array.isArray(b) && keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], true));
}
