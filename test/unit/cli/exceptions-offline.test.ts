/**
 * AdmissionExceptions and ClusterAdmissionExceptions offline (issue 55): `portcullis eval`, `portcullis test` and `portcullis scan`
 * apply those given among the objects as the operator does (evaluate.ts' OfflineCluster holds them
 * in the operator's ExceptionStore), with the warning and audit annotation, at the clock a test
 * file's `now:` (or eval's --now) sets. The CLI as a subprocess; owns no API server and no other command's output.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { runCli } from '../../support/cli.ts';
import { API_VERSION } from '../../../src/api/types.ts';

const configmaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const suite = {
  apiVersion: API_VERSION,
  kind: 'AdmissionSuite',
  metadata: { name: 'owners' },
  spec: {
    exceptions: { allowed: true },
    webhooks: [
      { name: 'owner', type: 'Validating', rules: configmaps, validations: [{ expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels", message: 'a ConfigMap needs an owner label' }] },
      { name: 'pod-security', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], handler: { name: 'PodSecurity' } },
    ],
  },
};
const exception = {
  apiVersion: API_VERSION,
  kind: 'AdmissionException',
  metadata: { name: 'legacy', namespace: 'team-a' },
  spec: { suite: 'owners', webhook: 'owner', reason: 'legacy app, owner label from Q1', expires: '2030-01-01T00:00:00Z', match: { names: ['legacy-config'] } },
};
const WARNING = 'admitted by exception team-a/legacy (expires 2030-01-01T00:00:00Z): legacy app, owner label from Q1';
const DENIED = 'admission webhook "owner.owners.admission.portcullis.dev" denied the request: a ConfigMap needs an owner label';
const configMap = (namespace: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'legacy-config', namespace }, data: {} });
const restricted = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } });
const TOOL = 'registry.example.com/net/tool:1.2';
const pod = (image: string, runAsNonRoot = true) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'net', namespace: 'shop' },
  spec: {
    securityContext: { runAsNonRoot, seccompProfile: { type: 'RuntimeDefault' } },
    containers: [{ name: 'tool', image, securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } }],
  },
});

describe('portcullis eval, test and scan: AdmissionExceptions', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-exceptions-offline-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, objects: unknown[], unquotedTimes = false) => {
    const file = path.join(dir, name);
    const text = objects.map((o) => yaml.dump(o)).join('---\n');
    // As people write them: unquoted, YAML reads a time as a timestamp, not a string.
    fs.writeFileSync(file, unquotedTimes ? text.replace(/'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)'/g, '$1') : text);
    return file;
  };

  it('eval: an exception given with --objects admits the ConfigMap the suite denies, with its warning and audit annotation; in another namespace it does not', async function () {
    const suiteFile = write('suite.yaml', [suite]);
    const objects = write('exception.yaml', [exception]);
    const covered = await runCli(['eval', '--suite', suiteFile, '--object', write('cm-a.yaml', [configMap('team-a')]), '--objects', objects]);
    expect(covered.stderr).to.equal('');
    const answer = JSON.parse(covered.stdout);
    expect(answer.allowed).to.equal(true);
    const owner = answer.webhooks.find((w: { name: string }) => w.name === 'owner.owners.admission.portcullis.dev');
    expect(owner.review.response.warnings).to.deep.equal([WARNING]);
    expect(owner.review.response.auditAnnotations).to.deep.equal({ exception: 'team-a/legacy' });

    const elsewhere = await runCli(['eval', '--suite', suiteFile, '--object', write('cm-b.yaml', [configMap('team-b')]), '--objects', objects]);
    expect(JSON.parse(elsewhere.stdout)).to.deep.include({ allowed: false, message: DENIED });
  });

  it('eval --now: before expires admits with the warning, from expires on denies; a time that is not RFC 3339 is a usage error', async function () {
    const args = ['eval', '--suite', write('suite.yaml', [suite]), '--object', write('cm-a.yaml', [configMap('team-a')]), '--objects', write('exception.yaml', [exception])];
    const before = await runCli([...args, '--now', '2029-12-31T23:59:59Z']);
    expect(JSON.parse(before.stdout)).to.deep.include({ allowed: true });
    const owner = JSON.parse(before.stdout).webhooks.find((w: { name: string }) => w.name === 'owner.owners.admission.portcullis.dev');
    expect(owner.review.response.warnings).to.deep.equal([WARNING]);
    const after = await runCli([...args, '--now', '2030-01-01T00:00:00Z']);
    expect(JSON.parse(after.stdout)).to.deep.include({ allowed: false, message: DENIED });
    const bad = await runCli([...args, '--now', 'tomorrow']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--now must be an RFC 3339 time such as 2026-12-31T00:00:00Z, not tomorrow');
  });

  it('test: now: before expires admits with the warning, after it denies (file and case), and a case can expect the warning', async function () {
    write('suite.yaml', [suite]);
    const cases = [
      { name: 'covered', object: configMap('team-a'), expect: { allowed: true, warnings: [WARNING], webhooks: { owner: { allowed: true, auditAnnotations: { exception: 'team-a/legacy' } } } } },
      { name: 'expired', now: '2030-01-01T00:00:00Z', object: configMap('team-a'), expect: { allowed: false, message: DENIED, warnings: [] } },
      { name: 'other namespace', object: configMap('team-b'), expect: { allowed: false, message: DENIED } },
    ];
    const before = write('before.portcullis-test.yaml', [{ suites: ['suite.yaml'], objects: [exception], now: '2029-12-31T23:59:59Z', cases }]);
    const result = await runCli(['test', before]);
    expect(result.stdout).to.contain('4 of 4 expectations met');
    expect(result.code).to.equal(0);

    // The file's now: past expires: the covered case is denied now.
    const after = write('after.portcullis-test.yaml', [{ suites: ['suite.yaml'], objects: [exception], now: '2030-06-01T00:00:00Z', cases: [cases[0]] }]);
    const expired = await runCli(['test', after]);
    expect(expired.code).to.equal(1);
    expect(expired.stdout).to.contain('0 of 2 expectations met');
  });

  it('test: a PodSecurity exception for capabilities on one image admits NET_ADMIN for it, not for another image, not as root (times unquoted)', async function () {
    write('suite.yaml', [suite]);
    const netTool = {
      ...exception,
      metadata: { name: 'net-tool', namespace: 'shop' },
      spec: { suite: 'owners', webhook: 'pod-security', reason: 'needs NET_ADMIN', expires: '2030-01-01T00:00:00Z', podSecurity: { controls: ['capabilities'], images: ['registry.example.com/net/*'] } },
    };
    const file = write(
      'psa.portcullis-test.yaml',
      [
        {
          suites: ['suite.yaml'],
          objects: [restricted('shop'), netTool],
          now: '2029-01-01T00:00:00Z',
          cases: [
            { name: 'listed image', object: pod(TOOL), expect: { allowed: true, warnings: ['admitted by exception shop/net-tool (expires 2030-01-01T00:00:00Z): needs NET_ADMIN'] } },
            { name: 'other image', object: pod('registry.example.com/web:1.0'), expect: { allowed: false } },
            { name: 'as root', object: pod(TOOL, false), expect: { allowed: false } },
          ],
        },
      ],
      true,
    );
    expect(fs.readFileSync(file, 'utf8')).to.contain('now: 2029-01-01T00:00:00Z');
    const result = await runCli(['test', file]);
    expect(result.stdout).to.contain('3 of 3 expectations met');
    expect(result.code).to.equal(0);
  });

  it('scan: an exception among the --suites files admits the object it covers, with the warning', async function () {
    const suites = write('scan-suites.yaml', [suite, exception]);
    const target = write('scan-target.yaml', [configMap('team-a'), { ...configMap('team-a'), metadata: { name: 'other', namespace: 'team-a' } }]);
    const result = await runCli(['scan', '--suites', suites, target, '-o', 'json']);
    const report = JSON.parse(result.stdout);
    const text = JSON.stringify(report);
    expect(text).to.contain(WARNING);
    expect(result.code).to.equal(1); // the other ConfigMap is still denied
  });

  describe('ClusterAdmissionExceptions', function () {
    const clusterException = {
      apiVersion: API_VERSION,
      kind: 'ClusterAdmissionException',
      metadata: { name: 'legacy-teams' },
      spec: { suite: 'owners', webhook: 'owner', reason: 'legacy teams, labelled in Q1', expires: '2030-01-01T00:00:00Z', namespaceSelector: { matchLabels: { legacy: 'true' } } },
    };
    const CLUSTER_WARNING = 'admitted by exception legacy-teams (expires 2030-01-01T00:00:00Z): legacy teams, labelled in Q1';
    const namespaces = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { legacy: 'true' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b' } },
    ];

    it('eval: one given with --objects admits in the namespaces it selects, with its warning and audit annotation, not in another', async function () {
      const args = ['eval', '--suite', write('suite.yaml', [suite]), '--objects', write('cluster-exception.yaml', [clusterException, ...namespaces])];
      const covered = await runCli([...args, '--object', write('cm-a.yaml', [configMap('team-a')])]);
      expect(covered.stderr).to.equal('');
      const answer = JSON.parse(covered.stdout);
      expect(answer.allowed).to.equal(true);
      const owner = answer.webhooks.find((w: { name: string }) => w.name === 'owner.owners.admission.portcullis.dev');
      expect(owner.review.response.warnings).to.deep.equal([CLUSTER_WARNING]);
      expect(owner.review.response.auditAnnotations).to.deep.equal({ exception: 'legacy-teams' });
      const elsewhere = await runCli([...args, '--object', write('cm-b.yaml', [configMap('team-b')])]);
      expect(JSON.parse(elsewhere.stdout)).to.deep.include({ allowed: false, message: DENIED });
    });

    it('test and scan: applied as the operator applies it, until expires', async function () {
      write('suite.yaml', [suite]);
      const cases = [
        { name: 'selected', object: configMap('team-a'), expect: { allowed: true, warnings: [CLUSTER_WARNING] } },
        { name: 'expired', now: '2030-01-01T00:00:00Z', object: configMap('team-a'), expect: { allowed: false, message: DENIED } },
        { name: 'not selected', object: configMap('team-b'), expect: { allowed: false, message: DENIED } },
      ];
      const file = write('cluster.portcullis-test.yaml', [{ suites: ['suite.yaml'], objects: [clusterException, ...namespaces], now: '2029-12-31T23:59:59Z', cases }]);
      const result = await runCli(['test', file]);
      expect(result.stdout).to.contain('3 of 3 expectations met');
      expect(result.code).to.equal(0);

      const scanned = await runCli(['scan', '--suites', write('scan-cluster.yaml', [suite, clusterException, ...namespaces]), write('scan-cluster-target.yaml', [configMap('team-a')]), '-o', 'json']);
      expect(JSON.stringify(JSON.parse(scanned.stdout))).to.contain(CLUSTER_WARNING);
      expect(scanned.code).to.equal(0);
    });

    it('refuses one that names a webhook its suite lacks, as the operator does on apply', async function () {
      const objects = write('bad-cluster.yaml', [{ ...clusterException, spec: { ...clusterException.spec, webhook: 'nope' } }]);
      const result = await runCli(['eval', '--suite', write('suite.yaml', [suite]), '--object', write('cm.yaml', [configMap('team-a')]), '--objects', objects]);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.contain('ClusterAdmissionException "legacy-teams" is invalid: spec.webhook: AdmissionSuite owners has no webhook named "nope"');
    });
  });

  it('refuses an exception that names a webhook its suite lacks, as the operator does on apply', async function () {
    const suiteFile = write('suite.yaml', [suite]);
    const objects = write('bad.yaml', [{ ...exception, spec: { ...exception.spec, webhook: 'nope' } }]);
    const result = await runCli(['eval', '--suite', suiteFile, '--object', write('cm.yaml', [configMap('team-a')]), '--objects', objects]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain('AdmissionException "legacy" is invalid: spec.webhook: AdmissionSuite owners has no webhook named "nope"');
  });
});
