/**
 * The attacks of the security review, replayed through the real API server: a suite that would
 * show the operator's own Secrets, a suite author naming params they may not read, a
 * configuration of someone else's under a suite's name, and a suite's Service deleted by hand.
 */
import { expect } from 'chai';
import { cluster, kubectl, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { condition, createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, deleteIfExists, getObject, type KubeObject } from '../../src/apiserver/client.ts';
import { CA_SECRET, configurationName, defaultServiceName, SUITE_VALIDATION, tlsSecretName } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { SuiteSpec, WebhookSpec } from '../../src/api/types.ts';

const NS = 'security-e2e';
const configmaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const inNamespace = { matchLabels: { 'kubernetes.io/metadata.name': NS } };

/** A webhook that denies every ConfigMap create in NS with its params in the message, as the attack did. */
function showParams(params: WebhookSpec['params']): SuiteSpec {
  return {
    // string() of a map does not type-check against the params kind; an attacker sets Warn, and the access checks must hold regardless.
    typeCheckErrors: 'Warn',
    webhooks: [{ name: 'show', type: 'Validating', rules: configmaps, namespaceSelector: inNamespace, params, validations: [{ expression: 'false', messageExpression: 'string(params.data)' }] }],
  };
}
const caSecretParams = showParams({ apiVersion: 'v1', kind: 'Secret', namespace: OPERATOR_NAMESPACE, name: CA_SECRET });
const denyAll: SuiteSpec = {
  webhooks: [{ name: 'deny', type: 'Validating', rules: configmaps, namespaceSelector: inNamespace, validations: [{ expression: 'false', message: 'denied by the suite' }] }],
};

let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${seq++}`;

describe('security: no confused deputy, nothing of others taken over', function () {
  let operator: Operator | undefined;

  before(async function () {
    await ensureNamespace(NS);
    // A suite that got in while no operator ran (the suite-validation webhook fails open).
    await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: SUITE_VALIDATION.configuration } });
    await createSuite('steal-ca', caSecretParams);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of ['steal-ca', 'steal-ca-2', 'team-params', 'foreign', 'svc-heal']) await deleteSuite(name);
    await operator?.stop();
  });

  it("never serves the operator's own Secrets as params: refused on apply, and registers nothing when it got in", async function () {
    const refused = await refusal(() => createSuite('steal-ca-2', caSecretParams));
    expect(refused?.code).to.equal(422);
    expect(refused?.message).to.contain('spec.webhooks[0].params');
    expect(refused?.message).to.contain('never served as params');
    const allSecrets = await refusal(() => createSuite('steal-ca-2', showParams({ apiVersion: 'v1', kind: 'Secret', name: CA_SECRET })));
    expect(allSecrets?.message).to.contain('never served as params');

    const suite = await waitForCondition('steal-ca', 'Ready', 'False');
    expect(condition(suite, 'Ready')?.reason).to.equal('InvalidSpec');
    expect(await getObject(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: configurationName('steal-ca') } })).to.equal(undefined);
    // What the attack did: a ConfigMap create, whose denial would have carried the CA key.
    const created = await createConfigMap(NS, unique('probe'));
    expect(created.metadata?.name).to.match(/^probe-/);
  });

  it('refuses a suite whose author may not read the params it names, and admits it once they may', async function () {
    await createConfigMap(NS, 'limits', { max: '3' });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'security-e2e-suite-author' },
      rules: [{ apiGroups: ['admission.portcullis.dev'], resources: ['admissionsuites'], verbs: ['get', 'list', 'create', 'update', 'patch'] }],
    });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'security-e2e-suite-author' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'security-e2e-suite-author' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
    });
    const manifest = JSON.stringify({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'team-params' },
      spec: showParams({ apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'limits' }),
    });
    // Another kind: refused by the suite-validation webhook (get, list, watch) or, where deploy/ is applied, first by its params guard (get), which checks every kind.
    const secrets = JSON.stringify({ ...JSON.parse(manifest), spec: showParams({ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: 'limits' }) });
    const refusedSecrets = await kubectl(['create', '--as=mallory', '-f', '-'], secrets);
    expect(refusedSecrets.code).to.not.equal(0);
    expect(refusedSecrets.stderr).to.match(/admission webhook "admissionsuites.admission.portcullis.dev" denied the request|ValidatingAdmissionPolicy 'portcullis-suite-params-guard'/);
    expect(refusedSecrets.stderr).to.match(/params: user "mallory" may not get(, list, watch)? Secret \(v1\)( limits)? in namespace security-e2e/);

    const refused = await kubectl(['create', '--as=mallory', '-f', '-'], manifest);
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain('params');
    // Refused by the suite-validation webhook (get, list, watch) or, where deploy/ is applied, first by its params guard (get).
    expect(refused.stderr).to.match(/user "mallory" may not get(, list, watch)? ConfigMap \(v1\)( limits)? in namespace security-e2e/);
    expect(await getSuite('team-params')).to.equal(undefined);

    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'read-configmaps', namespace: NS },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'mallory-reads-configmaps', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'mallory' }],
    });
    const admitted = await eventually(
      async () => {
        const result = await kubectl(['create', '--as=mallory', '-f', '-'], manifest);
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: 'the suite to be admitted once mallory may read the params' },
    );
    expect(admitted.stdout).to.contain('team-params');
    await deleteSuite('team-params');
  });

  it('leaves a configuration someone else made under the suite name alone, and it survives the suite', async function () {
    const foreign: KubeObject = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: configurationName('foreign') },
      webhooks: [
        {
          name: 'theirs.example.com',
          clientConfig: { url: 'https://theirs.example.invalid/validate' },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          objectSelector: { matchLabels: { 'theirs.example.com/never': 'set' } },
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    };
    await cluster().admissionregistration.createValidatingWebhookConfiguration({ body: foreign as never });
    await createSuite('foreign', denyAll);
    const suite = await waitForCondition('foreign', 'Ready', 'False');
    const ready = condition(suite, 'Ready')!;
    expect(ready.reason, ready.message).to.equal('Conflict');
    expect(ready.message).to.contain(`ValidatingWebhookConfiguration ${configurationName('foreign')}`);

    const theirs = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: configurationName('foreign') });
    expect(theirs.metadata?.ownerReferences ?? []).to.deep.equal([]);
    expect(theirs.metadata?.labels ?? {}).to.deep.equal({});
    expect(theirs.webhooks?.map((w) => w.name)).to.deep.equal(['theirs.example.com']);

    // Once the suite is gone and garbage collection has removed what was the suite's, theirs is still there.
    await deleteSuite('foreign');
    await eventually(
      async () => {
        const secret = await getObject(cluster().kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: tlsSecretName('foreign'), namespace: OPERATOR_NAMESPACE } });
        if (secret) throw new Error('the suite Secret is still there');
      },
      { what: "garbage collection of the suite's own objects" },
    );
    const after = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: configurationName('foreign') });
    expect(after.webhooks?.map((w) => w.name)).to.deep.equal(['theirs.example.com']);

    // When they remove theirs, the suite registers its own.
    await createSuite('foreign', denyAll);
    await waitForCondition('foreign', 'Ready', 'False');
    await cluster().admissionregistration.deleteValidatingWebhookConfiguration({ name: configurationName('foreign') });
    await waitForCondition('foreign', 'Ready', 'True', 20_000);
    await deleteSuite('foreign');
  });

  it("leaves a Secret or Service someone else made under a suite's names alone, reporting the Conflict", async function () {
    type Foreign = KubeObject & { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
    const cases: [string, Foreign][] = [
      ['foreign-secret', { apiVersion: 'v1', kind: 'Secret', metadata: { name: tlsSecretName('foreign-secret'), namespace: OPERATOR_NAMESPACE }, type: 'Opaque', data: { theirs: Buffer.from('keep me').toString('base64') } } as Foreign],
      ['foreign-svc', { apiVersion: 'v1', kind: 'Service', metadata: { name: defaultServiceName('foreign-svc'), namespace: OPERATOR_NAMESPACE }, spec: { ports: [{ port: 8443, targetPort: 8443 }], selector: { app: 'theirs' } } } as Foreign],
    ];
    for (const [suiteName, foreign] of cases) {
      await cluster().kube.objects.create(foreign as never);
      try {
        await createSuite(suiteName, denyAll);
        const suite = await waitForCondition(suiteName, 'Ready', 'False');
        const ready = condition(suite, 'Ready')!;
        expect(ready.reason, ready.message).to.equal('Conflict');
        expect(ready.message).to.contain(`${foreign.kind} ${OPERATOR_NAMESPACE}/${foreign.metadata.name}`);
        const theirs = (await getObject(cluster().kube, foreign)) as KubeObject & { data?: Record<string, string>; spec?: { selector?: Record<string, string> } };
        expect(theirs.metadata?.ownerReferences ?? [], foreign.kind).to.deep.equal([]);
        expect(theirs.metadata?.labels ?? {}, foreign.kind).to.deep.equal({});
        if (foreign.kind === 'Secret') expect(theirs.data).to.deep.equal({ theirs: Buffer.from('keep me').toString('base64') });
        else expect(theirs.spec?.selector).to.deep.equal({ app: 'theirs' });
      } finally {
        await deleteSuite(suiteName);
        await deleteIfExists(cluster().kube, foreign);
      }
    }
  });

  it("puts back a suite's Service deleted by hand within 10 s", async function () {
    await createSuite('svc-heal', denyAll);
    await waitForCondition('svc-heal', 'Ready', 'True');
    for (const name of [defaultServiceName('svc-heal'), SUITE_VALIDATION.service]) {
      const before = await cluster().kube.core.readNamespacedService({ name, namespace: OPERATOR_NAMESPACE });
      await cluster().kube.core.deleteNamespacedService({ name, namespace: OPERATOR_NAMESPACE });
      const back = await eventually(
        async () => {
          const service = await cluster().kube.core.readNamespacedService({ name, namespace: OPERATOR_NAMESPACE });
          if (service.metadata?.uid === before.metadata?.uid) throw new Error('not deleted yet');
          return service;
        },
        { timeoutMs: 60_000, what: `Service ${name} to be recreated` },
      );
      expect(back.metadata?.labels?.['app.kubernetes.io/managed-by']).to.equal('portcullis');
    }
    const refused = await refusal(() => createConfigMap(NS, unique('after-heal')));
    expect(refused?.message).to.contain('denied by the suite');
  });
});
