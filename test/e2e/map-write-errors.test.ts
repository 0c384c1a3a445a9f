/**
 * What the API server refuses on write of a MutatingAdmissionPolicy's JSONPatch expression, and of
 * `JSONPatch{...}` or `jsonpatch.escapeKey` where only a MAP's mutations may name them (a VAP's
 * validation): a suite with the same expression is refused on apply by the suite-validation webhook
 * for the same field in the same words (test/fixtures/map-write-errors.ts, the unit test's table;
 * this file also holds the table to the live API server, so it cannot rot). Owns only its dry-run
 * writes (nothing is stored); must not touch the MAP differential's objects.
 */
import { expect } from 'chai';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { rawRequest } from '../support/raw.ts';
import { GROUP, PLURAL, VERSION, API_VERSION } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { MAP_WRITE_ERRORS, apiServerReason, type MapWriteErrorRow } from '../fixtures/map-write-errors.ts';

const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

/** The API server's answer to a dry-run write of the row as a MAP (mutation) or VAP (validation): the field refused and the words after `Invalid value: "...": `; undefined when accepted. */
async function apiServerRefusal(row: MapWriteErrorRow): Promise<{ field: string; reason: string } | undefined> {
  const [resource, kind, spec] =
    row.place === 'mutation'
      ? ['mutatingadmissionpolicies', 'MutatingAdmissionPolicy', { reinvocationPolicy: 'Never', mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: row.expression } }] }]
      : ['validatingadmissionpolicies', 'ValidatingAdmissionPolicy', { validations: [{ expression: row.expression }] }];
  const policy = { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: `map-write-${row.name}` }, spec: { matchConstraints: { resourceRules: configMaps }, ...spec } };
  const response = await rawRequest('POST', `/apis/admissionregistration.k8s.io/v1/${resource}?dryRun=All`, policy);
  if (response.status < 300) return undefined;
  const cause = (response.body.details as { causes?: { field?: string; message?: string }[] } | undefined)?.causes?.[0];
  return { field: (cause?.field ?? '').replace(/^spec\./, ''), reason: (cause?.message ?? response.body.message ?? '').replace(/^Invalid value: "(?:[^"\\]|\\.)*": /s, '') };
}

/** The suite-validation webhook's refusal of the row as a suite webhook (dry run): its first field, its reason's first line. */
async function suiteRefusal(row: MapWriteErrorRow): Promise<{ field: string; reason: string } | undefined> {
  const webhook =
    row.place === 'mutation'
      ? { name: 'w', type: 'Mutating', rules: configMaps, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: row.expression } }] }
      : { name: 'w', type: 'Validating', rules: configMaps, validations: [{ expression: row.expression }] };
  const body = { apiVersion: API_VERSION, kind: 'AdmissionSuite', metadata: { name: `map-write-${row.name}` }, spec: { webhooks: [webhook] } };
  const response = await rawRequest('POST', `/apis/${GROUP}/${VERSION}/${PLURAL}?dryRun=All`, body);
  if (response.status < 300) return undefined;
  const match = /is invalid: spec\.webhooks\[0\]\.([^:]+): ([^\n]*?)(?:; spec\.|\n|$)/.exec(response.body.message ?? '');
  return { field: match?.[1] ?? '', reason: match?.[2] ?? response.body.message ?? '' };
}

describe('MutatingAdmissionPolicy write errors: JSONPatch type errors and JSONPatch outside mutations, refused on apply in the API server’s words', function () {
  this.timeout(300_000);
  let operator: Operator;

  before(async function () {
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    await operator?.stop();
  });

  it('the API server still answers every row of the table as recorded', async function () {
    const differing: string[] = [];
    for (const row of MAP_WRITE_ERRORS) {
      const live = await apiServerRefusal(row);
      const words = live === undefined ? undefined : apiServerReason(live.reason);
      if (words !== row.apiServer) differing.push(`${row.name}: now ${JSON.stringify(live)}`);
    }
    expect(differing).to.deep.equal([]);
  });

  for (const row of MAP_WRITE_ERRORS) {
    it(`${row.name}: a suite is ${row.apiServer === undefined ? 'accepted' : 'refused in the same words'}`, async function () {
      const live = await apiServerRefusal(row);
      const suite = await suiteRefusal(row);
      if (live === undefined) {
        expect(suite, 'the suite accepted as the API server accepts the policy').to.equal(undefined);
        return;
      }
      const field = row.place === 'mutation' ? 'mutations[0].jsonPatch.expression' : 'validations[0].expression';
      expect(live.field, 'the field the API server names').to.equal(field);
      expect(suite, 'the suite refused').to.deep.equal({ field, reason: apiServerReason(live.reason) });
    });
  }
});
