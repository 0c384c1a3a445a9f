/**
 * AdmissionPolicies end to end, through the real API server: a team member whose only rights are
 * Kubernetes' `admin` role bound in their namespace (a ServiceAccount with a TokenRequest token;
 * deploy/02-rbac.yaml aggregates the policy verbs into `admin`) creates a policy that denies and
 * two that mutate; the team's mutations run first, in name order, then the cluster suite's, as the
 * stored object shows; objects of another namespace are untouched; the member can
 * create no policy elsewhere, and an invalid one is refused naming the field; deleting the
 * namespace removes its policies and nothing else; the `portcullis--namespaced` configurations
 * follow the policies that exist, and go with the last one; with mutations turned off by the
 * cluster admin (an operator flag), a Mutating policy is reported in its status and not served.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { connect, deleteIfExists, isNotFound, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type PolicySpec } from '../../src/api/types.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';

const TEAM = 'nspol-team';
const OTHER = 'nspol-other';
const THIRD = 'nspol-third';
const MEMBER = 'member';
const SUITE = 'nspol-cluster';
const LABEL = 'nspol-e2e';
const configMaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const selected = { matchLabels: { [LABEL]: 'true' } };

/** The patch that appends `mark` to the `order` annotation, or starts it. */
const appendPatch = (mark: string) =>
  `!has(object.metadata.annotations) ? [{'op': 'add', 'path': '/metadata/annotations', 'value': {'order': '${mark}'}}] : ` +
  `'order' in object.metadata.annotations ? [{'op': 'replace', 'path': '/metadata/annotations/order', 'value': object.metadata.annotations['order'] + ',${mark}'}] : ` +
  `[{'op': 'add', 'path': '/metadata/annotations/order', 'value': '${mark}'}]`;
const append = (mark: string): PolicySpec => ({ type: 'Mutating', rules: configMaps, objectSelector: selected, mutations: [{ patchExpression: appendPatch(mark) }] });
const denyForbidden: PolicySpec = {
  type: 'Validating',
  rules: configMaps,
  objectSelector: selected,
  validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: 'no key named forbidden in this namespace' }],
};

const ref = (namespace: string) => ({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace });
const policyBody = (name: string, spec: PolicySpec) => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name }, spec });

async function listPolicies(namespace: string): Promise<AdmissionPolicy[]> {
  return ((await cluster().kube.custom.listNamespacedCustomObject(ref(namespace))) as { items: AdmissionPolicy[] }).items;
}

async function waitReady(namespace: string, name: string): Promise<AdmissionPolicy> {
  return eventually(
    async () => {
      const policy = (await cluster().kube.custom.getNamespacedCustomObject({ ...ref(namespace), name })) as AdmissionPolicy;
      const ready = policy.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True' || policy.status?.observedGeneration !== policy.metadata.generation) throw new Error(`Ready: ${JSON.stringify(ready)}`);
      return policy;
    },
    { what: `AdmissionPolicy ${namespace}/${name} to be Ready` },
  );
}

