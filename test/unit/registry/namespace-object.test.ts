/**
 * `namespaceObject` (src/registry/compile.ts): the request's Namespace is bound for every rule
 * that reads it, directly or through a variable, and is not looked up for a webhook none of
 * whose expressions reads it (a lookup per request in the operator's cache).
 */
import { expect } from 'chai';
import { compileSuite } from '../../../src/registry/compile.ts';
import type { ClusterView } from '../../../src/handlers/handler.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';

function compiled(spec: Partial<WebhookSpec>) {
  const looked: string[] = [];
  const view: ClusterView = {
    namespace: (name) => (looked.push(name), { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { env: name === 'prod' ? 'prod' : 'dev' } } }),
    limitRanges: () => [],
    list: () => [],
    whenReady: async () => true,
  };
  const suite: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 's', uid: 'u', generation: 1 },
    spec: { webhooks: [{ name: 'w', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], ...spec } as WebhookSpec] },
  };
  const result = compileSuite(suite, { view });
  expect(result.errors).to.deep.equal([]);
  const admit = (namespace: string, data: Record<string, string> = {}) =>
    result.webhooks.get('w')!.admit(requestFor('configmaps', 'CREATE', { namespace, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace }, data } })) as Decision;
  return { admit, looked };
}

const prodOnlyEmpty = { expression: "namespaceObject.metadata.labels.env != 'prod' || size(object.data) == 0", message: 'prod ConfigMaps are empty' };

describe('registry: namespaceObject bound only where read', function () {
  it('a validation that reads namespaceObject sees the request’s Namespace', function () {
    const { admit, looked } = compiled({ validations: [prodOnlyEmpty] });
    expect(admit('prod', { a: '1' })).to.deep.include({ allowed: false, message: 'prod ConfigMaps are empty' });
    expect(admit('dev', { a: '1' })).to.deep.equal({ allowed: true });
    expect(looked).to.deep.equal(['prod', 'dev']);
  });

  it('read through a variable or a messageExpression, it is bound too', function () {
    const throughVariable = compiled({ variables: [{ name: 'env', expression: 'namespaceObject.metadata.labels.env' }], validations: [{ expression: "variables.env != 'prod'", message: 'not in prod' }] });
    expect(throughVariable.admit('prod')).to.deep.include({ allowed: false, message: 'not in prod' });
    expect(throughVariable.admit('dev')).to.deep.equal({ allowed: true });
    const throughMessage = compiled({ validations: [{ expression: 'size(object.data) == 0', messageExpression: "'not in ' + namespaceObject.metadata.name" }] });
    expect(throughMessage.admit('prod', { a: '1' })).to.deep.include({ allowed: false, message: 'not in prod' });
  });

  it('a mutation whose condition reads it is applied by the Namespace', function () {
    const { admit } = compiled({
      type: 'Mutating',
      mutations: [{ condition: "namespaceObject.metadata.labels.env == 'prod'", patch: [{ op: 'add', path: '/metadata/labels', value: { tier: 'prod' } }] }],
    });
    expect(admit('prod').patch).to.deep.equal([{ op: 'add', path: '/metadata/labels', value: { tier: 'prod' } }]);
    expect(admit('dev').patch).to.equal(undefined);
  });

  it('rules that never read it answer the same and look nothing up', function () {
    const { admit, looked } = compiled({ validations: [{ expression: 'size(object.data) <= 1', message: 'at most one key' }] });
    expect(admit('prod', { a: '1', b: '2' })).to.deep.include({ allowed: false, message: 'at most one key' });
    expect(admit('prod', { a: '1' })).to.deep.equal({ allowed: true });
    expect(looked).to.deep.equal([]);
  });
});
