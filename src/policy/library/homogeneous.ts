/**
 * cel-go's homogeneous aggregate literal validator (on in every Kubernetes CEL environment): a list
 * literal's elements, and a map literal's keys and values, must each be of one static type (`[1, 'a']`,
 * `[object.a, 1]` do not compile; `[object.a, object.b]` does); literals inside a `format` call are
 * exempt. Not cel-js's own option: see validateHomogeneousLiterals.
 */
import { celError } from '../celjs/values.ts';
import { forEachNode, type RawNode } from '../celjs/walk.ts';
import { OPTIONAL_LIST, OPTIONAL_LIST_ENTRY, OPTIONAL_MAP_ENTRY, OBJECT_VALUE } from '../celjs/rewrite.ts';

/** A type as cel-go's FormatCELType prints it in this validator's message. */
function goType(type: string): string {
  return type.replaceAll('<', '(').replaceAll('>', ')').replaceAll('google.protobuf.Duration', 'duration').replaceAll('google.protobuf.Timestamp', 'timestamp').replaceAll('optional(', 'optional_type(');
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

/**
 * Throws cel-go's error for the first mixed list or map literal of the checked AST `root`. cel-js's own
 * homogeneousAggregateLiterals option is not used: it has no exemption for format, and it words its
 * errors differently. Types are the ones cel-js's checker gave; where a library function is typed less
 * precisely here than in cel-go (lists' sum/min/max yield dyn), a literal mixing its result with a typed
 * value is refused here and accepted there.
 */
export function validateHomogeneousLiterals(root: unknown): void {
  const exempt = new Set<unknown>();
  forEachNode(root, (node) => {
    const args = node.args;
    if ((node.op === 'rcall' || node.op === 'call') && Array.isArray(args) && args[0] === 'format') forEachNode(args.slice(1), (n) => exempt.add(n));
    // an apply configuration's `Object{...}` fields, which rewrite.ts wrote as a map literal: a message's fields, of any types
    const object = callOf(node, OBJECT_VALUE);
    if (object) exempt.add(object[1]);
  });
  forEachNode(root, (node) => {
    if (exempt.has(node) || !Array.isArray(node.args)) return;
    const rewritten = rewrittenLiteral(node, exempt);
    if (rewritten) {
      check(rewritten[0]);
      if (rewritten[1]) check(rewritten[1]);
    } else if (node.op === 'list') check((node.args as unknown[]).map(typeOf));
    else if (node.op === 'map') {
      const entries = node.args as unknown[][];
      check(entries.map((e) => typeOf(e[0])));
      check(entries.map((e) => typeOf(e[1])));
    }
  });
}

/** The value type an optional entry contributes: T of optional<T> (cel-go checks an entry by it). */
const entryType = (n: unknown) => /^optional<(.*)>$/.exec(typeOf(n))?.[1] ?? 'dyn';

const callOf = (node: RawNode, name: string): RawNode[] | undefined => (node.op === 'call' && Array.isArray(node.args) && node.args[0] === name ? (node.args[1] as RawNode[]) : undefined);

/**
 * A list or map literal with optional entries, as celjs/rewrite.ts wrote it (a concatenation, a
 * chain of puts): the types of its elements (or keys and values) as the literal's, its pieces
 * added to `done` (each piece alone is part of the whole); undefined for any other node.
 */
function rewrittenLiteral(node: RawNode, done: Set<unknown>): [string[], string[]?] | undefined {
  const list = callOf(node, OPTIONAL_LIST);
  if (list) {
    const types: string[] = [];
    const pieces: RawNode[] = [list[0]!];
    while (pieces.length) {
      const piece = pieces.pop()!;
      done.add(piece);
      const entry = callOf(piece, OPTIONAL_LIST_ENTRY);
      if (piece.op === '+') pieces.push(...(piece.args as RawNode[]).toReversed());
      else if (entry) types.push(entryType(entry[0]));
      else if (piece.op === 'list') types.push(...(piece.args as unknown[]).map(typeOf));
    }
    return [types];
  }
  let put = callOf(node, OPTIONAL_MAP_ENTRY);
  if (!put) return undefined;
  const keys: string[] = [];
  const values: string[] = [];
  while (put) {
    keys.unshift(typeOf(put[1]));
    values.unshift(entryType(put[2]));
    const base = put[0]!;
    done.add(base);
    put = callOf(base as RawNode, OPTIONAL_MAP_ENTRY);
    if (!put && (base as RawNode).op === 'map') {
      const entries = (base as RawNode).args as unknown[][];
      keys.unshift(...entries.map((e) => typeOf(e[0])));
      values.unshift(...entries.map((e) => typeOf(e[1])));
    }
  }
  return [keys, values];
}
