/**
 * CEL.g4's lexer, as far as cel-go's errors and limits need it: each token's kind and end, a lexer
 * failure as ANTLR reports it, and the Syntax error the lexer and limits.ts' recognizer throw.
 * Owns only tokens: must not count depth or parse.
 */

export type Token = { kind: string; start: number; end: number };

/**
 * What the lexer or limits.ts' recognizer cannot follow: a syntax error. `at` is the offending token's
 * index and `want` what the grammar wanted there (an operand, an identifier, `eof` or a closing
 * token), which syntax-errors.ts words as ANTLR does.
 */
export class Syntax extends Error {
  readonly at: number;
  readonly want: string;
  constructor(at = -1, want = '') {
    super('syntax error');
    this.at = at;
    this.want = want;
  }
}

/**
 * A character sequence CEL.g4's lexer has no token for, as ANTLR's lexer reports it: `start` of
 * the failed token, `end` past the character it failed at (included in the reported text); lexing
 * resumes at `end`.
 */
export interface LexError {
  start: number;
  end: number;
}

const PUNCTUATION = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '[', ']', '{', '}', '(', ')', '.', ',', '-', '!', '?', ':', '+', '*', '/', '%'];
const LITERAL_WORDS = new Set(['true', 'false', 'null']);
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isHex = (c: string | undefined) => c !== undefined && /[0-9a-fA-F]/.test(c);
const isIdentStart = (c: string | undefined) => c !== undefined && /[A-Za-z_]/.test(c);
const isIdentPart = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);

/** Where an escape sequence at `j` (a backslash) fails CEL.g4's ESC_SEQ: the failing offset, or -1 when it is whole. */
function badEscape(s: string, j: number): number {
  const c = s[j + 1];
  if (c === undefined) return -1; // the string is unterminated: reported as such
  if ('abfnrtv"\'\\?`'.includes(c)) return -1;
  const run = (from: number, count: number, ok: (ch: string | undefined) => boolean): number => {
    for (let k = from; k < from + count; k++) if (!ok(s[k])) return s[k] === undefined ? -1 : k;
    return -1;
  };
  if (c === 'x' || c === 'X') return run(j + 2, 2, isHex);
  if (c === 'u') return run(j + 2, 4, isHex);
  if (c === 'U') return run(j + 2, 8, isHex);
  if (c >= '0' && c <= '3') return run(j + 2, 2, (ch) => ch !== undefined && ch >= '0' && ch <= '7');
  return j + 1;
}

/**
 * CEL.g4's lexer, as far as finding each token's kind and end takes: iterative, linear (also
 * rewrite.ts'). Throws Syntax where it cannot follow, or, given `errors`, records each failure as
 * ANTLR's lexer does (the text up to the failing character) and resumes past it, as cel-go's does.
 */
export function tokenize(s: string, errors?: LexError[]): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = s.length;
  const fail = (start: number, at: number): void => {
    if (!errors) throw new Syntax();
    const end = Math.min(at + 1, n);
    errors.push({ start, end });
    i = end;
  };
  scan: while (i < n) {
    const c = s[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f') {
      i++;
      continue;
    }
    if (c === '/' && s[i + 1] === '/') {
      while (i < n && s[i] !== '\n') i++;
      continue;
    }
    const start = i;
    // strings and bytes, with their r/b prefixes
    let p = i;
    let raw = false;
    while (p < i + 2 && /[rRbB]/.test(s[p] ?? '')) {
      if (s[p] === 'r' || s[p] === 'R') raw = true;
      p++;
    }
    if ((s[p] === '"' || s[p] === "'") && (p === i || !isIdentPart(s[p - 1]) || /[rRbB]/.test(s[p - 1]!))) {
      const q = s[p]!;
      const triple = s[p + 1] === q && s[p + 2] === q;
      let j = p + (triple ? 3 : 1);
      for (;;) {
        if (j >= n) {
          if (!errors) throw new Syntax();
          if (p > i) tokens.push({ kind: 'ident', start, end: p }); // the prefix alone is an identifier
          // `'''abc`: the longest token ANTLR accepted is the empty string, and lexing goes on after it
          if (triple) {
            tokens.push({ kind: 'literal', start: p, end: p + 2 });
            i = p + 2;
            continue scan;
          }
          fail(p, n);
          continue scan;
        }
        if (!raw && s[j] === '\\') {
          const bad = errors ? badEscape(s, j) : -1;
          if (bad >= 0) {
            if (p > i) tokens.push({ kind: 'ident', start, end: p });
            fail(p, bad);
            continue scan;
          }
          j += 2;
          continue;
        }
        if (triple ? s[j] === q && s[j + 1] === q && s[j + 2] === q : s[j] === q) break;
        if (!triple && (s[j] === '\n' || s[j] === '\r')) {
          if (!errors) throw new Syntax();
          if (p > i) tokens.push({ kind: 'ident', start, end: p });
          fail(p, j);
          continue scan;
        }
        j++;
      }
      i = j + (triple ? 3 : 1);
      tokens.push({ kind: 'literal', start, end: i });
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(s[i + 1]))) {
      if (c === '0' && (s[i + 1] === 'x' || s[i + 1] === 'X') && isHex(s[i + 2])) {
        i += 2;
        while (isHex(s[i])) i++;
      } else {
        while (isDigit(s[i])) i++;
        if (s[i] === '.' && isDigit(s[i + 1])) {
          i++;
          while (isDigit(s[i])) i++;
        }
        if ((s[i] === 'e' || s[i] === 'E') && (isDigit(s[i + 1]) || ((s[i + 1] === '+' || s[i + 1] === '-') && isDigit(s[i + 2])))) {
          i += 2;
          while (isDigit(s[i])) i++;
        }
      }
      if (s[i] === 'u' || s[i] === 'U') i++;
      tokens.push({ kind: 'literal', start, end: i });
      continue;
    }
    if (isIdentStart(c)) {
      while (isIdentPart(s[i])) i++;
      const word = s.slice(start, i);
      tokens.push({ kind: word === 'in' ? 'in' : LITERAL_WORDS.has(word) ? 'literal' : 'ident', start, end: i });
      continue;
    }
    if (c === '`') {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_.\-/ ]/.test(s[j]!)) j++;
      if (s[j] !== '`' || j === i + 1) {
        fail(start, j);
        continue;
      }
      i = j + 1;
      tokens.push({ kind: 'ident', start, end: i });
      continue;
    }
    const op = PUNCTUATION.find((o) => s.startsWith(o, i));
    if (!op) {
      // `=`, `&` and `|` start a token of two characters: ANTLR fails at the second
      fail(start, c === '=' || c === '&' || c === '|' ? i + 1 : i);
      continue;
    }
    i += op.length;
    tokens.push({ kind: op, start, end: i });
  }
  tokens.push({ kind: 'eof', start: n, end: n });
  return tokens;
}
