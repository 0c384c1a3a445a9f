/**
 * matchConditions split between the API server and Portcullis: only conditions the API server
 * decides as VAP would are handed to it (no params; under Fail, provably never an error), and the
 * webhook configuration holds exactly those plus, for rules that could reach a protected resource,
 * the operator's self-protection condition.
 */
import { expect } from 'chai';
import { passedThroughConditions, planMatchConditions } from '../../../../src/policy/engine/match-conditions.ts';
import { webhookConfigurations } from '../../../../src/desired/objects.ts';
import { SELF_PROTECTION_CONDITION } from '../../../../src/api/self-protection.ts';
import { validateSpec } from '../../../../src/api/validate.ts';
import type { AdmissionSuite, FailurePolicy, WebhookSpec } from '../../../../src/api/types.ts';
import type { AdmissionRequest, Decision } from '../../../../src/api/admission-review.ts';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { OperatorConfig } from '../../../../src/config.ts';

const hook = (expressions: string[], extra: Partial<WebhookSpec> = {}): WebhookSpec => ({
  name: 'w',
  type: 'Validating',
  rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
  matchConditions: expressions.map((expression, i) => ({ name: `c${i}`, expression })),
  validations: [{ expression: 'false' }],
  ...extra,
});
const split = (expression: string, failurePolicy: FailurePolicy, extra: Partial<WebhookSpec> = {}) => {
  const plan = planMatchConditions(hook([expression], extra), 'spec.webhooks[0]', failurePolicy);
  return plan.passedThrough.length === 1 ? 'api server' : 'portcullis';
};

