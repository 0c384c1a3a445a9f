/**
 * Kubernetes' format library (apiserver pkg/cel/library/format.go): the named formats
 * `format.dns1123Label()`, `format.dns1123Subdomain()`, ... and `format.named(name)`, each with
 * `validate(string)`, which gives optional.none() for a valid string and otherwise
 * optional.of(the list of problems), worded as apimachinery's validation functions word them (src/kubernetes/validation.ts).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { Optional } from '../celjs/values.ts';
import { parseRequestURI } from '../../go/url.ts';
import { byteLength, isDNS1035Label, isDNS1123Label, isDNS1123Subdomain, isLabelValue, isQualifiedName, maskTrailingDash, maxLenChars } from '../../kubernetes/validation.ts';

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
  env.registerFunction('FormatNamespace.named(string): optional<kubernetes.NamedFormat>', (_: unknown, name: string) => (Object.hasOwn(FORMATS, name) ? Optional.of(FORMATS[name]) : Optional.none()));
  env.registerFunction('kubernetes.NamedFormat.validate(string): optional<list<string>>', (f: NamedFormat, s: string) => {
    const errs = f.validate(s);
    return errs.length ? Optional.of(errs) : Optional.none();
  });
  env.registerOperator('kubernetes.NamedFormat == kubernetes.NamedFormat', (a: NamedFormat, b: NamedFormat) => a.equals(b));
}
