/**
 * The install manifests linted as platform teams lint what they install: checkov (from PyPI,
 * installed on first use by build.sh checkov; kube-linter is not served here) on deploy/ and on
 * the Helm chart rendered with every object it can make. Nothing may fail but the checks
 * .checkov.yaml skips, each for the reason written there.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { ensureCheckov, ensureHelm } from '../../src/local/binaries.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Report {
  summary: { passed: number; failed: number; parsing_errors: number; resource_count: number };
  results: { failed_checks?: { check_id: string; check_name: string; resource: string; file_path: string }[] };
}

function run(binary: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

/**
 * checkov's JSON report of one run, or an error carrying what checkov printed: a run that read no
 * file prints a summary without `results` (as when every path given lies under a folder whose name
 * starts with a dot, which checkov skips), and that is a failure of the run, not a clean report.
 */
function reportOf(result: { code: number; stdout: string; stderr: string }): Report {
  const output = `exit ${result.code}; stdout: ${result.stdout.slice(-2000)}; stderr: ${result.stderr.slice(-2000)}`;
  let report: Partial<Report>;
  try {
    report = JSON.parse(result.stdout) as Partial<Report>;
  } catch {
    throw new Error(`checkov printed no JSON report (${output})`);
  }
  if (!report || typeof report !== 'object' || Array.isArray(report) || !report.results || !report.summary) throw new Error(`checkov's report has no results: it checked nothing (${output})`);
  return report as Report;
}

const objectCount = (text: string) => k8s.loadAllYaml(text).filter(Boolean).length;

describe('the install manifests, linted by checkov', function () {
  this.timeout(600_000);
  let checkov: string;
  let scratch: string;

  /** checkov on `target` with .checkov.yaml; every finding it reports, as one line each, in the failure message. */
  async function lint(target: string[], objects: number): Promise<void> {
    const result = await run(checkov, ['--config-file', path.join(ROOT, '.checkov.yaml'), ...target, '-o', 'json']);
    const report = reportOf(result);
    const findings = (report.results.failed_checks ?? []).map((c) => `${c.check_id} ${c.check_name}: ${c.resource} (${c.file_path})`);
    expect(findings, 'checkov findings (fix them, or skip the check in .checkov.yaml with the reason it stays)').to.deep.equal([]);
    expect(result.code, result.stderr.slice(-2000)).to.equal(0);
    expect(report.summary.parsing_errors, 'files checkov could not parse').to.equal(0);
    // Every object was read and checked, not only some.
    expect(report.summary.resource_count).to.be.at.least(objects);
    expect(report.summary.passed).to.be.greaterThan(0);
  }

  before(async function () {
    checkov = await ensureCheckov();
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-lint-'));
  });

  after(function () {
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('deploy/ passes', async function () {
    const dir = path.join(ROOT, 'deploy');
    // Its optional/ folder too.
    const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    const paths = files.map((entry) => path.join(entry.parentPath, entry.name));
    const objects = paths.reduce((n, file) => n + objectCount(fs.readFileSync(file, 'utf8')), 0);
    // Each file named: checkov skips every file of a folder it walks when the path has a dot-folder in it (a checkout under ~/.cache, say).
    await lint(
      paths.flatMap((file) => ['-f', file]),
      objects,
    );
  });

  it('the Helm chart, rendered with its metrics Service and ServiceMonitor and the PolicyReport CRDs and grants too, passes', async function () {
    const helm = await ensureHelm();
    const rendered = await run(helm, [
      'template',
      'portcullis',
      path.join(ROOT, 'charts/portcullis'),
      '--namespace',
      'portcullis-system',
      '--set',
      'metrics.service.enabled=true',
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'audit.reports.policyReports=true',
    ]);
    expect(rendered.code, rendered.stderr).to.equal(0);
    expect(rendered.stdout).to.contain('kind: ServiceMonitor');
    const file = path.join(scratch, 'chart.yaml');
    fs.writeFileSync(file, rendered.stdout);
    await lint(['-f', file], objectCount(rendered.stdout));
  });

  it('fails where a check is not skipped: a Deployment without resources or probes is reported', async function () {
    // Guards the lint itself: the same configuration reports what it should.
    const file = path.join(scratch, 'bare.yaml');
    fs.writeFileSync(
      file,
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bare, namespace: lint}\nspec:\n  selector: {matchLabels: {app: bare}}\n  template:\n    metadata: {labels: {app: bare}}\n    spec:\n      containers: [{name: app, image: "example/app@sha256:' +
        'a'.repeat(64) +
        '"}]\n',
    );
    const result = await run(checkov, ['--config-file', path.join(ROOT, '.checkov.yaml'), '-f', file, '-o', 'json']);
    expect(result.code).to.not.equal(0);
    const failed = (reportOf(result).results.failed_checks ?? []).map((c) => c.check_id);
    expect(failed).to.include.members(['CKV_K8S_8', 'CKV_K8S_9', 'CKV_K8S_13']);
  });
});
