/**
 * tools/crd-reference: the API reference (docs/reference/) rendered from our CRDs' own schemas, so
 * that it can never disagree with what the API server enforces: every field with its path, type,
 * whether it is required, its default, its description and its validation (x-kubernetes-validations
 * with their messages, bounds, patterns, enums, list types), plus the names, scope, versions and
 * printer columns. Pure: a CRD's YAML text in, Markdown out, the same bytes for the same input (the
 * schema's own field order, nothing from the clock or the machine). tools/manifests.ts writes the
 * pages (`npm run manifests`) and the drift test compares them; this module writes no file and
 * reads none. Plain Markdown with explicit `<a id>` anchors, which GitHub keeps (as user-content-*,
 * which its `#id` links still reach) and static site generators pass through.
 */
import path from 'node:path';
import * as yaml from 'js-yaml';

/** The parts of a structural schema the reference reads; anything else is ignored, not guessed at. */
export interface Schema {
  type?: string;
  format?: string;
  description?: string;
  default?: unknown;
  nullable?: boolean;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: ValidationRule[];
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

interface Version {
  name: string;
  served?: boolean;
  storage?: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  subresources?: { status?: object; scale?: { specReplicasPath?: string; statusReplicasPath?: string; labelSelectorPath?: string } };
  additionalPrinterColumns?: PrinterColumn[];
  schema?: { openAPIV3Schema?: Schema };
}

export interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; listKind?: string; plural: string; singular?: string; shortNames?: string[]; categories?: string[] };
    versions: Version[];
  };
}

export interface ReferenceOptions {
  /** The CRD's file, relative to the repository (named and linked in the page). */
  source: string;
  /** The page's own file, relative to the repository (links are made relative to it). */
  file: string;
  /** The command that writes the page, for its do-not-edit header. */
  regenerate: string;
}

/** A CRD's YAML, refused unless it is one whose every version has a schema (apiextensions.k8s.io/v1's shape). */
export function parseCrd(text: string, source: string): Crd {
  const crd = yaml.load(text) as Crd | undefined;
  if (!crd?.spec?.names?.kind || !Array.isArray(crd.spec.versions)) throw new Error(`${source} is not a CustomResourceDefinition (apiextensions.k8s.io/v1)`);
  for (const version of crd.spec.versions) {
    if (!version.schema?.openAPIV3Schema) throw new Error(`${source}: version ${version.name} has no openAPIV3Schema to document`);
  }
  return crd;
}

// ---- Markdown primitives -------------------------------------------------------------------