describe('policy: matchConditions with VAP semantics', function () {
  it('hands the API server conditions that cannot fail, under Fail', function () {
    expect(split(SELF_PROTECTION_CONDITION.expression, 'Fail')).to.equal('api server');
    expect(split("request.operation == 'CREATE' || has(request.name) || has(request.userInfo.groups)", 'Fail')).to.equal('api server');
  });

  it('keeps under Fail every condition that could fail, since a webhook condition fails with a 403 and other words', function () {
    for (const expression of ['!has(object.data.skip)', "object.data.a == 'x'", "request.namespace == 'x'", "request.userInfo.username == 'x'", "request.operation.startsWith('C')"]) {
      expect(split(expression, 'Fail'), expression).to.equal('portcullis');
    }
  });

  it('hands over any condition without params under Ignore (an error skips both), never one that reads params', function () {
    expect(split('!has(object.data.skip)', 'Ignore')).to.equal('api server');
    const params = { params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'p', name: 'p' } };
    expect(split("params.data.a == 'x'", 'Ignore', params)).to.equal('portcullis');
    expect(split("params.data.a == 'x'", 'Fail', params)).to.equal('portcullis');
  });

  it('refuses `variables` and, without params, `params`, as VAP compiles them', function () {
    expect(() => planMatchConditions(hook(['variables.v'], { variables: [{ name: 'v', expression: 'true' }] }), 'spec.webhooks[0]', 'Fail')).to.throw(/matchConditions\[0\]\.expression: compilation failed: .*variables/);
    expect(() => planMatchConditions(hook(["params.a == 'x'"]), 'spec.webhooks[0]', 'Fail')).to.throw(/compilation failed: .*params/);
  });

  it('writes only the handed-over ones into the configuration, after self-protection when the rules need it', function () {
    const written = (webhook: WebhookSpec) => {
      const suite = { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 's', uid: 'u' }, spec: { webhooks: [webhook] } } as AdmissionSuite;
      const config = { namespace: 'portcullis-system', mode: 'cluster', servingPort: 9443 } as OperatorConfig;
      const configuration = webhookConfigurations(suite, config, 'ca').get('Validating') as unknown as { webhooks: { matchConditions: unknown[] }[] };
      return configuration.webhooks[0]!.matchConditions;
    };
    const handed = { name: 'c0', expression: "request.operation == 'CREATE'" };
    expect(written(hook(["request.operation == 'CREATE'", '!has(object.data.skip)']))).to.deep.equal([handed]);
    const everything = { rules: [{ operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
    expect(written(hook(["request.operation == 'CREATE'", '!has(object.data.skip)'], everything))).to.deep.equal([SELF_PROTECTION_CONDITION, handed]);
    expect(passedThroughConditions(hook(['!has(object.data.skip)']), 'Ignore')).to.have.length(1);
  });

  it('counts the self-protection condition in the API server’s 64 when the rules need it, and checks names as VAP does', function () {
    const conditions = (n: number) => Array.from({ length: n }, () => 'true');
    const nodes = { rules: [{ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['nodes/status'] }] };
    expect(validateSpec({ webhooks: [hook(conditions(64), nodes)] })).to.deep.include({
      field: 'spec.webhooks[0].matchConditions',
      message: 'Too many: 64: must have at most 63 items (the API server takes 64 per webhook, and Portcullis adds its own: self-protection)',
    });
    expect(validateSpec({ webhooks: [hook(conditions(63), nodes)] })).to.deep.equal([]);
    // ConfigMaps cannot reach a protected resource: the webhook has all 64.
    expect(validateSpec({ webhooks: [hook(conditions(64))] })).to.deep.equal([]);
    expect(validateSpec({ webhooks: [hook(conditions(65))] })).to.deep.include({ field: 'spec.webhooks[0].matchConditions', message: 'Too many: 65: must have at most 64 items (the API server takes 64 per webhook)' });
    const named = hook(['true', 'true', 'true']);
    named.matchConditions = [
      { name: 'a', expression: 'true' },
      { name: 'a', expression: 'true' },
      { name: '', expression: ' ' },
    ];
    expect(validateSpec({ webhooks: [named] })).to.deep.equal([
      { field: 'spec.webhooks[0].matchConditions[1].name', message: 'Duplicate value: "a"' },
      { field: 'spec.webhooks[0].matchConditions[2].expression', message: 'Required value' },
      { field: 'spec.webhooks[0].matchConditions[2].name', message: 'Required value' },
    ]);
  });

  describe('evaluated by Portcullis', function () {
    const request = (data: Record<string, string>) =>
      ({ uid: 'u', kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' }, operation: 'CREATE', userInfo: {}, object: { data } }) as unknown as AdmissionRequest;
    const admit = (spec: WebhookSpec, failurePolicy: FailurePolicy, data: Record<string, string>) => compileRules('s', spec, 'spec.webhooks[0]', failurePolicy)(request(data)) as Decision;

    it('skips the rules when a condition is false, whatever another one raised', function () {
      const spec = hook(["object.data.missing == 'x'", 'has(object.data.gate)']);
      expect(admit(spec, 'Fail', { a: '1' })).to.deep.equal({ allowed: true });
      expect(admit(spec, 'Fail', { gate: '1' })).to.include({ allowed: false, code: 422, message: "expression 'object.data.missing == 'x'' resulted in error: no such key: missing" });
      // under Ignore the API server skips on an error as VAP does: both are handed to it
      expect(planMatchConditions(spec, 'spec.webhooks[0]', 'Ignore').evaluated).to.deep.equal([]);
    });

    it('joins several errors as apimachinery aggregates them', function () {
      const spec = hook(["object.data.missing == 'x'", 'object.data.a + 1 > 0']);
      expect(admit(spec, 'Fail', { a: '1' }).message).to.equal("[expression 'object.data.missing == 'x'' resulted in error: no such key: missing, expression 'object.data.a + 1 > 0' resulted in error: no such overload]");
    });

    it('reads params, and skips a mutation as it skips validations', function () {
      const params = { params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'p', name: 'p' } };
      const spec = hook(['object.data.tier != params.data.exempt'], params);
      const rules = compileRules('s', spec, 'spec.webhooks[0]', 'Fail');
      expect(rules(request({ tier: 'gold' }), { params: { data: { exempt: 'gold' } } })).to.deep.equal({ allowed: true });
      expect((rules(request({ tier: 'iron' }), { params: { data: { exempt: 'gold' } } }) as Decision).allowed).to.equal(false);
      const mutating: WebhookSpec = { ...hook(['has(object.data.patch)']), type: 'Mutating', validations: undefined, mutations: [{ patch: [{ op: 'add', path: '/data/b', value: '2' }] }] };
      expect(admit(mutating, 'Fail', { a: '1' })).to.deep.equal({ allowed: true });
      expect(admit(mutating, 'Fail', { patch: '1' }).patch).to.deep.equal([{ op: 'add', path: '/data/b', value: '2' }]);
    });
  });
});
