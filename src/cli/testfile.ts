/**
 * `portcullis test`: test files (`*.portcullis-test.yaml`) naming suites and AdmissionPolicies, the
 * objects they may read, and cases (an object, an old object, operation, namespace, user, options) with the result expected
 * per webhook and for the request; each case is run by evaluate.ts and compared field by field.
 * Owns the file format, the comparison, the results table and the diff, and the results as JSON
 * and JUnit XML (junit.ts writes the XML); reads files only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { AdmissionPolicy, AdmissionSuite } from '../api/types.ts';
import { expiryOf } from '../api/exceptions.ts';
import { OfflineCluster, type Evaluation, type Scenario, type WebhookRun } from './evaluate.ts';
import { readDocuments, readObject, splitSuites } from './files.ts';
import { junitXml, type JunitSuite } from './junit.ts';

export const TEST_FILE_SUFFIX = 'portcullis-test.yaml';

/** What a webhook (or the whole request) is expected to answer; only the fields given are compared. */
export interface Expectation {
  called?: boolean;
  allowed?: boolean;
  message?: string;
  code?: number;
  warnings?: string[];
  patched?: boolean;
  patchedObject?: Record<string, unknown>;
  auditAnnotations?: Record<string, string>;
}

interface TestCase extends Omit<Scenario, 'object' | 'oldObject' | 'now'> {
  name: string;
  /** The instant the request is made (RFC 3339), where it is not the file's `now:`. */
  now?: string;
  object?: Record<string, unknown> | string;
  oldObject?: Record<string, unknown> | string;
  expect: Expectation & { webhooks?: Record<string, Expectation> };
}

interface TestFile {
  /** Files (relative to the test file) whose AdmissionSuites and AdmissionPolicies are tested and whose other objects they may read (CRDs among them name their kinds' resources). */
  suites: string[];
  /** More objects the suites may read: Namespaces, LimitRanges, params, CRDs. Files or inline. */
  objects?: (string | Record<string, unknown>)[];
  /** The operator's namespace (default portcullis-system). */
  operatorNamespace?: string;
  /** The namespace of the AdmissionPolicies that name none (default: the command's --namespace, else `default`). */
  namespace?: string;
  /** The instant the requests are made (RFC 3339), which AdmissionExceptions' `expires` is compared with; default: the wall clock. */
  now?: string;
  cases: TestCase[];
}

export interface Row {
  file: string;
  case: string;
  target: string;
  expected: string;
  got: string;
  pass: boolean;
  diff: string[];
}

/** The test files `target` names: itself, or every `*portcullis-test.yaml` under a directory. */
export function testFiles(target: string): string[] {
  if (!fs.statSync(target).isDirectory()) return [target];
  return fs
    .readdirSync(target, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(TEST_FILE_SUFFIX))
    .sort()
    .map((name) => path.join(target, name));
}

/** What the command line adds to every test file: objects (CRDs, params) and the policies' namespace. */
export interface TestOptions {
  objects?: Record<string, unknown>[];
  namespace?: string;
}

