/**
 * certs: Go's encoding/pem Decode, ported line for line (Go 1.26's, the toolchain the API server
 * is built with here), so that a PEM text a certificate handler reads gives the block the in-tree
 * plugin's `pem.Decode` gives: the first END line, the last BEGIN line before it at the start of a
 * line, headers up to the first line without a colon, strict base64; a candidate that fails any of
 * these is skipped past its END line, and the search goes on. Works on a binary string (one
 * character per byte, as Buffer's 'latin1'), so every index is Go's byte index. Pure.
 */

export interface PemBlock {
  type: string;
  headers: Map<string, string>;
  bytes: Buffer;
}

const PEM_START = '\n-----BEGIN ';
const PEM_END = '\n-----END ';
const PEM_END_OF_LINE = '-----';

/** Go's getLine: the first \n- or \r\n-ended line without trailing spaces and tabs, the rest, and the bytes consumed. */
function getLine(data: string): { line: string; rest: string; consumed: number } {
  let i = data.indexOf('\n');
  let j: number;
  if (i < 0) {
    i = data.length;
    j = i;
  } else {
    j = i + 1;
    if (i > 0 && data[i - 1] === '\r') i--;
  }
  return { line: data.slice(0, i).replace(/[ \t]+$/, ''), rest: data.slice(j), consumed: j };
}

/** Go's bytes.TrimSpace but for Unicode's spaces beyond ASCII (a header's words never decide what a block is: only whether there are any). */
const trimSpace = (s: string) => s.replace(/^[\t\n\v\f\r ]+|[\t\n\v\f\r ]+$/g, '');

/**
 * base64.StdEncoding.Decode: newlines (\r, \n) skipped, the alphabet and padding strict (a short
 * final quantum without `=` is corrupt), trailing bits not checked (Go's non-strict mode).
 */
function decodeBase64(data: string): Buffer | undefined {
  const text = data.replace(/[\r\n]/g, '');
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

/** Go's pem.Decode of `data` (a binary string): the next block and the text after it, or undefined when there is none. */
export function decodePem(data: string): { block: PemBlock; rest: string } | undefined {
  let rest = data;
  let endTrailerIndex = 0;
  for (;;) {
    // Having tried a block, skip past the END line already seen.
    if (endTrailerIndex < 0 || endTrailerIndex > rest.length) return undefined;
    rest = rest.slice(endTrailerIndex);

    // The first END line, then the last BEGIN line before it (repeated BEGIN lines without an END are skipped).
    let endIndex = rest.indexOf(PEM_END);
    if (endIndex < 0) return undefined;
    endTrailerIndex = endIndex + PEM_END.length;
    const beginIndex = rest.slice(0, endIndex).lastIndexOf(PEM_START.slice(1));
    if (beginIndex < 0 || (beginIndex > 0 && rest[beginIndex - 1] !== '\n')) continue;
    rest = rest.slice(beginIndex + PEM_START.length - 1);
    endIndex -= beginIndex + PEM_START.length - 1;
    endTrailerIndex -= beginIndex + PEM_START.length - 1;

    const first = getLine(rest);
    let typeLine = first.line;
    rest = first.rest;
    endIndex -= first.consumed;
    endTrailerIndex -= first.consumed;
    if (!typeLine.endsWith(PEM_END_OF_LINE)) continue;
    typeLine = typeLine.slice(0, typeLine.length - PEM_END_OF_LINE.length);

    const headers = new Map<string, string>();
    for (;;) {
      if (rest.length === 0) return undefined;
      const { line, rest: next, consumed } = getLine(rest);
      const colon = line.indexOf(':');
      if (colon < 0) break;
      headers.set(trimSpace(line.slice(0, colon)), trimSpace(line.slice(colon + 1)));
      rest = next;
      endIndex -= consumed;
      endTrailerIndex -= consumed;
    }

    // With headers, a newline must come between them and the END line.
    if (headers.size > 0 && endIndex < 0) continue;

    // After the END line's "-----END ": the same type, then five dashes, then only white space.
    let endTrailer = rest.slice(endTrailerIndex);
    const endTrailerLen = typeLine.length + PEM_END_OF_LINE.length;
    if (endTrailer.length < endTrailerLen) continue;
    const restOfEndLine = endTrailer.slice(endTrailerLen);
    endTrailer = endTrailer.slice(0, endTrailerLen);
    if (!endTrailer.startsWith(typeLine) || !endTrailer.endsWith(PEM_END_OF_LINE)) continue;
    if (getLine(restOfEndLine).line.length !== 0) continue;

    let bytes: Buffer = Buffer.alloc(0);
    if (endIndex > 0) {
      const decoded = decodeBase64(rest.slice(0, endIndex).replace(/[ \t]/g, ''));
      if (!decoded) continue;
      bytes = decoded;
    }
    // (-1: an empty block's END may have matched without its leading newline)
    return { block: { type: typeLine, headers, bytes }, rest: getLine(rest.slice(endIndex + PEM_END.length - 1)).rest };
  }
}
