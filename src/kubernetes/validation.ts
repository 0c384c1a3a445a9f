/**
 * Kubernetes' name and label syntax (k8s.io/apimachinery/pkg/util/validation): DNS-1123 labels
 * and subdomains, DNS-1035 labels, qualified names, label keys and values, and label sets as
 * node selectors write them. One home for the patterns; two wordings of the problems, each kept
 * where its reader expects it: apimachinery's own (lists of messages, which the CEL format
 * library returns as the API server does) and the handlers' one-line reasons. Pure: strings in,
 * problems out.
 */

// ---------------------------------------------------------------------------------------------
// apimachinery's validation functions, in their words

/** UTF-8 length, which Go's len() measures. */
export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

// apimachinery pkg/util/validation says "characters", pkg/api/validate/content says "bytes"
export const maxLenChars = (n: number) => `must be no more than ${n} characters`;
const maxLenBytes = (n: number) => `must be no more than ${n} bytes`;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
export const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
export const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1035_LABEL_MSG = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

export function isDNS1123Label(s: string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 63) errs.push(maxLenChars(63));
  if (!DNS1123_LABEL.test(s)) errs.push(DNS1123_SUBDOMAIN.test(s) ? 'must not contain dots' : regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  return errs;
}

export function isDNS1123Subdomain(s: string, maxLen: (n: number) => string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 253) errs.push(maxLen(253));
  if (!DNS1123_SUBDOMAIN.test(s)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

export function isDNS1035Label(s: string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 63) errs.push(maxLenChars(63));
  if (!DNS1035_LABEL.test(s)) errs.push(regexError(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  return errs;
}

/** apimachinery's maskTrailingDash, as written (it drops the last two bytes and appends 'a'). */
export function maskTrailingDash(s: string): string {
  const b = Buffer.from(s, 'utf8');
  if (b.length > 1 && s.endsWith('-')) return `${b.subarray(0, b.length - 2).toString('utf8')}a`;
  return s;
}

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
export const LABEL_KEY = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix, maxLenBytes).map((m) => `prefix part ${m}`));
  } else {
    return [`a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > 63) errs.push(`name part ${maxLenBytes(63)}`);
  if (!LABEL_KEY.test(name)) errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);

export function isLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push(maxLenBytes(63));
  if (!LABEL_VALUE.test(value)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Label keys, values and sets, as the built-in handlers word their problems

/** Why `key` is not a valid label key, or undefined when it is. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    return `"${key}": the prefix must be a DNS subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !LABEL_KEY.test(name)) {
    return `"${key}": the name must be 63 characters or less, alphanumeric at both ends, with '-', '_' or '.' between`;
  }
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  return value.length <= 63 && LABEL_KEY.test(value) ? undefined : `"${value}": a label value must be 63 characters or less, alphanumeric at both ends, with '-', '_' or '.' between`;
}

/**
 * A node selector written as "k1=v1, k2=v2" (labels.ConvertSelectorToLabelsMap): an empty string
 * is the empty set; every item must be exactly one key=value with a valid key and value.
 */
export function parseLabelSet(text: string): { labels: Record<string, string>; error?: string } {
  const labels: Record<string, string> = {};
  if (text === '') return { labels };
  for (const item of text.split(',')) {
    const parts = item.split('=');
    if (parts.length !== 2) return { labels, error: `invalid selector: "${item.trim()}" is not key=value` };
    const key = parts[0]!.trim();
    const value = parts[1]!.trim();
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) return { labels, error: `invalid selector: ${problem}` };
    labels[key] = value;
  }
  return { labels };
}

/** CEL's reserved words (cel-spec's RESERVED), which no CEL identifier may be. */
export const CEL_RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);

/** A CEL identifier, as VAP's isCELIdentifier: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word. */
export function isCelIdentifier(name: string): boolean {
  return /^[_a-zA-Z][_a-zA-Z0-9]*$/.test(name) && !CEL_RESERVED.has(name);
}
