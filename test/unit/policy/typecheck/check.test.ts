/**
 * A webhook's expressions type-checked per kind, with VAP's words and format (the e2e differential
 * test/e2e/typecheck.test.ts compares them with the API server's own).
 */
import { expect } from 'chai';
import { schemaTypes, type OpenApiSchema } from '../../../../src/policy/typecheck/schema.ts';
import { typeCheckWebhook, type CheckedKind } from '../../../../src/policy/typecheck/check.ts';
import type { WebhookSpec } from '../../../../src/api/types.ts';

const meta: OpenApiSchema = { type: 'object', properties: { name: { type: 'string' }, generateName: { type: 'string' }, labels: { type: 'object', additionalProperties: { type: 'string' } } } };
const components: Record<string, OpenApiSchema> = {
  Meta: meta,
  Deployment: {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { $ref: '#/components/schemas/Meta' },
      spec: { type: 'object', properties: { replicas: { type: 'integer' }, containers: { type: 'array', items: { type: 'object', properties: { image: { type: 'string' } } } } } },
    },
  },
  ConfigMap: { type: 'object', properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { $ref: '#/components/schemas/Meta' }, data: { type: 'object', additionalProperties: { type: 'string' } } } },
};
const deployment: CheckedKind = { gvk: { group: 'apps', version: 'v1', kind: 'Deployment' }, types: schemaTypes('Deployment', 'Deployment', components)! };
const configMap: CheckedKind = { gvk: { group: '', version: 'v1', kind: 'ConfigMap' }, types: schemaTypes('ConfigMap', 'ConfigMap', components)! };

const webhook = (spec: Partial<WebhookSpec>): WebhookSpec => ({ name: 'w', type: 'Validating', rules: [], ...spec });

describe('policy/typecheck: expressions checked against the kinds a webhook matches', function () {
  it("warns in the API server's format: the kind, the error with its position, the line and a caret", function () {
    const [warning, ...rest] = typeCheckWebhook(webhook({ validations: [{ expression: 'object.spec.replicas <= 5' }, { expression: 'object.replicas <= 5' }] }), 'spec.webhooks[0]', [deployment]);
    expect(rest).to.deep.equal([]);
    expect(warning).to.deep.equal({
      fieldRef: 'spec.webhooks[0].validations[1].expression',
      warning: "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas <= 5\n | ......^\n",
      definite: true,
      message: "undefined field 'replicas'",
    });
  });

  it('finds type mismatches, wrong fields of list elements, has() of an undeclared field, in validations and messageExpressions: the fields the API server reports (never a variable, a matchCondition or a mutation)', function () {
    const checked = typeCheckWebhook(
      webhook({
        matchConditions: [{ name: 'm', expression: 'object.spec.replica > 0' }],
        variables: [
          { name: 'r', expression: 'object.spec.replicas' },
          { name: 'typo', expression: 'object.replicas' },
        ],
        mutations: [{ condition: 'object.nope', patch: [] }],
        validations: [
          { expression: "variables.r == 'a'", messageExpression: "'n: ' + object.spec.replicas" },
          { expression: "object.spec.containers.all(c, c.imag == 'x')" },
          { expression: 'has(object.spec.paused)' },
          { expression: 'object.spec == oldObject.spec && object.metadata.labels.app != "x"' },
          // A variable that does not type-check is dyn: its uses are not reported either.
          { expression: "variables.typo.anything == 'x'" },
        ],
      }),
      'spec.webhooks[0]',
      [deployment],
    );
    expect(checked.map((c) => `${c.fieldRef}: ${c.message}`)).to.deep.equal([
      "spec.webhooks[0].validations[0].expression: found no matching overload for '_==_' applied to '(int, string)'",
      "spec.webhooks[0].validations[0].messageExpression: found no matching overload for '_+_' applied to '(string, int)'",
      "spec.webhooks[0].validations[1].expression: undefined field 'imag'",
      "spec.webhooks[0].validations[2].expression: undefined field 'paused'",
    ]);
  });

  it('is definite only when the expression fails on every kind checked; one warning lists each kind that fails', function () {
    const [partial] = typeCheckWebhook(webhook({ validations: [{ expression: 'object.spec.replicas > 0' }] }), 'spec.webhooks[0]', [deployment, configMap]);
    expect(partial!.definite).to.equal(false);
    expect(partial!.warning).to.match(/^\/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n/);
    const [both] = typeCheckWebhook(webhook({ validations: [{ expression: 'object.nope' }] }), 'spec.webhooks[0]', [configMap, deployment]);
    expect(both!.definite).to.equal(true);
    expect(both!.warning.split('\n\n')).to.have.length(2);
  });

  it('checks nothing for a webhook with a handler or with no kind known (a wildcard: dyn, as VAP)', function () {
    expect(typeCheckWebhook(webhook({ validations: [{ expression: 'object.nope' }] }), 'spec.webhooks[0]', [])).to.deep.equal([]);
    expect(typeCheckWebhook(webhook({ handler: { name: 'AlwaysPullImages' } }), 'spec.webhooks[0]', [deployment])).to.deep.equal([]);
  });

  it("lets null stand beside an object of a schema in a ternary, as cel-go (Gatekeeper's `!has(params.spec) ? null : params.spec.parameters`), and nowhere else", function () {
    const params = { apiVersion: 'v1', kind: 'ConfigMap', name: 'p' };
    const check = (expression: string) => typeCheckWebhook(webhook({ params, validations: [{ expression }] }), 'spec.webhooks[0]', [deployment], configMap.types).map((c) => c.message);
    expect(check('(!has(params.data) ? null : params) == null')).to.deep.equal([]);
    expect(check('(true ? null : object.spec) == null')).to.deep.equal([]);
    expect(check('(true ? null : 1) == null')).to.have.length(1);
    // Gatekeeper's variable is null to its uses: a field of it warns as the API server's checker does.
    const variable = typeCheckWebhook(
      webhook({ params, variables: [{ name: 'params', expression: '!has(params.data) ? null : params' }], validations: [{ expression: 'variables.params.data.size() > 0' }, { expression: 'variables.params == null' }] }),
      'spec.webhooks[0]',
      [deployment],
      configMap.types,
    );
    expect(variable.map((c) => `${c.fieldRef}: ${c.message}`)).to.deep.equal(["spec.webhooks[0].validations[0].expression: type 'null' does not support field selection"]);
  });

  it("words two schema objects of different types compared as cel-go, at the operator (never cel-js' overload table)", function () {
    const [checked] = typeCheckWebhook(webhook({ validations: [{ expression: 'object.spec.replicas > 0 && object.spec != object.metadata' }] }), 'spec.webhooks[0]', [deployment]);
    expect(checked!.warning).to.equal(
      "apps/v1, Kind=Deployment: ERROR: <input>:1:41: found no matching overload for '_!=_' applied to '(Deployment.spec, Deployment.metadata)'\n | object.spec.replicas > 0 && object.spec != object.metadata\n | ........................................^\n",
    );
  });

  it('types params with their kind when known, dyn otherwise', function () {
    const params = { apiVersion: 'v1', kind: 'ConfigMap', name: 'p' };
    const spec = webhook({ params, validations: [{ expression: 'params.data.max > 1' }] });
    expect(typeCheckWebhook(spec, 'spec.webhooks[0]', [deployment], configMap.types).map((c) => c.message)).to.deep.equal(["found no matching overload for '_>_' applied to '(string, int)'"]);
    expect(typeCheckWebhook(spec, 'spec.webhooks[0]', [deployment])).to.deep.equal([]);
  });
});
