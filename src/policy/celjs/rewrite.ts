/**
 * The CEL front end's rewrite: what cel-go parses and cel-js's parser does not, turned into what
 * cel-js parses, before it parses (quoted field names put back into its tree after). Owns only that
 * source-to-source step and the names it introduces; parse.ts runs it. Must not type-check,
 * evaluate, or bound anything itself (limits.ts has bounded the source already). The forms: see `rewriteForCelJs`.
 */
import { Syntax, tokenize, type Token } from './lexer.ts';
import { forEachNode } from './walk.ts';

/** `list<T> (list<T>)`: marks a list literal with optional entries, rewritten (for library/homogeneous.ts). */
export const OPTIONAL_LIST = '__portcullis_optional_list__';
/** `list<T> (optional<T>)`: the list of the optional's value, empty when it has none. */
export const OPTIONAL_LIST_ENTRY = '__portcullis_optional_list_entry__';
/** `map<K, V> (map<K, V>, K, optional<V>)`: the map with the entry put in when the value is present. */
export const OPTIONAL_MAP_ENTRY = '__portcullis_optional_map_entry__';
/** `map<string, dyn> (map<string, dyn>)`: a `JSONPatch{op: ..., path: ...}` value (library/jsonpatch.ts). */
export const JSONPATCH_VALUE = '__portcullis_jsonpatch__';
/** `string (string)`: `jsonpatch.escapeKey(k)`, the key as one JSON pointer step. */
export const JSONPATCH_ESCAPE_KEY = '__portcullis_jsonpatch_escape_key__';
/** `map<string, dyn> (string, dyn)`: an `Object{...}` or `Object.spec.x{...}` value of an apply configuration (library/apply-configuration.ts): its type name, its fields. */
export const OBJECT_VALUE = '__portcullis_object__';
/** The fields a JSONPatch value has, as MutatingAdmissionPolicy declares the type. */
const JSONPATCH_FIELDS = new Set(['op', 'path', 'from', 'value']);
/** What every name this front end introduces starts with; a policy's source may not. */
const RESERVED_PREFIX = '__portcullis_';
const QUOTED_PREFIX = `${RESERVED_PREFIX}field_`;

export interface Rewritten {
  /** The source for cel-js to parse. */
  source: string;
  /** Placeholder identifier -> the quoted field name it stands for. */
  quoted: Map<string, string>;
}

/** A refusal of the source in cel-go's words, before cel-js sees it. */
export class FrontEndError extends Error {}

