/**
 * A MAP JSONPatch expression's type errors, and `JSONPatch{...}` or `jsonpatch.escapeKey` outside a
 * mutation's expression, refused on compile in kube-apiserver 1.37's words (the table
 * test/fixtures/map-write-errors.ts, recorded from the API server and held to it by
 * test/e2e/map-write-errors.test.ts), by the compile every surface shares, and by `portcullis
 * validate` as a user runs it. Owns these checks only; must not change the table.
 */
import { expect } from 'chai';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { WebhookSpec } from '../../../../src/api/types.ts';
import { MAP_WRITE_ERRORS, type MapWriteErrorRow } from '../../../fixtures/map-write-errors.ts';
import { runCli } from '../../../support/cli.ts';
import { tempFolder } from '../../../support/temp-files.ts';

function webhook(row: MapWriteErrorRow): WebhookSpec {
  const spec =
    row.place === 'mutation'
      ? { name: 'w', type: 'Mutating', rules: [], mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: row.expression } }] }
      : { name: 'w', type: 'Validating', rules: [], validations: [{ expression: row.expression }] };
  return spec as unknown as WebhookSpec;
}

/** The compile error's words after its field, or undefined when it compiles. */
function refusal(row: MapWriteErrorRow): string | undefined {
  try {
    compileRules('s', webhook(row), 'spec.webhooks[0]', 'Fail');
    return undefined;
  } catch (err) {
    const field = row.place === 'mutation' ? 'spec.webhooks[0].mutations[0].jsonPatch.expression: ' : 'spec.webhooks[0].validations[0].expression: ';
    const message = (err as Error).message;
    expect(message.startsWith(field), message).to.equal(true);
    return message.slice(field.length);
  }
}

describe('policy: MAP JSONPatch write errors on compile, in the API server’s words', function () {
  for (const row of MAP_WRITE_ERRORS) {
    it(`${row.name}: ${row.apiServer === undefined ? 'compiles' : 'refused'} as kube-apiserver 1.37 answers`, function () {
      expect(refusal(row)).to.equal(row.apiServer);
    });
  }

  it('portcullis validate says the refusal at the expression', async function () {
    this.timeout(60_000);
    const folder = tempFolder('map-write-errors-', {
      'suite.yaml': `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: patches }
spec:
  webhooks:
    - name: typed
      type: Mutating
      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
      mutations:
        - patchType: JSONPatch
          jsonPatch: { expression: "[JSONPatch{op: 1, path: '/data/x'}]" }
    - name: checks
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
      validations: [{ expression: "[JSONPatch{op: 'add', path: '/x'}].size() > 0" }]
`,
    });
    const result = await runCli(['validate', `${folder}/suite.yaml`]);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stdout).to.contain("spec.webhooks[0].mutations[0].jsonPatch.expression: compilation failed: expected type of field 'op' is 'string' but provided type is 'int'");
    expect(result.stdout).to.contain("spec.webhooks[1].validations[0].expression: compilation failed: undeclared reference to 'JSONPatch' (in container '')");
  });
});
