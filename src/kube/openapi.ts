/**
 * The OpenAPI v3 schemas the API server publishes (`/openapi/v3`, then one document per group
 * version), as ValidatingAdmissionPolicy's type checker reads them (apiserver
 * pkg/cel/openapi/resolver/discovery.go), and the kinds a resource rule names (API discovery,
 * as its RESTMapper). Built-in kinds and CRDs alike: a CRD's change changes its group version's
 * hash in `/openapi/v3`, so a group version's document is kept with its hashed URL and fetched
 * again only when that changes (only the group versions of kinds suites match are ever read). Read at compile and apply time only, never on the request path. Knows nothing about
 * admission: turning a schema into CEL types is src/policy/typecheck's.
 */
import { getJson, NotFound } from './get-json.ts';
import type * as k8s from '@kubernetes/client-node';

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

/** How long `/openapi/v3` and a group version's resource list are reused before asking again. */
const FRESH_MS = 2_000;
/** How often a schema miss may make `/openapi/v3` be asked again before its FRESH_MS are up. */
const MISS_REFRESH_MS = 1_000;

interface Fetched<T> {
  at: number;
  value: Promise<T>;
}


export class OpenApiSchemas {
  private readonly config: k8s.KubeConfig;
  private paths?: Fetched<Record<string, { serverRelativeURL: string }>>;
  private readonly documents = new Map<string, { url: string; doc: Promise<Readonly<Record<string, OpenApiSchema>>> }>();
  private readonly resources = new Map<string, Fetched<{ name: string; kind: string }[]>>();
  /**
   * Resources a rule named that discovery did not (yet) serve, as `group/version` -> names: a CRD
   * just created is in `/openapi/v3` a moment before its discovery, so a check made in between
   * found no kind, and no later change of `/openapi/v3` would say so. watchChanges asks again.
   */
  private readonly misses = new Map<string, Set<string>>();
  /**
   * The hashed URL (undefined: none published) of each group version's document as the last type
   * check read it. A poll compares these with what `/openapi/v3` says now, not with its own
   * previous poll: a check may have read the paths before the first poll saw a CRD's group version
   * (or its new hash), and a diff between polls would never say so.
   */
  private readonly read = new Map<string, string | undefined>();
  private changes = 0;
  private pathsRefreshedOnMiss = 0;

  constructor(config: k8s.KubeConfig) {
    this.config = config;
  }

  /** The kinds served as `resource` in group/version (none when it is not served), as RESTMapper.KindsFor. */
  async kindsFor(group: string, version: string, resource: string): Promise<GroupVersionKind[]> {
    const key = `${group}/${version}`;
    let entry = this.resources.get(key);
    if (!entry || Date.now() - entry.at > FRESH_MS) {
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      // A group version that is not served has no kinds; any other failure is not an answer (not kept).
      const value = this.get<{ resources?: { name: string; kind: string }[] }>(path).then(
        (list) => list.resources ?? [],
        (err: unknown) => (err instanceof NotFound ? [] : Promise.reject(err as Error)),
      );
      value.catch(() => this.resources.delete(key));
      this.resources.set(key, (entry = { at: Date.now(), value }));
    }
    const list = await entry.value;
    const kinds = list.filter((r) => r.name === resource).map((r) => ({ group, version, kind: r.kind }));
    if (kinds.length === 0) this.misses.set(key, (this.misses.get(key) ?? new Set()).add(resource));
    return kinds;
  }

  /** The group versions (as watchChanges names them) where a resource missed before is now served. */
  private async foundSinceMissed(): Promise<string[]> {
    const found: string[] = [];
    for (const [key, names] of [...this.misses]) {
      const [group, version] = key.split('/') as [string, string];
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      const list = await this.get<{ resources?: { name: string }[] }>(path).then(
        (l) => l.resources ?? [],
        () => [],
      );
      if (list.some((r) => names.has(r.name))) {
        this.misses.delete(key);
        found.push(path.slice(1));
      }
    }
    return found;
  }

