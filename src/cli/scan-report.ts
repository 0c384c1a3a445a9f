/**
 * How `portcullis scan` prints its results (scan.ts): a table for a person, JSON for a script,
 * JUnit XML for a CI's test report (one testsuite per suite, a testcase per object and webhook
 * that judged it, a denial its failure), SARIF 2.1.0 for code scanning (a result per denial and
 * per warning, at the object's file and line). Owns the formats only, not what is judged. Pure.
 */
import path from 'node:path';
import { VERSION } from '../version.ts';
import { junitXml, type JunitSuite } from './junit.ts';
import { POLICIES } from './evaluate.ts';
import { STDIN, type Judgement, type ScannedObject, type ScanResult } from './scan.ts';

export const SCAN_OUTPUTS = ['table', 'json', 'junit', 'sarif'] as const;
export type ScanOutput = (typeof SCAN_OUTPUTS)[number];

export function scanReport(result: ScanResult, output: ScanOutput, relativeTo = process.cwd()): string {
  const shown = { ...result, objects: result.objects.map((o) => ({ ...o, file: shownPath(o.file, relativeTo) })), suites: result.suites.map((s) => ({ ...s, file: shownPath(s.file, relativeTo) })) };
  switch (output) {
    case 'table':
      return table(shown);
    case 'json':
      return `${JSON.stringify({ ...shown, summary: summary(shown) }, null, 2)}\n`;
    case 'junit':
      return junit(shown);
    case 'sarif':
      return `${JSON.stringify(sarif(shown), null, 2)}\n`;
  }
}

/** A file as the user would name it: relative to where the command runs, standard input as STDIN. */
function shownPath(file: string, relativeTo: string): string {
  return file === STDIN || file === '' ? file : path.relative(relativeTo, path.resolve(file)) || file;
}

function summary(result: ScanResult) {
  const judged = result.objects.filter((o) => o.judgements.length);
  return { objects: result.objects.length, judged: judged.length, denied: result.objects.filter((o) => !o.allowed).length };
}

/** `Deployment shop/web`, as kubectl names an object with its namespace. */
export function objectLabel(o: Pick<ScannedObject, 'kind' | 'namespace' | 'name'>): string {
  return `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name || '(no name)'}`;
}

/** `suite/webhook`, or for the AdmissionPolicies' webhook the policies that judged. */
function webhookLabel(j: Judgement): string {
  if (j.suite !== POLICIES) return `${j.suite}/${j.webhook}`;
  return `AdmissionPolicies${j.policies?.length ? ` (${j.policies.join(', ')})` : ''}`;
}

function verdict(j: Judgement): string {
  if (!j.allowed) return 'DENIED';
  return j.patched ? 'PATCHED' : 'ADMITTED';
}

/** One row per object and webhook that judged it, its warnings and audit annotations under it; then the counts. */
function table(result: ScanResult): string {
  const header = ['RESULT', 'OBJECT', 'WHERE', 'WEBHOOK', 'MESSAGE'];
  const rows: { cells: string[]; notes: string[] }[] = [];
  for (const o of result.objects) {
    for (const j of o.judgements) {
      const notes = [...j.warnings.map((w) => `warning: ${w}`), ...Object.entries(j.auditAnnotations).map(([k, v]) => `audit annotation ${k}: ${v}`)];
      rows.push({ cells: [verdict(j), objectLabel(o) + (o.operation === 'UPDATE' ? ' (update)' : ''), `${o.file}:${o.line}`, webhookLabel(j), j.allowed ? '' : (j.message ?? '')], notes });
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r.cells[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = rows.length ? [line(header)] : [];
  for (const r of rows) out.push(line(r.cells), ...r.notes.map((n) => `  ${n}`));
  const { objects, judged, denied } = summary(result);
  if (out.length) out.push('');
  out.push(`${objects} object${objects === 1 ? '' : 's'} scanned with ${result.suites.length} suite${result.suites.length === 1 ? '' : 's'} and policies: ${judged} judged by a webhook, ${denied} denied`);
  return `${out.join('\n')}\n`;
}

/** One testsuite per suite (and one for the AdmissionPolicies), with every suite given, even one that judged nothing. */
function junit(result: ScanResult): string {
  const suites = new Map<string, JunitSuite>();
  for (const s of result.suites) {
    const name = s.kind === 'AdmissionPolicy' ? POLICIES : s.name;
    if (!suites.has(name)) suites.set(name, { name, ...(s.kind === 'AdmissionPolicy' ? {} : { file: s.file }), cases: [] });
  }
  for (const o of result.objects) {
    for (const j of o.judgements) {
      const suite = suites.get(j.suite) ?? { name: j.suite, cases: [] };
      suites.set(j.suite, suite);
      const output = [...(j.policies?.length ? [`policies: ${j.policies.join(', ')}`] : []), ...j.warnings.map((w) => `warning: ${w}`), ...Object.entries(j.auditAnnotations).map(([k, v]) => `audit annotation ${k}: ${v}`)].join('\n');
      suite.cases.push({
        // (no line in the name: a CI keeps a case's history by name, and lines move)
        name: objectLabel(o),
        classname: `${j.suite}.${j.webhook}`,
        file: o.file,
        line: o.line,
        ...(j.allowed ? {} : { failure: { message: j.message ?? '', type: 'Denied', text: `${o.operation} of ${objectLabel(o)} at ${o.file}:${o.line}: admission webhook "${j.fullName}" denied the request: ${j.message ?? ''}` } }),
        ...(output ? { output } : {}),
      });
    }
  }
  return junitXml('portcullis scan', [...suites.values()]);
}

/** The SARIF log: a rule per webhook that judged, a result per denial (error) and per warning (warning). */
function sarif(result: ScanResult) {
  const rules: { id: string; shortDescription: { text: string } }[] = [];
  // `suite/webhook` (the policies' webhook of each type, one id however many policies judged): the fullName alone is both types' of the policies.
  const ruleIndex = (j: Judgement) => {
    const id = `${j.suite}/${j.webhook}`;
    let index = rules.findIndex((r) => r.id === id);
    if (index < 0) index = rules.push({ id, shortDescription: { text: `${j.type} admission webhook ${j.fullName}` } }) - 1;
    return index;
  };
  const results = [];
  for (const o of result.objects) {
    const locations = [
      {
        physicalLocation: { artifactLocation: { uri: artifactUri(o.file) }, region: { startLine: o.line } },
        logicalLocations: [{ name: objectLabel(o), kind: 'object' }],
      },
    ];
    for (const j of o.judgements) {
      const index = ruleIndex(j);
      const base = { ruleId: rules[index]!.id, ruleIndex: index, locations, properties: { operation: o.operation, object: objectLabel(o), document: o.document } };
      if (!j.allowed) results.push({ ...base, level: 'error', message: { text: j.message || `denied by ${j.fullName}` } });
      for (const w of j.warnings) results.push({ ...base, level: 'warning', message: { text: w } });
    }
  }
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [{ tool: { driver: { name: 'portcullis', version: VERSION, rules } }, results }],
  };
}

/** A file as a SARIF artifact location: a relative path, slashes and all, as a URI reference. */
function artifactUri(file: string): string {
  return path.isAbsolute(file) ? new URL(`file://${file}`).href : file.split(path.sep).map(encodeURIComponent).join('/');
}
