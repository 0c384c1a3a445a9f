/**
 * The AdmissionPolicies' registry and decision (src/registry/policies.ts, policy-webhook.ts): a policy
 * applies to objects of its own namespace only, never to a cluster-scoped one (a Namespace's own
 * request carries its name as namespace); mutations chain in name order; the first denial answers,
 * naming its policy; the cluster admin's limits (no mutations, a cost budget) hold.
 */
import { expect } from 'chai';
import { PolicyRegistry } from '../../../src/registry/policies.ts';
import { namespacedWebhook } from '../../../src/registry/policy-webhook.ts';
import type { AdmissionPolicy, PolicySpec } from '../../../src/api/types.ts';
import type { PolicyLimits } from '../../../src/api/validate.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { applied } from '../../fixtures/patch.ts';

const LIMITS: PolicyLimits = { mutations: true, costBudget: 1_000_000 };
const PROTECTED = ['portcullis-system', 'kube-system', 'kube-node-lease'];
const anything = [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
const denyAll: PolicySpec = { type: 'Validating', rules: anything, validations: [{ expression: 'false', message: 'nothing here' }] };
/** A Mutating policy names what it changes: it may never reach everything (src/api/tenancy.ts). */
const configMaps = [{ operations: ['*'], apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'] }];
const label = (key: string, value: string): PolicySpec => ({ type: 'Mutating', rules: configMaps, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { [key]: value } }] }] });

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

  it('evaluates every matchCondition itself, those the API server could decide too (the registered webhook is shared, so none is handed to it)', function () {
    const onlyUpdates: PolicySpec = { ...denyAll, matchConditions: [{ name: 'updates', expression: "request.operation == 'UPDATE'" }] };
    const policies = registry({}, policy('team-a', 'updates-only', onlyUpdates));
    expect(decide(policies, 'Validating').allowed, 'a CREATE is skipped').to.equal(true);
    const update = requestFor('configmaps', 'UPDATE', { object: { metadata: { name: 'c', namespace: 'team-a' } }, oldObject: { metadata: { name: 'c', namespace: 'team-a' } }, namespace: 'team-a' });
    expect(decide(policies, 'Validating', update).message).to.equal('AdmissionPolicy updates-only: nothing here');
  });

  it('runs mutating policies in name order, each on the object the one before left, as one patch', function () {
    const second: PolicySpec = {
      type: 'Mutating',
      rules: configMaps,
      mutations: [{ patchExpression: "[{'op': 'add', 'path': '/metadata/labels/second', 'value': object.metadata.labels['first'] + '-then-second'}]" }],
    };
    const first: PolicySpec = { type: 'Mutating', rules: configMaps, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { first: 'one' } }] }] };
    // Synced out of order: the registry keeps name order.
    const policies = registry({}, policy('team-a', 'b-second', second), policy('team-a', 'a-first', first));
    const request = configMap('team-a');
    const decision = decide(policies, 'Mutating', request);
    expect(applied(request.object, decision)).to.deep.include({ metadata: { name: 'c', namespace: 'team-a', labels: { first: 'one', second: 'one-then-second' } } });
    expect(request.object, 'the request is not changed in place').to.deep.equal(configMap('team-a').object);
  });

  it("stops at a mutating policy's error (failurePolicy Fail), naming it", function () {
    const broken: PolicySpec = { type: 'Mutating', rules: configMaps, mutations: [{ patch: [{ op: 'replace', path: '/metadata/annotations/missing', value: 'x' }] }] };
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
  describe("what a team may never mutate (issue: escalation through others' writes)", function () {
    const rules = (apiGroups: string[], resources: string[]) => [{ operations: ['CREATE', 'UPDATE'], apiGroups, apiVersions: ['*'], resources }];
    const addSubject: PolicySpec = {
      type: 'Mutating',
      rules: rules(['rbac.authorization.k8s.io'], ['rolebindings']),
      mutations: [{ patch: [{ op: 'add', path: '/subjects/-', value: { kind: 'ServiceAccount', name: 'owner', namespace: 'team-a' } }] }],
    };

    it('refuses a Mutating policy that names RBAC objects, quotas, limit ranges, endpoints, tokens or the Namespace, or any group by wildcard', function () {
      const cases: [string[], string[], RegExp][] = [
        [['rbac.authorization.k8s.io'], ['rolebindings'], /RBAC objects grant rights/],
        [['rbac.authorization.k8s.io'], ['roles'], /RBAC objects grant rights/],
        [[''], ['resourcequotas'], /ResourceQuotas/],
        [[''], ['limitranges'], /LimitRanges/],
        [[''], ['endpoints'], /Endpoints route/],
        [['discovery.k8s.io'], ['endpointslices'], /EndpointSlices route/],
        [[''], ['serviceaccounts/token'], /token requests/],
        [[''], ['serviceaccounts/*'], /token requests/],
        [[''], ['*'], /ResourceQuotas/],
        [['*'], ['deployments'], /RBAC objects/],
      ];
      for (const [groups, resources, why] of cases) {
        const compiled = registry({}, policy('team-a', 'p', { ...addSubject, rules: rules(groups, resources) })).get('team-a', 'p')!;
        expect(compiled.webhook, `${groups}/${resources}`).to.equal(undefined);
        expect(compiled.errors.map((e) => e.message).join('; '), `${groups}/${resources}`).to.match(why);
        expect(compiled.errors[0]!.field).to.equal('spec.rules[0]');
      }
      // A Validating policy may judge them (it only denies, in its own namespace), and a ServiceAccount itself may be mutated.
      expect(registry({}, policy('team-a', 'v', { ...denyAll, rules: rules(['rbac.authorization.k8s.io'], ['rolebindings']) })).get('team-a', 'v')!.errors).to.deep.equal([]);
      expect(registry({}, policy('team-a', 'sa', { ...addSubject, rules: rules([''], ['serviceaccounts']) })).get('team-a', 'sa')!.errors).to.deep.equal([]);
    });

    it("refuses a Mutating policy naming more than 8 group/resource pairs, the most the API server's guard can check", function () {
      const nine = rules(['', 'apps'], ['pods', 'configmaps', 'secrets', 'services', 'deployments']);
      const compiled = registry({}, policy('team-a', 'wide', { ...label('k', 'v'), rules: nine })).get('team-a', 'wide')!;
      expect(compiled.errors.map((e) => e.message)).to.deep.equal(["a Mutating policy may name at most 8 group/resource pairs (its author's right to update and patch each is checked), not 10"]);
      expect(registry({}, policy('team-a', 'eight', { ...label('k', 'v'), rules: rules(['', 'apps'], ['pods', 'configmaps', 'secrets', 'services']) })).get('team-a', 'eight')!.errors).to.deep.equal([]);
    });

    it('never mutates a RoleBinding, a ResourceQuota or an EndpointSlice, even for a policy that got in whatever its rules (checked on every request)', function () {
      // A Mutating policy whose rules are not refused (configmaps) is registered; the request then names another resource, as a
      // configuration written by hand, or an earlier version of the rules, could send it.
      const policies = registry({}, policy('team-a', 'labels', label('k', 'v')));
      const compiled = policies.get('team-a', 'labels')!;
      compiled.rules = anything;
      for (const [group, resource, sub] of [
        ['rbac.authorization.k8s.io', 'rolebindings', ''],
        ['', 'resourcequotas', ''],
        ['discovery.k8s.io', 'endpointslices', ''],
        ['', 'serviceaccounts', 'token'],
      ] as const) {
        const request = { ...configMap('team-a'), resource: { group, version: 'v1', resource }, ...(sub ? { subResource: sub } : {}) };
        const decision = decide(policies, 'Mutating', request);
        expect(decision.allowed, resource).to.equal(true);
        expect(decision.patch, resource).to.equal(undefined);
      }
      expect(decide(policies, 'Mutating').patch, 'a ConfigMap is still mutated').to.not.equal(undefined);
    });
  });

  it('matches `*/*` to objects as well as subresources, as the API server does', function () {
    const policies = registry({}, policy('team-a', 'deny-all', { ...denyAll, rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] }));
    expect(decide(policies, 'Validating').allowed, 'a ConfigMap itself').to.equal(false);
    expect(decide(policies, 'Validating', { ...configMap('team-a'), resource: { group: 'apps', version: 'v1', resource: 'deployments' }, subResource: 'scale' }).allowed, 'a subresource').to.equal(false);
  });

  it("confines `authorizer` to the policy's own namespace: another namespace's, a cluster-scoped or a path's check is answered not allowed, with an error, and never asked", async function () {
    const asked: string[] = [];
    const authorizer = { check: async (a: { resource?: { namespace: string } }) => (asked.push(a.resource?.namespace ?? '<none>'), { allowed: true, reason: '', evaluationError: '' }) };
    const context = { limits: LIMITS, protectedNamespaces: PROTECTED, operatorNamespace: 'portcullis-system', authorizer };
    // Denies ("refused: <error>") when the check errs: messageExpression cannot name authorizer, so the expression tests the error's words.
    const answer = async (check: string, words: string) => {
      const policies = new PolicyRegistry(context);
      // One check in a variable: a check costs 350,000 units, as in the API server.
      const expression = `!variables.d.allowed() && variables.d.errored() && variables.d.error().contains(${JSON.stringify(words)})`;
      policies.sync(policy('team-a', 'asks', { ...denyAll, variables: [{ name: 'd', expression: check }], validations: [{ expression: `!(${expression})`, message: 'refused as expected' }] }));
      expect(policies.get('team-a', 'asks')!.errors).to.deep.equal([]);
      return await namespacedWebhook('Validating', policies).admit(configMap('team-a'));
    };
    const own = await answer("authorizer.serviceAccount('team-a', 'x').group('').resource('secrets').namespace('team-a').check('list')", 'may only ask');
    expect(own.allowed, 'a check in the own namespace is asked and answered').to.equal(true);
    const other = await answer("authorizer.serviceAccount('kube-system', 'namespace-controller').group('').resource('secrets').namespace('other').check('list')", 'may only ask about resources in team-a, not namespace other');
    expect(other.message).to.equal('AdmissionPolicy asks: refused as expected');
    const cluster = await answer("authorizer.group('').resource('nodes').check('list')", 'not cluster-scoped resources');
    expect(cluster.message).to.equal('AdmissionPolicy asks: refused as expected');
    const path = await answer("authorizer.path('/metrics').check('get')", 'not non-resource paths');
    expect(path.message).to.equal('AdmissionPolicy asks: refused as expected');
    expect(asked, 'only the own namespace reached the API server').to.deep.equal(['team-a']);
  });
  describe("a Pod a team's mutation changed, judged under Pod Security as the team's own Pod would be", function () {
    const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    const privileged: PolicySpec = {
      type: 'Mutating',
      rules: pods,
      mutations: [{ patch: [{ op: 'add', path: '/spec/containers/0/securityContext', value: { privileged: true } }] }],
    };
    const labelOnly: PolicySpec = { type: 'Mutating', rules: pods, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { team: 'a' } }] }] };
    const namespaces: Record<string, Record<string, string>> = { 'team-a': { 'pod-security.kubernetes.io/enforce': 'baseline' }, 'team-b': {} };
    const view = { namespace: (name: string) => (namespaces[name] ? { metadata: { name, labels: namespaces[name] } } : undefined), limitRanges: () => [], list: () => [] };
    const pod = (namespace: string, container: Record<string, unknown> = {}) => ({
      ...requestFor('pods', 'CREATE', {
        namespace,
        object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace }, spec: { containers: [{ name: 'c', image: 'nginx', ...container }] } },
      }),
      // Written by a user the API server's Pod Security exempts: only the operator's judgment stands between the mutation and the node.
      userInfo: { username: 'system:serviceaccount:ci:deployer' },
    });
    const decideWith = async (namespace: string, spec: PolicySpec, request = pod(namespace)) => {
      const policies = new PolicyRegistry({ limits: LIMITS, protectedNamespaces: PROTECTED, operatorNamespace: 'portcullis-system', view });
      policies.sync(policy(namespace, 'escalate', spec));
      return await namespacedWebhook('Mutating', policies).admit(request);
    };

    it("refuses a mutation that makes the Pod violate the namespace's enforce level, naming the policy", async function () {
      const decision = await decideWith('team-a', privileged);
      expect(decision.allowed).to.equal(false);
      expect(decision.message).to.equal('AdmissionPolicy escalate: its mutation makes the Pod violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)');
    });

    it("passes a mutation that adds no violation: a label, or a violation the writer's own Pod already had", async function () {
      expect((await decideWith('team-a', labelOnly)).allowed).to.equal(true);
      const already = await decideWith('team-a', privileged, pod('team-a', { securityContext: { privileged: true } }));
      expect(already.allowed, already.message).to.equal(true);
    });

    it('passes in a namespace whose enforce level is privileged (the in-tree default when unlabelled)', async function () {
      const decision = await decideWith('team-b', privileged);
      expect(decision.allowed, decision.message).to.equal(true);
      expect(decision.patch).to.not.equal(undefined);
    });
  });
});
