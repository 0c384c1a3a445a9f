/**
 * A document of our API group checked offline as the API server checks its create before any webhook:
 * kind and version served, strict field decoding, the CRD's OpenAPI schema and metadata.name, then its
 * x-kubernetes-validations by the operator's CEL; errors in the API server's words and paths. Owns only
 * this mirror; the operator's own checks are evaluate.ts's, reading files files.ts'. The CRDs are read
 * from crds/, their one source, so a schema change needs no change here.
 */
import fs from 'node:fs';
import * as yaml from 'js-yaml';
import { isDeepStrictEqual } from 'node:util';
import type { Environment } from '@marcbachmann/cel-js';
import { GROUP } from '../api/types.ts';
import { CLUSTER_EXCEPTION_CRD_FILE, CRD_FILE, EXCEPTION_CRD_FILE, POLICY_CRD_FILE } from '../local/install.ts';
import { isDNS1123Subdomain, maxLenChars } from '../kubernetes/validation.ts';
import { newEnvironment, validateProgram } from '../policy/engine/environment.ts';
import { parseExpression } from '../policy/celjs/parse.ts';
import { useCelGoLogic } from '../policy/celjs/logic.ts';
import { toCel } from '../policy/values/convert.ts';
import type { Program } from '../policy/celjs/program.ts';

/** A path into a document: property names and list indexes. */
export type Path = (string | number)[];

export interface SchemaError {
  /** Where in the document (for a line number); undefined for the whole object. */
  path: Path | undefined;
  /** The API server's words: `spec.webhooks[0].failurePolicy: Unsupported value: ...`, `unknown field "spec.x"`. */
  text: string;
}

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}

interface Crd {
  spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean; schema: { openAPIV3Schema: Schema } }[] };
}

/** ObjectMeta's fields: strict decoding refuses any other under metadata. */
const OBJECT_META = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

/** The error types after which the API server runs no CEL rule (apiextensions' hasBlockingErr). */
type ErrorType = 'NotSupported' | 'Required' | 'TooLong' | 'TooMany' | 'TypeInvalid' | 'Invalid' | 'Duplicate';
const BLOCKING: ReadonlySet<ErrorType> = new Set(['NotSupported', 'Required', 'TooLong', 'TooMany', 'TypeInvalid']);
const NOT_CHECKED = '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation';

let crds: Crd[] | undefined;
function ourCrds(): Crd[] {
  return (crds ??= [CRD_FILE, POLICY_CRD_FILE, EXCEPTION_CRD_FILE, CLUSTER_EXCEPTION_CRD_FILE].map((file) => yaml.load(fs.readFileSync(file, 'utf8')) as Crd));
}

/** Whether a CRD's schema holds any x-kubernetes-validations rule: read once per schema. */
const withRules = new WeakMap<object, boolean>();
function hasRules(schema: object): boolean {
  let known = withRules.get(schema);
  if (known === undefined) withRules.set(schema, (known = JSON.stringify(schema).includes('"x-kubernetes-validations"')));
  return known;
}

/** Whether `document` is of our API group, which the CRDs below own (any other is not checked here). */
export function ofOurGroup(document: Record<string, unknown>): boolean {
  return typeof document.apiVersion === 'string' && document.apiVersion.split('/')[0] === GROUP;
}

/**
 * What the API server answers a create of `document` (of our group) with, before admission
 * webhooks: empty when it would be stored. Layered as the API server is: an unknown kind or
 * version stops everything; unknown fields stop before validation (a BadRequest); a blocking
 * schema error stops the CEL rules.
 */
