/**
 * Kubernetes' format library (apiserver pkg/cel/library/format.go): the named formats
 * `format.dns1123Label()`, `format.dns1123Subdomain()`, ... and `format.named(name)`, each with
 * `validate(string)`, which gives optional.none() for a valid string and otherwise
 * optional.of(the list of problems), worded as apimachinery's validation functions word them.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { Optional } from '../celjs/values.ts';
import { parseRequestURI } from '../go/url.ts';

/** A CEL `kubernetes.NamedFormat` value. */
export class NamedFormat {
  readonly celTypeName = 'kubernetes.NamedFormat';
  readonly name: string;
  readonly validate: (s: string) => string[];
  constructor(name: string, validate: (s: string) => string[]) {
    this.name = name;
    this.validate = validate;
  }
  equals(other: unknown): boolean {
    return other instanceof NamedFormat && other.name === this.name;
  }
}

/** UTF-8 length, which Go's len() measures. */
function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

// apimachinery pkg/util/validation says "characters", pkg/api/validate/content says "bytes"
const maxLenChars = (n: number) => `must be no more than ${n} characters`;
const maxLenBytes = (n: number) => `must be no more than ${n} bytes`;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1035_LABEL_MSG = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

function isDNS1123Label(s: string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 63) errs.push(maxLenChars(63));
  if (!DNS1123_LABEL.test(s)) errs.push(DNS1123_SUBDOMAIN.test(s) ? 'must not contain dots' : regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  return errs;
}

function isDNS1123Subdomain(s: string, maxLen: (n: number) => string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 253) errs.push(maxLen(253));
  if (!DNS1123_SUBDOMAIN.test(s)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

function isDNS1035Label(s: string): string[] {
  const errs: string[] = [];
  if (byteLength(s) > 63) errs.push(maxLenChars(63));
  if (!DNS1035_LABEL.test(s)) errs.push(regexError(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  return errs;
}

/** apimachinery's maskTrailingDash, as written (it drops the last two bytes and appends 'a'). */
function maskTrailingDash(s: string): string {
  const b = Buffer.from(s, 'utf8');
  if (b.length > 1 && s.endsWith('-')) return `${b.subarray(0, b.length - 2).toString('utf8')}a`;
  return s;
}

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

function isQualifiedName(value: string): string[] {
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

function isLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push(maxLenBytes(63));
  if (!LABEL_VALUE.test(value)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** Go's time.Parse("2006-01-02", s). */
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  return day <= days;
}

const TIME = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/u;

/** kube-openapi strfmt IsDateTime (lower-cased, split at 't', the date and the time checked). */
function isDateTime(s: string): boolean {
  if (byteLength(s) < 4) return false;
  const parts = s.toLowerCase().split('t');
  if (parts.length < 2 || !isDate(parts[0]!)) return false;
  const m = TIME.exec(parts[1]!);
  return !!m && m[1]! <= '23' && m[2]! <= '59' && m[3]! <= '59';
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;

const FORMATS: Record<string, NamedFormat> = {
  dns1123Label: new NamedFormat('DNS1123Label', isDNS1123Label),
  dns1123Subdomain: new NamedFormat('DNS1123Subdomain', (s) => isDNS1123Subdomain(s, maxLenChars)),
  dns1035Label: new NamedFormat('DNS1035Label', isDNS1035Label),
  qualifiedName: new NamedFormat('QualifiedName', isQualifiedName),
  dns1123LabelPrefix: new NamedFormat('DNS1123LabelPrefix', (s) => isDNS1123Label(maskTrailingDash(s))),
  dns1123SubdomainPrefix: new NamedFormat('DNS1123SubdomainPrefix', (s) => isDNS1123Subdomain(maskTrailingDash(s), maxLenChars)),
  dns1035LabelPrefix: new NamedFormat('DNS1035LabelPrefix', (s) => isDNS1035Label(maskTrailingDash(s))),
  labelValue: new NamedFormat('LabelValue', isLabelValue),
  uri: new NamedFormat('URI', (s) => {
    try {
      parseRequestURI(s);
      return [];
    } catch (err) {
      return [(err as Error).message];
    }
  }),
  uuid: new NamedFormat('uuid', (s) => (UUID.test(s) ? [] : ['does not match the UUID format'])),
  byte: new NamedFormat('byte', (s) => (BASE64.test(s) ? [] : ['invalid base64'])),
  date: new NamedFormat('date', (s) => (isDate(s) ? [] : ['invalid date'])),
  datetime: new NamedFormat('datetime', (s) => (isDateTime(s) ? [] : ['invalid datetime'])),
};

class FormatNamespace {}

export function registerFormat(env: Environment): void {
  env.registerType('kubernetes.NamedFormat', NamedFormat);
  env.registerType('FormatNamespace', FormatNamespace);
  env.registerConstant('format', 'FormatNamespace', new FormatNamespace());
  for (const [name, format] of Object.entries(FORMATS)) {
    env.registerFunction(`FormatNamespace.${name}(): kubernetes.NamedFormat`, () => format);
  }
  env.registerFunction('FormatNamespace.named(string): optional<kubernetes.NamedFormat>', (_: unknown, name: string) =>
    Object.hasOwn(FORMATS, name) ? Optional.of(FORMATS[name]) : Optional.none(),
  );
  env.registerFunction('kubernetes.NamedFormat.validate(string): optional<list<string>>', (f: NamedFormat, s: string) => {
    const errs = f.validate(s);
    return errs.length ? Optional.of(errs) : Optional.none();
  });
  env.registerOperator('kubernetes.NamedFormat == kubernetes.NamedFormat', (a: NamedFormat, b: NamedFormat) => a.equals(b));
}
