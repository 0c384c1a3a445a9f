/**
 * A kind's OpenAPI v3 schema as the CEL types an expression is checked against, by the API server's
 * rules (pkg/cel/common/schemas.go SchemaDeclType, PopulateRefs): properties as fields,
 * `additionalProperties` maps, arrays lists, int-or-string `dyn`, date(-time) timestamps, durations,
 * bytes, doubles; a property with no type is not exposed, and preserve-unknown-fields exposes only what
 * is declared. Names as DeclType.MaybeAssignTypeName (see LIST_ELEMENT). Pure; registering is check.ts'.
 */
import { CEL_RESERVED } from '../../kubernetes/validation.ts';

/** The parts of an OpenAPI v3 schema the conversion reads. */
export interface OpenApiSchema {
  type?: string | string[];
  format?: string;
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: boolean | OpenApiSchema;
  items?: OpenApiSchema;
  $ref?: string;
  allOf?: OpenApiSchema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  [key: string]: unknown;
}

/** The CEL types of one kind: the root's name and every object type, each before the types that use it. */
export interface SchemaTypes {
  root: string;
  /** Object type name -> its fields (field name -> cel-js type), dependencies first. */
  objects: Map<string, Record<string, string>>;
}

const REF_PREFIX = '#/components/schemas/';

/**
 * The API server names list elements `.@idx` and map values `.@elem`; cel-js's operator
 * signatures take no `@`, so these stand in for them (no escaped field name can be one: an
 * escaped `__` is `__underscores__`); check.ts prints them back as `@idx` and `@elem`.
 */
export const LIST_ELEMENT = '__idx__';
export const MAP_ELEMENT = '__elem__';

/**
 * The types of the schema `rootRef` names in `components` (a group-version document's
 * `components.schemas`), its root named `rootName`; undefined when the schema is not exposed.
 */
export function schemaTypes(rootName: string, rootRef: string, components: Readonly<Record<string, OpenApiSchema>>): SchemaTypes | undefined {
  const root = components[rootRef.startsWith(REF_PREFIX) ? rootRef.slice(REF_PREFIX.length) : rootRef];
  if (!root) return undefined;
  const objects = new Map<string, Record<string, string>>();
  const resolve = (ref: string) => components[ref.startsWith(REF_PREFIX) ? ref.slice(REF_PREFIX.length) : ref];
  const type = declType(root, true, rootName, { resolve, visited: new Set([rootRef]), objects });
  return type === rootName ? { root: rootName, objects } : undefined;
}

interface Walk {
  resolve(ref: string): OpenApiSchema | undefined;
  /** The references being expanded above this point: a reference back to one of them is an object with no fields (PopulateRefs). */
  visited: Set<string>;
  objects: Map<string, Record<string, string>>;
}

function refOf(schema: OpenApiSchema): string | undefined {
  if (typeof schema.$ref === 'string') return schema.$ref;
  for (const part of schema.allOf ?? []) {
    const ref = refOf(part);
    if (ref) return ref;
  }
  return undefined;
}

function typeOf(schema: OpenApiSchema): string {
  return (Array.isArray(schema.type) ? schema.type[0] : schema.type) ?? '';
}

function isIntOrString(schema: OpenApiSchema): boolean {
  return schema['x-kubernetes-int-or-string'] === true || schema.format === 'int-or-string';
}

/** The cel-js type of `schema`, named `name` if it is an object; undefined when not exposed. */
function declType(input: OpenApiSchema, resourceRoot: boolean, name: string, walk: Walk): string | undefined {
  let schema = input;
  const ref = refOf(input);
  let expanded: string | undefined;
  if (ref) {
    if (walk.visited.has(ref)) schema = { type: 'object' };
    else {
      const resolved = walk.resolve(ref);
      if (!resolved) return undefined;
      schema = resolved;
      walk.visited.add((expanded = ref));
    }
  }
  try {
    return declResolved(schema, resourceRoot, name, walk);
  } finally {
    if (expanded) walk.visited.delete(expanded);
  }
}

