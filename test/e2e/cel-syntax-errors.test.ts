/**
 * CEL syntax errors through the real API server: the API server still answers every row of
 * test/fixtures/cel-syntax-errors.ts as recorded (those with several errors too) (so the table the unit test holds Portcullis to
 * cannot rot), and a suite with such an expression is refused by the suite-validation webhook, and
 * reported in its status, in the same words: line, column, token and caret. Owns only the suites
 * named cel-syntax-*; must not touch other suites or the table.
 */
import { expect } from 'chai';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { condition, createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import { API_VERSION, GROUP, PLURAL, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { MULTIPLE_SYNTAX_ERRORS, SYNTAX_ERRORS, type SyntaxErrorRow } from '../fixtures/cel-syntax-errors.ts';

const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const FIELD = 'spec.webhooks[0].validations[0].expression';
const spec = (row: SyntaxErrorRow): SuiteSpec => ({ webhooks: [{ name: 'w', type: 'Validating', rules: configMaps, validations: [{ expression: row.expression }] }] });
const row = (name: string) => [...SYNTAX_ERRORS, ...MULTIPLE_SYNTAX_ERRORS].find((r) => r.name === name)!;

/** The API server's words for `expression` as a ValidatingAdmissionPolicy's validation (server-side dry run), after `compilation failed: `. */
async function apiServerWords(expression: string): Promise<string> {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'cel-syntax-probe' },
    spec: { matchConstraints: { resourceRules: configMaps }, validations: [{ expression }] },
  };
  const response = await rawRequest('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies?dryRun=All', policy);
  const cause = (response.body.details as { causes?: { field?: string; message?: string }[] } | undefined)?.causes?.[0];
  expect(cause?.field, `${expression}: refused for its expression`).to.equal('spec.validations[0].expression');
  const match = /^Invalid value: "(?:[^"\\]|\\.)*": compilation failed: (.*)$/s.exec(cause?.message ?? '');
  expect(match, cause?.message).to.not.equal(null);
  return match![1]!;
}

describe('CEL syntax errors: the API server’s line, column and caret, from the suite-validation webhook and in status', function () {
  this.timeout(300_000);
  let operator: Operator;

  before(async function () {
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    await deleteSuite('cel-syntax-status');
    await operator?.stop();
  });

  it('the API server still answers every row of the table as recorded', async function () {
    const differing: string[] = [];
    for (const r of [...SYNTAX_ERRORS, ...MULTIPLE_SYNTAX_ERRORS]) {
      const live = await apiServerWords(r.expression);
      if (live !== r.apiServer) differing.push(`${r.name}: now ${JSON.stringify(live)}`);
    }
    expect(differing).to.deep.equal([]);
  });

  it('the suite-validation webhook refuses a suite with a broken expression in the API server’s words', async function () {
    for (const name of ['line-2', 'AND', 'bad-escape', 'non-ascii', 'unclosed-paren', 'doubled-operators-on-lines', 'close-then-unclosed']) {
      const words = await apiServerWords(row(name).expression);
      const body = { apiVersion: API_VERSION, kind: 'AdmissionSuite', metadata: { name: `cel-syntax-${name.toLowerCase()}` }, spec: spec(row(name)) };
      const response = await rawRequest('POST', `/apis/${GROUP}/${VERSION}/${PLURAL}?dryRun=All`, body);
      expect(response.status, name).to.equal(422);
      expect(response.body.message, name).to.equal(`admission webhook "${SUITE_VALIDATION.webhook}" denied the request: AdmissionSuite "${body.metadata.name}" is invalid: ${FIELD}: compilation failed: ${words}`);
    }
  });

  it('a suite that got in while the operator was stopped shows the same words in its Ready condition', async function () {
    // With the operator stopped the suite-validation webhook fails open; the operator reports the suite once it starts.
    await operator.stop();
    const broken = row('line-2');
    await eventually(() => createSuite('cel-syntax-status', spec(broken)), { what: 'the suite to be stored while the operator is stopped' });
    operator = await startTestOperator();
    const suite = await waitForCondition('cel-syntax-status', 'Ready', 'False');
    expect(condition(suite, 'Ready')?.reason).to.equal('InvalidSpec');
    expect(condition(suite, 'Ready')?.message).to.contain(`${FIELD}: compilation failed: ${await apiServerWords(broken.expression)}`);
  });
});
