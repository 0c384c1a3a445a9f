/**
 * The built-in kinds' OpenAPI v3 schemas of one supported Kubernetes minor, as bundled in
 * schemas/kubernetes-<minor>.json (written by tools/builtin-schemas.ts from a real kube-apiserver
 * of that minor: its discovery and `/openapi/v3`, kept to what type checking reads), served the way
 * OpenApiSchemas serves a live cluster's, so `portcullis validate --strict` type-checks with no
 * cluster. Built-in kinds only: a CRD's kind has no schema here. Owns reading the bundle; must not
 * read a cluster (openapi.ts does) or know about CEL (src/policy/typecheck does).
 */
import fs from 'node:fs';
import { appFile } from '../app-files.ts';
import type { GroupVersionKind, KindSchema, OpenApiSchema } from './openapi-state.ts';

const DIR = appFile('schemas');
const FILE = /^kubernetes-(\d+\.\d+)\.json$/;

/** What a bundle holds (tools/builtin-schemas.ts writes it). */
export interface BundledFile {
  kubernetes: string;
  /** `group/version` -> [resource, kind, schema name]. */
  kinds: Record<string, [string, string, string][]>;
  components: Record<string, OpenApiSchema>;
}

/** The Kubernetes minors with a bundle, oldest first ('1.35', ...). */
export function bundledKubeVersions(): string[] {
  const names = fs.existsSync(DIR) ? fs.readdirSync(DIR) : [];
  const minors = names.flatMap((name) => FILE.exec(name)?.[1] ?? []);
  return minors.sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
}

export class BundledSchemas {
  /** The API server's version it was read from (v1.37.2). */
  readonly kubernetes: string;
  private readonly file: BundledFile;
  private readonly source: string;

  /** `minor` must be one of bundledKubeVersions(). */
  constructor(minor: string) {
    this.file = JSON.parse(fs.readFileSync(appFile('schemas', `kubernetes-${minor}.json`), 'utf8')) as BundledFile;
    this.kubernetes = this.file.kubernetes;
    this.source = `bundled:${this.file.kubernetes}`;
  }

  /** As OpenApiSchemas.kindsFor: the kinds served as `resource` in group/version (none when the bundle has none). */
  kindsFor(group: string, version: string, resource: string): Promise<GroupVersionKind[]> {
    const rows = this.file.kinds[`${group}/${version}`] ?? [];
    return Promise.resolve(rows.filter(([name]) => name === resource).map(([, kind]) => ({ group, version, kind })));
  }

  /** As OpenApiSchemas.schema: the kind's schema name in the shared components. */
  schema(gvk: GroupVersionKind): Promise<KindSchema | undefined> {
    const row = (this.file.kinds[`${gvk.group}/${gvk.version}`] ?? []).find(([, kind]) => kind === gvk.kind);
    return Promise.resolve(row ? { ref: row[2], components: this.file.components, source: this.source } : undefined);
  }
}
