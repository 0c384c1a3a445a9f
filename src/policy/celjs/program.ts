/**
 * What compiling a CEL expression yields: the program (cel-js's parse result, wrapped for cost and
 * the compiled shortcut), the error a refused expression raises (with the field path of the
 * expression), and the one-line text of any error. The bottom of the engine: imports nothing of
 * it, so every layer may name these types. Must not compile or evaluate anything itself.
 */
import type { ParseResult } from '@marcbachmann/cel-js';

/** A compiled expression; `compiled` when it has the compiled shortcut (fast/), and then `direct`. */
export type Program = ParseResult & { readonly compiled?: boolean; readonly direct?: DirectRun };

/**
 * A program's compiled shortcut, for a caller that runs it without the wrappers around it
 * (fast/all-hold.ts): the generated function, the static cost charged before it runs, and the
 * program cel-js answers with (which the tests compare its answers to).
 */
export interface DirectRun {
  run: (activation: unknown) => unknown;
  staticCost: number;
  celjs: ParseResult;
}

export class CompileError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** The first line of an error's message, trimmed: cel-js's messages add a source excerpt below it. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0]!.trim();
}
