/**
 * The OpenAPI v3 schemas the API server publishes (`/openapi/v3`, a document per group version), read as
 * VAP's type checker reads them (pkg/cel/openapi/resolver/discovery.go), and the kinds a rule names (API
 * discovery). A document is kept with its hashed URL and fetched again only when the hash changes (a
 * CRD's change changes it); only matched kinds' group versions are read, at compile and apply time only.
 * The admission thread answers from a copy (subscribe(), schema-copy.ts; refresh() before it goes stale).
 * Knows nothing about admission: CEL types are src/policy/typecheck's, the state as data openapi-state.ts'.
 */
import { getJson, NotFound } from './get-json.ts';
import type * as k8s from '@kubernetes/client-node';
import { documentPath, FRESH_MS, groupVersionKey, kindSchemaIn, kindsIn, PATHS_KEY, type GroupVersionKind, type KindSchema, type OpenApiPaths, type OpenApiSchema, type ResourceList, type SchemaChange } from './openapi-state.ts';

/** How often a schema miss may make `/openapi/v3` be asked again before its FRESH_MS are up. */
const MISS_REFRESH_MS = 1_000;

interface Fetched<T> {
  at: number;
  value: Promise<T>;
  /** The value once read (what a copy is sent). */
  read?: T;
}

/** A group version's document at its hashed URL, and its components once read. */
interface KeptDocument {
  url: string;
  doc: Promise<Readonly<Record<string, OpenApiSchema>>>;
  read?: Readonly<Record<string, OpenApiSchema>>;
}

export class OpenApiSchemas {
  private readonly config: k8s.KubeConfig;
  private paths?: Fetched<OpenApiPaths>;
  private readonly documents = new Map<string, KeptDocument>();
  private readonly resources = new Map<string, Fetched<ResourceList>>();
  /** The copies told every read (subscribe()). */
  private readonly listeners: ((change: SchemaChange) => void)[] = [];
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
    const key = groupVersionKey(group, version);
    let entry = this.resources.get(key);
    if (!entry || Date.now() - entry.at > FRESH_MS) entry = this.readResources(group, version);
    const kinds = kindsIn(await entry.value, group, version, resource);
    if (kinds.length === 0) this.misses.set(key, (this.misses.get(key) ?? new Set()).add(resource));
    return kinds;
  }

  private readResources(group: string, version: string): Fetched<ResourceList> {
    const key = groupVersionKey(group, version);
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    // A group version that is not served has no kinds; any other failure is not an answer (not kept).
    const value = this.get<{ resources?: ResourceList }>(path).then(
      (list) => list.resources ?? [],
      (err: unknown) => (err instanceof NotFound ? [] : Promise.reject(err as Error)),
    );
    const entry: Fetched<ResourceList> = { at: Date.now(), value };
    value.then(
      (resources) => {
        if (this.resources.get(key) !== entry) return;
        entry.read = resources;
        this.tell({ type: 'resources', key, at: entry.at, resources });
      },
      () => {
        if (this.resources.get(key) === entry) this.resources.delete(key);
      },
    );
    this.resources.set(key, entry);
    return entry;
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
    const path = documentPath(gvk);
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
    return kindSchemaIn(components, gvk, entry.serverRelativeURL);
  }

  /**
   * `listener` is told everything read so far, then every read as it succeeds, and when the
   * resource lists are dropped (see SchemaChange); the returned function stops it.
   */
  subscribe(listener: (change: SchemaChange) => void): () => void {
    if (this.paths?.read) listener({ type: 'paths', at: this.paths.at, paths: this.paths.read });
    for (const [key, entry] of this.resources) if (entry.read) listener({ type: 'resources', key, at: entry.at, resources: entry.read });
    for (const [path, { url, read }] of this.documents) if (read) listener({ type: 'document', path, url, components: read });
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at !== -1) this.listeners.splice(at, 1);
    };
  }

  /**
   * Reads `key` again now (PATHS_KEY, or a group version's resources by groupVersionKey) when what
   * is kept of it was read more than half FRESH_MS ago: a copy answering from it asks, so that it
   * is told a fresh read before its own goes stale, and answers a steady stream of applies without
   * ever waiting for a read. What is being read, or is not kept, is left as it is.
   */
  refresh(key: string): void {
    const stale = (entry: Fetched<unknown> | undefined): entry is Fetched<unknown> => entry?.read !== undefined && Date.now() - entry.at > FRESH_MS / 2;
    if (key === PATHS_KEY) {
      if (!stale(this.paths)) return;
      this.paths = undefined;
      this.openApiPaths().catch(() => undefined);
      return;
    }
    if (!stale(this.resources.get(key))) return;
    const slash = key.indexOf('/');
    this.readResources(key.slice(0, slash), key.slice(slash + 1)).value.catch(() => undefined);
  }

  private tell(change: SchemaChange): void {
    for (const listener of this.listeners) listener(change);
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
          this.tell({ type: 'resources-dropped' });
          this.paths = { at: Date.now(), value: Promise.resolve(paths), read: paths };
          this.tell({ type: 'paths', at: this.paths.at, paths });
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

  private openApiPaths(): Promise<OpenApiPaths> {
    if (!this.paths || Date.now() - this.paths.at > FRESH_MS) {
      const value = this.get<{ paths?: OpenApiPaths }>('/openapi/v3').then((d) => d.paths ?? {});
      const entry: Fetched<OpenApiPaths> = { at: Date.now(), value };
      // A failure is not kept: the next check asks again.
      value.then(
        (paths) => {
          if (this.paths !== entry) return;
          entry.read = paths;
          this.tell({ type: 'paths', at: entry.at, paths });
        },
        () => {
          if (this.paths === entry) this.paths = undefined;
        },
      );
      this.paths = entry;
    }
    return this.paths.value;
  }

  /** The document of group version `path` at its hashed `url`: one kept per group version, the newest asked for. */
  private document(path: string, url: string): Promise<Readonly<Record<string, OpenApiSchema>>> {
    const kept = this.documents.get(path);
    if (kept?.url === url) return kept.doc;
    const doc = this.get<{ components?: { schemas?: Record<string, OpenApiSchema> } }>(url).then((d) => Object.freeze(d.components?.schemas ?? {}));
    const entry: KeptDocument = { url, doc };
    doc.then(
      (components) => {
        if (this.documents.get(path) !== entry) return;
        entry.read = components;
        this.tell({ type: 'document', path, url, components });
      },
      () => {
        if (this.documents.get(path) === entry) this.documents.delete(path);
      },
    );
    this.documents.set(path, entry);
    return doc;
  }

  private get<T>(path: string): Promise<T> {
    return getJson<T>(this.config, path);
  }
}
