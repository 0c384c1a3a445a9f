/**
 * tools/manifests: the install manifests rendered from their one source. deploy/ is
 * `kubectl kustomize config/base` (the kubectl built with the control plane), split back into
 * its numbered files so that `kubectl apply -f deploy/` keeps its order; the Helm chart's
 * files/crd*.yaml are crds/'s CRDs byte for byte (the OpenReports and wgpolicyk8s.io report CRDs
 * too: those are upstream's files as published, with a comment on top naming the release);
 * docs/reference/ is the API reference of our two CRDs (tools/crd-reference.ts); docs/cli.md the
 * command-line reference, from the two --help texts (tools/cli-reference.ts); the chart's README
 * with its values table (tools/chart-readme.ts). `npm run
 * manifests` writes them; test/e2e/manifests-drift.test.ts fails when a rendered copy drifts.
 * Never edits a source.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ensureBinaries } from '../src/local/binaries.ts';
import { helpOf, renderCliReference } from './cli-reference.ts';
import { renderChartReadme } from './chart-readme.ts';
import { renderCrdReference, renderReferenceIndex, type ReferenceOptions } from './crd-reference.ts';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const REGENERATE = 'npm run manifests';
export const CRD_SOURCE = 'crds/admission.portcullis.dev_admissionsuites.yaml';
export const POLICY_CRD_SOURCE = 'crds/admission.portcullis.dev_admissionpolicies.yaml';
export const EXCEPTION_CRD_SOURCE = 'crds/admission.portcullis.dev_admissionexceptions.yaml';
export const CLUSTER_EXCEPTION_CRD_SOURCE = 'crds/admission.portcullis.dev_clusteradmissionexceptions.yaml';
/** The OpenReports CRDs the background audit writes to, upstream's as published (in deploy/ and, by default, the chart). */
export const REPORT_CRD_SOURCES = ['crds/openreports.io_reports.yaml', 'crds/openreports.io_clusterreports.yaml'];
/** The older wgpolicyk8s.io PolicyReport CRDs: in the chart only, with audit.reports.policyReports (not in deploy/). */
export const POLICY_REPORT_CRD_SOURCES = ['crds/wgpolicyk8s.io_policyreports.yaml', 'crds/wgpolicyk8s.io_clusterpolicyreports.yaml'];
const BASE = 'config/base';

/** Each deploy/ file and the sources its objects come from, in the order `kubectl apply -f deploy/` applies them. */
const DEPLOY_FILES: [file: string, source: string | string[]][] = [
  ['deploy/00-namespace.yaml', `${BASE}/namespace.yaml`],
  ['deploy/01-crd.yaml', [CRD_SOURCE, POLICY_CRD_SOURCE, EXCEPTION_CRD_SOURCE, CLUSTER_EXCEPTION_CRD_SOURCE]],
  ['deploy/02-rbac.yaml', `${BASE}/rbac.yaml`],
  ['deploy/03-deployment.yaml', `${BASE}/deployment.yaml`],
  ['deploy/04-token-guard.yaml', `${BASE}/token-guard.yaml`],
  ['deploy/05-network-policy.yaml', `${BASE}/network-policy.yaml`],
  ['deploy/06-suite-params-guard.yaml', `${BASE}/suite-params-guard.yaml`],
  ['deploy/07-admission-policy-guard.yaml', `${BASE}/admission-policy-guard.yaml`],
  // A file of their own, so that a cluster whose OpenReports CRDs another tool installs can leave it out.
  ['deploy/08-openreports-crds.yaml', REPORT_CRD_SOURCES],
];

/** Byte-for-byte copies: the chart reads the CRD with .Files.Get, from inside the chart. */
const COPIES: [file: string, source: string][] = [
  ['charts/portcullis/files/crd.yaml', CRD_SOURCE],
  ['charts/portcullis/files/crd-admissionpolicies.yaml', POLICY_CRD_SOURCE],
  ['charts/portcullis/files/crd-admissionexceptions.yaml', EXCEPTION_CRD_SOURCE],
  ['charts/portcullis/files/crd-clusteradmissionexceptions.yaml', CLUSTER_EXCEPTION_CRD_SOURCE],
  ['charts/portcullis/files/crd-openreports-reports.yaml', REPORT_CRD_SOURCES[0]!],
  ['charts/portcullis/files/crd-openreports-clusterreports.yaml', REPORT_CRD_SOURCES[1]!],
  ['charts/portcullis/files/crd-wgpolicyk8s-policyreports.yaml', POLICY_REPORT_CRD_SOURCES[0]!],
  ['charts/portcullis/files/crd-wgpolicyk8s-clusterpolicyreports.yaml', POLICY_REPORT_CRD_SOURCES[1]!],
  // Opt-in, outside deploy/'s numbered files (`kubectl apply -f deploy/` does not read sub-folders).
  ['deploy/optional/native-enforcement.yaml', 'config/optional/native-enforcement.yaml'],
  ['deploy/optional/handler-module-lookups.yaml', 'config/optional/handler-module-lookups.yaml'],
];

