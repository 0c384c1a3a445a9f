/**
 * `portcullis eval` offline with a mutation written as a MutatingAdmissionPolicy writes it (issue
 * 53): the JSONPatch form patches the object as the operator would, and so does the
 * ApplyConfiguration form, merged with no schema (none is read offline: lists whole), which the
 * answer warns of. Owns these checks only; the engine's own are
 * test/unit/policy/engine/map-json-patch.test.ts and map-apply-configuration.test.ts, the API
 * server's comparison the MAP differentials.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../../support/cli.ts';

const JSON_PATCH = "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/team'), value: 'blue'}]";
const APPLY = "Object{metadata: Object.metadata{labels: {'example.com/team': 'blue'}}, data: {'added': 'yes'}}";
const suite = (patchType: string, field: string, expression: string) => `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: map-form }
spec:
  webhooks:
    - name: team-label
      type: Mutating
      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
      mutations:
        - patchType: ${patchType}
          ${field}:
            expression: ${JSON.stringify(expression)}
`;
const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a, namespace: default, labels: { x: "1" } }\ndata: { k: v }\n';

describe('portcullis eval: MutatingAdmissionPolicy mutations', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-map-'));
    fs.writeFileSync(path.join(dir, 'cm.yaml'), configMap);
    fs.writeFileSync(path.join(dir, 'json-patch.yaml'), suite('JSONPatch', 'jsonPatch', JSON_PATCH));
    fs.writeFileSync(path.join(dir, 'apply-configuration.yaml'), suite('ApplyConfiguration', 'applyConfiguration', APPLY));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('patches the object with a JSONPatch mutation', async function () {
    const result = await runCli(['eval', '--suite', path.join(dir, 'json-patch.yaml'), '--object', path.join(dir, 'cm.yaml')]);
    expect(result.code, result.stderr).to.equal(0);
    expect(JSON.parse(result.stdout).patchedObject.metadata.labels).to.deep.equal({ x: '1', 'example.com/team': 'blue' });
  });

  it('merges an ApplyConfiguration mutation into the object, warning that no schema was known', async function () {
    const result = await runCli(['eval', '--suite', path.join(dir, 'apply-configuration.yaml'), '--object', path.join(dir, 'cm.yaml')]);
    expect(result.code, result.stderr).to.equal(0);
    const answer = JSON.parse(result.stdout);
    expect(answer.patchedObject.metadata.labels).to.deep.equal({ x: '1', 'example.com/team': 'blue' });
    expect(answer.patchedObject.data).to.deep.equal({ k: 'v', added: 'yes' });
    expect(JSON.stringify(answer)).to.contain('no schema of ConfigMap is known here');
  });
});
