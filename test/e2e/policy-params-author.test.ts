/**
 * Issue 49, attack 3, for AdmissionPolicies: a team member reads what it may not read through a
 * policy's params when the policy-validation webhook (failurePolicy Ignore) did not answer. Owns
 * the check at reconcile: deploy/07's guard records who last wrote a policy (a
 * MutatingAdmissionPolicy the writer cannot forge), and before it serves a policy with params the
 * operator asks whether that author may read them (controller/suite-author.ts, as for a suite), so
 * a policy admitted while nothing checked it (no operator running, the guard's validating half
 * unbound) is not served (Ready=False, ParamsForbidden) and no denial ever shows the params; nor
 * is one whose messageExpression was edited, unchecked, by someone who may not read them. Attackers
 * are ServiceAccounts with TokenRequest tokens and only their own rights; the control, an author
 * who may read the ConfigMap, gets its policy served and its denials do show it (so the channel is
 * real). The operator runs with the test's admin credentials.
 */
import { expect } from 'chai';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { eventually } from '../support/wait.ts';
import { apply, connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../../src/api/names.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type PolicySpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

/** The attacker's namespace: it may write policies and create ConfigMaps here, not read them. */
const ATTACK = 'policy-author-attack';
/** The control's namespace: its author may read the ConfigMaps here. */
const READ = 'policy-author-read';
const GUARD = 'portcullis-admission-policy-guard';
/** The secret in each namespace's ConfigMap: what must never reach the attacker. */
const PASSWORD = `hunter2-${Math.random().toString(36).slice(2, 10)}`;

const user = (name: string) => `system:serviceaccount:${ATTACK}:${name}`;
const ref = (namespace: string) => ({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace });

/** A policy that denies every ConfigMap created in its namespace, quoting the password from its params. */
function leaking(message = "'leak: ' + params.data.password"): PolicySpec {
  return {
    type: 'Validating',
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'db-credentials' },
    validations: [{ expression: 'false', messageExpression: message }],
  } as PolicySpec;
}

async function getPolicy(namespace: string, name: string): Promise<AdmissionPolicy> {
  return (await cluster().kube.custom.getNamespacedCustomObject({ ...ref(namespace), name })) as AdmissionPolicy;
}

/** Creates the policy as `as`, or replaces its spec; the refusal's message, or undefined when admitted. */
async function writePolicy(as: Kube, namespace: string, name: string, spec: PolicySpec): Promise<string | undefined> {
  const stored = await getPolicy(namespace, name).catch(() => undefined);
  const refused = await refusal(() =>
    stored
      ? as.custom.replaceNamespacedCustomObject({ ...ref(namespace), name, body: { ...stored, spec } })
      : as.custom.createNamespacedCustomObject({ ...ref(namespace), body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name }, spec } }),
  );
  return refused?.message;
}

/** The policy's Ready condition once the operator has reconciled its current generation. */
async function readyOf(namespace: string, name: string, status: 'True' | 'False'): Promise<{ reason: string; message: string; policy: AdmissionPolicy }> {
  return eventually(
    async () => {
      const policy = await getPolicy(namespace, name);
      const ready = policy.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== status || policy.status?.observedGeneration !== policy.metadata.generation) throw new Error(`Ready: ${JSON.stringify(ready)}`);
      return { reason: ready.reason, message: ready.message ?? '', policy };
    },
    { what: `AdmissionPolicy ${namespace}/${name} to be Ready=${status}`, timeoutMs: 120_000 },
  );
}

/** What a ConfigMap create in `namespace` by `as` is answered: the denial's message, or undefined when admitted. */
async function createConfigMap(as: Kube, namespace: string): Promise<string | undefined> {
  const refused = await refusal(() => as.core.createNamespacedConfigMap({ namespace, body: { metadata: { generateName: 'probe-' } } }));
  return refused?.message;
}

async function grant(name: string, namespace: string, subject: string, rules: object[]): Promise<void> {
  const meta = { name, namespace };
  await apply(cluster().kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta, rules });
  await apply(cluster().kube, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: meta,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name: subject, namespace: ATTACK }],
  });
}

async function applyGuard(): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/07-admission-policy-guard.yaml']);
  expect(applied.code, applied.stderr).to.equal(0);
}

/** No operator answers: the validation webhooks (failurePolicy Ignore) refuse nothing. */
async function noValidationWebhook(): Promise<void> {
  await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: SUITE_VALIDATION.configuration } });
}

