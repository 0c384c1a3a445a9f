/**
 * A webhook's rules run once per selected params object (src/registry/each-params.ts through
 * compile.ts), as ValidatingAdmissionPolicy runs a binding whose paramRef selects several.
 */
import { expect } from 'chai';
import { compileSuite, type ParamsSource } from '../../../src/registry/compile.ts';
import { PARAMS_ERRORS } from '../../../src/api/params.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';

const limits = (max: string, name = `max-${max}`) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { max } });

function webhook(spec: Partial<WebhookSpec>, selected: Record<string, unknown>[] | 'misconfigured') {
  const params: ParamsSource = {
    watch: () => undefined,
    select: () => (selected === 'misconfigured' ? { state: 'misconfigured', reason: PARAMS_ERRORS.clusterScopedRequest } : { state: 'selected', objects: selected }),
  };
  const suite: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 's', uid: 'u', generation: 1 },
    spec: {
      webhooks: [
        {
          name: 'w',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          params: { apiVersion: 'v1', kind: 'ConfigMap', selector: {} },
          ...spec,
        } as WebhookSpec,
      ],
    },
  };
  const compiled = compileSuite(suite, { params });
  expect(compiled.errors).to.deep.equal([]);
  return (data: Record<string, string>) => compiled.webhooks.get('w')!.admit(request(data)) as Decision;
}

const request = (data: Record<string, string>) => requestFor('configmaps', 'CREATE', { object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team-a' }, data } });

const sizeRule = { validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max" }] };

describe('registry: rules evaluated once per params object', function () {
  it('the first denial in selection order answers; every object holding admits', function () {
    const admit = webhook(sizeRule, [limits('3'), limits('1'), limits('0')]);
    expect(admit({ a: '1', b: '2' })).to.deep.include({ allowed: false, code: 422, message: 'at most 1' });
    expect(admit({})).to.deep.equal({ allowed: true });
  });

  it('Warn and Audit gather every params object’s failures; audit annotations join distinct values', function () {
    const admit = webhook({ ...sizeRule, validationActions: ['Warn', 'Audit'], auditAnnotations: [{ key: 'max', valueExpression: 'string(params.data.max)' }] }, [limits('1'), limits('0'), limits('1', 'again')]);
    const decision = admit({ a: '1', b: '2' });
    expect(decision.allowed).to.equal(true);
    expect(decision.warnings).to.deep.equal(['at most 1', 'at most 0', 'at most 1']);
    expect(decision.auditAnnotations!.max).to.equal('1, 0');
    expect(JSON.parse(decision.auditAnnotations!.validation_failure!).map((f: { message: string }) => f.message)).to.deep.equal(['at most 1', 'at most 0', 'at most 1']);
  });

  it('none selected answers by notFoundAction: Deny follows failurePolicy in the API server’s words, Allow admits unjudged', function () {
    expect(webhook(sizeRule, [])({})).to.deep.include({ allowed: false, code: 422, message: `failed to configure binding: ${PARAMS_ERRORS.notFoundDeny}` });
    expect(webhook({ ...sizeRule, failurePolicy: 'Ignore' }, [])({})).to.deep.equal({ allowed: true });
    expect(webhook({ validations: [{ expression: 'false' }], params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', notFoundAction: 'Allow' } }, [])({})).to.deep.equal({ allowed: true });
  });

  it('a reference that cannot select for the request (namespace unset, cluster-scoped request) is a configuration error, even with Allow', function () {
    const admit = webhook({ ...sizeRule, params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', notFoundAction: 'Allow' } }, 'misconfigured');
    expect(admit({})).to.deep.include({ allowed: false, message: `failed to configure binding: ${PARAMS_ERRORS.clusterScopedRequest}` });
  });

  it('mutations apply per params object in turn, each on the object the one before patched', function () {
    const admit = webhook(
      {
        type: 'Mutating',
        validations: undefined,
        mutations: [{ patchExpression: "[{'op': 'add', 'path': '/data/' + params.metadata.name, 'value': string(size(object.data))}]" }],
      },
      [limits('1', 'first'), limits('2', 'second')],
    );
    const decision = admit({ a: '1' });
    // 'second' counts the key 'first' added: applied in turn.
    expect(decision.patch).to.have.deep.members([
      { op: 'add', path: '/data/second', value: '2' },
      { op: 'add', path: '/data/first', value: '1' },
    ]);
  });
});