async function configuration(kind: 'Mutating' | 'Validating'): Promise<k8s.V1MutatingWebhookConfiguration | undefined> {
  try {
    const admission = cluster().admissionregistration;
    return kind === 'Mutating' ? await admission.readMutatingWebhookConfiguration({ name: NAMESPACED.configuration }) : await admission.readValidatingWebhookConfiguration({ name: NAMESPACED.configuration });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

describe("AdmissionPolicies: a team's own rules in its namespace", function () {
  let operator: Operator;
  let member: Kube;

  before(async function () {
    // The aggregated roles that let namespace admins write policies are deploy/'s.
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    for (const namespace of [TEAM, OTHER, THIRD]) await ensureNamespace(namespace);
    const { kube } = cluster();
    await kube.core.createNamespacedServiceAccount({ namespace: TEAM, body: { metadata: { name: MEMBER } } });
    await kube.objects.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'member-admin', namespace: TEAM },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: MEMBER, namespace: TEAM }],
    } as k8s.KubernetesObject);
    await eventually(
      async () => {
        const answer = (await kubectl(['auth', 'can-i', 'create', `${POLICY_PLURAL}.${GROUP}`, '-n', TEAM, '--as', `system:serviceaccount:${TEAM}:${MEMBER}`])).stdout.trim();
        if (answer !== 'yes') throw new Error(`can-i create: ${answer}`);
      },
      { what: 'the controller manager to aggregate portcullis-admissionpolicies-admin into the admin role' },
    );
    member = connect(await serviceAccountKubeConfig(TEAM, MEMBER));

    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    // The cluster-wide suite: it appends to the `order` annotation, in both namespaces.
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'order',
          type: 'Mutating',
          rules: configMaps,
          namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [TEAM, OTHER] }] },
          objectSelector: selected,
          mutations: [{ patchExpression: appendPatch('cluster') }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    const { kube } = cluster();
    for (const namespace of [TEAM, OTHER, THIRD]) {
      for (const policy of await listPolicies(namespace).catch(() => [])) {
        await kube.custom.deleteNamespacedCustomObject({ ...ref(namespace), name: policy.metadata.name }).catch(() => undefined);
      }
    }
    await deleteSuite(SUITE);
    // Nothing left pointing at this file's operator, whatever failed above.
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      await deleteIfExists(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: NAMESPACED.configuration } });
    }
    await operator?.stop();
    for (const namespace of [TEAM, OTHER, THIRD]) await kube.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it("lets a namespace admin create policies that deny and mutate there; the team's policies mutate first, in name order, then the cluster suite (which has the last word)", async function () {
    for (const [name, spec] of [
      ['deny-forbidden', denyForbidden],
      ['b-second', append('b')],
      ['a-first', append('a')],
    ] as const) {
      await member.custom.createNamespacedCustomObject({ ...ref(TEAM), body: policyBody(name, spec) });
    }
    for (const name of ['deny-forbidden', 'a-first', 'b-second']) {
      const policy = await waitReady(TEAM, name);
      expect(policy.status?.conditions?.find((c) => c.type === 'Ready')?.reason).to.equal('Served');
    }

    const denied = await eventually(
      async () => (await refusal(() => member.core.createNamespacedConfigMap({ namespace: TEAM, body: { metadata: { name: 'forbidden', labels: { [LABEL]: 'true' } }, data: { forbidden: 'x' } } }))) ?? Promise.reject(new Error('admitted')),
      { what: "the team's validating policy to deny" },
    );
    expect(denied.message).to.contain(`admission webhook "${NAMESPACED.webhook}" denied the request: AdmissionPolicy deny-forbidden: no key named forbidden in this namespace`);

    const stored = await member.core.createNamespacedConfigMap({ namespace: TEAM, body: { metadata: { name: 'ordered', labels: { [LABEL]: 'true' } }, data: { ok: 'x' } } });
    expect(stored.metadata?.annotations?.order, 'a-first, then b-second, then the suite').to.equal('a,b,cluster');
    // An object the policies' objectSelector does not select is left alone.
    const unlabelled = await member.core.createNamespacedConfigMap({ namespace: TEAM, body: { metadata: { name: 'unlabelled' }, data: { forbidden: 'x' } } });
    expect(unlabelled.metadata?.annotations ?? {}).to.deep.equal({});
  });

  it('leaves objects of another namespace untouched', async function () {
    const other = await cluster().kube.core.createNamespacedConfigMap({ namespace: OTHER, body: { metadata: { name: 'elsewhere', labels: { [LABEL]: 'true' } }, data: { forbidden: 'x' } } });
    expect(other.metadata?.annotations?.order, "the cluster suite's mutation only").to.equal('cluster');
  });

  it("registers one configuration per type, for the namespaces that have policies and the resources they name, sorting before every suite's", async function () {
    const mutating = await configuration('Mutating');
    expect(mutating, 'the Mutating portcullis--namespaced').to.not.equal(undefined);
    expect(NAMESPACED.configuration < `portcullis-${SUITE}`).to.equal(true);
    const webhook = mutating!.webhooks![0]!;
    expect(webhook.namespaceSelector?.matchExpressions).to.deep.include({ key: 'kubernetes.io/metadata.name', operator: 'In', values: [TEAM] });
    expect(webhook.rules).to.deep.equal([{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: 'Namespaced' }]);
    expect(webhook.clientConfig.service?.port).to.equal(operator.servingPort);
    expect(await configuration('Validating'), 'the Validating portcullis--namespaced').to.not.equal(undefined);
  });

  it('refuses the team member a policy in another namespace, and refuses an invalid one naming the field', async function () {
    const elsewhere = await refusal(() => member.custom.createNamespacedCustomObject({ ...ref(OTHER), body: policyBody('sneaky', denyForbidden) }));
    expect(elsewhere?.code).to.equal(403);
    expect(elsewhere?.message).to.contain(`cannot create resource "${POLICY_PLURAL}"`);

    const broken = await refusal(() => member.custom.createNamespacedCustomObject({ ...ref(TEAM), body: policyBody('broken', { ...denyForbidden, validations: [{ expression: 'object.data.size() >' }] }) }));
    expect(broken?.message).to.contain('AdmissionPolicy "broken" is invalid: spec.validations[0].expression');
    const reaching = await refusal(() => member.custom.createNamespacedCustomObject({ ...ref(TEAM), body: policyBody('reaching', { ...denyForbidden, params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: OTHER, name: 'limits' } }) }));
    expect(reaching?.message).to.contain("spec.params.namespace: must be the policy's own namespace");
    expect((await listPolicies(TEAM)).map((p) => p.metadata.name).sort()).to.deep.equal(['a-first', 'b-second', 'deny-forbidden']);
  });

  it("type-checks a policy as a suite's webhook: a definite error is accepted with warnings by default (as a VAP) and reported in its status; with typeCheckErrors: Deny it is refused on apply naming the field", async function () {
    const deployments = [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];
    const typo: PolicySpec = { type: 'Validating', rules: deployments, objectSelector: selected, validations: [{ expression: 'object.replicas <= 5' }] };
    const undefinedField = "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'";
    const refused = await refusal(() => member.custom.createNamespacedCustomObject({ ...ref(TEAM), body: policyBody('typo', { ...typo, typeCheckErrors: 'Deny' }) }));
    expect(refused?.message).to.contain('AdmissionPolicy "typo" is invalid: spec.validations[0].expression: type checking failed on every kind the webhook matches');
    expect(refused?.message).to.contain("undefined field 'replicas'");

    await member.custom.createNamespacedCustomObject({ ...ref(TEAM), body: policyBody('typo', typo) });
    const statusOf = async (name: string) => ((await cluster().kube.custom.getNamespacedCustomObject({ ...ref(TEAM), name })) as AdmissionPolicy).status;
    await eventually(
      async () => {
        const warnings = (await statusOf('typo'))?.typeChecking?.expressionWarnings ?? [];
        expect(warnings.map((w) => w.fieldRef)).to.deep.equal(['spec.validations[0].expression']);
        expect(warnings[0]!.warning).to.contain(undefinedField);
      },
      { what: "the policy's status.typeChecking to report the undefined field" },
    );
    // A policy whose expressions hold against ConfigMap's schema is checked and has no warnings.
    await eventually(async () => expect((await statusOf('deny-forbidden'))?.typeChecking).to.deep.equal({}), { what: 'the good policy to be checked with no warnings' });
    await cluster().kube.custom.deleteNamespacedCustomObject({ ...ref(TEAM), name: 'typo' });
  });

  it("removes a namespace's policies with the namespace and nothing else; the configurations go with the last policy of their type", async function () {
    await cluster().kube.custom.createNamespacedCustomObject({ ...ref(THIRD), body: policyBody('third-deny', denyForbidden) });
    await waitReady(THIRD, 'third-deny');

    await cluster().kube.core.deleteNamespace({ name: TEAM });
    await eventually(
      async () => {
        try {
          await cluster().kube.core.readNamespace({ name: TEAM });
        } catch (err) {
          if (isNotFound(err)) return;
          throw err;
        }
        throw new Error('still there');
      },
      { what: `namespace ${TEAM} to be deleted`, timeoutMs: 180_000, intervalMs: 1000 },
    );
    expect(await listPolicies(TEAM)).to.deep.equal([]);
    expect((await listPolicies(THIRD)).map((p) => p.metadata.name)).to.deep.equal(['third-deny']);
    expect(await getSuite(SUITE), 'the cluster suite').to.not.equal(undefined);
    expect((await cluster().kube.core.readNamespacedConfigMap({ namespace: OTHER, name: 'elsewhere' })).metadata?.name).to.equal('elsewhere');

    // No mutating policy is left: its configuration is gone; the validating one now names only THIRD.
    await eventually(
      async () => {
        if (await configuration('Mutating')) throw new Error('the Mutating configuration is still there');
        const validating = await configuration('Validating');
        const values = validating?.webhooks?.[0]?.namespaceSelector?.matchExpressions?.find((e) => e.operator === 'In')?.values;
        if (JSON.stringify(values) !== JSON.stringify([THIRD])) throw new Error(`Validating namespaces: ${JSON.stringify(values)}`);
      },
      { what: 'the configurations to follow the policies that remain' },
    );
    const denied = await refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace: THIRD, body: { metadata: { name: 'x', labels: { [LABEL]: 'true' } }, data: { forbidden: 'x' } } }));
    expect(denied?.message).to.contain('AdmissionPolicy third-deny');

    await cluster().kube.custom.deleteNamespacedCustomObject({ ...ref(THIRD), name: 'third-deny' });
    await eventually(
      async () => {
        if (await configuration('Validating')) throw new Error('the Validating configuration is still there');
      },
      { what: 'the last configuration to go with the last policy' },
    );
    const admitted = await cluster().kube.core.createNamespacedConfigMap({ namespace: THIRD, body: { metadata: { name: 'y', labels: { [LABEL]: 'true' } }, data: { forbidden: 'x' } } });
    expect(admitted.metadata?.name).to.equal('y');
  });

  it("holds the cluster admin's limits: with mutations turned off, a Mutating policy is reported and not served, and a new one is refused", async function () {
    await cluster().kube.custom.createNamespacedCustomObject({ ...ref(THIRD), body: policyBody('a-first', append('a')) });
    await waitReady(THIRD, 'a-first');
    await operator.stop();
    operator = await startTestOperator({ namespacedPolicyMutations: false });
    const limited = await eventually(
      async () => {
        const policy = (await cluster().kube.custom.getNamespacedCustomObject({ ...ref(THIRD), name: 'a-first' })) as AdmissionPolicy;
        const ready = policy.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.reason !== 'ExceedsLimits') throw new Error(`Ready: ${JSON.stringify(ready)}`);
        return ready;
      },
      { what: 'the Mutating policy to be reported beyond the limits' },
    );
    expect(limited.status).to.equal('False');
    expect(limited.message).to.contain('--namespaced-policy-mutations=false');
    await eventually(
      async () => {
        if (await configuration('Mutating')) throw new Error('the Mutating configuration is still there');
      },
      { what: 'the Mutating configuration to go: nothing of the policy is served' },
    );
    await waitForSuiteValidation(operator);
    const refused = await refusal(() => cluster().kube.custom.createNamespacedCustomObject({ ...ref(THIRD), body: policyBody('b-second', append('b')) }));
    expect(refused?.message).to.contain('AdmissionPolicy "b-second" is invalid: spec.type: Mutating policies are turned off');
    await cluster().kube.custom.deleteNamespacedCustomObject({ ...ref(THIRD), name: 'a-first' });
  });

  it("answers a policy refused by the API server's own schema with its message (the CRD's rules)", async function () {
    const err = await refusal(() => cluster().kube.custom.createNamespacedCustomObject({ ...ref(THIRD), body: policyBody('clusterwide', { ...denyForbidden, rules: [{ ...configMaps[0]!, scope: 'Cluster' }] }) }));
    expect(err?.message).to.contain('spec.rules[0].scope');
  });
});
