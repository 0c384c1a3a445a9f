/**
 * A CEL syntax error as the API server (cel-go's ANTLR parser) reports it: every error at its
 * `<input>:LINE:COLUMN:`, in ANTLR's words and token names ('&&', '<EOF>', not cel-js's AND or
 * EOF), each with the source line and a caret under the place. Owns only that wording; finding
 * the place is limits.ts' (its lexer and recognizer follow CEL.g4). Must not parse for cel-js.
 *
 * Found by trying kube-apiserver 1.37 (cel-go 0.29.2; test/fixtures/cel-syntax-errors.ts holds its
 * answers): the lexer reports each character run it has no token for (`token recognition error
 * at: '=>'`, up to and with the character it failed at) and goes on after it; the parser then
 * reports the first token it cannot take, as ANTLR's default error strategy words it: `extraneous
 * input` where dropping that one token would do, `missing ')' at` where adding one would, `no
 * viable alternative at input` after a `.` with no name, `mismatched input` otherwise. ANTLR's
 * recovery can report more after that; only the first is given here (the one a person fixes
 * first). Columns count code points; cel-go's caret line puts a wide dot under each character of
 * more than one UTF-8 byte, and its source line shows a tab as a space.
 */
import { recognize, STARTS_OPERAND, Syntax, tokenize, type LexError, type Token } from './limits.ts';

/** A syntax error in cel-go's words: the whole text, caret lines included, is the message. */
export class CelSyntaxError extends Error {}

/** What can begin an operand in CEL.g4, as ANTLR lists it. */
const OPERAND = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";
/** What may follow a closed `(...)`: where ANTLR inserts the missing ')' rather than refusing the token. */
const FOLLOWS_OPERAND = new Set(['eof', ')', ']', '}', ',', ':', '?', '&&', '||', '<', '<=', '>=', '>', '==', '!=', 'in', '+', '-', '*', '/', '%', '.', '[']);

/**
 * cel-go's report of the syntax errors in `source`, or undefined where CEL.g4 finds none (what
 * cel-js refused is then not a syntax error of cel-go's, and its own words stand).
 */
export function celGoSyntaxError(source: string): CelSyntaxError | undefined {
  const lexErrors: LexError[] = [];
  const tokens = tokenize(source, lexErrors);
  const errors: { offset: number; message: string }[] = lexErrors.map(({ start, end }) => ({
    offset: start,
    // the lexer's text is shown as it is, line breaks and all
    message: `Syntax error: token recognition error at: '${source.slice(start, end)}'`,
  }));
  try {
    recognize(tokens);
  } catch (err) {
    // a bound of the API server's (limits.ts) is checked before and reported there
    if (!(err instanceof Syntax)) throw err;
    errors.push(...parserError(source, tokens, err));
  }
  if (!errors.length) return undefined;
  errors.sort((a, b) => a.offset - b.offset);
  return new CelSyntaxError(errors.map((e) => located(source, e.offset, e.message)).join('\n'));
}

/**
 * ANTLR's report of the token the recognizer stopped at: where the grammar wanted a given token,
 * dropping the offending one when the next is it (`extraneous`), else adding it when the offending
 * one may follow it (`missing`), else `mismatched`.
 */
function parserError(source: string, tokens: Token[], err: Syntax): { offset: number; message: string }[] {
  const token = tokens[err.at]!;
  const next = tokens[err.at + 1];
  const previous = tokens[err.at - 1];
  const shown = `'${tokenText(source, token)}'`;
  const offset = token.start;
  const syntax = (message: string) => [{ offset, message: `Syntax error: ${message}` }];
  switch (err.want) {
    case 'operand':
      if (token.kind === 'eof' && previous?.kind === '!') return syntax(`extraneous input ${shown} expecting ${OPERAND}`);
      if (token.kind === 'eof' && previous?.kind === '-') return [...syntax(`no viable alternative at input '-'`), ...syntax(`mismatched input ${shown} expecting ${OPERAND}`)];
      if (token.kind !== 'eof' && next && STARTS_OPERAND.has(next.kind)) return syntax(`extraneous input ${shown} expecting ${OPERAND}`);
      return syntax(`mismatched input ${shown} expecting ${OPERAND}`);
    case 'eof':
      return syntax(`${next?.kind === 'eof' ? 'extraneous' : 'mismatched'} input ${shown} expecting <EOF>`);
    case 'ident': {
      // ANTLR's text is from the `.` the decision began at to the offending token
      let dot = err.at - 1;
      while (dot > 0 && tokens[dot]!.kind !== '.') dot--;
      const text = token.kind === 'eof' ? source.slice(tokens[dot]!.start).trimEnd() : source.slice(tokens[dot]!.start, token.end);
      return syntax(`no viable alternative at input '${display(text)}'`);
    }
    case 'ident?':
      return [...syntax(`mismatched input ${shown} expecting {IDENTIFIER, ESC_IDENTIFIER}`), { offset, message: 'unsupported ident kind' }];
    case ')':
    case ']':
    case ':': {
      if (next?.kind === err.want) return syntax(`extraneous input ${shown} expecting '${err.want}'`);
      const follows = err.want === ':' ? STARTS_OPERAND : FOLLOWS_OPERAND;
      if (follows.has(token.kind)) return syntax(`missing '${err.want}' at ${shown}`);
      return syntax(`mismatched input ${shown} expecting '${err.want}'`);
    }
    case '],':
    case '},':
      return syntax(`mismatched input ${shown} expecting {'${err.want[0]}', ','}`);
    default:
      return syntax(`mismatched input ${shown} expecting '${err.want[0]}'`);
  }
}

function tokenText(source: string, token: Token): string {
  return token.kind === 'eof' ? '<EOF>' : display(source.slice(token.start, token.end));
}

/** ANTLR's display of a text in an error: line breaks and tabs escaped. */
function display(text: string): string {
  return text.replaceAll('\n', '\\n').replaceAll('\r', '\\r').replaceAll('\t', '\\t');
}

/** cel-go's common.Error.ToDisplayString: `ERROR: <input>:LINE:COL: message`, the line, the caret. */
function located(source: string, offset: number, message: string): string {
  const lineStart = source.lastIndexOf('\n', offset - 1) + 1;
  const lineEnd = source.indexOf('\n', lineStart);
  const line = source.slice(0, lineStart).split('\n').length;
  const before = [...source.slice(lineStart, offset)];
  const snippet = source.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).replaceAll('\t', ' ');
  const wide = (ch: string | undefined) => ch !== undefined && ch.codePointAt(0)! > 0x7f;
  const dots = before.map((ch) => (wide(ch) ? '\uff0e' : '.')).join('');
  const caret = wide([...source.slice(offset, offset + 2)][0]) ? '\uff3e' : '^';
  return `ERROR: <input>:${line}:${before.length + 1}: ${message}\n | ${snippet}\n | ${dots}${caret}`;
}
