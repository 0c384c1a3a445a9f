/**
 * Writes schemas/kubernetes-<minor>.json: the built-in kinds' OpenAPI v3 schemas as a real
 * kube-apiserver of that minor publishes them, kept to what `portcullis validate --strict` needs to
 * type-check CEL offline (src/apiserver/bundled-schemas.ts reads them). Owns the generation only;
 * must not touch the type checker or the CLI.
 *
 * Run: `node tools/builtin-schemas.ts [MINOR...]` (default: every minor with a control plane in
 * test/controlplane: the newest, go.mod's, and versions/*). It starts that control plane
 * (src/local, binaries built by test/controlplane/build.sh, no internet once built), reads
 * discovery (each group version's resources: which kind a rule's resource names) and
 * `/openapi/v3` (each group version's document), and keeps of each schema only the keys
 * src/policy/typecheck/schema.ts reads, and only the schemas a kind's root reaches: schema names
 * are fully qualified (io.k8s.api.core.v1.Pod), so the documents share one `components` map.
 * Re-running it with the same binaries writes the same bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { olderKubeVersions } from '../src/local/binaries.ts';
import { getJson } from '../src/apiserver/get-json.ts';
import { appFile } from '../src/app-files.ts';
import type { BundledFile } from '../src/apiserver/bundled-schemas.ts';

type Schema = Record<string, unknown>;

/** The keys the type checker reads (src/policy/typecheck/schema.ts OpenApiSchema). */
const KEPT = ['type', 'format', 'properties', 'additionalProperties', 'items', '$ref', 'allOf', 'x-kubernetes-int-or-string', 'x-kubernetes-embedded-resource', 'x-kubernetes-preserve-unknown-fields'];
const REF_PREFIX = '#/components/schemas/';

function prune(schema: Schema, refs: Set<string>): Schema {
  const out: Schema = {};
  for (const key of KEPT) {
    const value = schema[key];
    if (value === undefined) continue;
    if (key === '$ref' && typeof value === 'string') refs.add(value.slice(REF_PREFIX.length));
    if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([name, s]) => [name, prune(s, refs)]));
    else if (key === 'allOf') out[key] = (value as Schema[]).map((s) => prune(s, refs));
    else if ((key === 'items' || key === 'additionalProperties') && typeof value === 'object') out[key] = prune(value as Schema, refs);
    else out[key] = value;
  }
  return out;
}

async function read(minor: string | undefined): Promise<BundledFile> {
  const controlPlane = await startControlPlane({ kubeVersion: minor });
  try {
    const config = new k8s.KubeConfig();
    config.loadFromFile(controlPlane.kubeconfigPath);
    const { gitVersion } = await getJson<{ gitVersion: string }>(config, '/version');
    const { paths } = await getJson<{ paths: Record<string, { serverRelativeURL: string }> }>(config, '/openapi/v3');
    const kinds: BundledFile['kinds'] = {};
    const all: Record<string, Schema> = {};
    const roots = new Set<string>();
    for (const key of Object.keys(paths).sort()) {
      const parts = key.split('/');
      const gv = parts[0] === 'api' && parts.length === 2 ? ['', parts[1]!] : parts[0] === 'apis' && parts.length === 3 ? [parts[1]!, parts[2]!] : undefined;
      if (!gv) continue;
      const [group, version] = gv as [string, string];
      const doc = await getJson<{ components?: { schemas?: Record<string, Schema> } }>(config, paths[key]!.serverRelativeURL);
      const schemas = doc.components?.schemas ?? {};
      Object.assign(all, schemas);
      const { resources } = await getJson<{ resources: { name: string; kind: string }[] }>(config, `/${key}`);
      const rows: [string, string, string][] = [];
      for (const r of resources) {
        if (r.name.includes('/')) continue;
        const name = Object.keys(schemas).find((n) =>
          ((schemas[n]!['x-kubernetes-group-version-kind'] as { group?: string; version: string; kind: string }[] | undefined) ?? []).some((g) => (g.group ?? '') === group && g.version === version && g.kind === r.kind),
        );
        if (!name) continue;
        rows.push([r.name, r.kind, name]);
        roots.add(name);
      }
      if (rows.length > 0) kinds[`${group}/${version}`] = rows.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    }
    const components: Record<string, Schema> = {};
    const queue = [...roots];
    while (queue.length > 0) {
      const name = queue.pop()!;
      if (components[name] || !all[name]) continue;
      const refs = new Set<string>();
      components[name] = prune(all[name]!, refs);
      queue.push(...refs);
    }
    const sorted = Object.fromEntries(
      Object.keys(components)
        .sort()
        .map((n) => [n, components[n]!]),
    );
    return { kubernetes: gitVersion, kinds, components: sorted };
  } finally {
    await controlPlane.stop();
  }
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const minors: (string | undefined)[] = asked.length > 0 ? asked : [...olderKubeVersions(), undefined];
  const older = olderKubeVersions();
  for (const minor of minors) {
    // An older minor has a control plane of its own; any other is asked of the newest, and checked.
    const file = await read(minor !== undefined && older.includes(minor) ? minor : undefined);
    const got = /^v(\d+\.\d+)/.exec(file.kubernetes)![1]!;
    if (minor !== undefined && got !== minor) throw new Error(`asked for ${minor}, the control plane is ${file.kubernetes}`);
    const out = appFile('schemas', `kubernetes-${got}.json`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    // One schema per line: small, and a new Kubernetes' diff reads kind by kind.
    const lines = Object.entries(file.components).map(([name, schema]) => `${JSON.stringify(name)}:${JSON.stringify(schema)}`);
    const text = `{"kubernetes":${JSON.stringify(file.kubernetes)},\n"kinds":${JSON.stringify(file.kinds)},\n"components":{\n${lines.join(',\n')}\n}}\n`;
    fs.writeFileSync(out, text);
    console.log(`${path.relative(process.cwd(), out)}: ${file.kubernetes}, ${Object.values(file.kinds).flat().length} kinds, ${lines.length} schemas, ${text.length} bytes`);
  }
}

await main();
