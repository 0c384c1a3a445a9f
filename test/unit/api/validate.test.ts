/** Suites that cannot work are refused with every problem named by its field path, and nothing compiles. */
import { expect } from 'chai';
import { compileSuite } from '../../../src/registry/compile.ts';
import type { AdmissionSuite, SuiteSpec } from '../../../src/api/types.ts';

const suite = (spec: Partial<SuiteSpec>, name = 'guards'): AdmissionSuite => ({
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name, uid: 'u', generation: 1 },
  spec: { webhooks: [], ...spec },
});

const podRule = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const fields = (s: AdmissionSuite) => compileSuite(s).errors.map((e) => e.field);

describe('suite validation', function () {
  it('refuses both service and url', function () {
    expect(fields(suite({ service: { name: 's' }, url: 'https://x.example:9443', webhooks: [{ name: 'a', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }] }] }))).to.include('spec');
  });

  it('refuses an unknown handler, a handler config it does not take, and resources it does not serve', function () {
    expect(fields(suite({ webhooks: [{ name: 'a', type: 'Mutating', rules: podRule, handler: { name: 'NoSuchHandler' } }] }))).to.deep.equal(['spec.webhooks[0].handler.name']);
    expect(fields(suite({ webhooks: [{ name: 'a', type: 'Mutating', rules: podRule, handler: { name: 'AlwaysPullImages', config: { x: 1 } } }] }))).to.deep.equal(['spec.webhooks[0].handler.config.x']);
    const services = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['services'] }];
    expect(fields(suite({ webhooks: [{ name: 'a', type: 'Mutating', rules: services, handler: { name: 'AlwaysPullImages' } }] }))).to.deep.equal(['spec.webhooks[0].rules[0]']);
  });

  it('reports every problem at once', function () {
    const errors = fields(
      suite({
        certificate: { duration: 'ninety days' },
        webhooks: [
          { name: 'Bad_Name', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }], validationActions: ['Deny', 'Warn'] },
          { name: 'm', type: 'Mutating', rules: podRule, validations: [{ expression: 'true' }] },
        ],
      }),
    );
    expect(errors).to.include.members(['spec.certificate.duration', 'spec.webhooks[0].name', 'spec.webhooks[0].validationActions', 'spec.webhooks[1].validations']);
  });

  it("refuses a Service outside the operator's namespace, which the operator may not manage, naming the field", function () {
    const webhooks: SuiteSpec['webhooks'] = [{ name: 'a', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }] }];
    const elsewhere = compileSuite(suite({ service: { namespace: 'team-a', name: 'hooks' }, webhooks }), { operatorNamespace: 'portcullis-system' });
    expect(elsewhere.errors).to.have.length(1);
    expect(elsewhere.errors[0]!.field).to.equal('spec.service.namespace');
    expect(elsewhere.errors[0]!.message).to.contain("must be the operator's namespace (portcullis-system)").and.to.contain('team-a');
    expect(elsewhere.webhooks.size).to.equal(0);
    for (const service of [{ namespace: 'portcullis-system' }, { name: 'hooks' }, undefined]) {
      expect(compileSuite(suite({ service, webhooks }), { operatorNamespace: 'portcullis-system' }).errors, JSON.stringify(service)).to.deep.equal([]);
    }
  });

  it('compiles a valid suite into one webhook per entry, and nothing for an invalid one', function () {
    const ok = compileSuite(suite({ webhooks: [{ name: 'a', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }] }] }));
    expect(ok.errors).to.deep.equal([]);
    expect([...ok.webhooks.keys()]).to.deep.equal(['a']);
    expect(ok.webhooks.get('a')!.fullName).to.equal('a.guards.admission.portcullis.dev');
    const bad = compileSuite(suite({ webhooks: [{ name: 'a', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }, { expression: '((' }] }] }));
    expect(bad.webhooks.size).to.equal(0);
  });
  it('refuses variable names that are not CEL identifiers or repeat one, and empty messages, in VAP\'s words', function () {
    const errors = compileSuite(
      suite({
        typeCheckErrors: 'Sometimes' as 'Warn',
        webhooks: [
          {
            name: 'a',
            type: 'Validating',
            rules: podRule,
            variables: [
              { name: 'ok', expression: '1' },
              { name: 'not-ident', expression: '1' },
              { name: 'in', expression: '1' },
              { name: 'ok', expression: '2' },
              { name: ' ', expression: ' ' },
            ],
            validations: [{ expression: 'true', message: '  ' }, { expression: 'true', messageExpression: ' ' }],
          },
        ],
      }),
    ).errors.map((e) => `${e.field}: ${e.message}`);
    expect(errors).to.deep.equal([
      'spec.typeCheckErrors: must be Refuse or Warn',
      'spec.webhooks[0].variables[1].name: Invalid value: "not-ident": must be a valid CEL identifier',
      'spec.webhooks[0].variables[2].name: Invalid value: "in": must be a valid CEL identifier',
      'spec.webhooks[0].variables[3].name: Duplicate value: "ok"',
      'spec.webhooks[0].variables[4].name: Required value: name is not specified',
      'spec.webhooks[0].variables[4].expression: Required value: expression is not specified',
      'spec.webhooks[0].validations[0].message: must be non-empty if specified',
      'spec.webhooks[0].validations[1].messageExpression: must be non-empty if specified',
    ]);
  });
});