  /** The schema of `gvk`, or undefined when the API server publishes none. */
  async schema(gvk: GroupVersionKind): Promise<KindSchema | undefined> {
    let paths = await this.openApiPaths();
    const path = gvk.group ? `apis/${gvk.group}/${gvk.version}` : `api/${gvk.version}`;
    // A group version discovery serves but the kept `/openapi/v3` lacks (a CRD published since):
    // asked again at once, as the API server's RESTMapper asks discovery again on a miss, at most
    // once a second, so a kind with no schema at all does not make every check fetch the list.
    if (!paths[path] && Date.now() - this.pathsRefreshedOnMiss > MISS_REFRESH_MS) {
      this.pathsRefreshedOnMiss = Date.now();
      this.paths = undefined;
      paths = await this.openApiPaths();
    }
    const entry = paths[path];
    this.read.set(path, entry?.serverRelativeURL);
    if (!entry) return undefined;
    const components = await this.document(path, entry.serverRelativeURL);
    for (const [name, schema] of Object.entries(components)) {
      const gvks = schema['x-kubernetes-group-version-kind'];
      if (Array.isArray(gvks) && gvks.some((g: GroupVersionKind) => (g.group ?? '') === gvk.group && g.version === gvk.version && g.kind === gvk.kind)) {
        return { ref: name, components, source: entry.serverRelativeURL };
      }
    }
    return undefined;
  }

  /** Moves each time watchChanges sees a document change: a type check made before may be stale. */
  epoch(): number {
    return this.changes;
  }

  /**
   * Calls `onChange` with the group versions (`apis/<group>/<version>`, `api/v1`) whose documents
   * changed since a type check read them (a CRD created, edited or deleted), or whose missed
   * resource discovery now serves, polling `/openapi/v3` every `periodMs`: its
   * hashed URLs change with the content, so the operator needs no watch on CRDs (nor the right to one).
   */
  watchChanges(onChange: (groupVersions: string[]) => void, periodMs: number): { stop(): void } {
    let stopped = false;
    const poll = async () => {
      try {
        const paths = await this.get<{ paths?: Record<string, { serverRelativeURL: string }> }>('/openapi/v3').then((d) => d.paths ?? {});
        const changed = new Set<string>();
        for (const [gv, url] of this.read) {
          if (paths[gv]?.serverRelativeURL === url) continue;
          changed.add(gv);
          this.read.set(gv, paths[gv]?.serverRelativeURL);
        }
        for (const gv of await this.foundSinceMissed()) changed.add(gv);
        if (changed.size > 0) {
          this.changes++;
          this.resources.clear();
          this.paths = { at: Date.now(), value: Promise.resolve(paths) };
          onChange([...changed]);
        }
      } catch {
        // The API server unreachable for a moment: the next poll asks again.
      }
      if (!stopped) timer = setTimeout(() => void poll(), periodMs).unref();
    };
    let timer = setTimeout(() => void poll(), 0).unref();
    return {
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  private openApiPaths(): Promise<Record<string, { serverRelativeURL: string }>> {
    if (!this.paths || Date.now() - this.paths.at > FRESH_MS) {
      const value = this.get<{ paths?: Record<string, { serverRelativeURL: string }> }>('/openapi/v3').then((d) => d.paths ?? {});
      // A failure is not kept: the next check asks again.
      value.catch(() => {
        this.paths = undefined;
      });
      this.paths = { at: Date.now(), value };
    }
    return this.paths.value;
  }

  /** The document of group version `path` at its hashed `url`: one kept per group version, the newest asked for. */
  private document(path: string, url: string): Promise<Readonly<Record<string, OpenApiSchema>>> {
    const kept = this.documents.get(path);
    if (kept?.url === url) return kept.doc;
    const doc = this.get<{ components?: { schemas?: Record<string, OpenApiSchema> } }>(url).then((d) => Object.freeze(d.components?.schemas ?? {}));
    doc.catch(() => {
      if (this.documents.get(path)?.doc === doc) this.documents.delete(path);
    });
    this.documents.set(path, { url, doc });
    return doc;
  }

  private get<T>(path: string): Promise<T> {
    return getJson<T>(this.config, path);
  }
}
