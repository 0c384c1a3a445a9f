/**
 * The AdmissionPolicies' registry and decision (src/registry/policies.ts, namespaced.ts): a policy
 * applies to objects of its own namespace only, never to a cluster-scoped one (a Namespace's own
 * request carries its name as namespace); mutations chain in name order; the first denial answers,
 * naming its policy; the cluster admin's limits (no mutations, a cost budget) hold.
 */
import { expect } from 'chai';
import { PolicyRegistry } from '../../../src/registry/policies.ts';
import { namespacedWebhook } from '../../../src/registry/namespaced.ts';
import type { AdmissionPolicy, PolicySpec } from '../../../src/api/types.ts';
import type { PolicyLimits } from '../../../src/api/validate.ts';
import type { Decision } from '../../../src/api/review.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { applied } from '../../fixtures/patch.ts';

const LIMITS: PolicyLimits = { mutations: true, costBudget: 1_000_000 };
const PROTECTED = ['portcullis-system', 'kube-system', 'kube-node-lease'];
const anything = [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
const denyAll: PolicySpec = { type: 'Validating', rules: anything, validations: [{ expression: 'false', message: 'nothing here' }] };
const label = (key: string, value: string): PolicySpec => ({ type: 'Mutating', rules: anything, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { [key]: value } }] }] });

function policy(namespace: string, name: string, spec: PolicySpec, generation = 1): AdmissionPolicy {
  return { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionPolicy', metadata: { name, namespace, uid: `${namespace}-${name}`, generation }, spec };
}

function registry(limits: Partial<PolicyLimits> = {}, ...policies: AdmissionPolicy[]): PolicyRegistry {
  const out = new PolicyRegistry({ limits: { ...LIMITS, ...limits }, protectedNamespaces: PROTECTED, operatorNamespace: 'portcullis-system' });
  for (const p of policies) out.sync(p);
  return out;
}

const configMap = (namespace: string, labels?: Record<string, string>) => requestFor('configmaps', 'CREATE', { object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace, ...(labels ? { labels } : {}) } }, namespace });

function decide(registry: PolicyRegistry, type: 'Mutating' | 'Validating', request = configMap('team-a')): Decision {
  const decision = namespacedWebhook(type, registry).admit(request);
  if (decision instanceof Promise) throw new Error('expected a synchronous answer');
  return decision;
}

