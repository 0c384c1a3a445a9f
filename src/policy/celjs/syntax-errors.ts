/**
 * A CEL syntax error as the API server (cel-go's ANTLR parser) reports it: every error at its
 * `<input>:LINE:COLUMN:`, in ANTLR's words and token names ('&&', '<EOF>', not cel-js's AND or
 * EOF), each with the source line and a caret under the place. Owns only that wording; finding
 * the place is lexer.ts' and limits.ts' (their lexer and recognizer follow CEL.g4). Must not parse for cel-js.
 *
 * Found by trying kube-apiserver 1.37 (cel-go 0.29.2; test/fixtures/cel-syntax-errors.ts holds its
 * answers): the lexer reports each character run it has no token for (`token recognition error
 * at: '=>'`, up to and with the character it failed at) and goes on after it; the parser then
 * reports the first token it cannot take, as ANTLR's default error strategy words it: `extraneous
 * input` where dropping that one token would do, `missing ')' at` where adding one would, `no
 * viable alternative at input` after a `.` with no name, `mismatched input` otherwise; then, as
 * ANTLR recovers, the errors after it (parserErrors). Columns count code points; cel-go's caret line puts a wide dot under each character of
 * more than one UTF-8 byte, and its source line shows a tab as a space.
 */
import { recognize, STARTS_OPERAND } from './limits.ts';
import { Syntax, tokenize, type LexError, type Token } from './lexer.ts';

/** A syntax error in cel-go's words: the whole text, caret lines included, is the message. */
export class CelSyntaxError extends Error {}

/** What can begin an operand in CEL.g4, as ANTLR lists it. */
const OPERAND = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";
/** The same right after a call's `(`, where the argument list may be empty. */
const OPERAND_OR_CLOSE = "{'[', '{', '(', ')', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";
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
  errors.push(...parserErrors(source, tokens));
  if (!errors.length) return undefined;
  errors.sort((a, b) => a.offset - b.offset);
  return new CelSyntaxError(errors.map((e) => located(source, e.offset, e.message)).join('\n'));
}

/** cel-go reports at most this many errors of one expression (parser.errorReportingLimit's default). */
const ERROR_LIMIT = 100;

/**
 * Every error ANTLR's default error strategy reports, each after recovering from the one before
 * as it recovers: an extraneous token is dropped (single-token deletion), a missing one is taken
 * as there (single-token insertion); where an operand or a name after `.` was wanted, the tokens
 * up to one that may follow an operand where it stands are skipped (the recovery set: the follow
 * sets of the rules being parsed) and the operand taken as there; where a close was wanted, the
 * tokens up to the recovery set (which holds that close) are skipped. `expecting <EOF>` ends the
 * parse, as ANTLR's recovery consumes everything left; nothing is reported again until a real
 * token is taken after a recovery (ANTLR's error recovery mode).
 */
function parserErrors(source: string, tokens: Token[]): { offset: number; message: string }[] {
  const errors: { offset: number; message: string }[] = [];
  let working = tokens;
  let last = '';
  // ANTLR reports nothing more until it matches a real token after recovering: the token it resumed at.
  let resumed: Token | undefined;
  while (errors.length < ERROR_LIMIT) {
    try {
      recognize(working);
      break;
    } catch (err) {
      // a bound of the API server's (limits.ts) is checked before and reported there
      if (!(err instanceof Syntax)) throw err;
      const token = working[err.at]!;
      const reported = parserError(source, working, err);
      if (token !== resumed) errors.push(...reported, ...macroErrors(source, working, err));
      // Guard: a recovery that leaves the parse where it was says nothing new.
      const place = `${token.start}/${err.want}/${working.length}`;
      if (place === last || reported.length !== 1) break;
      last = place;
      const words = reported[0]!.message;
      const virtual = (kind: string, at: Token): Token => ({ kind, start: at.start, end: at.start });
      if (words.includes(': extraneous input ')) {
        if (token.kind === 'eof') break;
        resumed = working[err.at + 1];
        working = [...working.slice(0, err.at), ...working.slice(err.at + 1)];
      } else if (words.includes(': missing ')) {
        resumed = token;
        working = [...working.slice(0, err.at), virtual(err.want, token), ...working.slice(err.at)];
      } else if (err.want === 'operand' || err.want === 'ident') {
        const resume = resumeAt(working, err.at);
        resumed = working[resume]!;
        working = [...working.slice(0, err.at), virtual('ident', resumed), ...working.slice(resume)];
      } else if ([')', ']', ':', '],', '},'].includes(err.want)) {
        // The rule that wanted the close skips to the recovery set, which holds the close itself;
        // stopped short of it (at an operator), the rule ends as if it had been there.
        const close = err.want[0]!;
        const resume = resumeAt(working, err.at);
        resumed = working[resume]!;
        working = [...working.slice(0, err.at), ...(resumed.kind === close || resumed.kind === ',' ? [] : [virtual(close, resumed)]), ...working.slice(resume)];
      } else break;
    }
  }
  return errors;
}

