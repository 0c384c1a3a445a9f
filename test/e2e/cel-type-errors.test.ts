/**
 * CEL type errors through the real API server: it still answers every row of
 * test/fixtures/cel-type-errors.ts as recorded (the table the unit test holds Portcullis to cannot
 * rot), and a suite with such an expression is refused by `portcullis validate` in those words.
 * Creates nothing (server-side dry run only); must not change the table.
 */
import { expect } from 'chai';
import { rawRequest } from '../support/raw.ts';
import { runCli, scratchFiles } from '../support/cli.ts';
import { TYPE_ERRORS } from '../fixtures/cel-type-errors.ts';

const configMaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

/** The API server's words for `expression` as a ValidatingAdmissionPolicy's validation (server-side dry run), after `Invalid value: "...": `. */
async function apiServerWords(expression: string): Promise<string> {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'cel-type-probe' },
    spec: { matchConstraints: { resourceRules: configMaps }, validations: [{ expression }] },
  };
  const response = await rawRequest('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies?dryRun=All', policy);
  const cause = (response.body.details as { causes?: { field?: string; message?: string }[] } | undefined)?.causes?.[0];
  expect(cause?.field, `${expression}: refused for its expression`).to.equal('spec.validations[0].expression');
  const match = /^Invalid value: "(?:[^"\\]|\\.)*": (.*)$/s.exec(cause?.message ?? '');
  expect(match, cause?.message).to.not.equal(null);
  return match![1]!;
}

describe('CEL type errors: the API server’s words, line, column and caret', function () {
  const files = scratchFiles('portcullis-type-errors-');

  it('the API server still answers every row of the table as recorded', async function () {
    const differing: string[] = [];
    for (const row of TYPE_ERRORS) {
      const live = await apiServerWords(row.expression);
      if (live !== row.apiServer) differing.push(`${row.name}: now ${JSON.stringify(live)}`);
    }
    expect(differing).to.deep.equal([]);
  });

  it('portcullis validate refuses a suite with such an expression in the API server’s words', async function () {
    const row = TYPE_ERRORS.find((r) => r.name === 'line-2')!;
    const file = files.write([
      { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 'cel-type' }, spec: { webhooks: [{ name: 'w', type: 'Validating', rules: configMaps, validations: [{ expression: row.expression }] }] } },
    ]);
    const result = await runCli(['validate', file]);
    expect(result.code, result.stdout + result.stderr).to.equal(1);
    expect(result.stdout).to.contain(`AdmissionSuite "cel-type" is invalid: spec.webhooks[0].validations[0].expression: ${await apiServerWords(row.expression)}\n`);
  });
});
