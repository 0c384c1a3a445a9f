/**
 * Parsing a CEL expression as cel-go does where cel-js parses less: the one place expressions
 * are parsed for compiling and type checking. Owns the `has()` macro's operand rule; must not
 * type-check or evaluate anything itself.
 *
 * cel-go's `has()` takes a field selection whose operand is any expression
 * (`has(object.spec.containers[0].securityContext)`, `has({'a': 1}.a)`); cel-js takes only a chain
 * of selections from an identifier and refuses the rest as "has() invalid argument", so policies
 * the API server accepts would be refused. The macro's evaluation already runs any operand (the
 * last of `macroHasProps`); only its type check is narrower, and that is what is replaced here.
 */
import type { Environment, ParseResult } from '@marcbachmann/cel-js';
import { forEachNode } from './walk.ts';

interface Checker {
  check(node: unknown, ctx: unknown): unknown;
  getType(name: string): unknown;
  createError(code: string, message: string, node: unknown): Error;
}

interface SelectNode {
  op: string;
  args: unknown[];
}

interface HasMacro {
  args: SelectNode[];
  macroHasProps?: SelectNode[];
  typeCheck: (checker: Checker, macro: HasMacro, ctx: unknown) => unknown;
}

/** cel-js's has() type check with cel-go's rule: the argument is a selection, of any operand. */
function typeCheckHas(checker: Checker, macro: HasMacro, ctx: unknown): unknown {
  let node = macro.args[0]!;
  if (node.op !== '.') throw checker.createError('invalid_macro_argument', 'has() invalid argument', node);
  if (!macro.macroHasProps) {
    const props: SelectNode[] = [];
    while (node.op === '.' || node.op === '.?') {
      props.push(node);
      node = node.args[0] as SelectNode;
    }
    if (node.op === 'id') checker.check(node, ctx);
    // Another operand is typed up to the tested field: a selection on an optional value that no
    // `.?` step made is refused, as it was before (cel-js would answer it otherwise than cel-go).
    else if (String(typeName(checker.check(macro.args[0]!.args[0], ctx))).startsWith('optional') && !props.some((p) => p.op === '.?')) throw checker.createError('invalid_macro_argument', 'has() invalid argument', macro.args[0]);
    props.push(node);
    macro.macroHasProps = props;
  }
  return checker.getType('bool');
}

function typeName(type: unknown): unknown {
  return typeof type === 'object' && type !== null && 'name' in type ? (type as { name: unknown }).name : type;
}

/** Parses `source` in `env`, with `has()` as cel-go has it. Throws cel-js's parse errors. */
export function parseExpression(env: Environment, source: string): ParseResult {
  const program = env.parse(source);
  forEachNode(program.ast, (node) => {
    const args = node.args as unknown[];
    if (node.op !== 'call' || !Array.isArray(args) || args[0] !== 'has') return;
    const macro = (node as unknown as { meta?: { macro?: HasMacro } }).meta?.macro;
    if (macro && typeof macro.typeCheck === 'function') macro.typeCheck = typeCheckHas;
  });
  return program;
}