describe('Issue 49 attack 3: an AdmissionPolicy is served only while its recorded author may read its params', function () {
  let attacker: Kube;
  let reader: Kube;
  let operator: Operator | undefined;

  before(async function () {
    const deployed = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/00-namespace.yaml', '-f', 'deploy/02-rbac.yaml']);
    expect(deployed.code, deployed.stderr).to.equal(0);
    for (const namespace of [ATTACK, READ]) {
      await ensureNamespace(namespace);
      await apply(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'db-credentials', namespace }, data: { password: PASSWORD } });
    }
    const policies = { apiGroups: [GROUP], resources: [POLICY_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] };
    for (const name of ['attacker', 'reader']) await apply(cluster().kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ATTACK } });
    await grant('policy-author-attacker', ATTACK, 'attacker', [policies, { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]);
    // The attacker may also edit the control's policies, but not read the ConfigMaps there.
    await grant('policy-author-attacker', READ, 'attacker', [policies, { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]);
    await grant('policy-author-reader', READ, 'reader', [policies, { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create'] }]);
    for (const namespace of [ATTACK, READ]) expect((await kubectl(['auth', 'can-i', 'get', 'configmaps', '-n', namespace, '--as', user('attacker')])).stdout.trim()).to.equal('no');
    attacker = connect(await serviceAccountKubeConfig(ATTACK, 'attacker'));
    reader = connect(await serviceAccountKubeConfig(ATTACK, 'reader'));

    // A cluster where nothing checks a policy on apply: no operator answers its webhook, and the
    // guard's validating half is not bound; its mutating half still records the author.
    await noValidationWebhook();
    await applyGuard();
    await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: GUARD } });
    await eventually(
      async () => {
        const refused = await writePolicy(attacker, ATTACK, 'leak', leaking());
        if (refused !== undefined) throw new Error(refused);
      },
      { what: "the API server to drop the guard's binding and admit the attacker's policy" },
    );
    await eventually(
      async () => {
        // Each write records its writer; the API server takes up the mutation a moment after it is applied.
        await writePolicy(attacker, ATTACK, 'leak', leaking(`'leak: ' + params.data.password + ' '`));
        const author = (await getPolicy(ATTACK, 'leak')).metadata.annotations?.[NAMESPACED.authorAnnotation];
        if (author !== user('attacker')) throw new Error(`the author recorded is ${author}`);
      },
      { what: 'the attacker to be recorded as the author' },
    );
    expect(await writePolicy(reader, READ, 'shown', leaking())).to.equal(undefined);
    expect((await getPolicy(READ, 'shown')).metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('reader'));
    operator = await startTestOperator({ namespacedPolicyAuthorRecheckMs: 2_000 });
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    const { kube } = cluster();
    for (const [namespace, name] of [
      [ATTACK, 'leak'],
      [READ, 'shown'],
    ])
      await kube.custom.deleteNamespacedCustomObject({ ...ref(namespace!), name: name! }).catch(() => undefined);
    // Nothing left pointing at this file's operator, whatever failed above.
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      await deleteIfExists(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: NAMESPACED.configuration } });
    }
    await operator?.stop();
    // Put back as deploy/ has it, for the tests after this one.
    await applyGuard();
    for (const namespace of [ATTACK, READ]) await kube.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it("withholds a policy admitted unchecked whose author may not read its params (Ready=False, ParamsForbidden): no denial carries the ConfigMap's data; the control author's policy is served and does", async function () {
    const served = await readyOf(READ, 'shown', 'True');
    expect(served.reason).to.equal('Served');
    const shown = await eventually(async () => (await createConfigMap(reader, READ)) ?? Promise.reject(new Error('admitted: not served yet')), { what: "the control policy's denial" });
    expect(shown).to.contain(`leak: ${PASSWORD}`);

    const withheld = await readyOf(ATTACK, 'leak', 'False');
    expect(withheld.reason, withheld.message).to.equal('ParamsForbidden');
    expect(withheld.message).to.contain(`user "${user('attacker')}" may not get, list, watch ConfigMap (v1) in namespace ${ATTACK}`);
    expect(JSON.stringify(withheld.policy.status)).to.not.contain(PASSWORD);
    // The operator serves the control while these are asked: the attacker's are answered without its policy.
    for (let i = 0; i < 3; i++) expect((await createConfigMap(attacker, ATTACK)) ?? '').to.not.contain(PASSWORD);
  });

  it("withholds the control's policy once someone who may not read its params edits only its message unchecked (recorded as its author)", async function () {
    // With the operator answering, its webhook refuses the attacker's edit of the message alone.
    const edited = leaking("'mine: ' + params.data.password");
    const refused = await eventually(async () => (await writePolicy(attacker, READ, 'shown', edited)) ?? Promise.reject(new Error('admitted')), { what: 'the webhook to refuse' });
    expect(refused).to.contain(`user "${user('attacker')}" may not get, list, watch ConfigMap (v1) in namespace ${READ}`);

    // With no operator answering, the same edit is admitted, and its writer recorded as the author.
    await operator!.stop();
    operator = undefined;
    await noValidationWebhook();
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: NAMESPACED.configuration } });
    }
    expect(await writePolicy(attacker, READ, 'shown', edited)).to.equal(undefined);
    expect((await getPolicy(READ, 'shown')).metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('attacker'));

    operator = await startTestOperator({ namespacedPolicyAuthorRecheckMs: 2_000 });
    await waitForSuiteValidation(operator);
    const withheld = await readyOf(READ, 'shown', 'False');
    expect(withheld.reason, withheld.message).to.equal('ParamsForbidden');
    expect(withheld.message).to.contain(`user "${user('attacker')}" may not get, list, watch ConfigMap (v1) in namespace ${READ}`);
    for (const as of [attacker, reader]) expect((await createConfigMap(as, READ)) ?? '').to.not.contain(PASSWORD);
  });
});
