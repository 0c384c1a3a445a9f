/**
 * A namespace admin (a ServiceAccount with a TokenRequest token, bound to Kubernetes' `admin` role in
 * its namespace only) tries to reach, through AdmissionPolicies, beyond what it may do directly:
 * rewrite the cluster admin's RoleBinding in its namespace (then relabel the Namespace and run a
 * privileged Pod), a ResourceQuota, an EndpointSlice the endpointslice controller writes, the
 * scheduler's Pod binding; undo a cluster suite's mutation; read params it may not read (or edit
 * a policy that reads them); ask the operator's `authorizer` about other namespaces; keep a
 * Mutating policy served after losing the rights it needs. Each is refused: first by the API server alone
 * (deploy/07-admission-policy-guard.yaml, with no operator answering), then by the operator's own
 * webhook (with the guard's binding removed, as in a cluster installed without it), and what is
 * stored is what its writer wrote.
 */
import { expect } from 'chai';
import type * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { rawRequestTo } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type PolicySpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { NAMESPACED } from '../../src/api/names.ts';

const SHOP = 'tenancy-shop';
const OWNER = 'owner';
const WRITER = 'policy-writer';
const GUARD = 'portcullis-admission-policy-guard';
const SUITE = 'tenancy-cluster';
const SUITE_APPLIED = 'tenancy-cluster-applied';

const ref = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: SHOP };
const body = (name: string, spec: PolicySpec) => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name }, spec });
const rule = (group: string, resource: string) => [{ operations: ['CREATE', 'UPDATE'], apiGroups: [group], apiVersions: ['*'], resources: [resource] }];
const mutating = (group: string, resource: string, patch: Record<string, unknown>[]): PolicySpec => ({ type: 'Mutating', rules: rule(group, resource), mutations: [{ patch: patch as never }] });
/** The same reach written as a MutatingAdmissionPolicy's apply configuration: bounded alike. */
const applying = (group: string, resource: string, expression: string): PolicySpec => ({ type: 'Mutating', rules: rule(group, resource), mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression } }] });

/** The attacks on others' writes: each a Mutating policy the owner must not have. */
const ATTACKS: [name: string, spec: PolicySpec, guardWords: string, operatorWords: string][] = [
  [
    'add-me-to-bindings',
    mutating('rbac.authorization.k8s.io', 'rolebindings', [{ op: 'add', path: '/subjects/-', value: { kind: 'ServiceAccount', name: OWNER, namespace: SHOP } }]),
    'may not reach RBAC objects',
    'may not reach rolebindings (rbac.authorization.k8s.io): RBAC objects grant rights',
  ],
  ['make-me-cluster-admin', mutating('rbac.authorization.k8s.io', 'rolebindings', [{ op: 'replace', path: '/roleRef/name', value: 'cluster-admin' }]), 'may not reach RBAC objects', 'RBAC objects grant rights'],
  ['bigger-quota', mutating('', 'resourcequotas', [{ op: 'replace', path: '/spec/hard/pods', value: '100k' }]), 'ResourceQuotas', 'ResourceQuotas bound what every team may use'],
  ['my-endpoint', mutating('discovery.k8s.io', 'endpointslices', [{ op: 'add', path: '/endpoints/-', value: { addresses: ['10.0.0.66'] } }]), 'EndpointSlices', "EndpointSlices route a Service's traffic"],
  [
    'my-node',
    mutating('', 'pods/binding', [{ op: 'replace', path: '/target/name', value: 'control-plane' }]),
    `may not update and patch pods/binding (core) in namespace ${SHOP}`,
    `may not update or patch pods/binding (core) in namespace ${SHOP}`,
  ],
  ['bigger-quota-applied', applying('', 'resourcequotas', "Object{spec: Object.spec{hard: {'pods': '100k'}}}"), 'ResourceQuotas', 'ResourceQuotas bound what every team may use'],
  [
    'my-node-applied',
    applying('', 'pods/binding', "Object{target: Object.target{name: 'control-plane'}}"),
    `may not update and patch pods/binding (core) in namespace ${SHOP}`,
    `may not update or patch pods/binding (core) in namespace ${SHOP}`,
  ],
];

