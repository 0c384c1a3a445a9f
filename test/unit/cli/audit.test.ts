/**
 * `portcullis audit`'s parts that need no cluster: what counts as denied, the text it prints per
 * webhook, the files a directory names, and the exit codes of what is refused before the cluster
 * is asked anything. (Against a real API server and the background audit: test/e2e/cli-audit.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { auditText, wouldDeny, type AuditOutput } from '../../../src/cli/audit.ts';
import { objectFiles } from '../../../src/cli/files.ts';
import { runCli } from '../../support/cli.ts';

describe('portcullis audit, offline parts', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-audit-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('counts a fail or an error as a denial; a warning or a skip is not one', function () {
    expect(wouldDeny([{ rule: 'validations[0]', result: 'fail', message: 'no' }])).to.equal(true);
    expect(
      wouldDeny([
        { rule: 'validations[0]', result: 'pass' },
        { rule: 'validations[1]', result: 'error', message: 'no such key' },
      ]),
    ).to.equal(true);
    expect(
      wouldDeny([
        { rule: 'validations[0]', result: 'warn', message: 'hm' },
        { rule: 'validations[1]', result: 'skip', message: 'reads request.userInfo' },
      ]),
    ).to.equal(false);
  });

  it('prints per webhook the objects evaluated and each failing check of those it would deny', function () {
    const output: AuditOutput = {
      webhooks: [
        {
          policy: 'guard/owner',
          source: { kind: 'AdmissionSuite', name: 'guard', webhook: 'owner' },
          action: 'Deny',
          evaluated: 3,
          denied: 1,
          objects: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              namespace: 'shop',
              name: 'bad',
              uid: '1',
              results: [
                { rule: 'validations[0]', result: 'fail', message: 'bad has no owner' },
                { rule: 'validations[1]', result: 'skip', message: 'reads request.userInfo' },
              ],
            },
            { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'good', uid: '2', results: [{ rule: 'validations[0]', result: 'pass' }] },
            { apiVersion: 'v1', kind: 'Namespace', name: 'shop', uid: '3', results: [{ rule: 'validations[0]', result: 'warn', message: 'hm' }] },
          ],
        },
        { policy: 'shop/size', source: { kind: 'AdmissionPolicy', name: 'size', namespace: 'shop' }, action: 'Warn', evaluated: 0, denied: 0, objects: [] },
      ],
      evaluated: 3,
      denied: 1,
      problems: [],
    };
    expect(auditText(output)).to.equal(
      [
        'AdmissionSuite guard/owner (Deny): 3 evaluated, 1 would be denied, 1 warned',
        '  ConfigMap shop/bad: validations[0] fail: bad has no owner',
        'AdmissionPolicy shop/size (Warn): 0 evaluated, 0 would be denied',
        '',
        '1 of 3 objects would be denied',
        '',
      ].join('\n'),
    );
  });

  it("reads a directory's YAML and JSON files in name order, test files left out", function () {
    const tree = path.join(dir, 'tree');
    fs.mkdirSync(path.join(tree, 'sub'), { recursive: true });
    for (const name of ['b.yaml', 'a.json', 'sub/c.yml', 'x.portcullis-test.yaml', 'notes.md']) fs.writeFileSync(path.join(tree, name), '{}');
    expect(objectFiles(tree)).to.deep.equal(['a.json', 'b.yaml', 'sub/c.yml'].map((n) => path.join(tree, n)));
    expect(objectFiles(path.join(tree, 'notes.md'))).to.deep.equal([path.join(tree, 'notes.md')]);
    expect(() => objectFiles(path.join(tree, 'missing.yaml'))).to.throw('ENOENT');
  });

  it('exits 2 with no file, no suite, an unknown output or no cluster; 1 for a suite the operator refuses, before asking any cluster', async function () {
    const none = await runCli(['audit']);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.contain('audit needs at least one FILE or DIR');
    const plain = path.join(dir, 'cm.yaml');
    fs.writeFileSync(plain, 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n');
    expect((await runCli(['audit', plain])).stderr).to.contain('no AdmissionSuite or AdmissionPolicy');
    expect((await runCli(['audit', 'config/samples/replica-limit.yaml', '-o', 'yaml'])).stderr).to.contain('-o must be text or json, not yaml');
    const nowhere = await runCli(['audit', 'config/samples/replica-limit.yaml', '--kubeconfig', path.join(dir, 'missing')]);
    expect(nowhere.code).to.equal(2);
    expect(nowhere.stderr).to.contain('audit needs a cluster to read objects from');
    const broken = path.join(dir, 'broken.yaml');
    fs.writeFileSync(
      broken,
      'apiVersion: admission.portcullis.dev/v1alpha1\nkind: AdmissionSuite\nmetadata: { name: broken }\nspec:\n  webhooks:\n    - name: w\n      type: Validating\n      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]\n      validations: [{ expression: "object.metadata.name.size()" }]\n',
    );
    const refused = await runCli(['audit', broken, '--kubeconfig', path.join(dir, 'missing')]);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/AdmissionSuite "broken" is invalid: spec\.webhooks\[0\]\.validations\[0\]\.expression/);
  });
});
