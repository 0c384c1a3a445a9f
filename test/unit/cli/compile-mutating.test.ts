/**
 * `portcullis compile` of Mutating webhooks (src/cli/compile.ts with desired/native.ts and
 * api/enforcement.ts): a webhook set to Auto whose mutations are MAP's own is written as a
 * MutatingAdmissionPolicy and binding, and what cannot be one stays a webhook, saying why. Owns
 * these checks only; that the written MAP patches as the suite does is
 * test/e2e/map-differential.test.ts'.
 */
import { expect } from 'chai';
import { compileSuites } from '../../../src/cli/compile.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';

const rules = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const jsonPatch = { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'b'}]" } };
const suite = (webhooks: object[]) => ({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 's' }, spec: { enforcement: 'Auto', webhooks: webhooks as WebhookSpec[] } }) as AdmissionSuite;

describe('cli: portcullis compile writes a MutatingAdmissionPolicy of a Mutating webhook', function () {
  it('writes the MAP and binding, its mutations, conditions, variables, reinvocationPolicy and params as they are', function () {
    const webhook = {
      name: 'label',
      type: 'Mutating',
      rules,
      reinvocationPolicy: 'IfNeeded',
      matchConditions: [{ name: 'c', expression: 'true' }],
      variables: [{ name: 'v', expression: "'x'" }],
      params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'p', name: 'n' },
      mutations: [jsonPatch],
    };
    const { objects, webhooks } = compileSuites([suite([webhook])], 'portcullis-system');
    expect(webhooks).to.deep.equal([]);
    expect(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata?.name}`)).to.deep.equal([
      'admissionregistration.k8s.io/v1 MutatingAdmissionPolicy label.s.admission.portcullis.dev',
      'admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding label.s.admission.portcullis.dev',
    ]);
    const [policy, binding] = objects as unknown as { spec: Record<string, unknown> }[];
    expect(policy!.spec).to.deep.include({ failurePolicy: 'Fail', reinvocationPolicy: 'IfNeeded', paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, variables: webhook.variables, mutations: [jsonPatch] });
    expect(policy!.spec.matchConditions).to.deep.include(webhook.matchConditions[0]);
    expect(binding!.spec).to.deep.equal({ policyName: 'label.s.admission.portcullis.dev', paramRef: { name: 'n', namespace: 'p', parameterNotFoundAction: 'Deny' } });
  });

  it('keeps as a webhook, saying why, what a MAP cannot be: Portcullis’ own patch forms, DELETE, a handler, no mutation', function () {
    const { objects, webhooks } = compileSuites(
      [
        suite([
          { name: 'own', type: 'Mutating', rules, mutations: [jsonPatch, { patch: [{ op: 'add', path: '/data/x', value: 'y' }] }] },
          { name: 'deletes', type: 'Mutating', rules: [{ ...rules[0], operations: ['CREATE', 'DELETE'] }], mutations: [jsonPatch] },
          { name: 'handled', type: 'Mutating', rules, handler: { name: 'DefaultTolerationSeconds' } },
        ]),
      ],
      'portcullis-system',
    );
    expect(objects).to.deep.equal([]);
    expect(webhooks).to.deep.equal([
      "s/own: stays a webhook: mutations[1]: patch and patchExpression are Portcullis' own forms; a MutatingAdmissionPolicy takes patchType JSONPatch or ApplyConfiguration",
      's/deletes: stays a webhook: rules[0].operations: a MutatingAdmissionPolicy does not match DELETE',
      's/handled: stays a webhook: handler: the built-in handler DefaultTolerationSeconds runs in the operator; a native policy holds only CEL',
    ]);
  });
});
