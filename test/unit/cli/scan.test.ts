/**
 * `portcullis scan` as a pipeline runs it, in its own process: a folder of manifests (and standard
 * input) judged by suites as creates (updates with --old), each answer at its file and line, with
 * warnings and audit annotations; namespaceSelector read from the files' Namespaces or
 * --namespace-labels; JUnit XML read back by a JUnit parser (junit2json), SARIF checked against
 * the SARIF 2.1.0 schema; exit codes 0, 1 and 2. Also `portcullis test -o junit|json`.
 * Owns these files only; the chart piped to scan is test/e2e/cli-scan.test.ts'.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parse as parseJunit, type TestSuite } from 'junit2json';
import ajvDraft04 from 'ajv-draft-04';
import ajvFormats from 'ajv-formats';
import { REPO, runCli } from '../../support/cli.ts';

const REPLICA_LIMIT = path.join(REPO, 'config/samples/replica-limit.yaml');

const CHECKS = `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata:
  name: scan-checks
spec:
  webhooks:
    - name: no-scale-down
      type: Validating
      rules:
        - operations: ["UPDATE"]
          apiGroups: ["apps"]
          apiVersions: ["v1"]
          resources: ["deployments"]
      validations:
        - expression: "object.spec.replicas >= oldObject.spec.replicas"
          messageExpression: "'may not scale down from ' + string(oldObject.spec.replicas)"
    - name: legacy-key
      type: Validating
      rules:
        - operations: ["CREATE", "UPDATE"]
          apiGroups: [""]
          apiVersions: ["v1"]
          resources: ["configmaps"]
      validationActions: [Warn, Audit]
      validations:
        - expression: "!has(object.data) || !('legacy' in object.data)"
          messageExpression: "'key legacy is deprecated in ' + object.metadata.name"
      auditAnnotations:
        - key: keys
          valueExpression: "string(size(object.data))"
    - name: prod-review
      type: Validating
      rules:
        - operations: ["CREATE"]
          apiGroups: [""]
          apiVersions: ["v1"]
          resources: ["services"]
      namespaceSelector:
        matchLabels: { env: prod }
      validations:
        - expression: "false"
          message: "a Service in production needs a review"
`;

// The Deployment's document starts at line 2, the ConfigMap's at line 9.
const DEPLOY = `# the web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 6
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  legacy: "yes"
`;

// The Service's document starts at line 7.
const PROD = `apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: { env: prod }
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: prod
spec:
  ports: [{ port: 80 }]
`;

const STAGING = JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: 'staging' }, spec: { ports: [{ port: 80 }] } }, null, 2);

/** The table's row for an object and webhook: its cells, split on the columns' runs of spaces. */
function row(stdout: string, object: string, webhook: string): string[] | undefined {
  return stdout
    .split('\n')
    .map((line) => line.split(/ {2,}/))
    .find((cells) => cells[1] === object && cells[3] === webhook);
}