export async function runTestFile(file: string, options: TestOptions = {}): Promise<Row[]> {
  const dir = path.dirname(file);
  const [spec] = readDocuments(file) as unknown as TestFile[];
  if (!spec || !Array.isArray(spec.suites) || !Array.isArray(spec.cases)) throw new Error(`${file}: a test file needs suites: and cases:`);
  const suites: AdmissionSuite[] = [];
  const policies: AdmissionPolicy[] = [];
  const objects: Record<string, unknown>[] = [...(options.objects ?? [])];
  for (const name of spec.suites) {
    const split = splitSuites(readDocuments(path.resolve(dir, name)), spec.namespace ?? options.namespace);
    suites.push(...split.suites);
    policies.push(...split.policies);
    objects.push(...split.objects);
  }
  for (const entry of spec.objects ?? []) objects.push(...(typeof entry === 'string' ? readDocuments(path.resolve(dir, entry)) : [entry]));
  const now = instantOf(spec.now, `${file}: now:`);
  const cluster = new OfflineCluster(suites, objects, spec.operatorNamespace, policies, now !== undefined ? { now } : {});
  const refused = await cluster.refusals();
  if (refused.length) throw new Error(`${file}: ${refused.map((r) => r.message).join('; ')}`);

  const rows: Row[] = [];
  for (const [index, testCase] of spec.cases.entries()) {
    // A malformed case is said with its file and case, never as a JavaScript error.
    if (!testCase || typeof testCase !== 'object' || Array.isArray(testCase)) throw new Error(`${file}: case ${index + 1} is not a mapping (name:, object:, expect:)`);
    if (typeof testCase.name !== 'string' || testCase.name === '') throw new Error(`${file}: case ${index + 1} needs a name:`);
    if (!testCase.expect || typeof testCase.expect !== 'object' || Array.isArray(testCase.expect)) {
      throw new Error(`${file}: case ${JSON.stringify(testCase.name)} needs expect: (what the request gets, such as allowed: false and message:, or per webhook under webhooks:)`);
    }
    const load = (value: Record<string, unknown> | string | undefined) => (typeof value === 'string' ? readObject(path.resolve(dir, value)) : value);
    const { name, expect, object, oldObject, now: caseNow, ...scenario } = testCase;
    const at = instantOf(caseNow, `${file}: case ${JSON.stringify(name)}: now:`);
    const evaluation = await cluster.evaluate({ ...scenario, object: load(object), oldObject: load(oldObject), ...(at !== undefined ? { now: at } : {}) });
    const row = (target: string, expected: Expectation, got: Expectation): Row => {
      const diff = differences(expected, got);
      return { file, case: name, target, expected: summary(expected), got: summary(got), pass: diff.length === 0, diff };
    };
    for (const [key, expected] of Object.entries(expect.webhooks ?? {})) {
      const run = findRun(evaluation, key);
      rows.push(
        run
          ? row(key, expected, actualOf(run))
          : { file, case: name, target: key, expected: summary(expected), got: 'no such webhook', pass: false, diff: [`no webhook ${key} in ${evaluation.webhooks.map((w) => `${w.suite}/${w.webhook}`).join(', ')}`] },
      );
    }
    const { webhooks: _webhooks, ...overall } = expect;
    if (Object.keys(overall).length) rows.push(row('(request)', overall, requestResult(evaluation)));
  }
  return rows;
}

/** A `now:` as ms since the epoch; RFC 3339 with a zone, as an exception's `expires` is written (YAML may have read it as a Date). */
function instantOf(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : expiryOf(value);
  if (ms === undefined || Number.isNaN(ms)) throw new Error(`${where} must be an RFC 3339 time such as 2026-12-31T00:00:00Z, not ${JSON.stringify(value)}`);
  return ms;
}

/** `webhook` or `suite/webhook`. */
function findRun(evaluation: Evaluation, key: string): WebhookRun | undefined {
  const [suite, webhook] = key.includes('/') ? key.split('/') : [undefined, key];
  const runs = evaluation.webhooks.filter((w) => w.webhook === webhook && (suite === undefined || w.suite === suite));
  if (runs.length > 1) throw new Error(`${key} names webhooks of several suites; write suite/webhook`);
  return runs[0];
}

/** What the webhook answered, in the expectation's terms. */
function actualOf(run: WebhookRun): Expectation {
  if (!run.called || !run.review?.response) return { called: false };
  const response = run.review.response;
  return {
    called: true,
    allowed: response.allowed,
    ...(response.status?.message !== undefined ? { message: response.status.message } : {}),
    ...(response.status?.code !== undefined ? { code: response.status.code } : {}),
    warnings: response.warnings ?? [],
    ...(response.patch !== undefined ? { patched: true } : {}),
    ...(run.patchedObject ? { patchedObject: run.patchedObject } : {}),
    auditAnnotations: response.auditAnnotations ?? {},
  };
}

function requestResult(evaluation: Evaluation): Expectation {
  const warnings = evaluation.webhooks.flatMap((w) => w.review?.response?.warnings ?? []);
  return {
    allowed: evaluation.allowed,
    ...(evaluation.message !== undefined ? { message: evaluation.message } : {}),
    warnings,
    ...(evaluation.patchedObject ? { patched: true, patchedObject: evaluation.patchedObject } : {}),
  };
}