export function crdErrors(document: Record<string, unknown>): SchemaError[] {
  const apiVersion = String(document.apiVersion);
  const version = apiVersion.split('/')[1];
  const crd = ourCrds().find((c) => c.spec.names.kind === document.kind);
  const served = crd?.spec.versions.find((v) => v.name === version && v.served);
  if (!served) return [{ path: ['kind'], text: `no matches for kind ${JSON.stringify(String(document.kind))} in version ${JSON.stringify(apiVersion)}` }];
  const schema = served.schema.openAPIV3Schema;

  const unknown: Path[] = [];
  unknownFields(document, schema, [], unknown);
  if (unknown.length) {
    return unknown.map((path) => ({ path, text: `unknown field ${JSON.stringify(fieldPath(path))}` })).sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
  }

  const found: Found[] = [...metadataErrors(document)];
  // The status is reset on create (the CRD has a status subresource): nothing in it is checked.
  const { status: _status, ...created } = document;
  validate(created, schema, [], found);
  // Said only where there were rules to skip: a CRD without x-kubernetes-validations has none.
  if (found.some((e) => BLOCKING.has(e.type))) return [...found.map(asError), ...(hasRules(schema) ? [{ path: undefined, text: NOT_CHECKED }] : [])];
  runRules(created, schema, [], found);
  return found.map(asError);
}

interface Found {
  path: Path | undefined;
  type: ErrorType;
  /** The error's text after `field: `. */
  body: string;
}

const asError = (e: Found): SchemaError => ({ path: e.path, text: `${e.path ? fieldPath(e.path) : '<nil>'}: ${e.body}` });

/** A field path as the API server writes it: `spec.webhooks[0].name`; `<nil>` for the object itself. */
export function fieldPath(path: Path): string {
  if (path.length === 0) return '<nil>';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Strict decoding: every field the schema does not declare (a key under an array's schema, too),
 * but where x-kubernetes-preserve-unknown-fields keeps anything. The root's apiVersion, kind
 * and metadata are every object's.
 */
function unknownFields(value: unknown, schema: Schema, path: Path, out: Path[]): void {
  if (schema['x-kubernetes-preserve-unknown-fields']) return;
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((item, i) => unknownFields(item, schema.items!, [...path, i], out));
    return;
  }
  if (!isObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    if (path.length === 0 && (key === 'apiVersion' || key === 'kind')) continue;
    if (path.length === 0 && key === 'metadata') {
      if (isObject(child)) for (const field of Object.keys(child)) if (!OBJECT_META.has(field)) out.push(['metadata', field]);
      continue;
    }
    const property = schema.properties?.[key];
    if (property) unknownFields(child, property, [...path, key], out);
    else out.push([...path, key]);
  }
}

/** metadata.name as the API server's ObjectMeta validation of a custom resource sees it. */
function metadataErrors(document: Record<string, unknown>): Found[] {
  const metadata = isObject(document.metadata) ? document.metadata : {};
  const name = metadata.name;
  if (typeof name !== 'string' || name === '') return [{ path: ['metadata', 'name'], type: 'Required', body: 'Required value: name or generateName is required' }];
  return isDNS1123Subdomain(name, maxLenChars).map((message) => ({ path: ['metadata', 'name'], type: 'Invalid', body: `Invalid value: ${JSON.stringify(name)}: ${message}` }));
}

/** The JSON type the OpenAPI validator names for a value. */
function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function fitsType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return typeof value === type;
  }
}

/** A value as Go's field errors print it: strings quoted, numbers and booleans bare. */
const goValue = (value: unknown) => JSON.stringify(value);

