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
  // A macro's predicate that is not a bool: cel-go's `&&`, `||` or `?:` in the expansion has no overload for it.
  [/^(?:all|exists|exists_one|filter)\(var, predicate\) predicate must return bool, got .*$/, 'no such overload'],
  // An optional's method on a value that is not optional: cel-go dispatches at run time and finds none.
  [/^optional\.(?:orValue|or)\(\w+\) receiver must be optional$/, 'no such overload'],
  [/^found no matching overload for '(string|int|uint|double|bool|bytes)\.(value|hasValue)\(\)'$/, 'no such overload: $2($1)'],
  // Conversions from strings (cel-go's String.ConvertToType); those of numbers are library/conversions.ts's.
  [/^(int|uint|double)\(\) type error: cannot convert to \w+$/, "type conversion error from 'string' to '$1'"],
  [/^bool\(\) conversion error: invalid string value .*$/, "type conversion error from 'string' to 'bool'"],
  [/^Invalid duration string: .*$/, "type conversion error from 'string' to 'google.protobuf.Duration'"],
  [/^timestamp\(\) requires a string in ISO 8601 format$/, "type conversion error from 'string' to 'google.protobuf.Timestamp'"],
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
