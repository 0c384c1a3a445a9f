/**
 * policy: the CEL environment with ValidatingAdmissionPolicy's variables, compiling expressions
 * once per suite generation, and evaluating validations and mutations. Pure: no I/O, no
 * Kubernetes client, no HTTP. Errors carry the field path of the expression they came from.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { registerLists } from './library/lists.ts';

/** The variables VAP declares; `object`, `oldObject` and `params` are untyped (dyn), as in VAP. */
const ACTIVATION_VARIABLES = ['object', 'oldObject', 'params', 'namespaceObject', 'request', 'variables'] as const;

function newEnvironment(): Environment {
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false });
  for (const name of ACTIVATION_VARIABLES) env.registerVariable(name, 'dyn');
  registerLists(env);
  return env;
}

const environment = newEnvironment();

export type Program = ParseResult;

export class CompileError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** Parses and type-checks `expression`; `expect` is the type it must be able to yield. */
export function compile(expression: string, field: string, expect?: 'bool' | 'string' | 'list'): Program {
  let program: Program;
  try {
    program = environment.parse(expression);
  } catch (err) {
    throw new CompileError(field, `compilation failed: ${firstLine(err)}`);
  }
  const checked = program.check();
  if (!checked.valid) throw new CompileError(field, `compilation failed: ${firstLine(checked.error)}`);
  if (expect && checked.type && checked.type !== 'dyn' && !checked.type.startsWith(expect)) {
    throw new CompileError(field, `must evaluate to ${expect}, but evaluates to ${checked.type}`);
  }
  return program;
}

export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0]!.trim();
}