/** Descriptions are plain text (what kubectl explain prints): `<suite>` must not become an HTML tag, nor `*` emphasis. */
function text(s: string): string {
  return s.replace(/[\\`*_[\]<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '&' ? '&amp;' : `\\${c}`));
}

/** A code span whose fence is longer than any backtick run inside it (CommonMark's rule). */
function code(s: string): string {
  const longest = Math.max(0, ...[...s.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = s.startsWith('`') || s.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${s}${pad}${fence}`;
}

/** A table cell: one line, and `|` escaped (GFM splits cells on it even inside code spans). */
function cell(s: string): string {
  return s.replace(/\n/g, ' ').replace(/\|/g, '\\|');
}

/** Text indented to continue a list item; blank lines stay blank (no trailing spaces to drift on). */
function indent(block: string, by: string): string {
  return block
    .split('\n')
    .map((line) => (line ? by + line : line))
    .join('\n');
}

/** A description, its paragraphs kept (a literal block's blank lines), each line as text. */
function prose(description: string): string {
  // A line that opens with # would become a heading inside the list item.
  return description
    .trim()
    .split('\n')
    .map((line) => text(line.trimEnd()).replace(/^(\s*)#/, '$1\\#'))
    .join('\n');
}

/** n things, singular when n is 1. */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** An enum value or a default, as it would be written in YAML's JSON subset. */
function value(v: unknown): string {
  return typeof v === 'string' ? code(v) : code(JSON.stringify(v));
}

/** The anchor of a field or object path: spec.webhooks[].rules[] -> spec-webhooks-rules; the top level's is top-level. */
export function anchor(fieldPath: string, prefix = ''): string {
  const slug = fieldPath
    .replace(/\[\]|\{\}/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return prefix + (slug || 'top-level');
}

// ---- the schema walk -----------------------------------------------------------------------

/** One object level of the schema: a section of the page, with a field entry per property. */
interface Section {
  /** The object's path: `spec`, `spec.webhooks[]`, `spec.webhooks[].rules[]`. */
  path: string;
  schema: Schema;
  /** The section's depth under its top-level part (spec is 0), for the contents. */
  depth: number;
  /** The section holding the field this object is (or is an item of); undefined for the top level. */
  parent?: string;
  /** That field's path (`spec.webhooks` for `spec.webhooks[]`). */
  field?: string;
}

/** A schema whose properties make it a documented object of its own (a section). */
function isSection(schema: Schema | undefined): boolean {
  return !!schema && !!schema.properties && Object.keys(schema.properties).length > 0;
}

/** The schema that holds fields under a field: itself, its items (through nested arrays), or its map values. */
function holder(fieldPath: string, schema: Schema): { path: string; schema: Schema } | undefined {
  if (isSection(schema)) return { path: fieldPath, schema };
  if (schema.items) return holder(`${fieldPath}[]`, schema.items);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') return holder(`${fieldPath}{}`, schema.additionalProperties);
  return undefined;
}

/** Every object level under a schema, depth first in the schema's own field order. */
function sections(at: string, schema: Schema, depth: number, parent?: string, field?: string): Section[] {
  const found: Section[] = [{ path: at, schema, depth, parent, field }];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const fieldPath = at ? `${at}.${name}` : name;
    const inner = holder(fieldPath, property);
    if (inner) found.push(...sections(inner.path, inner.schema, depth + 1, at, fieldPath));
  }
  return found;
}

/** The type as a reader writes it: `array of string`, `map of object`, with formats and links to object sections. */
function typeOf(fieldPath: string, schema: Schema, link: (p: string) => string): string {
  if (schema['x-kubernetes-int-or-string']) return 'integer or string';
  if (isSection(schema)) return `[object](#${link(fieldPath)})`;
  if (schema.type === 'array') return schema.items ? `array of ${typeOf(`${fieldPath}[]`, schema.items, link)}` : 'array';
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    return `map of string to ${typeOf(`${fieldPath}{}`, schema.additionalProperties, link)}`;
  }
  if (schema.additionalProperties === true) return 'map of string to any';
  const preserve = schema['x-kubernetes-preserve-unknown-fields'];
  if (!schema.type) return preserve ? 'any' : schema.anyOf || schema.oneOf || schema.allOf ? 'see below' : 'any';
  return schema.format ? `${schema.type}, format ${code(schema.format)}` : schema.type;
}

/** A rule of x-kubernetes-validations as a list item: the CEL, then what the API server answers. */
function ruleItem(rule: ValidationRule): string {
  const parts: string[] = [];
  if (rule.message !== undefined) parts.push(`message: ${text(rule.message)}`);
  if (rule.messageExpression !== undefined) parts.push(`message expression: ${code(rule.messageExpression)}`);
  if (rule.reason !== undefined) parts.push(`reason: ${code(rule.reason)}`);
  if (rule.fieldPath !== undefined) parts.push(`field path: ${code(rule.fieldPath)}`);
  if (rule.optionalOldSelf) parts.push('optionalOldSelf (also checked on create, with oldSelf unset)');
  const tail = parts.map((p) => `; ${p}`).join('');
  // A rule written over several lines keeps them: a code span would fold it into one.
  if (rule.rule.includes('\n')) return `- CEL rule${tail}:\n\n  \`\`\`cel\n${indent(rule.rule.trimEnd(), '  ')}\n  \`\`\``;
  return `- CEL rule ${code(rule.rule)}${tail}`;
}

/**
 * The validation of one schema, each a list item: what the API server checks beyond the type.
 * `of` names the level when it is not the field's own (`each item`, `each value`).
 */
function constraints(schema: Schema, of = ''): string[] {
  const lead = of ? `${of}: ` : '';
  const items: string[] = [];
  const add = (s: string) => items.push(`- ${lead}${s}`);
  if (schema.enum) add(`one of ${schema.enum.map(value).join(', ')}`);
  if (schema.pattern !== undefined) add(`pattern ${code(schema.pattern)}`);
  if (schema.minLength !== undefined) add(`at least ${count(schema.minLength, 'character')}`);
  if (schema.maxLength !== undefined) add(`at most ${count(schema.maxLength, 'character')}`);
  if (schema.minimum !== undefined) add(`minimum ${schema.minimum}${schema.exclusiveMinimum ? ' (exclusive)' : ''}`);
  if (schema.maximum !== undefined) add(`maximum ${schema.maximum}${schema.exclusiveMaximum ? ' (exclusive)' : ''}`);
  if (schema.multipleOf !== undefined) add(`a multiple of ${schema.multipleOf}`);
  if (schema.minItems !== undefined) add(`at least ${count(schema.minItems, 'item')}`);
  if (schema.maxItems !== undefined) add(`at most ${count(schema.maxItems, 'item')}`);
  if (schema.uniqueItems) add('items unique');
  if (schema.minProperties !== undefined) add(`at least ${count(schema.minProperties, 'entry', 'entries')}`);
  if (schema.maxProperties !== undefined) add(`at most ${count(schema.maxProperties, 'entry', 'entries')}`);
  const listType = schema['x-kubernetes-list-type'];
  if (listType === 'map') add(`list type ${code('map')}: items keyed by ${(schema['x-kubernetes-list-map-keys'] ?? []).map(code).join(', ')} (unique; server-side apply merges by key)`);
  else if (listType === 'set') add(`list type ${code('set')}: items unique (server-side apply merges them)`);
  else if (listType !== undefined) add(`list type ${code(listType)}`);
  if (schema['x-kubernetes-map-type'] !== undefined) add(`map type ${code(schema['x-kubernetes-map-type'])}`);
  if (schema['x-kubernetes-embedded-resource']) add('an embedded Kubernetes object (apiVersion, kind, metadata)');
  if (schema['x-kubernetes-preserve-unknown-fields']) {
    // The API server prunes what a schema does not declare, except here: say what is let through.
    if (isSection(schema)) add('fields not listed here are kept too (x-kubernetes-preserve-unknown-fields)');
    else if (schema.type === 'object') add('any fields, kept as given (x-kubernetes-preserve-unknown-fields)');
    else if (!schema.type) add('any JSON value, kept as given (x-kubernetes-preserve-unknown-fields)');
    else add('x-kubernetes-preserve-unknown-fields');
  }
  if (schema.nullable) add('may be null');
  for (const [keyword, alternatives] of [
    ['any of', schema.anyOf],
    ['one of the schemas', schema.oneOf],
    ['all of', schema.allOf],
  ] as const) {
    if (alternatives) add(`${keyword}: ${alternatives.map((a) => code(JSON.stringify(a))).join(', ')}`);
  }
  if (schema.not) add(`not ${code(JSON.stringify(schema.not))}`);
  for (const rule of schema['x-kubernetes-validations'] ?? []) items.push(...(lead ? [`- ${lead}${ruleItem(rule).slice(2)}`] : [ruleItem(rule)]));
  // An array's items and a map's values are checked here, unless they are objects with a section of their own.
  if (schema.items && !isSection(schema.items)) items.push(...constraints(schema.items, of ? `${of}, each item` : 'each item'));
  const values = schema.additionalProperties;
  if (values && typeof values === 'object' && !isSection(values)) items.push(...constraints(values, of ? `${of}, each value` : 'each value'));
  return items;
}

/** The constraints of a field's own level; an object with fields has them in its section instead. */
function fieldConstraints(schema: Schema): string[] {
  return isSection(schema) ? [] : constraints(schema);
}

/** ObjectMeta is the API server's, and a CRD's schema may not describe it: say what it is. */
const METADATA = 'Standard object metadata: name, namespace, labels, annotations, ... ([ObjectMeta](https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/)).';

function fieldEntry(fieldPath: string, schema: Schema, required: boolean, link: (p: string) => string): string {
  const inner = holder(fieldPath, schema);
  // A field whose fields have a section is anchored there; any other field has an anchor of its own.
  const id = inner ? '' : `<a id="${link(fieldPath)}"></a>`;
  const lines = [`- ${id}**${code(fieldPath)}** (${typeOf(fieldPath, schema, link)}${required ? ', **required**' : ''})`];
  const description = schema.description?.trim() ? prose(schema.description) : fieldPath === 'metadata' ? METADATA : '*No description.*';
  lines.push('', indent(description, '  '));
  if (schema.default !== undefined) lines.push('', `  Default: ${value(schema.default)}`);
  const checks = fieldConstraints(schema);
  if (checks.length) lines.push('', indent(checks.join('\n'), '  '));
  return lines.join('\n');
}

function sectionBody(section: Section, link: (p: string) => string): string {
  const { schema } = section;
  const parts: string[] = [];
  // Nested objects say where they sit, a link up: deep schemas are read by going up and down.
  const up = section.parent === undefined ? '' : section.parent ? `[${code(section.parent)}](#${link(section.parent)})` : `[the top level](#${link('')})`;
  if (section.field !== undefined && section.field !== section.path) {
    const kind = section.path.endsWith('[]') ? 'An item' : 'A value';
    parts.push(`${kind} of ${code(section.field)}, a field of ${up}.${schema.description?.trim() ? ` ${prose(schema.description)}` : ''}`);
  } else if (section.path) {
    parts.push(`${section.depth > 0 ? `A field of ${up}.${schema.description?.trim() ? ' ' : ''}` : ''}${schema.description?.trim() ? prose(schema.description) : ''}`);
  }
  const own = constraints({ ...schema, properties: undefined, required: undefined, items: undefined });
  if (own.length) parts.push(`Validation of the whole object:\n\n${own.join('\n')}`);
  const required = new Set(schema.required ?? []);
  const undeclared = [...required].filter((name) => !schema.properties?.[name]);
  if (undeclared.length) parts.push(`Required, with no schema of their own: ${undeclared.map(code).join(', ')}.`);
  // A paragraph between the object's rules and its fields, or Markdown would run the two lists together.
  if (schema.properties && Object.keys(schema.properties).length) parts.push('Fields:');
  const prefix = section.path ? `${section.path}.` : '';
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    parts.push(fieldEntry(prefix + name, property, required.has(name), link));
  }
  return parts.join('\n\n');
}

// ---- the page ------------------------------------------------------------------------------

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

/** The versions' part of the page: printer columns, contents, and a section per object level. */
function versionPart(crd: Crd, version: Version, prefix: string, level: number, ids: Set<string>): string {
  const h = (n: number) => '#'.repeat(level + n);
  const use = (id: string) => {
    if (ids.has(id)) throw new Error(`${crd.metadata.name}: two places of the reference would share the anchor #${id}`);
    ids.add(id);
    return id;
  };
  const link = (p: string) => anchor(p, prefix);
  const root = version.schema!.openAPIV3Schema!;
  const out: string[] = [];

  const columns = version.additionalPrinterColumns ?? [];
  out.push(`${h(0)} <a id="${use(`${prefix}printer-columns`)}"></a>Printer columns`);
  out.push(
    columns.length
      ? `What \`kubectl get ${crd.spec.names.plural}\` shows besides the name (priority above 0: with \`-o wide\` only).\n\n` +
          table(
            ['Column', 'Type', 'JSONPath', 'Priority', 'Description'],
            columns.map((c) => [text(c.name), c.format ? `${c.type} (${c.format})` : c.type, code(c.jsonPath), String(c.priority ?? 0), c.description ? text(c.description) : '']),
          )
      : 'None: `kubectl get` shows the name and age.',
  );

  const all = sections('', root, -1);
  out.push(`${h(0)} <a id="${use(`${prefix}contents`)}"></a>Contents`);
  out.push(
    all
      .map((s) => {
        return `${'  '.repeat(Math.max(0, s.depth))}- [${s.path ? code(s.path) : 'Top level'}](#${link(s.path)})`;
      })
      .join('\n'),
  );

  for (const section of all) {
    const id = use(link(section.path));
    // The top level and its parts (spec, status) are sections of the page; deeper objects sit one level below them.
    const heading = section.path === '' ? `${h(0)} <a id="${id}"></a>Top level` : `${h(section.depth === 0 ? 0 : 1)} <a id="${id}"></a>${code(section.path)}`;
    out.push(heading, sectionBody(section, link));
  }
  // Field anchors must be unique too, and not collide with a section's.
  for (const section of all) {
    for (const [name, property] of Object.entries(section.schema.properties ?? {})) {
      const fieldPath = section.path ? `${section.path}.${name}` : name;
      if (!holder(fieldPath, property)) use(link(fieldPath));
    }
  }
  return out.join('\n\n');
}

/** The reference page of one CRD. */
export function renderCrdReference(yamlText: string, options: ReferenceOptions): string {
  const crd = parseCrd(yamlText, options.source);
  const { names } = crd.spec;
  const sourceLink = path.posix.relative(path.posix.dirname(options.file), options.source);
  const versions = crd.spec.versions;
  const served = versions.filter((v) => v.served !== false).map((v) => v.name);
  const out: string[] = [];
  out.push(`<!-- Generated from ${options.source} by \`${options.regenerate}\` (tools/crd-reference.ts). Do not edit: edit the CRD, and run \`${options.regenerate}\`. -->`);
  out.push(`# ${names.kind}`);
  out.push(
    `${code(`${crd.spec.group}/${served.join(', ')}`)} · ${crd.spec.scope === 'Cluster' ? 'cluster-scoped' : 'namespaced'} · the API server's schema, from [${code(options.source)}](${sourceLink}): every field below is what it accepts and checks.`,
  );
  const rootDescription = versions[0]!.schema!.openAPIV3Schema!.description;
  if (rootDescription?.trim()) out.push(prose(rootDescription));

  const subresources = (v: Version) =>
    [...(v.subresources?.status ? ['status'] : []), ...(v.subresources?.scale ? [`scale (spec ${v.subresources.scale.specReplicasPath ?? '-'}, status ${v.subresources.scale.statusReplicasPath ?? '-'})`] : [])].join(', ') || 'none';
  const versionRows = versions.map((v) => {
    const flags = [v.served !== false ? 'served' : 'not served', ...(v.storage ? ['storage'] : []), ...(v.deprecated ? ['deprecated'] : [])];
    return `${code(v.name)} (${flags.join(', ')}${v.deprecationWarning ? `: ${text(v.deprecationWarning)}` : ''})`;
  });
  out.push(`## <a id="overview"></a>Overview`);
  out.push(
    (
      [
        ['Kind', `${code(names.kind)}${names.listKind ? ` (list: ${code(names.listKind)})` : ''}`],
        ['Group', code(crd.spec.group)],
        ['Versions', versionRows.join('; ')],
        ['Scope', crd.spec.scope === 'Cluster' ? 'Cluster (no namespace)' : 'Namespaced'],
        ['Resource', `${code(names.plural)}${names.singular ? ` (singular ${code(names.singular)})` : ''}`],
        ['Short names', names.shortNames?.length ? names.shortNames.map(code).join(', ') : 'none'],
        ['Categories', names.categories?.length ? `${names.categories.map(code).join(', ')} (\`kubectl get ${names.categories[0]}\` lists it)` : 'none'],
        ['Subresources', versions.map((v) => (versions.length > 1 ? `${code(v.name)}: ${subresources(v)}` : subresources(v))).join('; ')],
        ['CRD', code(crd.metadata.name)],
      ] as const
    )
      .map(([name, detail]) => `- **${name}**: ${detail}`)
      .join('\n'),
  );

  const ids = new Set(['overview']);
  if (versions.length === 1) {
    out.push(versionPart(crd, versions[0]!, '', 2, ids));
  } else {
    // Several versions: a part each, its anchors prefixed with the version so that they stay apart.
    for (const version of versions) {
      const id = `${version.name}`;
      if (ids.has(id)) throw new Error(`${crd.metadata.name}: version ${version.name} collides with an anchor of the page`);
      ids.add(id);
      out.push(`## <a id="${id}"></a>Version ${code(version.name)}`, versionPart(crd, version, `${version.name}-`, 3, ids));
    }
  }
  return `${out.join('\n\n')}\n`;
}

/** The first sentence of a description, for the index. */
function firstSentence(description: string | undefined): string {
  const flat = (description ?? '').trim().replace(/\s+/g, ' ');
  const end = flat.search(/[.:;](\s|$)/);
  return end < 0 ? flat : `${flat.slice(0, end)}.`;
}

/** docs/reference/README.md: the pages, one row per CRD. */
export function renderReferenceIndex(pages: { yamlText: string; options: ReferenceOptions }[], index: { file: string; regenerate: string; upstream: string[] }): string {
  const rows = pages.map(({ yamlText, options }) => {
    const crd = parseCrd(yamlText, options.source);
    const page = path.posix.relative(path.posix.dirname(index.file), options.file);
    return [
      `[${code(crd.spec.names.kind)}](${page})`,
      code(`${crd.spec.group}/${crd.spec.versions.map((v) => v.name).join(', ')}`),
      crd.spec.scope,
      (crd.spec.names.shortNames ?? []).map(code).join(', '),
      text(firstSentence(crd.spec.versions[0]!.schema!.openAPIV3Schema!.description)),
    ];
  });
  const upstream = index.upstream.map((s) => `[${code(path.posix.basename(s))}](${path.posix.relative(path.posix.dirname(index.file), s)})`).join(', ');
  return (
    [
      `<!-- Generated by \`${index.regenerate}\` (tools/crd-reference.ts) from the CRDs it lists. Do not edit: edit the CRDs, and run \`${index.regenerate}\`. -->`,
      '# API reference',
      `The custom resources Portcullis serves, every field with its type, whether it is required, its default and the validation the API server applies, generated from the CRDs in ${code('crds/')} by ${code(index.regenerate)}; a test fails when a page and its CRD disagree. ${code('kubectl explain')} shows the same descriptions from a cluster.`,
      table(['Kind', 'API version', 'Scope', 'Short names', 'What it is'], rows),
      `The report CRDs in ${code('crds/')} (${upstream}) are upstream's, as published: their projects document them.`,
    ].join('\n\n') + '\n'
  );
}