function declResolved(input: OpenApiSchema, resourceRoot: boolean, name: string, walk: Walk): string | undefined {
  if (isIntOrString(input)) return 'dyn';
  const schema = resourceRoot ? withTypeAndObjectMeta(input, walk) : input;
  switch (typeOf(schema)) {
    case 'array': {
      if (!schema.items) return undefined;
      const items = declType(schema.items, embedded(schema.items, walk), `${name}.${LIST_ELEMENT}`, walk);
      return items && `list<${items}>`;
    }
    case 'object': {
      const extra = schema.additionalProperties;
      if (extra !== undefined && typeof extra === 'object') {
        const values = declType(extra, embedded(extra, walk), `${name}.${MAP_ELEMENT}`, walk);
        return values && `map<string, ${values}>`;
      }
      const fields: Record<string, string> = {};
      for (const [property, propertySchema] of Object.entries(schema.properties ?? {})) {
        const field = escapeField(property);
        if (field === undefined) continue;
        const type = declType(propertySchema, embedded(propertySchema, walk), `${name}.${field}`, walk);
        // A reserved word (`namespace`) is selected by its own name: the API server's environment
        // recognizes keywords as field names (DeclTypeProvider's recognizeKeywordAsFieldName).
        if (type !== undefined) fields[CEL_RESERVED.has(property) ? property : field] = type;
      }
      walk.objects.set(name, fields);
      return name;
    }
    case 'string':
      switch (schema.format) {
        case 'byte':
          return 'bytes';
        case 'duration':
          return 'google.protobuf.Duration';
        case 'date':
        case 'date-time':
          return 'google.protobuf.Timestamp';
        default:
          return 'string';
      }
    case 'boolean':
      return 'bool';
    case 'number':
      return 'double';
    case 'integer':
      return 'int';
    default:
      return undefined;
  }
}

/** x-kubernetes-embedded-resource, read through a reference as the API server reads the populated schema. */
function embedded(schema: OpenApiSchema, walk: Walk): boolean {
  if (schema['x-kubernetes-embedded-resource'] === true) return true;
  const ref = refOf(schema);
  return ref !== undefined && !walk.visited.has(ref) && walk.resolve(ref)?.['x-kubernetes-embedded-resource'] === true;
}

function resolved(schema: OpenApiSchema | undefined, walk: Walk): OpenApiSchema | undefined {
  const ref = schema && refOf(schema);
  return ref ? walk.resolve(ref) : schema;
}

/**
 * common.WithTypeAndObjectMeta: the root of a resource always has string `kind` and `apiVersion`
 * and a `metadata` with string `name` and `generateName`; a schema lacking any of them gets those
 * (and a metadata of only those two).
 */
function withTypeAndObjectMeta(schema: OpenApiSchema, walk: Walk): OpenApiSchema {
  const props = schema.properties;
  const isString = (s: OpenApiSchema | undefined) => s !== undefined && typeOf(s) === 'string';
  const metadata = resolved(props?.metadata, walk);
  if (
    props &&
    isString(resolved(props.kind, walk)) &&
    isString(resolved(props.apiVersion, walk)) &&
    metadata &&
    typeOf(metadata) === 'object' &&
    isString(resolved(metadata.properties?.name, walk)) &&
    isString(resolved(metadata.properties?.generateName, walk))
  ) {
    return schema;
  }
  const string: OpenApiSchema = { type: 'string' };
  return {
    ...schema,
    properties: { ...props, kind: string, apiVersion: string, metadata: { type: 'object', properties: { name: string, generateName: string } } },
  };
}

/** apiserver cel.Escape: a property's name as a CEL field name, or undefined when it cannot be one. */
export function escapeField(name: string): string | undefined {
  if (CEL_RESERVED.has(name)) return `__${name}__`;
  if (/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name) && !name.includes('__')) return name;
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(name)) return undefined;
  let out = '';
  for (let i = 0; i < name.length; i++) {
    if (name.startsWith('__', i)) {
      out += '__underscores__';
      i++;
    } else if (name[i] === '.') out += '__dot__';
    else if (name[i] === '-') out += '__dash__';
    else if (name[i] === '/') out += '__slash__';
    else out += name[i];
  }
  return out;
}
