/**
 * The admission thread's copy of what the main thread's OpenApiSchemas read (told as SchemaChanges), to
 * type-check suites and policies being applied and merge ApplyConfiguration mutations (`held`) as the
 * main thread would: a read is used only while the main thread would reuse it (FRESH_MS); what it cannot
 * answer (nothing read, stale, not listed, not sent) is HeldElsewhere, answered by the main thread. A read
 * half stale is renewed once (`renew`), so a steady stream of applies is answered here. Owns the copy only.
 */
import { HeldElsewhere } from '../../handlers/handler.ts';
import {
  documentPath,
  FRESH_MS,
  groupVersionKey,
  kindSchemaIn,
  kindsIn,
  PATHS_KEY,
  type GroupVersionKind,
  type KindSchema,
  type OpenApiPaths,
  type OpenApiSchema,
  type ResourceList,
  type SchemaChange,
} from '../../apiserver/openapi-state.ts';

interface Read<T> {
  at: number;
  value: T;
}

export class SchemaCopy {
  private paths: Read<OpenApiPaths> | undefined;
  private readonly resources = new Map<string, Read<ResourceList>>();
  /** By group version, the newest document the main thread read, at its URL. */
  private readonly documents = new Map<string, { url: string; components: Readonly<Record<string, OpenApiSchema>> }>();
  /** The read (its `at`) each key was last asked to be renewed for. */
  private readonly renewing = new Map<string, number>();
  private readonly renew: (key: string) => void;

  /** `renew(key)`: asks the main thread to read `key` (PATHS_KEY, or a group version's key) again (OpenApiSchemas.refresh). */
  constructor(renew: (key: string) => void) {
    this.renew = renew;
  }

  /** A read the main thread made; one older than what is held does not replace it. */
  apply(change: SchemaChange): void {
    switch (change.type) {
      case 'paths':
        if (!this.paths || this.paths.at <= change.at) this.paths = { at: change.at, value: change.paths };
        return;
      case 'resources': {
        const held = this.resources.get(change.key);
        if (!held || held.at <= change.at) this.resources.set(change.key, { at: change.at, value: change.resources });
        return;
      }
      case 'document':
        this.documents.set(change.path, { url: change.url, components: change.components });
        return;
      case 'resources-dropped':
        this.resources.clear();
        return;
    }
  }

  /** As OpenApiSchemas.kindsFor; none found is the main thread's to answer (it notes the miss, so discovery is asked again). */
  kindsFor(group: string, version: string, resource: string): Promise<GroupVersionKind[]> {
    const key = groupVersionKey(group, version);
    const resources = this.fresh(key, this.resources.get(key));
    const kinds = resources ? kindsIn(resources, group, version, resource) : [];
    if (kinds.length === 0) return Promise.reject(new HeldElsewhere(`the ${key} resource list`));
    return Promise.resolve(kinds);
  }

  /** As OpenApiSchemas.schema, from a document of the URL the (fresh) paths name. */
  schema(gvk: GroupVersionKind): Promise<KindSchema | undefined> {
    try {
      return Promise.resolve(this.held(gvk));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /**
   * The same, at once: ApplyConfiguration mutations merge by it on the request path, where an
   * answer given synchronously is also one measured (registry/compile.ts). Throws HeldElsewhere.
   */
  held(gvk: GroupVersionKind): KindSchema | undefined {
    const path = documentPath(gvk);
    const url = this.fresh(PATHS_KEY, this.paths)?.[path]?.serverRelativeURL;
    const document = this.documents.get(path);
    if (url === undefined || document?.url !== url) throw new HeldElsewhere(`the ${path} schemas`);
    return kindSchemaIn(document.components, gvk, url);
  }

  /** What `read` holds while the main thread would still reuse it; past half that, renewed (once). */
  private fresh<T>(key: string, read: Read<T> | undefined): T | undefined {
    if (!read) return undefined;
    const age = Date.now() - read.at;
    if (age > FRESH_MS) return undefined;
    if (age > FRESH_MS / 2 && this.renewing.get(key) !== read.at) {
      this.renewing.set(key, read.at);
      this.renew(key);
    }
    return read.value;
  }
}