/** The OpenAPI v3 schema's checks (kube-openapi's validator, as apiextensions runs it), every one, depth first. */
function validate(value: unknown, schema: Schema, path: Path, out: Found[]): void {
  // A null is dropped from a field that is not nullable (none of ours is) before validation.
  if (value === null || value === undefined) return;
  const at = fieldPath(path);
  const push = (type: ErrorType, body: string, where: Path = path) => out.push({ path: where, type, body });
  if (schema.type && !fitsType(value, schema.type)) {
    const actual = jsonType(value);
    push('TypeInvalid', `Invalid value: ${JSON.stringify(actual)}: ${at} in body must be of type ${schema.type}: ${JSON.stringify(actual)}`);
    if (schema.type === 'integer' && actual === 'number') out.push({ path: undefined, type: 'Invalid', body: `Invalid value: "": Checked value must be of type integer (default format) in ${at}` });
  }
  if (schema.enum && !schema.enum.some((allowed) => isDeepStrictEqual(allowed, value))) {
    push('NotSupported', `Unsupported value: ${goValue(value)}: supported values: ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.maxLength !== undefined && length > schema.maxLength) push('TooLong', `Too long: may not be more than ${schema.maxLength} bytes`);
    if (schema.minLength !== undefined && length < schema.minLength) push('Invalid', `Invalid value: ${goValue(value)}: ${at} in body should be at least ${schema.minLength} chars long`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) push('Invalid', `Invalid value: ${goValue(value)}: ${at} in body should match '${schema.pattern}'`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) push('Invalid', `Invalid value: ${value}: ${at} in body should be greater than or equal to ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) push('Invalid', `Invalid value: ${value}: ${at} in body should be less than or equal to ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) push('Invalid', `Invalid value: ${value.length}: ${at} in body should have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) push('TooMany', `Too many: ${value.length}: must have at most ${schema.maxItems} items`);
    if (schema.items) value.forEach((item, i) => validate(item, schema.items!, [...path, i], out));
    for (const [i, duplicate] of listDuplicates(value, schema)) push('Duplicate', `Duplicate value: ${duplicate}`, [...path, i]);
  }
  if (isObject(value)) {
    for (const key of schema.required ?? []) if (value[key] === undefined || value[key] === null) push('Required', 'Required value', [...path, key]);
    for (const [key, child] of Object.entries(value)) {
      // metadata is ObjectMeta's (metadataErrors); a field the schema does not declare was refused by strict decoding.
      if (path.length === 0 && key === 'metadata') continue;
      const property = schema.properties?.[key];
      if (property) validate(child, property, [...path, key], out);
    }
  }
}

/** The items that repeat an earlier one, by index, as x-kubernetes-list-type set (the item) or map (its keys) says. */
function listDuplicates(items: unknown[], schema: Schema): [number, string][] {
  const type = schema['x-kubernetes-list-type'];
  const keyOf = (item: unknown): unknown => {
    if (type === 'set') return item;
    const keys = schema['x-kubernetes-list-map-keys'] ?? [];
    return Object.fromEntries(keys.filter((k) => isObject(item) && item[k] !== undefined).map((k) => [k, (item as Record<string, unknown>)[k]]));
  };
  if (type !== 'set' && type !== 'map') return [];
  const seen: unknown[] = [];
  const duplicates: [number, string][] = [];
  items.forEach((item, i) => {
    const key = keyOf(item);
    if (seen.some((s) => isDeepStrictEqual(s, key))) duplicates.push([i, JSON.stringify(key)]);
    else seen.push(key);
  });
  return duplicates;
}

let celEnvironment: Environment | undefined;
const programs = new Map<string, Program>();

/** A CRD rule compiled with the operator's CEL environment and cel-go's && and ||; `self` the value it is on. */
function ruleProgram(rule: string): Program {
  let program = programs.get(rule);
  if (!program) {
    celEnvironment ??= newEnvironment({ self: 'dyn' });
    program = parseExpression(celEnvironment, rule) as Program;
    useCelGoLogic(program.ast);
    const checked = program.check();
    if (!checked.valid) throw new Error(`the CRD's rule ${JSON.stringify(rule)} does not compile: ${String(checked.error)}`);
    validateProgram(program);
    programs.set(rule, program);
  }
  return program;
}

/** Every x-kubernetes-validations rule of the schema on the value it stands on, depth first from the root, as apiextensions' CEL validator. */
function runRules(value: unknown, schema: Schema, path: Path, out: Found[]): void {
  if (value === null || value === undefined) return;
  for (const { rule, message } of schema['x-kubernetes-validations'] ?? []) {
    let holds: unknown;
    try {
      holds = ruleProgram(rule)({ self: toCel(value) });
    } catch (err) {
      holds = err;
    }
    if (holds === true) continue;
    const detail = holds instanceof Error ? `${message ?? `failed rule: ${rule}`} (${holds.message.split('\n')[0]})` : (message ?? `failed rule: ${rule}`);
    // The API server prints a scalar's value, never an object's or a list's.
    const shown = isObject(value) || Array.isArray(value) ? '' : `${goValue(value)}: `;
    out.push({ path, type: 'Invalid', body: `Invalid value: ${shown}${detail}` });
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => runRules(item, schema.items!, [...path, i], out));
  if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const property = schema.properties?.[key];
      if (property && !(path.length === 0 && key === 'metadata')) runRules(child, property, [...path, key], out);
    }
  }
}