async function setUp(): Promise<void> {
  for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml', 'deploy/07-admission-policy-guard.yaml']) {
    const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
    expect(result.code, result.stderr).to.equal(0);
  }
  await ensureNamespace(SHOP);
  const { kube } = cluster();
  for (const name of [OWNER, WRITER]) await kube.core.createNamespacedServiceAccount({ namespace: SHOP, body: { metadata: { name } } }).catch(() => undefined);
  const objects: k8s.KubernetesObject[] = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'owner-admin', namespace: SHOP },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: OWNER, namespace: SHOP }],
    } as k8s.KubernetesObject,
    // Someone who may write policies and nothing else: no ConfigMap may be read for them.
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'policy-writer', namespace: SHOP },
      rules: [{ apiGroups: [GROUP], resources: [POLICY_PLURAL], verbs: ['create', 'update', 'get', 'list', 'delete'] }],
    } as k8s.KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'policy-writer', namespace: SHOP },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'policy-writer' },
      subjects: [{ kind: 'ServiceAccount', name: WRITER, namespace: SHOP }],
    } as k8s.KubernetesObject,
  ];
  for (const object of objects) await kube.objects.create(object).catch(() => undefined);
  await guardInForce();
  await eventually(
    async () => {
      const answer = (await kubectl(['auth', 'can-i', 'create', `${POLICY_PLURAL}.${GROUP}`, '-n', SHOP, '--as', `system:serviceaccount:${SHOP}:${OWNER}`])).stdout.trim();
      if (answer !== 'yes') throw new Error(`can-i create: ${answer}`);
    },
    { what: 'the admin role to carry the policy verbs' },
  );
}

/**
 * The API server takes up a new admission policy a moment after it is created: until the guard
 * refuses what it must, and its mutation records the author (without which its validation
 * refuses every write), nothing here is tested.
 */
async function guardInForce(): Promise<void> {
  const custom = cluster().kube.custom;
  const attempt = async (name: string, spec: PolicySpec) => {
    try {
      await custom.createNamespacedCustomObject({ ...ref, body: body(name, spec) });
      await custom.deleteNamespacedCustomObject({ ...ref, name });
      return undefined;
    } catch (err) {
      return String((err as { body?: unknown }).body ?? err);
    }
  };
  await eventually(
    async () => {
      const forbidden = await attempt('guard-probe', mutating('rbac.authorization.k8s.io', 'rolebindings', [{ op: 'add', path: '/metadata/labels', value: {} }]));
      if (!forbidden?.includes('may not reach RBAC objects')) throw new Error(`the guard does not refuse yet: ${forbidden}`);
      const allowed = await attempt('guard-probe', { type: 'Validating', rules: rule('', 'configmaps'), validations: [{ expression: 'true' }] });
      if (allowed !== undefined) throw new Error(`a valid policy is refused (the author not recorded yet): ${allowed}`);
    },
    { what: "deploy/07's policies to be in force" },
  );
}

async function deletePolicies(): Promise<void> {
  const list = (await cluster().kube.custom.listNamespacedCustomObject(ref)) as { items: { metadata: { name: string } }[] };
  for (const policy of list.items)
    await cluster()
      .kube.custom.deleteNamespacedCustomObject({ ...ref, name: policy.metadata.name })
      .catch(() => undefined);
}

