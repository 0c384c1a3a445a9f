/**
 * policy: the CEL environment with ValidatingAdmissionPolicy's variables, compiling expressions
 * once per suite generation, and evaluating validations and mutations. Pure: no I/O, no
 * Kubernetes client, no HTTP. Errors carry the field path of the expression they came from.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { registerLists, validateListCall } from './library/lists.ts';
import { checkFormatCall, registerStrings, replaceStringBuiltins } from './library/strings.ts';
import { registerRegex, replaceRegexBuiltins, validateRegexCall } from './library/regex.ts';
import { forEachCall, type CallNode } from './library/validate.ts';
import { registerURLs } from './library/urls.ts';
import { registerFormat } from './library/format.ts';
import { registerIP } from './library/ip.ts';
import { registerCIDR } from './library/cidr.ts';
import { registerQuantity } from './library/quantity.ts';
import { registerSets, validateSetsCall } from './library/sets.ts';
import { registerOptionals } from './library/optionals.ts';
import { withCost } from './cost.ts';

/** The variables VAP declares; `object`, `oldObject` and `params` are untyped (dyn), as in VAP. */
const ACTIVATION_VARIABLES = ['object', 'oldObject', 'params', 'namespaceObject', 'request', 'variables'] as const;

/**
 * The environment with every library; `variables` (name -> cel-js type) default to VAP's. Other
 * variables are for tests that run foreign expressions (the cel-spec conformance suite).
 */
export function newEnvironment(variables: Readonly<Record<string, string>> = Object.fromEntries(ACTIVATION_VARIABLES.map((n) => [n, 'dyn']))): Environment {
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false });
  for (const [name, type] of Object.entries(variables)) env.registerVariable(name, type);
  registerLists(env);
  registerStrings(env);
  registerRegex(env);
  registerURLs(env);
  registerFormat(env);
  registerIP(env);
  registerCIDR(env);
  registerQuantity(env);
  registerSets(env);
  registerOptionals(env);
  // cel-js's own overloads replaced by cel-go's behaviour; after every registration (see builtins.ts)
  replaceStringBuiltins(env);
  replaceRegexBuiltins(env);
  return env;
}

/** The compile-time checks of literal arguments the API server's environment makes; throws the first problem. */
export function validateProgram(program: Program): void {
  forEachCall(program.ast, validateCall);
}

function validateCall(call: CallNode): void {
  validateRegexCall(call);
  validateListCall(call);
  validateSetsCall(call);
  if (call.name === 'format' && typeof call.receiver?.literal === 'string' && call.args.length === 1 && call.args[0]!.elements) {
    checkFormatCall(call.receiver.literal, call.args[0]!.elements.map((e) => e.type));
  }
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
export function compile(expression: string, field: string, ...expect: ('bool' | 'string' | 'list' | 'null')[]): Program {
  let program: Program;
  try {
    program = environment.parse(expression);
  } catch (err) {
    throw new CompileError(field, `compilation failed: ${firstLine(err)}`);
  }
  const checked = program.check();
  if (!checked.valid) throw new CompileError(field, `compilation failed: ${firstLine(checked.error)}`);
  try {
    validateProgram(program);
  } catch (err) {
    throw new CompileError(field, `compilation failed: ${firstLine(err)}`);
  }
  if (expect.length && checked.type && checked.type !== 'dyn' && !expect.some((type) => checked.type!.startsWith(type))) {
    throw new CompileError(field, `must evaluate to ${expect.join(' or ')}, but evaluates to ${checked.type}`);
  }
  return withCost(program);
}

export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0]!.trim();
}
