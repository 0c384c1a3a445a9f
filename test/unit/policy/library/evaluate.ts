/** Compiling and evaluating expressions through the policy environment, as a suite's rules would. */
import { compile } from '../../../../src/policy/engine/environment.ts';
import { firstLine } from '../../../../src/policy/celjs/program.ts';
import { toCel } from '../../../../src/policy/values/convert.ts';

/** The value of `expression`, with `object` (plain JSON) bound as the request's object. */
export function evaluate(expression: string, object: unknown = null): unknown {
  const program = compile(expression, 'spec.webhooks[0].validations[0].expression');
  return program({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: null, variables: {} });
}

/** The first line of the error evaluating `expression` throws (compiling must succeed). */
export function evaluationError(expression: string, object: unknown = null): string {
  const program = compile(expression, 'f');
  try {
    program({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: null, variables: {} });
  } catch (err) {
    return firstLine(err);
  }
  throw new Error(`'${expression}' evaluated without error`);
}

/** The compile error's words for `expression`, without the field prefix or cel-go's place (`ERROR: <input>:1:5: `; its place: test/unit/policy/engine/type-errors.test.ts). */
export function compileError(expression: string): string {
  try {
    compile(expression, 'f');
  } catch (err) {
    return firstLine(err)
      .replace(/^f: compilation failed: /, '')
      .replace(/^ERROR: <input>:\d+:\d+: /, '');
  }
  throw new Error(`'${expression}' compiled`);
}
