/**
 * The `portcullis` command offline, as a user runs it: the samples' test files pass; a wrong
 * expectation fails with exit 1 and a diff that says what differs; validate refuses a suite that
 * cannot work; eval prints the AdmissionReview and the patched object; --help and --version.
 * (What the API server does with the same suites and objects: test/e2e/cli.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { REPO, runCli } from '../../support/cli.ts';
import { SYNTAX_ERRORS } from '../../fixtures/cel-syntax-errors.ts';

describe('portcullis (the command)', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-cli-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('passes the test files of config/samples, one PASS row per expectation', async function () {
    const result = await runCli(['test', 'config/samples/tests']);
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(0);
    const rows = result.stdout.split('\n').filter((line) => /^(PASS|FAIL) /.test(line));
    expect(rows.length).to.be.at.least(15);
    expect(rows.every((row) => row.startsWith('PASS'))).to.equal(true);
    for (const sample of ['replica-limit', 'team-label', 'platform-guards']) expect(result.stdout).to.contain(`config/samples/tests/${sample}.portcullis-test.yaml`);
    expect(result.stdout).to.match(/\n(\d+) of \1 expectations met\n$/);
  });

  it('fails a wrong expectation with exit 1 and a readable diff', async function () {
    const file = path.join(dir, 'wrong.portcullis-test.yaml');
    fs.writeFileSync(
      file,
      `suites: [${path.join(REPO, 'config/samples/replica-limit.yaml')}]
cases:
  - name: six replicas
    object: { apiVersion: apps/v1, kind: Deployment, metadata: { name: web, namespace: shop }, spec: { replicas: 6 } }
    expect:
      webhooks:
        replica-limit: { allowed: false, message: replicas must be no greater than 4 }
  - name: two replicas
    object: { apiVersion: apps/v1, kind: Deployment, metadata: { name: web, namespace: shop }, spec: { replicas: 2 } }
    expect:
      webhooks:
        replica-limit: { allowed: false }
`,
    );
    const result = await runCli(['test', file]);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.match(/^FAIL\s+\S*wrong\.portcullis-test\.yaml\s+six replicas\s+replica-limit\s+denied: replicas must be no greater than 4\s+denied 422: replicas must be no greater than 5$/m);
    expect(result.stdout).to.contain(['message:', '  - "replicas must be no greater than 4"', '  + "replicas must be no greater than 5"'].join('\n'));
    expect(result.stdout).to.contain(['allowed:', '  - false', '  + true'].join('\n'));
    expect(result.stdout).to.match(/\n0 of 2 expectations met\n$/);
  });

  it('validate accepts the samples and refuses a suite that cannot work, naming the field, with exit 1', async function () {
    expect((await runCli(['validate', 'config/samples/replica-limit.yaml', 'config/samples/platform-guards.yaml'])).code).to.equal(0);
    const file = path.join(dir, 'broken.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: broken }
spec:
  webhooks:
    - name: w
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
      validations: [{ expression: "object.metadata.name.size()" }]
`,
    );
    const result = await runCli(['validate', file]);
    expect(result.code).to.equal(1);
    // at the line of the field refused
    expect(result.stdout).to.match(/broken\.yaml:9: document 1: AdmissionSuite "broken" is invalid: spec\.webhooks\[0\]\.validations\[0\]\.expression: /);
  });

  it("validate says a CEL syntax error at the expression field's line, with the API server's line, column and caret within the expression", async function () {
    const row = SYNTAX_ERRORS.find((r) => r.name === 'line-2')!;
    const file = path.join(dir, 'syntax.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: syntax }
spec:
  webhooks:
    - name: w
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
      validations:
        - message: replicas in range
          expression: ${JSON.stringify(row.expression)}
`,
    );
    const result = await runCli(['validate', file]);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal(`${file}:11: document 1: AdmissionSuite "syntax" is invalid: spec.webhooks[0].validations[0].expression: compilation failed: ${row.apiServer}\n`);
  });

  it("eval prints each webhook's AdmissionReview response and the patched object as JSON", async function () {
    const pod = path.join(dir, 'pod.yaml');
    fs.writeFileSync(pod, 'apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: shop }\nspec: { containers: [{ name: c, image: nginx, imagePullPolicy: IfNotPresent }] }\n');
    const result = await runCli(['eval', '--suite', 'config/samples/team-label.yaml', '--object', pod]);
    expect(result.code, result.stderr).to.equal(0);
    const output = JSON.parse(result.stdout);
    expect(output.webhooks.map((w: { name: string; called: boolean }) => [w.name, w.called])).to.deep.equal([
      ['team-label.pod-defaults.admission.portcullis.dev', true],
      ['pull-always.pod-defaults.admission.portcullis.dev', true],
    ]);
    const review = output.webhooks[0].review;
    expect(review).to.include({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    expect(review.response).to.include({ allowed: true, patchType: 'JSONPatch' });
    expect(JSON.parse(Buffer.from(review.response.patch, 'base64').toString())).to.deep.equal([{ op: 'add', path: '/metadata/labels', value: { team: 'unassigned' } }]);
    expect(output.patchedObject.metadata.labels).to.deep.equal({ team: 'unassigned' });
    expect(output.patchedObject.spec.containers[0].imagePullPolicy).to.equal('Always');
    expect(output.allowed).to.equal(true);
  });

  it('has --help and --version, and refuses an unknown command or flag with exit 2', async function () {
    const help = await runCli(['--help']);
    expect(help.code).to.equal(0);
    for (const command of ['portcullis validate FILE', 'portcullis test DIR|FILE', 'portcullis test --replay LOG FILE|DIR', 'portcullis eval --suite FILE --object FILE', 'portcullis audit FILE|DIR']) expect(help.stdout).to.contain(command);
    expect((await runCli(['--version'])).stdout).to.equal(`portcullis 0.1.0 (Node.js ${process.version})\n`);
    const unknown = await runCli(['lint']);
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.contain('portcullis: unknown command lint');
    expect((await runCli(['test', '--bogus'])).stderr).to.contain("Unknown option '--bogus'");
  });
});
