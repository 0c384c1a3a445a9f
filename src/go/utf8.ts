/**
 * A JavaScript string as Go's string functions see it: a sequence of code points (runes), a lone
 * surrogate being U+FFFD as after a UTF-8 round trip. For the Go ports and the strings library;
 * imports nothing.
 */
const SURROGATE = /[\uD800-\uDFFF]/;

export function hasSurrogates(s: string): boolean {
  return SURROGATE.test(s);
}

/** Code points, lone surrogates as U+FFFD (what Go sees after a UTF-8 round trip). */
export function runes(s: string): string[] {
  const out = Array.from(s);
  if (hasSurrogates(s)) for (let i = 0; i < out.length; i++) if (out[i]!.length === 1 && SURROGATE.test(out[i]!)) out[i] = '\uFFFD';
  return out;
}