describe('A namespace admin reaches nothing through AdmissionPolicies that it could not reach directly', function () {
  let owner: Kube;
  let ownerConfig: k8s.KubeConfig;
  let writer: Kube;

  before(async function () {
    await setUp();
    ownerConfig = await serviceAccountKubeConfig(SHOP, OWNER);
    owner = connect(ownerConfig);
    writer = connect(await serviceAccountKubeConfig(SHOP, WRITER));
  });

  after(async function () {
    await deletePolicies().catch(() => undefined);
    await cluster()
      .kube.core.deleteNamespace({ name: SHOP })
      .catch(() => undefined);
  });

  describe("with no operator answering: the API server's own guard", function () {
    it("refuses Mutating policies on RBAC objects, ResourceQuotas, EndpointSlices, and on what the owner may not update (the scheduler's binding)", async function () {
      for (const [name, spec, words] of ATTACKS) {
        const refused = await refusal(() => owner.custom.createNamespacedCustomObject({ ...ref, body: body(name, spec) }));
        expect(refused?.message, name).to.contain(`ValidatingAdmissionPolicy '${GUARD}'`);
        expect(refused?.message, name).to.contain(words);
      }
    });

    it('refuses params its writer may not read on every write, whatever it changes, and takes them from one who may', async function () {
      const withParams: PolicySpec = {
        type: 'Validating',
        rules: rule('', 'configmaps'),
        params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'db-credentials' },
        validations: [{ expression: 'true' }],
      };
      const refused = await refusal(() => writer.custom.createNamespacedCustomObject({ ...ref, body: body('show-params', withParams) }));
      expect(refused?.message).to.contain(`ValidatingAdmissionPolicy '${GUARD}'`);
      expect(refused?.message).to.contain(`user "system:serviceaccount:${SHOP}:${WRITER}" may not get ConfigMap db-credentials in namespace ${SHOP}`);
      // The owner may read ConfigMaps in the namespace; with no operator, nothing else refuses it.
      await owner.custom.createNamespacedCustomObject({ ...ref, body: body('show-params', withParams) });
      try {
        // Every write is checked whole: the writer may not edit it even leaving its params alone (it
        // could otherwise write a messageExpression that shows them), nor relabel it.
        const stored = (await writer.custom.getNamespacedCustomObject({ ...ref, name: 'show-params' })) as { metadata: Record<string, unknown>; spec: PolicySpec };
        const edited = await refusal(() =>
          writer.custom.replaceNamespacedCustomObject({ ...ref, name: 'show-params', body: { ...stored, spec: { ...stored.spec, validations: [{ expression: 'false', messageExpression: 'string(params.data)' }] } } }),
        );
        expect(edited?.message).to.contain(`ValidatingAdmissionPolicy '${GUARD}'`);
        expect(edited?.message).to.contain(`user "system:serviceaccount:${SHOP}:${WRITER}" may not get ConfigMap db-credentials in namespace ${SHOP}`);
        const relabelled = await refusal(() => writer.custom.replaceNamespacedCustomObject({ ...ref, name: 'show-params', body: { ...stored, metadata: { ...stored.metadata, labels: { team: 'x' } } } }));
        expect(relabelled?.message).to.contain(`user "system:serviceaccount:${SHOP}:${WRITER}" may not get ConfigMap db-credentials`);
        const kept = (await owner.custom.getNamespacedCustomObject({ ...ref, name: 'show-params' })) as { metadata: { annotations?: Record<string, string> }; spec: PolicySpec };
        expect(kept.spec.validations).to.deep.equal(withParams.validations);
        expect(kept.metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(`system:serviceaccount:${SHOP}:${OWNER}`);
        // The owner, who may read them, may still edit it.
        await owner.custom.replaceNamespacedCustomObject({ ...ref, name: 'show-params', body: { ...kept, spec: { ...kept.spec, validations: [{ expression: '1 == 1' }] } } });
      } finally {
        // Left behind, its missing params would deny every ConfigMap write in the namespace for the tests after it.
        await cluster().kube.custom.deleteNamespacedCustomObject({ ...ref, name: 'show-params' });
      }
    });

    it('admits a Mutating policy on what the owner may update and patch (its Deployments)', async function () {
      const labels = mutating('apps', 'deployments', [{ op: 'add', path: '/metadata/labels/team', value: SHOP }]);
      await owner.custom.createNamespacedCustomObject({ ...ref, body: body('team-label', labels) });
      await owner.custom.deleteNamespacedCustomObject({ ...ref, name: 'team-label' });
    });
  });

  describe("with the operator, and the guard's binding removed (a cluster installed without it)", function () {
    let operator: Operator;

    before(async function () {
      await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: GUARD } });
      // The authors of Mutating policies are asked again every second here (every 2 minutes by default).
      // And at most 3 policies are served in a namespace (50 by default).
      operator = await startTestOperator({ namespacedPolicyAuthorRecheckMs: 1_000, namespacedPoliciesPerNamespace: 3 });
      await waitForSuiteValidation(operator);
    });

    after(async function () {
      await deletePolicies().catch(() => undefined);
      await deleteSuite(SUITE).catch(() => undefined);
      await deleteSuite(SUITE_APPLIED).catch(() => undefined);
      await operator?.stop();
      const restored = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/07-admission-policy-guard.yaml']);
      expect(restored.code, restored.stderr).to.equal(0);
    });

    it("refuses the same attacks in the operator's words, and the cluster admin's RoleBinding is stored as written", async function () {
      for (const [name, spec, , words] of ATTACKS) {
        // The API server drops the guard's binding from its cache a moment after it is deleted: until then, the guard answers.
        const refused = await eventually(
          async () => {
            const answer = await refusal(() => owner.custom.createNamespacedCustomObject({ ...ref, body: body(name, spec) }));
            if (!answer) throw new Error(`${name} admitted`);
            if (answer.message?.includes(GUARD)) throw new Error(`still refused by the guard: ${answer.message}`);
            return answer;
          },
          { what: `the operator to refuse ${name}` },
        );
        expect(refused.message, name).to.contain(`AdmissionPolicy "${name}" is invalid`);
        expect(refused.message, name).to.contain(words);
      }
      const binding = (await cluster().kube.objects.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'alice-view', namespace: SHOP },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
      } as k8s.KubernetesObject)) as k8s.V1RoleBinding;
      expect(binding.roleRef.name).to.equal('view');
      expect(binding.subjects).to.deep.equal([{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }]);
    });

    it("cannot undo a cluster suite's mutation: the team's mutations run first, the suite's last", async function () {
      await createSuite(SUITE, {
        webhooks: [
          {
            name: 'mark',
            type: 'Mutating',
            rules: rule('', 'configmaps'),
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': SHOP } },
            mutations: [{ condition: '!has(object.metadata.labels)', patch: [{ op: 'add', path: '/metadata/labels', value: {} }] }, { patch: [{ op: 'add', path: '/metadata/labels/cluster-mark', value: 'set' }] }],
          },
        ],
      });
      await waitForCondition(SUITE, 'Ready', 'True');
      const undo: PolicySpec = {
        type: 'Mutating',
        rules: rule('', 'configmaps'),
        mutations: [
          { condition: "has(object.metadata.labels) && 'cluster-mark' in object.metadata.labels", patch: [{ op: 'remove', path: '/metadata/labels/cluster-mark' }] },
          { patch: [{ op: 'add', path: '/metadata/annotations', value: { 'team-ran': 'yes' } }] },
        ],
      };
      await owner.custom.createNamespacedCustomObject({ ...ref, body: body('undo-cluster', undo) });
      const stored = await eventually(
        async () => {
          const made = await cluster().kube.core.createNamespacedConfigMap({ namespace: SHOP, body: { metadata: { generateName: 'marked-' } } });
          if (made.metadata?.annotations?.['team-ran'] !== 'yes') throw new Error(`the team's policy has not run yet: ${JSON.stringify(made.metadata)}`);
          return made;
        },
        { what: "the team's policy to be served" },
      );
      expect(stored.metadata?.labels).to.deep.equal({ 'cluster-mark': 'set' });
      await owner.custom.deleteNamespacedCustomObject({ ...ref, name: 'undo-cluster' });
    });

    it("serves an apply configuration of what the owner may update (its ConfigMaps' labels, merged key by key), and it cannot undo a cluster suite's mutation either", async function () {
      await createSuite(SUITE_APPLIED, {
        webhooks: [
          {
            name: 'mark',
            type: 'Mutating',
            rules: rule('', 'configmaps'),
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': SHOP } },
            mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: "Object{metadata: Object.metadata{labels: {'cluster-mark': 'set'}}}" } }],
          },
        ],
      });
      await waitForCondition(SUITE_APPLIED, 'Ready', 'True');
      const relabel = applying('', 'configmaps', "Object{metadata: Object.metadata{labels: {'team': 'shop', 'cluster-mark': 'undone'}}}");
      await owner.custom.createNamespacedCustomObject({ ...ref, body: body('relabel', relabel) });
      const stored = await eventually(
        async () => {
          const made = await rawRequestTo(ownerConfig, 'POST', `/api/v1/namespaces/${SHOP}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'applied-', labels: { own: 'kept' } } });
          expect(made.status, JSON.stringify(made.body)).to.equal(201);
          const labels = (made.body.metadata as { labels?: Record<string, string> }).labels;
          if (labels?.team !== 'shop') throw new Error(`the team's policy has not run yet: ${JSON.stringify(labels)}`);
          return labels;
        },
        { what: "the team's apply configuration to be served" },
      );
      expect(stored).to.deep.equal({ own: 'kept', team: 'shop', 'cluster-mark': 'set' });
      await owner.custom.deleteNamespacedCustomObject({ ...ref, name: 'relabel' });
      await deleteSuite(SUITE_APPLIED);
    });

    it("answers `authorizer` only about the policy's own namespace: nothing is learnt of other namespaces", async function () {
      const asks: PolicySpec = {
        type: 'Validating',
        rules: rule('', 'configmaps'),
        validationActions: ['Warn'],
        variables: [
          { name: 'elsewhere', expression: "authorizer.serviceAccount('kube-system', 'namespace-controller').group('').resource('secrets').namespace('default').check('list')" },
          { name: 'here', expression: `authorizer.serviceAccount('${SHOP}', '${OWNER}').group('').resource('configmaps').namespace('${SHOP}').check('create')` },
        ],
        validations: [
          { expression: '!variables.elsewhere.allowed()', message: 'namespace-controller MAY list secrets in default' },
          { expression: '!variables.here.allowed()', message: 'the owner may create ConfigMaps here' },
        ],
      };
      await owner.custom.createNamespacedCustomObject({ ...ref, body: body('asks', asks) });
      const warnings = await eventually(
        async () => {
          const created = await rawRequestTo(ownerConfig, 'POST', `/api/v1/namespaces/${SHOP}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'probe-' } });
          expect(created.status, JSON.stringify(created.body)).to.equal(201);
          if (!created.warnings.some((w) => w.includes('the owner may create ConfigMaps here'))) throw new Error(`not served yet: ${JSON.stringify(created.warnings)}`);
          return created.warnings;
        },
        { what: "the team's policy to warn" },
      );
      expect(warnings.join('\n')).to.not.contain('MAY list secrets');
      await owner.custom.deleteNamespacedCustomObject({ ...ref, name: 'asks' });
    });

    it('stops serving a Mutating policy once its author may no longer change what it changes (the API server records the author)', async function () {
      const { kube } = cluster();
      await kube.core.createNamespacedServiceAccount({ namespace: SHOP, body: { metadata: { name: 'lead' } } });
      const grant = {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'lead-admin', namespace: SHOP },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'lead', namespace: SHOP }],
      } as k8s.KubernetesObject;
      await kube.objects.create(grant);
      const lead = connect(await serviceAccountKubeConfig(SHOP, 'lead'));
      const stamp = mutating('', 'configmaps', [{ op: 'add', path: '/metadata/annotations', value: { 'lead-ran': 'yes' } }]);
      await eventually(async () => lead.custom.createNamespacedCustomObject({ ...ref, body: body('lead-stamp', stamp) }), { what: "the lead's rights to reach the API server's authorizer" });
      const stored = (await kube.custom.getNamespacedCustomObject({ ...ref, name: 'lead-stamp' })) as { metadata: { annotations?: Record<string, string> } };
      expect(stored.metadata.annotations?.[NAMESPACED.authorAnnotation], 'recorded by the API server').to.equal(`system:serviceaccount:${SHOP}:lead`);
      const stamped = async () => (await kube.core.createNamespacedConfigMap({ namespace: SHOP, body: { metadata: { generateName: 'lead-' } } })).metadata?.annotations?.['lead-ran'];
      await eventually(async () => expect(await stamped()).to.equal('yes'), { what: "the lead's policy to be served" });

      await kube.objects.delete(grant);
      await eventually(
        async () => {
          const policy = (await kube.custom.getNamespacedCustomObject({ ...ref, name: 'lead-stamp' })) as { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } };
          const ready = policy.status?.conditions?.find((c) => c.type === 'Ready');
          expect(ready?.reason, JSON.stringify(ready)).to.equal('AuthorForbidden');
          expect(ready?.message).to.contain(`user "system:serviceaccount:${SHOP}:lead" may not update or patch configmaps (core) in namespace ${SHOP}`);
        },
        { what: 'the policy to be withheld once its author lost the admin role' },
      );
      await eventually(async () => expect(await stamped()).to.equal(undefined), { what: 'ConfigMaps to be written as their writers wrote them' });
      await kube.custom.deleteNamespacedCustomObject({ ...ref, name: 'lead-stamp' });
    });

    it("takes no more room than the cluster admin allows: a policy too large is refused on apply, and one beyond the namespace's count waits for room", async function () {
      const { kube } = cluster();
      const huge: PolicySpec = { type: 'Validating', rules: rule('', 'configmaps'), validations: [{ expression: 'true', message: 'x'.repeat(70_000) }] };
      const refused = await refusal(() => owner.custom.createNamespacedCustomObject({ ...ref, body: body('huge', huge) }));
      expect(refused?.message).to.match(/AdmissionPolicy "huge" is invalid: spec: is 70\d{3} bytes, more than the 65536 the cluster's administrator allows a policy/);

      const named = (name: string): PolicySpec => ({ type: 'Validating', rules: rule('', 'configmaps'), validations: [{ expression: `object.metadata.name != '${name}'`, message: `not ${name}` }] });
      for (const name of ['count-1', 'count-2', 'count-3', 'count-4']) await owner.custom.createNamespacedCustomObject({ ...ref, body: body(name, named(name)) });
      const readyOf = async (name: string) =>
        ((await kube.custom.getNamespacedCustomObject({ ...ref, name })) as { status?: { conditions?: { type: string; reason: string; message: string }[] } }).status?.conditions?.find((c) => c.type === 'Ready');
      // Created in the same second, they keep their place by name: count-4 waits.
      await eventually(
        async () => {
          expect((await readyOf('count-4'))?.reason).to.equal('ExceedsLimits');
          expect((await readyOf('count-4'))?.message).to.contain(`namespace ${SHOP} already has 3 policies served`);
          expect((await readyOf('count-1'))?.reason).to.equal('Served');
        },
        { what: 'the fourth policy to wait for room' },
      );
      const admitted = await kube.core.createNamespacedConfigMap({ namespace: SHOP, dryRun: 'All', body: { metadata: { name: 'count-4' } } });
      expect(admitted.metadata?.name, 'the waiting policy is not enforced').to.equal('count-4');

      await kube.custom.deleteNamespacedCustomObject({ ...ref, name: 'count-1' });
      await eventually(async () => expect((await readyOf('count-4'))?.reason).to.equal('Served'), { what: 'the fourth policy to be served once room is made' });
      const denied = await eventually(async () => (await refusal(() => kube.core.createNamespacedConfigMap({ namespace: SHOP, dryRun: 'All', body: { metadata: { name: 'count-4' } } }))) ?? Promise.reject(new Error('admitted')), {
        what: 'the fourth policy to be enforced',
      });
      expect(denied.message).to.contain('AdmissionPolicy count-4: not count-4');
      for (const name of ['count-2', 'count-3', 'count-4']) await kube.custom.deleteNamespacedCustomObject({ ...ref, name });
    });

    it('refuses params of a cluster-scoped kind, which would deny every request', async function () {
      const priority: PolicySpec = {
        type: 'Validating',
        rules: rule('', 'configmaps'),
        params: { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', name: 'system-cluster-critical' },
        validations: [{ expression: 'true' }],
      };
      const refused = await refusal(() => cluster().kube.custom.createNamespacedCustomObject({ ...ref, body: body('cluster-params', priority) }));
      expect(refused?.message).to.contain('AdmissionPolicy "cluster-params" is invalid: spec.params: PriorityClass (scheduling.k8s.io/v1) is cluster-scoped');
    });
  });
});