/**
 * cel-go's has() macro refusing the argument ANTLR recovered to: `has(a.)` leaves `a`, which is no
 * field selection. Only that shape (a name, then the `.` without one) is known here.
 */
function macroErrors(source: string, tokens: Token[], err: Syntax): { offset: number; message: string }[] {
  if (err.want !== 'ident') return [];
  const [call, open, name, dot] = tokens.slice(err.at - 4, err.at);
  if (call?.kind !== 'ident' || source.slice(call.start, call.end) !== 'has' || open?.kind !== '(' || name?.kind !== 'ident' || dot?.kind !== '.') return [];
  if (tokens[err.at - 5]?.kind === '.') return [];
  return [{ offset: name.start, message: 'invalid argument to has() macro' }];
}

/** Binary operators and what follows a member: these may follow an operand anywhere. */
const AFTER_OPERAND = new Set(['eof', '&&', '||', '?', '<', '<=', '>=', '>', '==', '!=', 'in', '+', '-', '*', '/', '%', '.', '[']);
const CLOSES: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** The brackets `tokens` leave open, outermost first. */
function openBrackets(tokens: Token[]): string[] {
  const open: string[] = [];
  for (const token of tokens) {
    if (CLOSES[token.kind]) open.push(token.kind);
    else if (Object.values(CLOSES).includes(token.kind)) open.pop();
  }
  return open;
}

/**
 * The first token from `at` in ANTLR's recovery set where an operand was wanted: one that may
 * follow an operand there (an operator; a close, `,` or `:` only inside what it closes or parts).
 */
function resumeAt(tokens: Token[], at: number): number {
  const open = openBrackets(tokens.slice(0, at));
  let conditionals = 0;
  for (const token of tokens.slice(0, at)) {
    if (token.kind === '?') conditionals++;
    else if (token.kind === ':' && conditionals > 0) conditionals--;
  }
  const follows = new Set(AFTER_OPERAND);
  for (const opened of open) follows.add(CLOSES[opened]!);
  if (open.length) follows.add(',');
  if (conditionals > 0 || open.includes('{')) follows.add(':');
  let resume = at;
  while (!follows.has(tokens[resume]!.kind)) resume++;
  return resume;
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
      if (previous?.kind === '(' && tokens[err.at - 2]?.kind === 'ident') {
        return syntax(`${token.kind !== 'eof' && next && (next.kind === ')' || STARTS_OPERAND.has(next.kind)) ? 'extraneous' : 'mismatched'} input ${shown} expecting ${OPERAND_OR_CLOSE}`);
      }
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
      // ANTLR conjures the close only where the token after it could then be taken: at the end, only when nothing else is open
      const closesAll = token.kind !== 'eof' || openBrackets(tokens.slice(0, err.at)).length <= 1;
      if (follows.has(token.kind) && closesAll) return syntax(`missing '${err.want}' at ${shown}`);
      return syntax(`mismatched input ${shown} expecting '${err.want}'`);
    }
    case '],':
    case '},':
      // single-token deletion where the token after it is what was wanted
      return syntax(`${next?.kind === err.want[0] || next?.kind === ',' ? 'extraneous' : 'mismatched'} input ${shown} expecting {'${err.want[0]}', ','}`);
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
export function located(source: string, offset: number, message: string): string {
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