function differences(expected: Expectation, got: Expectation): string[] {
  const lines: string[] = [];
  for (const [field, want] of Object.entries(expected)) {
    if (field === 'patchedObject' && want === undefined) continue;
    // (what the answer leaves out: not called, not patched)
    const have = (got as Record<string, unknown>)[field] ?? (field === 'called' || field === 'patched' ? false : undefined);
    if (isDeepStrictEqual(want, have)) continue;
    lines.push(`${field}:`, ...lineDiff(show(want), show(have)));
  }
  return lines;
}

function show(value: unknown): string[] {
  return value === undefined ? ['(none)'] : JSON.stringify(value, null, 2).split('\n');
}

/** Expected lines with `-`, got lines with `+`, the lines both share around them with two spaces. */
function lineDiff(want: string[], have: string[]): string[] {
  let start = 0;
  while (start < want.length && start < have.length && want[start] === have[start]) start++;
  let end = 0;
  while (end < want.length - start && end < have.length - start && want[want.length - 1 - end] === have[have.length - 1 - end]) end++;
  const context = (lines: string[]) => lines.map((l) => `    ${l}`);
  return [
    ...context(want.slice(Math.max(0, start - 2), start)),
    ...want.slice(start, want.length - end).map((l) => `  - ${l}`),
    ...have.slice(start, have.length - end).map((l) => `  + ${l}`),
    ...context(want.slice(want.length - end, want.length - end + 2)),
  ];
}

function summary(e: Expectation): string {
  if (e.called === false) return 'not called';
  const parts: string[] = [];
  if (e.allowed === false) parts.push(`denied${e.code ? ` ${e.code}` : ''}${e.message !== undefined ? `: ${e.message}` : ''}`);
  else if (e.allowed === true) parts.push('allowed');
  if (e.patched || e.patchedObject) parts.push('patched');
  else if (e.patched === false) parts.push('not patched');
  if (e.warnings?.length) parts.push(`warnings: ${e.warnings.join('; ')}`);
  if (e.auditAnnotations && Object.keys(e.auditAnnotations).length) parts.push(`audit: ${Object.keys(e.auditAnnotations).join(', ')}`);
  return parts.join(', ') || (e.called ? 'called' : '-');
}

/** The results table, then the diff of every failure. */
export function report(rows: Row[], relativeTo = process.cwd()): string {
  const cells = rows.map((r) => [r.pass ? 'PASS' : 'FAIL', path.relative(relativeTo, r.file), r.case, r.target, clip(r.expected), clip(r.got)]);
  const header = ['RESULT', 'FILE', 'CASE', 'WEBHOOK', 'EXPECTED', 'GOT'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((cell, i) => (i === c.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  const out = [line(header), ...cells.map(line)];
  const failed = rows.filter((r) => !r.pass);
  for (const r of failed) out.push('', `FAIL ${path.relative(relativeTo, r.file)} › ${r.case} › ${r.target}`, ...r.diff);
  // (not the 'N passed, N failed' line of test runners: CI would take it for its own)
  out.push('', `${rows.length - failed.length} of ${rows.length} expectations met`);
  return `${out.join('\n')}\n`;
}

/** The rows as JSON, for a script: each with its file relative to `relativeTo`, and the counts. */
export function reportJson(rows: Row[], relativeTo = process.cwd()): string {
  const shown = rows.map((r) => ({ ...r, file: path.relative(relativeTo, r.file) }));
  return `${JSON.stringify({ results: shown, met: rows.filter((r) => r.pass).length, total: rows.length }, null, 2)}\n`;
}

/** The rows as JUnit XML, for a CI's test report: a testsuite per test file, a testcase per expectation, a failure with its diff. */
export function reportJunit(rows: Row[], relativeTo = process.cwd()): string {
  const suites = new Map<string, JunitSuite>();
  for (const r of rows) {
    const file = path.relative(relativeTo, r.file);
    const suite = suites.get(file) ?? { name: file, file, cases: [] };
    suites.set(file, suite);
    suite.cases.push({
      name: `${r.case} › ${r.target}`,
      classname: file,
      file,
      ...(r.pass ? {} : { failure: { message: `expected ${r.expected}, got ${r.got}`, type: 'ExpectationFailed', text: r.diff.join('\n') } }),
    });
  }
  return junitXml('portcullis test', [...suites.values()]);
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
