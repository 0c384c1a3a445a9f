/**
 * Go's byte strings in a JavaScript string: the UTF-8 bytes of a text one char per byte, and back,
 * and their %q quoting, for the Go ports that work on bytes (net/url) and the libraries that
 * print them.
 */
import { goQuote } from './strconv.ts';

/** The UTF-8 bytes of `s`, one char per byte. */
export function toBytes(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** A byte string back to text (invalid sequences become U+FFFD, as CEL strings would). */
export function fromBytes(b: string): string {
  return Buffer.from(b, 'latin1').toString('utf8');
}

/** strconv.Quote of a byte string: valid UTF-8 as goQuote does, stray bytes as \xNN. */
export function quoteBytes(b: string): string {
  const bytes = Buffer.from(b, 'latin1');
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const c = bytes[i]!;
    const len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    const chunk = len ? bytes.subarray(i, i + len) : undefined;
    let text: string | undefined;
    if (chunk && chunk.length === len) {
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(chunk);
      } catch {
        text = undefined;
      }
    }
    if (text === undefined) {
      out += `\\x${c.toString(16).padStart(2, '0')}`;
      i++;
    } else {
      out += goQuote(text).slice(1, -1);
      i += len;
    }
  }
  return `"${out}"`;
}
