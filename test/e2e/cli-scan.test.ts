/**
 * `portcullis scan` in a pipeline: the Helm chart rendered by a real Helm (`helm template`) piped to
 * scan with the shipped samples (config/samples): what the table, the JUnit report (read back by
 * junit2json) and the exit code say, and that the denial scan reports for the chart's Deployment
 * is, word for word, what the API server answers a dry-run create of it with the same suite applied
 * and the operator serving it. Owns the suite it applies (the replica-limit sample) and namespace
 * scan-e2e; touches nothing else. (The command's options one by one: test/unit/cli/scan.test.ts.)
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { parse as parseJunit, type TestSuite } from 'junit2json';
import { ensureHelm } from '../../src/local/binaries.ts';
import { kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { deleteSuite } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { REPO, runCli } from '../support/cli.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'scan-e2e';
const CHART = path.join(REPO, 'charts/portcullis');

function helm(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => (err ? reject(new Error(`helm ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout)));
  });
}

/** The table's rows (cells split on the columns' runs of spaces) that name `object`. */
function rows(stdout: string, object: string): string[][] {
  return stdout
    .split('\n')
    .map((line) => line.split(/ {2,}/))
    .filter((cells) => cells[1] === object);
}

describe('portcullis scan: helm template of the chart, with the samples', function () {
  this.timeout(600_000);
  let helmBinary: string;
  let operator: Operator | undefined;
  const render = (...set: string[]) => helm(helmBinary, ['template', 'portcullis', CHART, '--namespace', NS, ...set.flatMap((s) => ['--set', s])]);

  before(async function () {
    helmBinary = await ensureHelm();
  });

  after(async function () {
    await deleteSuite('replica-guard');
    await operator?.stop();
  });

  it("admits the chart as it ships (exit 0), and denies it with 6 replicas (exit 1) at the Deployment's line, in the samples' words", async function () {
    const shipped = await runCli(['scan', '--suites', 'config/samples', '-'], REPO, await render());
    expect(shipped.stderr).to.equal('');
    expect(shipped.code, shipped.stdout).to.equal(0);
    expect(shipped.stdout).to.not.match(/^DENIED/m);
    const deployment = rows(shipped.stdout, `Deployment ${NS}/portcullis-operator`);
    expect(
      deployment.map((r) => r[3]),
      shipped.stdout,
    ).to.include.members(['replica-guard/replica-limit', 'pod-security/pod-security']);
    expect(deployment.every((r) => r[0] === 'ADMITTED')).to.equal(true);

    const text = await render('replicaCount=6');
    const line = text.split('\n').findIndex((l, i, all) => l === 'kind: Deployment' && all[i - 1] === 'apiVersion: apps/v1');
    const denied = await runCli(['scan', '--suites', 'config/samples', '-'], REPO, text);
    expect(denied.code, denied.stdout + denied.stderr).to.equal(1);
    // The document's first line is its apiVersion, the line before its kind.
    expect(rows(denied.stdout, `Deployment ${NS}/portcullis-operator`).find((r) => r[3] === 'replica-guard/replica-limit')).to.deep.equal([
      'DENIED',
      `Deployment ${NS}/portcullis-operator`,
      `(stdin):${line}`,
      'replica-guard/replica-limit',
      'replicas must be no greater than 5',
    ]);
    expect(denied.stdout).to.match(/ 1 denied\n$/);
  });

  it('writes a JUnit report of the chart a JUnit parser reads: every sample suite a testsuite, the denial a failure', async function () {
    const result = await runCli(['scan', '--suites', 'config/samples', '-o', 'junit', '-'], REPO, await render('replicaCount=6'));
    expect(result.code, result.stderr).to.equal(1);
    const report = (await parseJunit(result.stdout)) as { testsuite: TestSuite[]; failures?: number };
    expect(report.testsuite.map((s) => s.name)).to.include.members(['replica-guard', 'pod-security', 'platform-guards', 'team-limits', 'always-deny', 'owner-references', 'AdmissionPolicies']);
    const guard = report.testsuite.find((s) => s.name === 'replica-guard')!;
    expect(guard.testcase?.map((c) => [c.name, c.failure?.[0]?.message])).to.deep.equal([[`Deployment ${NS}/portcullis-operator`, 'replicas must be no greater than 5']]);
    expect(report.failures).to.be.at.least(1);
  });

  it("reports the chart's denial in the API server's words: a dry-run create of the same Deployment, the same suite served by the operator", async function () {
    await ensureNamespace(NS);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    expect((await kubectl(['apply', '-f', 'config/samples/replica-limit.yaml'])).code).to.equal(0);
    const text = await render('replicaCount=6');
    const scanned = JSON.parse((await runCli(['scan', '--suites', 'config/samples/replica-limit.yaml', '-o', 'json', '-'], REPO, text)).stdout);
    const offline = scanned.objects.find((o: { kind: string }) => o.kind === 'Deployment');
    expect(offline.allowed).to.equal(false);

    const deployment = (yaml.loadAll(text) as { kind?: string }[]).find((d) => d?.kind === 'Deployment')!;
    const server = await eventually(
      async () => {
        const answer = await rawRequest('POST', `/apis/apps/v1/namespaces/${NS}/deployments?dryRun=All`, deployment as Record<string, unknown>);
        if (answer.status < 400) throw new Error('admitted: the webhook is not called yet');
        return answer;
      },
      { what: 'the replica limit to be enforced' },
    );
    expect(server.body.message).to.equal(offline.message);
    expect(server.status).to.equal(offline.judgements[0].code);
  });
});
