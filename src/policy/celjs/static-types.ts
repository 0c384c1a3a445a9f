/**
 * Static CEL types as cel-js's checker prints them (`list<int>`, `dyn`, `A`), read the way
 * cel-go's overload resolution reads them: shared by the libraries' compile-time checks and by
 * the cost rules that depend on which overload cel-go resolved. Text only: no values, no
 * evaluation.
 */

/** Element types cel-go orders (its comparableTypes): what sort and sortBy accept. */
export const SORTABLE = ['int', 'uint', 'double', 'bool', 'google.protobuf.Duration', 'google.protobuf.Timestamp', 'string', 'bytes'];

/** The element type of a list type, or undefined for anything else. */
export function elementType(listType: string): string | undefined {
  return /^list<(.*)>$/.exec(listType)?.[1];
}

/** A type that names no `dyn` and is not a type parameter: cel-go resolves one overload for it. */
export function concrete(type: string): boolean {
  return !/\bdyn\b/.test(type) && !/^[A-Z]$/.test(type);
}

/** A static type as cel-go prints it in overload errors: list<int> -> list(int). */
export function celGoType(type: string): string {
  return type
    .replaceAll('<', '(')
    .replaceAll('>', ')')
    .replace(/^null$/, 'null_type');
}
