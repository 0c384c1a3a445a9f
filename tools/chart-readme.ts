/**
 * tools/chart-readme: charts/portcullis/README.md, the chart's page as Artifact Hub and `helm show
 * readme` show it: what it installs, how to install, verify and uninstall it, and every value with
 * its default and the comment above it in values.yaml (the one source: a value documented nowhere
 * else). tools/manifests.ts writes it with `npm run manifests`; test/e2e/manifests-drift.test.ts
 * fails when values.yaml changed and the page was not rendered. Reads text; runs nothing.
 */
import * as yaml from 'js-yaml';

export type ChartReadmeOptions = { file: string; regenerate: string };

/** One row of the values table: a dotted key, its default as YAML writes it inline, and its comment. */
export interface ValueRow {
  key: string;
  default?: string;
  description: string;
}

/**
 * The rows of values.yaml, in its order: each leaf (a value written on its key's line, a list, an
 * empty map) with its default, and each map key that carries a comment (a section), without one.
 * A key's description is the block of `#` lines right above it (a blank line ends a block).
 */
export function valueRows(valuesText: string): ValueRow[] {
  const values = yaml.load(valuesText) as Record<string, unknown>;
  const rows: ValueRow[] = [];
  const path: { indent: number; key: string }[] = [];
  let comment: string[] = [];
  // Below a leaf's line, its value's own lines (a list's items): not keys of their own.
  let leafIndent: number | undefined;
  for (const line of valuesText.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') {
      comment = [];
      continue;
    }
    const indent = line.length - line.trimStart().length;
    if (leafIndent !== undefined && indent > leafIndent) continue;
    leafIndent = undefined;
    if (trimmed.startsWith('#')) {
      comment.push(trimmed.replace(/^#\s?/, ''));
      continue;
    }
    const key = /^([A-Za-z0-9_.-]+):(\s|$)/.exec(trimmed)?.[1];
    // A list item or a continued value: not a key of its own.
    if (key === undefined || trimmed.startsWith('- ')) {
      comment = [];
      continue;
    }
    while (path.length > 0 && path[path.length - 1]!.indent >= indent) path.pop();
    path.push({ indent, key });
    const dotted = path.map((p) => p.key);
    const value = dotted.reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], values);
    const writtenInline =
      trimmed
        .slice(key.length + 1)
        .replace(/\s#.*$/, '')
        .trim() !== '';
    const section = !writtenInline && value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0;
    if (!section) {
      rows.push({ key: dotted.join('.'), default: inline(value), description: comment.join(' ') });
      leafIndent = indent;
    } else if (comment.length > 0) rows.push({ key: dotted.join('.'), description: comment.join(' ') });
    comment = [];
  }
  return rows;
}

/** A default as one line of YAML's flow style (`""`, `[]`, `{ cpu: 100m }`). */
function inline(value: unknown): string {
  if (value === '') return '""';
  return yaml.dump(value, { flowLevel: 0, lineWidth: -1 }).trim();
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function renderChartReadme(valuesText: string, chartText: string, options: ChartReadmeOptions): string {
  const chart = yaml.load(chartText) as { name: string; version: string; appVersion: string; kubeVersion: string; description: string };
  const rows = valueRows(valuesText);
  const table = rows.map((row) => `| \`${row.key}\` | ${row.default === undefined ? '' : `\`${cell(row.default)}\``} | ${cell(row.description)} |`);
  return `<!-- Rendered from values.yaml and Chart.yaml by \`${options.regenerate}\` (tools/chart-readme.ts). Do not edit: edit values.yaml's comments. -->
# ${chart.name}

${chart.description}

Chart version ${chart.version}, operator ${chart.appVersion}; Kubernetes \`${chart.kubeVersion}\`. With
the defaults, and the release in namespace \`portcullis-system\`, it installs exactly what
\`kubectl apply -f deploy/\` installs: the CRDs, the operator (two replicas, a PodDisruptionBudget),
its RBAC, the NetworkPolicy, and the guards (admission policies that keep the operator's token to
its own objects and check what suite and policy authors may read and change).

## Install

From the chart's package (a release's \`.tgz\`, or \`helm package charts/portcullis\` in the
repository), with the operator's image your nodes can pull:

\`\`\`sh
helm install portcullis ./${chart.name}-${chart.version}.tgz \\
  --namespace portcullis-system --create-namespace --wait
\`\`\`

Set \`image.repository\` and \`image.tag\` (or \`image.digest\`) when the image is in a registry of
your own, such as one built from the repository's Dockerfile and loaded into kind
(\`kind load docker-image\`) or minikube (\`minikube image load\`).

## Verify

\`\`\`sh
kubectl -n portcullis-system get deploy,pods
kubectl get crd admissionsuites.admission.portcullis.dev admissionpolicies.admission.portcullis.dev
\`\`\`

Apply a suite (the repository's \`config/samples/\` hold some) and look at \`kubectl get asuite\`: \`READY\`
is \`True\` once its webhooks are registered and answering. For some seconds after the install the
API server may answer \`There can be a delay between when CustomResourceDefinitions are created
and when they are available\`: apply again.

## Uninstall

Delete your suites first (each one's webhook configuration, Service and Secret go with it), then:

\`\`\`sh
helm uninstall portcullis --namespace portcullis-system
kubectl delete namespace portcullis-system
\`\`\`

With \`crds.install\` (the default), uninstalling deletes the CRDs and so every suite and policy.

## Values

| Key | Default | Description |
| --- | --- | --- |
${table.join('\n')}
`;
}