describe('registry/namespaced: AdmissionPolicies', function () {
  it("applies a policy to its own namespace's objects only, naming the policy that denied", function () {
    const policies = registry({}, policy('team-a', 'deny-all', denyAll));
    const denied = decide(policies, 'Validating');
    expect(denied.allowed).to.equal(false);
    expect(denied.message).to.equal('AdmissionPolicy deny-all: nothing here');
    expect(denied.code).to.equal(422);
    expect(decide(policies, 'Validating', configMap('team-b')).allowed, 'another namespace').to.equal(true);
  });

  it('never applies to a cluster-scoped object, a Namespace of the same name included, whatever its rules', function () {
    const policies = registry({}, policy('team-a', 'deny-all', denyAll));
    const namespace = requestFor('namespaces', 'UPDATE', { object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }, namespace: 'team-a' });
    expect(decide(policies, 'Validating', namespace).allowed).to.equal(true);
    const crd = requestFor('customresourcedefinitions', 'CREATE', { object: { metadata: { name: 'x.example.com' } } });
    expect(crd.namespace).to.equal(undefined);
    expect(decide(policies, 'Validating', crd).allowed).to.equal(true);
  });

  it("matches each policy's own rules and objectSelector (the registered webhook has their union)", function () {
    const pods: PolicySpec = { ...denyAll, rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] };
    const selected: PolicySpec = { ...denyAll, objectSelector: { matchLabels: { strict: 'yes' } } };
    const policies = registry({}, policy('team-a', 'pods-only', pods), policy('team-a', 'strict-only', selected));
    expect(decide(policies, 'Validating').allowed).to.equal(true);
    expect(decide(policies, 'Validating', configMap('team-a', { strict: 'yes' })).message).to.equal('AdmissionPolicy strict-only: nothing here');
  });

  it("matches a policy's resourceNames and excludeResourceRules itself, with ValidatingAdmissionPolicy's meaning", function () {
    const named: PolicySpec = { ...denyAll, rules: [{ ...anything[0]!, resourceNames: ['locked'] }] };
    const excluding: PolicySpec = { ...denyAll, excludeResourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], resourceNames: ['c'] }] };
    const locked = requestFor('configmaps', 'CREATE', { object: { metadata: { name: 'locked', namespace: 'team-a' } }, namespace: 'team-a' });
    expect(decide(registry({}, policy('team-a', 'named', named)), 'Validating').allowed, 'another name').to.equal(true);
    expect(decide(registry({}, policy('team-a', 'named', named)), 'Validating', locked).message).to.equal('AdmissionPolicy named: nothing here');
    expect(decide(registry({}, policy('team-a', 'excluding', excluding)), 'Validating').allowed, 'the excluded name').to.equal(true);
    expect(decide(registry({}, policy('team-a', 'excluding', excluding)), 'Validating', locked).message).to.equal('AdmissionPolicy excluding: nothing here');
  });

  it("evaluates every matchCondition itself, those the API server could decide too (the registered webhook is shared, so none is handed to it)", function () {
    const onlyUpdates: PolicySpec = { ...denyAll, matchConditions: [{ name: 'updates', expression: "request.operation == 'UPDATE'" }] };
    const policies = registry({}, policy('team-a', 'updates-only', onlyUpdates));
    expect(decide(policies, 'Validating').allowed, 'a CREATE is skipped').to.equal(true);
    const update = requestFor('configmaps', 'UPDATE', { object: { metadata: { name: 'c', namespace: 'team-a' } }, oldObject: { metadata: { name: 'c', namespace: 'team-a' } }, namespace: 'team-a' });
    expect(decide(policies, 'Validating', update).message).to.equal('AdmissionPolicy updates-only: nothing here');
  });

  it('runs mutating policies in name order, each on the object the one before left, as one patch', function () {
    const second: PolicySpec = {
      type: 'Mutating',
      rules: anything,
      mutations: [{ patchExpression: "[{'op': 'add', 'path': '/metadata/labels/second', 'value': object.metadata.labels['first'] + '-then-second'}]" }],
    };
    const first: PolicySpec = { type: 'Mutating', rules: anything, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { first: 'one' } }] }] };
    // Synced out of order: the registry keeps name order.
    const policies = registry({}, policy('team-a', 'b-second', second), policy('team-a', 'a-first', first));
    const request = configMap('team-a');
    const decision = decide(policies, 'Mutating', request);
    expect(applied(request.object, decision)).to.deep.include({ metadata: { name: 'c', namespace: 'team-a', labels: { first: 'one', second: 'one-then-second' } } });
    expect(request.object, 'the request is not changed in place').to.deep.equal(configMap('team-a').object);
  });

  it("stops at a mutating policy's error (failurePolicy Fail), naming it", function () {
    const broken: PolicySpec = { type: 'Mutating', rules: anything, mutations: [{ patch: [{ op: 'replace', path: '/metadata/annotations/missing', value: 'x' }] }] };
    const decision = decide(registry({}, policy('team-a', 'broken', broken), policy('team-a', 'later', label('k', 'v'))), 'Mutating');
    expect(decision.allowed).to.equal(false);
    expect(decision.message).to.match(/^AdmissionPolicy broken: spec\.mutations\[0\]: patch failed/);
  });

  it("reports a Mutating policy as beyond the admin's limits, and serves it not, when mutations are turned off", function () {
    const policies = registry({ mutations: false }, policy('team-a', 'labels', label('k', 'v')), policy('team-a', 'deny-all', denyAll));
    const compiled = policies.get('team-a', 'labels')!;
    expect(compiled.errors).to.have.length(1);
    expect(compiled.errors[0]).to.include({ field: 'spec.type', limit: true });
    expect(compiled.errors[0]!.message).to.contain('--namespaced-policy-mutations=false');
    expect(policies.served('team-a').map((p) => p.name)).to.deep.equal(['deny-all']);
    expect(decide(policies, 'Mutating').allowed).to.equal(true);
  });

  it("spends no more than the admin's cost budget on one policy's evaluation: past it, the request is denied", function () {
    const costly: PolicySpec = { type: 'Validating', rules: anything, validations: [{ expression: '[0,1,2,3,4,5,6,7,8,9].all(i, [0,1,2,3,4,5,6,7,8,9].all(j, i + j >= 0))' }] };
    expect(decide(registry({}, policy('team-a', 'costly', costly)), 'Validating').allowed, 'within the default budget').to.equal(true);
    const tight = decide(registry({ costBudget: 50 }, policy('team-a', 'costly', costly)), 'Validating');
    expect(tight.allowed).to.equal(false);
    expect(tight.message).to.contain('AdmissionPolicy costly:');
    expect(tight.message).to.contain('cost');
  });

  it('refuses a policy where none is served, reaching into another namespace, or naming cluster scope, each by its field', function () {
    const policies = registry();
    expect(policies.validate(policy('kube-system', 'p', denyAll)).map((e) => e.field)).to.deep.equal(['metadata.namespace']);
    const reaching = policy('team-a', 'p', { ...denyAll, params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-b', name: 'limits' } });
    expect(policies.validate(reaching).map((e) => e.field)).to.deep.equal(['spec.params.namespace']);
    const clusterWide = policy('team-a', 'p', { ...denyAll, rules: [{ ...anything[0]!, scope: 'Cluster' }] });
    expect(policies.validate(clusterWide).map((e) => e.field)).to.deep.equal(['spec.rules[0].scope']);
    const broken = policy('team-a', 'p', { ...denyAll, validations: [{ expression: 'object.data.size() >' }] });
    expect(policies.validate(broken).map((e) => e.field)).to.deep.equal(['spec.validations[0].expression']);
  });

  it('forgets a removed policy and recompiles only a new generation', function () {
    const policies = registry({}, policy('team-a', 'deny-all', denyAll));
    const first = policies.get('team-a', 'deny-all');
    expect(policies.sync(policy('team-a', 'deny-all', denyAll))).to.equal(first);
    expect(policies.sync(policy('team-a', 'deny-all', denyAll, 2))).to.not.equal(first);
    policies.remove('team-a', 'deny-all');
    expect(policies.served('team-a')).to.deep.equal([]);
    expect(decide(policies, 'Validating').allowed).to.equal(true);
  });
});
