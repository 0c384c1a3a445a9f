/**
 * What OpenApiSchemas (openapi.ts) reads from the API server, as data: `/openapi/v3`'s paths, a
 * group version's resources (API discovery), a group version's document; how long a read is
 * reused; how a rule's kinds and a kind's schema are found in them; and the changes a copy of
 * them is sent (the admission thread's, admission/threads/schema-copy.ts). No I/O and no
 * Kubernetes client here, so that a copy answers as openapi.ts does without loading either.
 * Fetching is openapi.ts's; turning a schema into CEL types is src/policy/typecheck's.
 */

/** A schema as published; what its fields mean is src/policy/typecheck's. */
export type OpenApiSchema = Record<string, unknown>;

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** A kind's schema: its reference in `components` and the document's components (shared, never modified). */
export interface KindSchema {
  ref: string;
  components: Readonly<Record<string, OpenApiSchema>>;
  /** The document's hashed URL: the same for the same content. */
  source: string;
}

/** `/openapi/v3`'s paths: each group version's document (`apis/apps/v1`, `api/v1`) at its hashed URL. */
export type OpenApiPaths = Record<string, { serverRelativeURL: string }>;

/** A group version's resources as discovery lists them (name and kind are all a rule needs). */
export type ResourceList = { name: string; kind: string }[];

/** How long `/openapi/v3` and a group version's resource list are reused before asking again. */
export const FRESH_MS = 2_000;

/** What a copy names when it asks for `/openapi/v3` to be read again (a group version's resources: groupVersionKey). */
export const PATHS_KEY = '/openapi/v3';

/** Where a group version's resources are kept: `group/version` (the core group's is ''). */
export function groupVersionKey(group: string, version: string): string {
  return `${group}/${version}`;
}

/** A group version's document as `/openapi/v3` names it. */
export function documentPath(gvk: Pick<GroupVersionKind, 'group' | 'version'>): string {
  return gvk.group ? `apis/${gvk.group}/${gvk.version}` : `api/${gvk.version}`;
}

/** The kinds served as `resource` in group/version, from its resource list (none when it is not served), as RESTMapper.KindsFor. */
export function kindsIn(resources: ResourceList, group: string, version: string, resource: string): GroupVersionKind[] {
  return resources.filter((r) => r.name === resource).map((r) => ({ group, version, kind: r.kind }));
}

/** The schema of `gvk` in a group version's document (its `x-kubernetes-group-version-kind`), or undefined. */
export function kindSchemaIn(components: Readonly<Record<string, OpenApiSchema>>, gvk: GroupVersionKind, source: string): KindSchema | undefined {
  for (const [name, schema] of Object.entries(components)) {
    const gvks = schema['x-kubernetes-group-version-kind'];
    if (Array.isArray(gvks) && gvks.some((g: GroupVersionKind) => (g.group ?? '') === gvk.group && g.version === gvk.version && g.kind === gvk.kind)) {
      return { ref: name, components, source };
    }
  }
  return undefined;
}

/**
 * What a copy is told, each read as it succeeds: `at` is when it was asked (Date.now(), as
 * openapi.ts counts FRESH_MS from), so the copy reuses it exactly as long. `resources-dropped`: every
 * resource list was dropped (a CRD changed), so none is answered from until read again.
 */
export type SchemaChange =
  | { type: 'paths'; at: number; paths: OpenApiPaths }
  | { type: 'resources'; key: string; at: number; resources: ResourceList }
  | { type: 'document'; path: string; url: string; components: Readonly<Record<string, OpenApiSchema>> }
  | { type: 'resources-dropped' };
