/**
 * cel-go's homogeneous aggregate literal validator (cel.ValidateHomogeneousAggregateLiterals, on
 * in every Kubernetes CEL environment): the elements of a list literal, and the keys and the
 * values of a map literal, must all be of one static type, so `[1, 'a']`, `[object.a, 1]` (dyn
 * against int) and `{'a': 1, 'b': 'x'}` do not compile, while `[object.a, object.b]` does. Literals
 * anywhere inside a `format` call are exempt (the strings library exempts its argument list).
 *
 * cel-js's own homogeneousAggregateLiterals option is not used: it has no exemption for format,
 * and it words its errors differently. Types are the ones cel-js's checker gave; where a library
 * function is typed less precisely here than in cel-go (lists' sum/min/max yield dyn), a literal
 * mixing its result with a typed value is refused here and accepted there.
 */
import { celError } from '../celjs/values.ts';
import { forEachNode, type RawNode } from '../celjs/walk.ts';

/** A type as cel-go's FormatCELType prints it in this validator's message. */
function goType(type: string): string {
  return type
    .replaceAll('<', '(')
    .replaceAll('>', ')')
    .replaceAll('google.protobuf.Duration', 'duration')
    .replaceAll('google.protobuf.Timestamp', 'timestamp')
    .replaceAll('optional(', 'optional_type(');
}

const PLACEHOLDER = /\b[A-Z]\b/;

/**
 * Whether two static types are the same, a type parameter (the element type of `[]`, which
 * cel-go's checker binds by unification) standing for any type.
 */
function equivalent(a: string, b: string): boolean {
  if (a === b) return true;
  const pattern = (t: string) => new RegExp(`^${t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\b[A-Z]\b/g, '.+')}$`);
  return (PLACEHOLDER.test(a) && pattern(a).test(b)) || (PLACEHOLDER.test(b) && pattern(b).test(a));
}

const typeOf = (n: unknown) => (n as RawNode).checkedType?.name ?? 'dyn';

function check(types: string[]): void {
  let expected: string | undefined;
  for (const t of types) {
    if (expected === undefined) expected = t;
    else if (!equivalent(expected, t)) throw celError(`expected type '${goType(expected)}' but found '${goType(t)}'`);
    else if (PLACEHOLDER.test(expected) && !PLACEHOLDER.test(t)) expected = t;
  }
}

/** Throws cel-go's error for the first mixed list or map literal of the checked AST `root`. */
export function validateHomogeneousLiterals(root: unknown): void {
  const exempt = new Set<unknown>();
  forEachNode(root, (node) => {
    const args = node.args;
    if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(args) && args[0] === 'format') forEachNode(args.slice(1), (n) => exempt.add(n));
  });
  forEachNode(root, (node) => {
    if (exempt.has(node) || !Array.isArray(node.args)) return;
    if (node.op === 'list') check((node.args as unknown[]).map(typeOf));
    else if (node.op === 'map') {
      const entries = node.args as unknown[][];
      check(entries.map((e) => typeOf(e[0])));
      check(entries.map((e) => typeOf(e[1])));
    }
  });
}