/** The API reference: a page per CRD of ours, and its index. The report CRDs are upstream's, documented there. */
export const REFERENCE_DIR = 'docs/reference';
/** The command-line reference: `portcullis --help` and the operator's `--help`, as a page. */
export const CLI_REFERENCE = 'docs/cli.md';
/** The chart's page, with its values table from values.yaml's comments. */
export const CHART_README = 'charts/portcullis/README.md';
const REFERENCE_PAGES: [file: string, source: string][] = [
  [`${REFERENCE_DIR}/admissionsuite.md`, CRD_SOURCE],
  [`${REFERENCE_DIR}/admissionpolicy.md`, POLICY_CRD_SOURCE],
  [`${REFERENCE_DIR}/admissionexception.md`, EXCEPTION_CRD_SOURCE],
  [`${REFERENCE_DIR}/clusteradmissionexception.md`, CLUSTER_EXCEPTION_CRD_SOURCE],
];

const objectKey = (o: k8s.KubernetesObject) => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/** Every rendered file (path relative to the repository) and the text it must hold. */
export async function renderManifests(): Promise<Map<string, string>> {
  const rendered = new Map<string, string>();
  const origin = new Map<string, { file: string; object: k8s.KubernetesObject }>();
  for (const [file, sources] of DEPLOY_FILES) {
    for (const source of [sources].flat()) {
      for (const object of k8s.loadAllYaml(fs.readFileSync(path.join(ROOT, source), 'utf8')) as k8s.KubernetesObject[]) {
        if (object) origin.set(objectKey(object), { file, object });
      }
    }
  }
  const documents = new Map<string, string[]>(DEPLOY_FILES.map(([file]) => [file, []]));
  for (const document of (await kustomize(BASE)).split(/^---\n/m)) {
    if (!document.trim()) continue;
    const object = k8s.loadYaml<k8s.KubernetesObject>(document);
    const key = objectKey(object);
    const source = origin.get(key);
    if (!source) throw new Error(`${key}, rendered from ${BASE}, is in none of the sources tools/manifests.ts maps to deploy/: add its file there`);
    // kustomize re-serializes: what it writes must read back as the source reads.
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(object)), JSON.parse(JSON.stringify(source.object)))) {
      throw new Error(`kubectl kustomize changed a value of ${key} (its source's YAML is read differently by Go's parser): write it so that both agree, e.g. a literal block (|-) for an indented expression`);
    }
    documents.get(source.file)!.push(document);
  }
  for (const [file, sources] of DEPLOY_FILES) {
    const source = [sources].flat().join(' and ');
    const header = `# Rendered from ${source} by \`${REGENERATE}\` (kubectl kustomize ${BASE}).\n# Do not edit: edit that file, whose comments say why each part is there, and run \`${REGENERATE}\`.\n`;
    rendered.set(file, header + documents.get(file)!.join('---\n'));
  }
  for (const [file, source] of COPIES) rendered.set(file, fs.readFileSync(path.join(ROOT, source), 'utf8'));
  const pages = REFERENCE_PAGES.map(([file, source]) => ({
    yamlText: fs.readFileSync(path.join(ROOT, source), 'utf8'),
    options: { source, file, regenerate: REGENERATE } satisfies ReferenceOptions,
  }));
  for (const { yamlText, options } of pages) rendered.set(options.file, renderCrdReference(yamlText, options));
  const upstream = [...REPORT_CRD_SOURCES, ...POLICY_REPORT_CRD_SOURCES];
  rendered.set(`${REFERENCE_DIR}/README.md`, renderReferenceIndex(pages, { file: `${REFERENCE_DIR}/README.md`, regenerate: REGENERATE, upstream }));
  const [cliHelp, operatorHelp] = await Promise.all([helpOf(ROOT, 'src/cli/main.ts'), helpOf(ROOT, 'src/main.ts')]);
  rendered.set(CLI_REFERENCE, renderCliReference(cliHelp, operatorHelp, { file: CLI_REFERENCE, regenerate: REGENERATE }));
  const chartFile = (name: string) => fs.readFileSync(path.join(ROOT, 'charts/portcullis', name), 'utf8');
  rendered.set(CHART_README, renderChartReadme(chartFile('values.yaml'), chartFile('Chart.yaml'), { file: CHART_README, regenerate: REGENERATE }));
  return rendered;
}

async function kustomize(dir: string): Promise<string> {
  const { kubectl } = await ensureBinaries();
  return new Promise((resolve, reject) => {
    execFile(kubectl, ['kustomize', path.join(ROOT, dir)], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`kubectl kustomize ${dir} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

if (import.meta.main) {
  for (const [file, text] of await renderManifests()) {
    const target = path.join(ROOT, file);
    const before = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : undefined;
    if (before === text) continue;
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, text);
    console.log(`wrote ${file}`);
  }
}
