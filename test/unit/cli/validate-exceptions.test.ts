/**
 * `portcullis validate` on AdmissionExceptions, as the operator's exception webhook judges them:
 * the CRD's schema, then a protected namespace, and, when the file holds the suite, the webhook and
 * validations it names; its suite elsewhere, the rest is said to be checked on apply.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { runCli } from '../../support/cli.ts';
import { API_VERSION } from '../../../src/api/types.ts';

const suite = {
  apiVersion: API_VERSION,
  kind: 'AdmissionSuite',
  metadata: { name: 'owners' },
  spec: { exceptions: { allowed: true }, webhooks: [{ name: 'owner', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], validations: [{ expression: 'true' }] }] },
};
const exception = (name: string, namespace: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'AdmissionException',
  metadata: { name, namespace },
  spec: { suite: 'owners', webhook: 'owner', reason: 'migration', expires: '2030-01-01T00:00:00Z', ...spec },
});

describe('portcullis validate: AdmissionExceptions', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-validate-exceptions-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, objects: unknown[]) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, objects.map((o) => yaml.dump(o)).join('---\n'));
    return file;
  };

  it('accepts one its suite takes, and refuses, naming each field, one in a protected namespace for a webhook and validation the suite lacks', async function () {
    const file = write('with-suite.yaml', [suite, exception('ok', 'team-a', {}), exception('bad', 'kube-system', { webhook: 'nope' }), exception('past', 'team-a', { validations: [1] })]);
    const result = await runCli(['validate', file]);
    expect(result.code).to.equal(1);
    expect(result.stdout.trimEnd().split('\n')).to.deep.equal([
      `${file}: AdmissionSuite "owners" is valid`,
      `${file}: AdmissionException "ok" in namespace team-a is valid`,
      `${file}:34: document 3: AdmissionException "bad" is invalid: metadata.namespace: kube-system is protected: no exception applies there (the operator's namespace, kube-system and kube-node-lease are never sent to a webhook of ours); spec.webhook: AdmissionSuite owners has no webhook named "nope"`,
      `${file}:45: document 4: AdmissionException "past" is invalid: spec.validations[0]: webhook owner has 1 validations (indexes 0 to 0)`,
    ]);
  });

  it('checks one whose suite is elsewhere by its shape, and says the rest is checked on apply; refuses an unknown field as the API server does', async function () {
    const alone = write('alone.yaml', [exception('alone', 'team-a', {})]);
    const ok = await runCli(['validate', alone]);
    expect(ok.code).to.equal(0);
    expect(ok.stdout).to.equal(`${alone}: AdmissionException "alone" in namespace team-a is valid (its suite owners is not in this file: its webhook and validations are checked on apply)\n`);
    const typo = write('typo.yaml', [exception('typo', 'team-a', { reasn: 'x' })]);
    const refused = await runCli(['validate', typo]);
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.contain('AdmissionException "typo" is invalid: unknown field "spec.reasn"');
  });

  it('judges ClusterAdmissionExceptions too, as the exception webhook does (they were skipped)', async function () {
    const cluster = (name: string, spec: Record<string, unknown>) => ({ ...exception(name, 'unused', spec), kind: 'ClusterAdmissionException', metadata: { name } });
    const file = write('cluster.yaml', [suite, cluster('wide', {}), cluster('wrong', { webhook: 'nope' })]);
    const result = await runCli(['validate', file]);
    expect(result.code).to.equal(1);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 2)).to.deep.equal([`${file}: AdmissionSuite "owners" is valid`, `${file}: ClusterAdmissionException "wide" is valid`]);
    expect(lines[2]).to.match(/: document 3: ClusterAdmissionException "wrong" is invalid: spec\.webhook: AdmissionSuite owners has no webhook named "nope"$/);
  });
});
