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

  describe('params, resourceNames and excludeResourceRules (as VAP checks a paramRef and its match rules)', function () {
    const validating = (extra: Record<string, unknown>) => suite({ webhooks: [{ name: 'a', type: 'Validating', rules: podRule, validations: [{ expression: 'true' }], ...extra }] });
    const errors = (extra: Record<string, unknown>) => compileSuite(validating(extra)).errors;
    const cm = { apiVersion: 'v1', kind: 'ConfigMap' };

    it('params need exactly one of name and selector, and a valid selector', function () {
      expect(errors({ params: { ...cm, name: 'limits' } })).to.deep.equal([]);
      expect(errors({ params: { ...cm, selector: { matchLabels: { tier: 'gold' } } } })).to.deep.equal([]);
      expect(errors({ params: { ...cm } })).to.deep.equal([{ field: 'spec.webhooks[0].params', message: 'Required value: one of name or selector must be specified' }]);
      expect(errors({ params: { ...cm, name: 'x', selector: {} } })).to.deep.equal([{ field: 'spec.webhooks[0].params.name', message: 'Forbidden: name and selector are mutually exclusive' }]);
      expect(errors({ params: { ...cm, selector: { matchExpressions: [{ key: 'tier', operator: 'In' }] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].params.selector.matchExpressions[0].values']);
      expect(errors({ params: { ...cm, selector: { matchExpressions: [{ key: 'tier', operator: 'Maybe' }] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].params.selector.matchExpressions[0].operator']);
      expect(errors({ params: { ...cm, name: 'a/b' } })).to.deep.equal([{ field: 'spec.webhooks[0].params.name', message: "may not contain '/'" }]);
      expect(errors({ params: { ...cm, name: 'x', notFoundAction: 'Maybe' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].params.notFoundAction']);
    });

    it('refuses on apply the rule lists the API server would refuse when the configuration is written, in its words', function () {
      const rule = (over: Record<string, unknown>) => ({ rules: [{ ...podRule[0], ...over }] });
      expect(errors(rule({ resources: ['*', '*/*'] }))).to.deep.equal([{ field: 'spec.webhooks[0].rules[0].resources', message: `Invalid value: ["*","*/*"]: if '*/*' is present, must not specify other resources` }]);
      expect(errors(rule({ resources: ['*/*'] }))).to.deep.equal([]);
      expect(errors(rule({ resources: ['*', '*/scale'] }))).to.deep.equal([]);
      expect(errors(rule({ resources: ['deployments/*', 'deployments/scale'] }))).to.deep.equal([
        { field: 'spec.webhooks[0].rules[0].resources[1]', message: `Invalid value: "deployments/scale": if 'deployments/*' is present, must not specify deployments/scale` },
      ]);
      expect(errors(rule({ resources: ['*', 'pods'] }))).to.deep.equal([{ field: 'spec.webhooks[0].rules[0].resources', message: `Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources` }]);
      expect(errors(rule({ operations: ['*', 'CREATE'], apiGroups: ['*', 'apps'], apiVersions: ['v1', ''] })).map((e) => e.message)).to.deep.equal([
        `Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations`,
        `Invalid value: ["*","apps"]: if '*' is present, must not specify other API groups`,
        'Required value',
      ]);
      expect(errors({ excludeResourceRules: [{ ...podRule[0], resources: ['*/*', 'pods'] }] }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].excludeResourceRules[0].resources']);
    });

    it('resourceNames are path segments, each once; excludeResourceRules are whole rules', function () {
      const named = (resourceNames: string[]) => ({ rules: [{ ...podRule[0], resourceNames }] });
      expect(errors(named(['web', 'api']))).to.deep.equal([]);
      expect(errors(named(['web', 'web']))).to.deep.equal([{ field: 'spec.webhooks[0].rules[0].resourceNames[1]', message: 'Duplicate value: "web"' }]);
      expect(errors(named(['..']))).to.deep.equal([{ field: 'spec.webhooks[0].rules[0].resourceNames[0]', message: "may not be '..'" }]);
      expect(errors({ excludeResourceRules: [{ ...podRule[0], resourceNames: ['web'] }] })).to.deep.equal([]);
      expect(errors({ excludeResourceRules: [{ operations: ['CREATE'], apiGroups: [''], resources: ['pods'], scope: 'Somewhere' }] }).map((e) => e.field)).to.deep.equal([
        'spec.webhooks[0].excludeResourceRules[0].apiVersions',
        'spec.webhooks[0].excludeResourceRules[0].scope',
      ]);
    });

    it('the operator’s own matchConditions count against the 64, and their names are not the user’s', function () {
      const conditions = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, expression: 'true' }));
      const exclude = { excludeResourceRules: [{ ...podRule[0], operations: ['DELETE'] }] };
      expect(errors({ matchConditions: conditions(63), ...exclude })).to.deep.equal([]);
      expect(errors({ matchConditions: conditions(64), ...exclude }).map((e) => e.message)).to.deep.equal([
        'Too many: 64: must have at most 63 items (the API server takes 64 per webhook, and Portcullis adds its own: one for resourceNames and excludeResourceRules)',
      ]);
      const everything = { rules: [{ operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
      expect(errors({ matchConditions: conditions(63), ...exclude, ...everything }).map((e) => e.message)).to.deep.equal([
        'Too many: 63: must have at most 62 items (the API server takes 64 per webhook, and Portcullis adds its own: self-protection, and one for resourceNames and excludeResourceRules)',
      ]);
      expect(errors({ matchConditions: [{ name: 'portcullis-resource-match', expression: 'true' }] }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].matchConditions[0].name']);
      expect(errors({ matchConditions: [{ name: 'portcullis-self-protection', expression: 'true' }] }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].matchConditions[0].name']);
    });
  });

  it("refuses variable names that are not CEL identifiers or repeat one, and empty messages, in VAP's words", function () {
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
            validations: [
              { expression: 'true', message: '  ' },
              { expression: 'true', messageExpression: ' ' },
            ],
          },
        ],
      }),
    ).errors.map((e) => `${e.field}: ${e.message}`);
    expect(errors).to.deep.equal([
      'spec.typeCheckErrors: must be Warn or Deny',
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
