/**
 * The AdmissionSuite CRD as the API server enforces it, with no operator involved: the rules it
 * checks itself (x-kubernetes-validations) refused with their messages, and webhooks merged by
 * name under server-side apply.
 */
import { expect } from 'chai';
import { kubectl } from '../support/cluster.ts';
import { deleteSuiteObject, getSuite } from '../support/suites.ts';
import type { WebhookSpec } from '../../src/api/types.ts';

const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const validating = (name: string, extra: Partial<WebhookSpec> = {}) => ({ name, type: 'Validating', rules: pods, validations: [{ expression: 'true' }], ...extra });
const manifest = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name }, spec });

describe('the AdmissionSuite CRD, enforced by the API server', function () {
  const names = ['crd-refused', 'crd-merged', 'a-suite-name-of-forty-one-characters-long'];
  after(async function () {
    for (const name of names) await deleteSuiteObject(name);
  });

  const cases: [string, string, Record<string, unknown>, string][] = [
    ['both service and url', 'crd-refused', { url: 'https://hooks.example', service: {}, webhooks: [validating('a')] }, 'exactly one of service and url may be set, not both'],
    ['a url to an IP address', 'crd-refused', { url: 'https://10.0.0.1:9443', webhooks: [validating('a')] }, 'must name its host by DNS name, not an IP address'],
    ['a plain http url', 'crd-refused', { url: 'http://hooks.example', webhooks: [validating('a')] }, 'must be an https URL'],
    ['two webhooks of one name', 'crd-refused', { webhooks: [validating('a'), validating('a')] }, 'spec.webhooks[1]: Duplicate value'],
    ['validations on a Mutating webhook', 'crd-refused', { webhooks: [validating('a', { type: 'Mutating' })] }, 'only Validating webhooks have validations'],
    ['mutations on a Validating webhook', 'crd-refused', { webhooks: [{ ...validating('a'), validations: undefined, mutations: [{ patchExpression: '[]' }] }] }, 'only Mutating webhooks have mutations'],
    ['a handler beside validations', 'crd-refused', { webhooks: [validating('a', { handler: { name: 'RequiredLabels' } })] }, 'either a handler or validations/mutations, not both'],
    ['Deny with Warn', 'crd-refused', { webhooks: [validating('a', { validationActions: ['Deny', 'Warn'] })] }, 'Deny and Warn may not be used together'],
    ['renewBefore not shorter than duration', 'crd-refused', { certificate: { duration: '24h', renewBefore: '24h' }, webhooks: [validating('a')] }, 'renewBefore must be shorter than duration'],
    ['a suite name longer than 40 characters', 'a-suite-name-of-forty-one-characters-long', { webhooks: [validating('a')] }, 'metadata.name must be a DNS label of at most 40 characters'],
  ];
  for (const [what, name, spec, message] of cases) {
    it(`refuses ${what}, saying why`, async function () {
      const result = await kubectl(['apply', '-f', '-'], manifest(name, spec));
      expect(result.code, result.stdout).to.not.equal(0);
      expect(result.stderr).to.contain(message);
      expect(await getSuite(name)).to.equal(undefined);
    });
  }

  it('merges webhooks by name under server-side apply: two appliers each keep their own', async function () {
    // Both name a webhook that objectSelector keeps from matching anything: only the stored object matters here.
    const never = { objectSelector: { matchLabels: { 'crd-e2e': 'never' } } };
    for (const [manager, webhook] of [
      ['team-a', 'from-a'],
      ['team-b', 'from-b'],
    ]) {
      const result = await kubectl(['apply', '--server-side', `--field-manager=${manager}`, '-f', '-'], manifest('crd-merged', { webhooks: [validating(webhook!, never)] }));
      expect(result.code, result.stderr).to.equal(0);
    }
    expect((await getSuite('crd-merged'))!.spec.webhooks.map((w) => w.name)).to.deep.equal(['from-a', 'from-b']);
    // And one applier dropping its webhook removes that one alone.
    const dropped = await kubectl(['apply', '--server-side', '--field-manager=team-a', '-f', '-'], manifest('crd-merged', { webhooks: [validating('from-a-2', never)] }));
    expect(dropped.code, dropped.stderr).to.equal(0);
    expect((await getSuite('crd-merged'))!.spec.webhooks.map((w) => w.name).sort()).to.deep.equal(['from-a-2', 'from-b']);
  });

  it('explains every webhook field to kubectl explain', async function () {
    for (const [field, words] of [
      ['spec.webhooks.type', 'Validating'],
      ['spec.webhooks.params.notFoundAction', 'parameterNotFoundAction'],
      ['spec.webhooks.mutations.patchExpression', 'CEL yielding a list of {op, path, value} maps'],
      ['spec.webhooks.handler.config', 'validated when the suite is applied'],
      ['status.certificate.notAfter', 'expires'],
    ]) {
      const explained = await kubectl(['explain', `admissionsuite.${field}`]);
      expect(explained.code, explained.stderr).to.equal(0);
      expect(explained.stdout.replace(/\s+/g, ' '), field).to.contain(words);
    }
  });
});
