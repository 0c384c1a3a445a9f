/**
 * A program's body with the compiled shortcut (compiler.ts) in front of cel-js: the compiled function
 * answers where it can, cel-js (its activation converted, values/convert.ts) from the same cost where it
 * bails (BAIL) or is not covered. Tests watch every shortcut answer through `observeShortcut`
 * (test/support/verify-compiled.ts checks each against cel-js's); nothing in src/ observes. Must not
 * change an answer.
 */
import type { ParseResult } from '@marcbachmann/cel-js';
import { meter } from '../cost/meter.ts';
import { convertActivation } from '../values/convert.ts';
import { compileProgram, type CompiledProgram } from './compiler.ts';
import { BAIL, spent } from './runtime.ts';

/** A program's body for cost/instrument.ts's `withCost`, and its compiled shortcut if it has one. */
export type Body = ((activation: unknown) => unknown) & { direct?: CompiledProgram };

/** Sees the shortcut's answers (the tests' differential check); never changes them. */
export interface ShortcutObserver {
  /** The compiled code threw something other than BAIL (cel-js then answers). */
  threw(err: unknown, compiled: CompiledProgram): void;
  /** The compiled code answered `result`; `charged` is the meter's cost before it ran, `onVariables` what the variables it read spent. */
  answered(program: ParseResult, activation: unknown, charged: number, result: unknown, compiled: CompiledProgram, onVariables: number): void;
}

let observer: ShortcutObserver | undefined;

/** Installs (or, with undefined, removes) the observer of every shortcut answer. */
export function observeShortcut(next: ShortcutObserver | undefined): void {
  observer = next;
}

/** The observer installed, if any (all-hold.ts reports its answers to it too). */
export function shortcutObserver(): ShortcutObserver | undefined {
  return observer;
}

/**
 * The program's body: the compiled shortcut, falling back to cel-js (`program`) from the same
 * cost when it bails; cel-js alone when the expression is not covered. `strict`: a team's
 * policy's, whose loops count the meter's ticks (cost/meter.ts).
 */
export function shortcutFor(program: ParseResult, variables?: ReadonlySet<string>, strict = false): Body {
  const compiled = compileProgram(program.ast, variables, strict);
  if (!compiled) {
    return (activation: unknown) => {
      convertActivation(activation);
      return program(activation as never);
    };
  }
  const body = (activation: unknown) => {
    const charged = meter.cost;
    let result: unknown;
    try {
      result = compiled(activation);
    } catch (err) {
      if (err !== BAIL && observer) observer.threw(err, compiled);
      convertActivation(activation);
      return program(activation as never);
    }
    // A part of the request's JSON, or one of its whole numbers: as CEL values (converted in place)
    if (typeof result === 'object' && result !== null) convertActivation(activation);
    else if (typeof result === 'number' && Number.isInteger(result)) result = BigInt(result);
    if (observer) observer.answered(program, activation, charged, result, compiled, spent.variables);
    return result;
  };
  return Object.assign(body, { direct: compiled });
}