describe('portcullis scan (the command)', function () {
  this.timeout(60_000);
  let dir: string;
  const scan = (args: string[], input?: string) => runCli(['scan', ...args], dir, input);

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-scan-'));
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    };
    write('suites/checks.yaml', CHECKS);
    write('manifests/app/deploy.yaml', DEPLOY);
    write('manifests/prod.yaml', PROD);
    write('manifests/staging.json', STAGING);
    write('manifests/README.txt', 'not a manifest: a folder is walked for .yaml, .yml and .json only');
    write('old/web.yml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web, namespace: default }\nspec: { replicas: 8 }\n');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('judges every object of a folder as its create, each answer at its file and line, warnings and audit annotations under it; exit 1 on a denial', async function () {
    const result = await scan(['--suites', 'suites', '--suites', REPLICA_LIMIT, 'manifests']);
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(1);
    expect(row(result.stdout, 'Deployment default/web', 'replica-guard/replica-limit')).to.deep.equal(['DENIED', 'Deployment default/web', 'manifests/app/deploy.yaml:2', 'replica-guard/replica-limit', 'replicas must be no greater than 5']);
    expect(row(result.stdout, 'ConfigMap default/settings', 'scan-checks/legacy-key')).to.deep.equal(['ADMITTED', 'ConfigMap default/settings', 'manifests/app/deploy.yaml:9', 'scan-checks/legacy-key']);
    const lines = result.stdout.split('\n');
    const configMap = lines.findIndex((line) => line.startsWith('ADMITTED  ConfigMap default/settings'));
    expect(lines.slice(configMap + 1, configMap + 4)).to.deep.equal([
      '  warning: key legacy is deprecated in settings',
      '  audit annotation legacy-key.scan-checks.admission.portcullis.dev/keys: 1',
      '  audit annotation legacy-key.scan-checks.admission.portcullis.dev/validation_failure: [{"message":"key legacy is deprecated in settings","policy":"scan-checks","binding":"legacy-key","expressionIndex":0,"validationActions":["Warn","Audit"]}]',
    ]);
    // The Namespace in the files labels prod: its Service is judged; staging is given by none, so it has no env label.
    expect(row(result.stdout, 'Service prod/api', 'scan-checks/prod-review')).to.deep.equal(['DENIED', 'Service prod/api', 'manifests/prod.yaml:7', 'scan-checks/prod-review', 'a Service in production needs a review']);
    expect(row(result.stdout, 'Service staging/api', 'scan-checks/prod-review')).to.equal(undefined);
    // A create is never judged by a webhook of UPDATE only, and README.txt was not read.
    expect(result.stdout).to.not.contain('no-scale-down');
    expect(result.stdout).to.match(/\n5 objects scanned with 2 suites and policies: 3 judged by a webhook, 2 denied\n$/);
  });

  it('takes a namespace the files do not give as --namespace-labels say, and objects that name none into --namespace', async function () {
    const result = await scan(['--suites', 'suites', 'manifests', '--namespace-labels', 'env=prod', '--namespace', 'team']);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    expect(row(result.stdout, 'Service staging/api', 'scan-checks/prod-review')).to.deep.equal(['DENIED', 'Service staging/api', 'manifests/staging.json:1', 'scan-checks/prod-review', 'a Service in production needs a review']);
    expect(row(result.stdout, 'ConfigMap team/settings', 'scan-checks/legacy-key')?.[0]).to.equal('ADMITTED');
  });

  it('exits 0 when every object is admitted, warnings shown all the same', async function () {
    const result = await scan(['--suites', 'suites/checks.yaml', 'manifests/app/deploy.yaml']);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    expect(result.stdout).to.contain('  warning: key legacy is deprecated in settings\n');
    expect(result.stdout).to.match(/\n2 objects scanned with 1 suite and policies: 1 judged by a webhook, 0 denied\n$/);
  });

  it('judges an object as an UPDATE of its --old version (same apiVersion, kind, namespace and name)', async function () {
    const result = await scan(['--suites', 'suites/checks.yaml', 'manifests/app/deploy.yaml', '--old', 'old']);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    expect(row(result.stdout, 'Deployment default/web (update)', 'scan-checks/no-scale-down')).to.deep.equal([
      'DENIED',
      'Deployment default/web (update)',
      'manifests/app/deploy.yaml:2',
      'scan-checks/no-scale-down',
      'may not scale down from 8',
    ]);
  });

  it('reads standard input for -, as helm template | portcullis scan - gives it', async function () {
    const result = await scan(['--suites', REPLICA_LIMIT, '-'], DEPLOY);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    expect(row(result.stdout, 'Deployment default/web', 'replica-guard/replica-limit')?.slice(0, 3)).to.deep.equal(['DENIED', 'Deployment default/web', '(stdin):2']);
  });

  it('writes JUnit XML a JUnit parser reads: a testsuite per suite, a testcase per object and webhook, a denial its failure', async function () {
    const result = await scan(['--suites', 'suites', '--suites', REPLICA_LIMIT, 'manifests', '-o', 'junit']);
    expect(result.code, result.stderr).to.equal(1);
    const report = await parseJunit(result.stdout);
    expect(report && 'testsuite' in report, result.stdout).to.equal(true);
    const suites = (report as { testsuite: TestSuite[]; tests?: number; failures?: number }).testsuite;
    expect(suites.map((s) => s.name)).to.deep.equal(['scan-checks', 'replica-guard']);
    const [checks, guard] = suites as [TestSuite, TestSuite];
    expect(guard).to.include({ tests: 1, failures: 1 });
    expect(guard.testcase?.[0]).to.include({ name: 'Deployment default/web', classname: 'replica-guard.replica-limit' });
    expect(guard.testcase?.[0]?.failure?.[0]?.message).to.equal('replicas must be no greater than 5');
    expect(guard.testcase?.[0]?.failure?.[0]?.inner).to.contain('manifests/app/deploy.yaml:2');
    expect(checks).to.include({ tests: 2, failures: 1 });
    const configMap = checks.testcase?.find((c) => c.name === 'ConfigMap default/settings');
    expect(configMap?.failure).to.equal(undefined);
    expect(configMap?.['system-out']?.[0]).to.contain('warning: key legacy is deprecated in settings');
    expect(checks.testcase?.find((c) => c.name === 'Service prod/api')?.failure?.[0]?.message).to.equal('a Service in production needs a review');
    expect(report).to.include({ tests: 3, failures: 2 });
  });

  it("writes SARIF 2.1.0 that its JSON schema accepts: a result per denial and per warning, at the object's file and line", async function () {
    const result = await scan(['--suites', 'suites', '--suites', REPLICA_LIMIT, 'manifests', '-o', 'sarif']);
    expect(result.code, result.stderr).to.equal(1);
    const log = JSON.parse(result.stdout);
    const schema = JSON.parse(fs.readFileSync(fileURLToPath(import.meta.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json')), 'utf8'));
    // (the schema's own patterns are not valid as unicode regular expressions)
    const ajv = new ajvDraft04.default({ allErrors: true, strict: false, unicodeRegExp: false, logger: false });
    ajvFormats.default(ajv);
    const valid = ajv.compile(schema);
    expect(valid(log), JSON.stringify(valid.errors, null, 2)).to.equal(true);
    const results = log.runs[0].results as { ruleId: string; level: string; message: { text: string }; locations: { physicalLocation: { artifactLocation: { uri: string }; region: { startLine: number } } }[] }[];
    const at = (r: (typeof results)[number]) => `${r.locations[0]!.physicalLocation.artifactLocation.uri}:${r.locations[0]!.physicalLocation.region.startLine}`;
    expect(results.filter((r) => r.level === 'error').map((r) => [r.ruleId, at(r), r.message.text])).to.deep.equal([
      ['replica-guard/replica-limit', 'manifests/app/deploy.yaml:2', 'replicas must be no greater than 5'],
      ['scan-checks/prod-review', 'manifests/prod.yaml:7', 'a Service in production needs a review'],
    ]);
    expect(results.filter((r) => r.level === 'warning').map((r) => [r.ruleId, at(r), r.message.text])).to.deep.equal([['scan-checks/legacy-key', 'manifests/app/deploy.yaml:9', 'key legacy is deprecated in settings']]);
    expect(log.runs[0].tool.driver.name).to.equal('portcullis');
  });

  it('writes JSON: every object, its answers and the counts', async function () {
    const result = await scan(['--suites', 'suites', 'manifests', '-o', 'json']);
    const output = JSON.parse(result.stdout);
    expect(output.summary).to.deep.equal({ objects: 5, judged: 2, denied: 1 });
    const configMap = output.objects.find((o: { kind: string }) => o.kind === 'ConfigMap');
    expect(configMap).to.deep.include({ file: 'manifests/app/deploy.yaml', line: 9, namespace: 'default', operation: 'CREATE', allowed: true });
    expect(configMap.judgements[0]).to.deep.include({
      webhook: 'legacy-key',
      warnings: ['key legacy is deprecated in settings'],
      auditAnnotations: {
        'legacy-key.scan-checks.admission.portcullis.dev/keys': '1',
        'legacy-key.scan-checks.admission.portcullis.dev/validation_failure': '[{"message":"key legacy is deprecated in settings","policy":"scan-checks","binding":"legacy-key","expressionIndex":0,"validationActions":["Warn","Audit"]}]',
      },
    });
  });

  it('exits 2, naming the file (and the line), with no stack trace, on what it cannot read or a suite that would be refused', async function () {
    fs.writeFileSync(
      path.join(dir, 'broken-suite.yaml'),
      CHECKS.replace('      type: Validating\n      rules:\n        - operations: ["UPDATE"]', '      type: Validating\n      failurePolicy: fail\n      rules:\n        - operations: ["UPDATE"]'),
    );
    fs.writeFileSync(path.join(dir, 'broken-cel.yaml'), CHECKS.replace('object.spec.replicas >= oldObject.spec.replicas', 'object.spec.replicas >= ('));
    fs.writeFileSync(path.join(dir, 'no-kind.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n---\napiVersion: v1\nmetadata: { name: b }\n');
    fs.writeFileSync(path.join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: [a }\n');
    const cases: [string[], RegExp][] = [
      [['--suites', 'suites', 'missing.yaml'], /^portcullis: cannot read missing\.yaml: ENOENT\n$/],
      [['--suites', 'nowhere', 'manifests'], /^portcullis: cannot read nowhere: ENOENT\n$/],
      [['--suites', 'broken-suite.yaml', 'manifests'], /^portcullis: a suite or policy is refused:\nbroken-suite\.yaml:9: document 1: AdmissionSuite "scan-checks" is invalid: spec\.webhooks\[0\]\.failurePolicy: Unsupported value: "fail"/],
      [['--suites', 'broken-cel.yaml', 'manifests'], /^portcullis: a suite or policy is refused:\nbroken-cel\.yaml:15: document 1: .*spec\.webhooks\[0\]\.validations\[0\]\.expression: compilation failed/],
      [['--suites', 'suites', 'no-kind.yaml'], /^portcullis: no-kind\.yaml:5: document 2: error validating data: \[kind not set\]\n$/],
      [['--suites', 'suites', 'bad.yaml'], /^portcullis: bad\.yaml: /],
      [['--suites', 'suites', '-o', 'xml', 'manifests'], /^portcullis: -o must be table, json, junit, sarif for scan, not xml\n/],
      [['manifests'], /^portcullis: scan needs --suites/],
    ];
    for (const [args, stderr] of cases) {
      const result = await scan(args, '');
      expect(result.code, `${args.join(' ')}: ${result.stdout}${result.stderr}`).to.equal(2);
      expect(result.stderr, args.join(' ')).to.match(stderr);
      expect(result.stderr, args.join(' ')).to.not.match(/^\s+at /m);
      expect(result.stdout, args.join(' ')).to.equal('');
    }
    const empty = await scan(['--suites', 'suites', '-'], '');
    expect([empty.code, empty.stderr]).to.deep.equal([2, 'portcullis: standard input: no objects to scan\n']);
  });
});

describe('portcullis test -o junit|json', function () {
  this.timeout(60_000);

  it("writes the test files' results as JUnit XML a JUnit parser reads, and as JSON, each as many as the table's rows", async function () {
    const table = await runCli(['test', 'config/samples/tests']);
    const rows = table.stdout.split('\n').filter((line) => /^(PASS|FAIL) /.test(line)).length;
    const junit = await runCli(['test', 'config/samples/tests', '-o', 'junit']);
    expect(junit.code, junit.stderr).to.equal(0);
    const report = (await parseJunit(junit.stdout)) as { testsuite: TestSuite[]; tests?: number; failures?: number };
    expect(report).to.include({ tests: rows, failures: 0 });
    expect(report.testsuite.map((s) => s.name)).to.include('config/samples/tests/replica-limit.portcullis-test.yaml');
    const json = await runCli(['test', 'config/samples/tests', '-o', 'json']);
    expect(JSON.parse(json.stdout)).to.deep.include({ met: rows, total: rows });
  });

  it('gives a failed expectation as a JUnit failure with the diff, exit 1', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-test-junit-'));
    try {
      const file = path.join(dir, 'wrong.portcullis-test.yaml');
      fs.writeFileSync(
        file,
        `suites: [${REPLICA_LIMIT}]
cases:
  - name: six replicas
    object: { apiVersion: apps/v1, kind: Deployment, metadata: { name: web, namespace: shop }, spec: { replicas: 6 } }
    expect:
      webhooks:
        replica-limit: { allowed: false, message: replicas must be no greater than 4 }
`,
      );
      const result = await runCli(['test', file, '-o', 'junit']);
      expect(result.code).to.equal(1);
      const report = (await parseJunit(result.stdout)) as { testsuite: TestSuite[] };
      const failure = report.testsuite[0]?.testcase?.[0]?.failure?.[0];
      expect(report.testsuite[0]?.testcase?.[0]?.name).to.equal('six replicas › replica-limit');
      expect(failure?.message).to.equal('expected denied: replicas must be no greater than 4, got denied 422: replicas must be no greater than 5');
      expect(failure?.inner).to.contain('  - "replicas must be no greater than 4"\n  + "replicas must be no greater than 5"');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
