/**
 * Run-time errors of CEL as the API server words them. cel-js and cel-go say the same things in
 * different words; a policy's users read (and match on) the API server's, so ours are the same.
 */
import { firstLine } from '../celjs/program.ts';

const REWRITES: [RegExp, string][] = [
  [/^No such key: index out of bounds, index (-?\d+) >= size (\d+)$/, "index '$1' out of range in list size '$2'"],
  [/^No such key: (.*)$/, 'no such key: $1'],
  // cel-go's run-time overload error names no types.
  [/^no such overload\b.*$/, 'no such overload'],
];

/** The text of a CEL evaluation error, in cel-go's words where they differ. */
export function celErrorText(err: unknown): string {
  let text = firstLine(err);
  for (const [pattern, replacement] of REWRITES) text = text.replace(pattern, replacement);
  return text;
}

/** The CEL type name of a JSON-side value, for messages. */
export function celTypeName(value: unknown): string {
  if (value === null) return 'null_type';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return 'string';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Uint8Array) return 'bytes';
  return 'map';
}