/** A backtick, an entry's `?`, a bytes prefix, a point before a digit that no operand ends, a reserved name. */
const MAYBE_REWRITTEN = /JSONPatch\s*\{|Object\s*[.{]|jsonpatch\s*\.|`|[[{,]\s*\?|(^|[^A-Za-z0-9_])[bBrR]{1,2}['"]|(^|[^A-Za-z0-9_)\]}])\.[0-9]|__portcullis_/;
const OPERAND_ENDS = new Set(['ident', 'literal', ')', ']', '}']);

/**
 * `source` as cel-js is to parse it. A source the lexer cannot follow is returned as it is, for
 * cel-js to refuse in its words.
 *
 * Each form, as cel-go (0.29, Kubernetes 1.37) reads it:
 * - backtick-quoted field names (`` object.data.`content-type` ``, `` has(m.`foo.txt`) ``, on by
 *   default since cel-go 0.28): a field selection of that name. Written as a placeholder
 *   identifier cel-js parses, given its real name back in the tree (`restoreQuotedFields`), so
 *   selection, `.?` and has() are cel-js's own. Only after `.` or `.?` and not called, as CEL.g4's
 *   `escapeIdent` stands only there;
 * - raw bytes literals (`br'\x00'`, `bR`, `Br`, `BR`, triple-quoted too; `rb` is not CEL) and bytes
 *   literals with characters outside ASCII (`b'ÿ'` is C3 BF, its UTF-8): written as a bytes
 *   literal of `\xHH` escapes, which cel-js reads byte for byte;
 * - a double without digits before its point (`.99`): `0.99`;
 * - optional entries of list and map literals (`[a, ?b]`, `{?'k': v}`): the list as a
 *   concatenation of the present elements' lists (`@list([a] + @entry(b))`), the map as the literal of its
 *   other entries with each optional one put in when present (library/optionals.ts implements the two entry functions);
 * - MutatingAdmissionPolicy's `JSONPatch{op: ..., path: ...}` (message construction) and
 *   `jsonpatch.escapeKey(k)`: calls of functions library/jsonpatch.ts declares, the message's
 *   fields a map literal (a field JSONPatch does not have refused as cel-go refuses it);
 * - its apply configurations' `Object{...}` and `Object.spec.x{...}` (message construction of
 *   types named by their path): a call of library/apply-configuration.ts' function with the type
 *   name and the fields as a map literal. The functions' names cannot be
 *   written by a policy: any source naming them is refused as cel-go refuses an unknown name.
 * Positions in cel-js's errors may shift after a rewritten form; the messages compile reports
 * carry none.
 */
export function rewriteForCelJs(source: string): Rewritten {
  const quoted = new Map<string, string>();
  // Most expressions have none of the forms: a quick look before tokenizing.
  if (!MAYBE_REWRITTEN.test(source)) return { source, quoted };
  let tokens: Token[];
  try {
    tokens = tokenize(source);
  } catch (err) {
    if (err instanceof Syntax) return { source, quoted };
    throw err;
  }
  const text = (k: number) => source.slice(tokens[k]!.start, tokens[k]!.end);
  // Matching brackets, found without recursion.
  const match = new Map<number, number>();
  const open: number[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const kind = tokens[k]!.kind;
    if (kind === '[' || kind === '{' || kind === '(') open.push(k);
    else if (kind === ']' || kind === '}' || kind === ')') {
      const o = open.pop();
      if (o === undefined) return { source, quoted };
      match.set(o, k);
    } else if (kind === 'ident' && text(k).startsWith(RESERVED_PREFIX)) {
      throw new FrontEndError(`undeclared reference to '${text(k)}' (in container '')`);
    }
  }
  if (open.length) return { source, quoted };
  const fieldNames = new Map<string, string>();

  const tokenText = (k: number): string => {
    const t = text(k);
    const kind = tokens[k]!.kind;
    if (kind === 'ident' && t.startsWith('`')) {
      const after = tokens[k - 1]?.kind === '?' && tokens[k - 2]?.kind === '.' ? k - 2 : k - 1;
      if (tokens[after]?.kind !== '.' || after < 1 || tokens[k + 1]?.kind === '(') {
        throw new FrontEndError(`Syntax error: a quoted name (${t}) may only name a field selected with '.' or '.?'`);
      }
      const name = t.slice(1, -1);
      let placeholder = fieldNames.get(name);
      if (!placeholder) {
        placeholder = `${QUOTED_PREFIX}${fieldNames.size}__`;
        fieldNames.set(name, placeholder);
        quoted.set(placeholder, name);
      }
      return placeholder;
    }
    if (kind === 'literal') {
      if (t.startsWith('.')) return `0${t}`;
      const bytes = bytesLiteral(t);
      if (bytes) return `b'${[...bytes].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('')}'`;
    }
    return t;
  };

  const isAggregate = (k: number): boolean => {
    const kind = tokens[k]!.kind;
    if (kind !== '[' && kind !== '{') return false;
    const before = tokens[k - 1]?.kind;
    // `a[...]` is an index and `T{...}` a message: only a literal can hold optional entries
    return before === undefined || !OPERAND_ENDS.has(before);
  };

  // Tokens [from, to) with the source between them, each literal aggregate rendered by `aggregate`.
  const render = (from: number, to: number): string => {
    let out = '';
    for (let k = from; k < to;) {
      if (k > from) out += source.slice(tokens[k - 1]!.end, tokens[k]!.start);
      const message = messageAt(k);
      if (message) {
        out += message.text;
        k = message.next;
      } else if (isAggregate(k)) {
        const close = match.get(k)!;
        out += aggregate(k, close);
        k = close + 1;
      } else {
        out += tokenText(k);
        k++;
      }
    }
    return out;
  };

  // MutatingAdmissionPolicy's JSONPatch message and jsonpatch.escapeKey (cel-js parses no message
  // construction and no namespaced function): written as calls of functions it knows.
  const messageAt = (k: number): { text: string; next: number } | undefined => {
    if (tokens[k]!.kind !== 'ident' || tokens[k - 1]?.kind === '.') return undefined;
    const name = text(k);
    if (name === 'jsonpatch' && tokens[k + 1]?.kind === '.' && tokens[k + 2]?.kind === 'ident' && text(k + 2) === 'escapeKey' && tokens[k + 3]?.kind === '(') {
      return { text: JSONPATCH_ESCAPE_KEY, next: k + 3 };
    }
    if (name === 'Object') return objectAt(k);
    if (name !== 'JSONPatch' || tokens[k + 1]?.kind !== '{') return undefined;
    const openAt = k + 1;
    const close = match.get(openAt)!;
    const fields: string[] = [];
    let start = openAt + 1;
    const entry = (s: number, e: number) => {
      if (tokens[s]!.kind !== 'ident' || tokens[s + 1]?.kind !== ':' || s + 2 >= e) throw new FrontEndError('Syntax error: a JSONPatch field is written name: value');
      const field = text(s);
      if (!JSONPATCH_FIELDS.has(field)) throw new FrontEndError(`undefined field '${field}'`);
      fields.push(`'${field}': ${render(s + 2, e)}`);
    };
    for (let j = openAt + 1; j < close; j++) {
      if (match.has(j)) j = match.get(j)!;
      else if (tokens[j]!.kind === ',') {
        entry(start, j);
        start = j + 1;
      }
    }
    if (start < close) entry(start, close);
    return { text: `${JSONPATCH_VALUE}({${fields.join(', ')}})`, next: close + 1 };
  };

  // MutatingAdmissionPolicy's apply configurations: `Object{f: v}` and `Object.spec.x{...}`,
  // messages of a type named by their path (cel-go's dynamic object types), written as a call
  // that keeps the type's name for the check the API server makes of it (type names that do not
  // match their fields' path are refused then, not here, as there).
  const objectAt = (k: number): { text: string; next: number } | undefined => {
    let j = k + 1;
    const names = ['Object'];
    while (tokens[j]?.kind === '.' && tokens[j + 1]?.kind === 'ident' && !text(j + 1).startsWith('`')) {
      names.push(text(j + 1));
      j += 2;
    }
    if (tokens[j]?.kind !== '{') return undefined;
    const close = match.get(j)!;
    const fields: string[] = [];
    let start = j + 1;
    const entry = (s: number, e: number) => {
      if (tokens[s]!.kind !== 'ident' || tokens[s + 1]?.kind !== ':' || s + 2 >= e) throw new FrontEndError(`Syntax error: a field of ${names.join('.')} is written name: value`);
      const field = text(s);
      fields.push(`${JSON.stringify(field.startsWith('`') ? field.slice(1, -1) : field)}: ${render(s + 2, e)}`);
    };
    for (let i = j + 1; i < close; i++) {
      if (match.has(i)) i = match.get(i)!;
      else if (tokens[i]!.kind === ',') {
        entry(start, i);
        start = i + 1;
      }
    }
    if (start < close) entry(start, close);
    return { text: `${OBJECT_VALUE}(${JSON.stringify(names.join('.'))}, {${fields.join(', ')}})`, next: close + 1 };
  };

  const aggregate = (openAt: number, close: number): string => {
    const isMap = tokens[openAt]!.kind === '{';
    // the entries, split at the commas between them
    const entries: [number, number][] = [];
    let start = openAt + 1;
    for (let k = openAt + 1; k < close; k++) {
      if (match.has(k)) k = match.get(k)!;
      else if (tokens[k]!.kind === ',') {
        entries.push([start, k]);
        start = k + 1;
      }
    }
    if (start < close) entries.push([start, close]);
    if (!entries.some(([s]) => tokens[s]!.kind === '?')) {
      if (openAt + 1 === close) return `${text(openAt)}${source.slice(tokens[openAt]!.end, tokens[close]!.start)}${text(close)}`;
      return `${text(openAt)}${source.slice(tokens[openAt]!.end, tokens[openAt + 1]!.start)}${render(openAt + 1, close)}${source.slice(tokens[close - 1]!.end, tokens[close]!.start)}${text(close)}`;
    }
    if (!isMap) {
      const parts: string[] = [];
      let plain: string[] = [];
      for (const [s, e] of entries) {
        if (tokens[s]!.kind !== '?') {
          plain.push(render(s, e));
          continue;
        }
        if (plain.length) parts.push(`[${plain.join(', ')}]`);
        plain = [];
        parts.push(`${OPTIONAL_LIST_ENTRY}(${render(s + 1, e)})`);
      }
      if (plain.length) parts.push(`[${plain.join(', ')}]`);
      return `${OPTIONAL_LIST}(${parts.join(' + ')})`;
    }
    const plain: string[] = [];
    const optional: [string, string][] = [];
    for (const [s, e] of entries) {
      const optionalEntry = tokens[s]!.kind === '?';
      const first = optionalEntry ? s + 1 : s;
      const colon = entryColon(tokens, match, first, e);
      if (colon === undefined) throw new FrontEndError('Syntax error: a map entry without its value');
      if (optionalEntry) optional.push([render(first, colon), render(colon + 1, e)]);
      else plain.push(`${render(first, colon)}: ${render(colon + 1, e)}`);
    }
    let out = `{${plain.join(', ')}}`;
    for (const [key, value] of optional) out = `${OPTIONAL_MAP_ENTRY}(${out}, ${key}, ${value})`;
    return out;
  };

  return { source: render(0, tokens.length - 1), quoted };
}

