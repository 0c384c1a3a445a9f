/**
 * What a caught value says, whatever was thrown: the one way the code turns a `catch`'s unknown
 * into text for a log line, a condition or an answer. Imports nothing, so every floor and every
 * worker thread may use it.
 */

/** An Error's message; anything else thrown (a string, a number, an object) as text; never throws itself. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'an unprintable value was thrown';
  }
}