/** The `:` between a map entry's key and value: the first not taken by a ternary in the key. */
function entryColon(tokens: Token[], match: Map<number, number>, from: number, to: number): number | undefined {
  let ternaries = 0;
  for (let k = from; k < to; k++) {
    if (match.has(k)) k = match.get(k)!;
    else if (tokens[k]!.kind === '?' && tokens[k - 1]?.kind !== '.' && tokens[k - 1]?.kind !== '[') ternaries++;
    else if (tokens[k]!.kind === ':') {
      if (!ternaries) return k;
      ternaries--;
    }
  }
  return undefined;
}

/**
 * A bytes literal's value as cel-go reads it, when cel-js would read it otherwise (raw, or with
 * characters outside ASCII, which cel-go takes as their UTF-8); undefined for any other literal,
 * and for one with an escape cel-go refuses (cel-js refuses it too, in its words).
 */
function bytesLiteral(literal: string): Uint8Array | undefined {
  // CEL.g4's BYTES is `b` then a STRING, whose raw prefix follows: `br'...'`; `rb'...'` is an
  // identifier and a string to cel-go (a syntax error), and to cel-js, which refuses it as such
  const prefix = /^[bB][rR]?(?=['"])/.exec(literal)?.[0];
  if (!prefix) return undefined;
  const raw = /[rR]/.test(prefix);
  const body = literal.slice(prefix.length);
  const quote = body.startsWith(body[0]!.repeat(3)) && body.length >= 6 ? 3 : 1;
  const content = body.slice(quote, body.length - quote);
  if (raw) return new TextEncoder().encode(content);
  // eslint-disable-next-line no-control-regex -- the ASCII range, NUL included, on purpose
  if (!/[^\x00-\x7f]/.test(content)) return undefined;
  const out: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < content.length;) {
    if (content[i] !== '\\') {
      const cp = content.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      out.push(...encoder.encode(ch));
      i += ch.length;
      continue;
    }
    const next = content[i + 1];
    const simple = next === undefined ? undefined : SIMPLE_ESCAPES[next];
    if (simple !== undefined) {
      out.push(simple);
      i += 2;
    } else if ((next === 'x' || next === 'X') && /^[0-9a-fA-F]{2}$/.test(content.slice(i + 2, i + 4))) {
      out.push(Number.parseInt(content.slice(i + 2, i + 4), 16));
      i += 4;
    } else if (/^[0-3][0-7]{2}$/.test(content.slice(i + 1, i + 4))) {
      out.push(Number.parseInt(content.slice(i + 1, i + 4), 8));
      i += 4;
    } else {
      return undefined;
    }
  }
  return new Uint8Array(out);
}

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, "'": 39, '"': 34, '`': 96, '?': 63 };

/** Gives each placeholder of a quoted field name in cel-js's tree `root` its real name back. */
export function restoreQuotedFields(root: unknown, quoted: ReadonlyMap<string, string>): void {
  if (!quoted.size) return;
  forEachNode(root, (node) => {
    if ((node.op === '.' || node.op === '.?') && Array.isArray(node.args)) {
      const name = quoted.get(node.args[1] as string);
      if (name !== undefined) node.args[1] = name;
    }
  });
}
