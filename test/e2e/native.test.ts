/**
 * Native enforcement through the real API server: a suite webhook with `enforcement: Native` is
 * written as a ValidatingAdmissionPolicy and binding that the API server enforces itself (so it
 * denies with no operator running), healed when changed or deleted, removed with the suite; a
 * switch from Webhook to Native and back leaves no request unjudged; what cannot be native is
 * refused on apply (Native) or served by webhook with the reason (Auto).
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, deleteSuiteObject, getSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, errorStatus, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { getObject, type KubeObject } from '../../src/apiserver/client.ts';
import { configurationName, webhookFullName } from '../../src/api/names.ts';
import { API_VERSION, GROUP, PLURAL, VERSION, type SuiteSpec, type WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'native-e2e';
const LABEL = 'native-e2e';
const MESSAGE = 'a ConfigMap here may not say forbidden';

const webhook = (name: string, extra: Partial<WebhookSpec> = {}): WebhookSpec => ({
  name,
  type: 'Validating',
  rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
  objectSelector: { matchLabels: { [LABEL]: name } },
  validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: MESSAGE }],
  ...extra,
});
const spec = (webhooks: WebhookSpec[], extra: Partial<SuiteSpec> = {}): SuiteSpec => ({ failurePolicy: 'Fail', webhooks, ...extra });

const header = (kind: 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding', name: string) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name } });
type Owned = KubeObject & { metadata: { ownerReferences?: { uid: string; kind: string }[]; labels?: Record<string, string> }; spec: Record<string, any> };

let serial = 0;
/** Creates a ConfigMap the webhook `of` selects; resolves to the API server's refusal, or undefined when admitted. */
function createSelected(of: string, data: Record<string, string>) {
  return refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: `cm-${++serial}`, labels: { [LABEL]: of } }, data } }));
}

async function registeredWebhooks(suite: string): Promise<string[]> {
  const configuration = await getObject<KubeObject & { webhooks?: { name: string }[] }>(cluster().kube, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: configurationName(suite) },
  });
  return (configuration?.webhooks ?? []).map((w) => w.name);
}

describe('native enforcement (suites as ValidatingAdmissionPolicies)', function () {
  this.timeout(180_000);
  let operator: Operator | undefined;
  const suites = ['native-basic', 'native-switch', 'native-auto', 'native-refused'];

  before(async function () {
    await ensureNamespace(NS);
    operator = await startTestOperator({ nativeEnforcement: true });
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of suites) await deleteSuite(name);
    await operator?.stop();
  });

  it('writes a policy and binding the API server enforces, owned by the suite, and registers no webhook for it', async function () {
    const suite = await createSuite('native-basic', spec([webhook('deny', { enforcement: 'Native' })]));
    const ready = await waitForCondition('native-basic', 'Ready', 'True');
    const name = webhookFullName('native-basic', 'deny');
    expect(ready.status?.webhooks).to.deep.equal([{ name, type: 'Validating', enforcement: 'Native' }]);
    const policy = (await getObject<Owned>(cluster().kube, header('ValidatingAdmissionPolicy', name)))!;
    const binding = (await getObject<Owned>(cluster().kube, header('ValidatingAdmissionPolicyBinding', name)))!;
    for (const object of [policy, binding]) {
      expect(object.metadata.ownerReferences?.map((o) => o.uid)).to.deep.equal([suite.metadata.uid]);
      expect(object.metadata.labels?.['app.kubernetes.io/managed-by']).to.equal('portcullis');
    }
    expect(binding.spec.policyName).to.equal(name);
    expect(await registeredWebhooks('native-basic')).to.deep.equal([]);

    const denied = await eventually(async () => (await createSelected('deny', { forbidden: 'x' })) ?? Promise.reject(new Error('admitted')), { what: 'the native policy to deny' });
    expect(denied.code).to.equal(422);
    expect(denied.message).to.equal(`configmaps "cm-${serial}" is forbidden: ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: ${MESSAGE}`);
    expect(await createSelected('deny', { fine: 'x' })).to.equal(undefined);
  });

  it('puts back a native policy deleted or a binding edited by hand', async function () {
    const name = webhookFullName('native-basic', 'deny');
    await cluster().kube.objects.delete(header('ValidatingAdmissionPolicy', name));
    await eventually(
      async () => {
        if (!(await getObject(cluster().kube, header('ValidatingAdmissionPolicy', name)))) throw new Error('not put back yet');
      },
      { what: 'the deleted policy to be put back' },
    );
    await cluster().kube.objects.patch({ ...header('ValidatingAdmissionPolicyBinding', name), spec: { validationActions: ['Audit'] } }, undefined, undefined, 'someone', undefined, 'application/merge-patch+json' as never);
    await eventually(
      async () => {
        const binding = await getObject<Owned>(cluster().kube, header('ValidatingAdmissionPolicyBinding', name));
        if (JSON.stringify(binding?.spec.validationActions) !== '["Deny"]') throw new Error(`validationActions are ${JSON.stringify(binding?.spec.validationActions)}`);
      },
      { what: 'the edited binding to be put back' },
    );
  });

  it('still denies with no operator running', async function () {
    await operator!.stop();
    operator = undefined;
    try {
      const denied = await createSelected('deny', { forbidden: 'x' });
      expect(denied?.code).to.equal(422);
      expect(denied?.message).to.contain(MESSAGE);
    } finally {
      operator = await startTestOperator({ nativeEnforcement: true });
      await waitForSuiteValidation(operator);
    }
  });

  it('switches from Webhook to Native and back with no request let through in between', async function () {
    const name = 'native-switch';
    await createSuite(name, spec([webhook('deny-switch')]));
    await waitForCondition(name, 'Ready', 'True');
    await eventually(async () => (await createSelected('deny-switch', { forbidden: 'x' })) ?? Promise.reject(new Error('admitted')), { what: 'the webhook to deny' });

    // Violating creates, back to back, all through both switches: not one may be admitted.
    let admitted = 0;
    let denied = 0;
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        const answer = await createSelected('deny-switch', { forbidden: 'x' });
        if (answer === undefined) admitted++;
        else denied++;
      }
    })();
    const setEnforcement = async (enforcement: 'Native' | 'Webhook') => {
      const current = (await getSuite(name))!;
      current.spec.webhooks[0]!.enforcement = enforcement;
      await cluster().kube.custom.replaceClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name, body: { ...current, apiVersion: API_VERSION } });
    };
    const full = webhookFullName(name, 'deny-switch');
    try {
      await setEnforcement('Native');
      await eventually(
        async () => {
          if ((await registeredWebhooks(name)).length > 0) throw new Error('the webhook is still registered');
          if (!(await getObject(cluster().kube, header('ValidatingAdmissionPolicyBinding', full)))) throw new Error('no binding');
        },
        { what: 'the webhook handed over to the native policy', timeoutMs: 60_000 },
      );
      await new Promise((r) => setTimeout(r, 1000));
      await setEnforcement('Webhook');
      await eventually(
        async () => {
          if (await getObject(cluster().kube, header('ValidatingAdmissionPolicy', full))) throw new Error('the native policy is still there');
          if (!(await registeredWebhooks(name)).includes(full)) throw new Error('the webhook is not registered');
        },
        { what: 'the native policy handed back to the webhook', timeoutMs: 60_000 },
      );
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      stop = true;
      await traffic;
    }
    expect(denied, 'violating creates sent through both switches').to.be.above(20);
    expect(admitted, 'violating creates admitted during the switches').to.equal(0);
  });

  it('Auto: goes native where it can and serves the rest by webhook, saying why', async function () {
    const name = 'native-auto';
    const handled = webhook('labels', { validations: undefined, handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } } });
    await createSuite(name, spec([webhook('deny-auto'), handled], { enforcement: 'Auto' }));
    const ready = await waitForCondition(name, 'Ready', 'True');
    expect(ready.status?.webhooks?.map((w) => [w.name, w.enforcement])).to.deep.equal([
      [webhookFullName(name, 'deny-auto'), 'Native'],
      [webhookFullName(name, 'labels'), 'Webhook'],
    ]);
    expect(ready.status?.webhooks?.[1]?.reason).to.contain('handler: the built-in handler RequiredLabels runs in the operator');
    expect(await registeredWebhooks(name)).to.deep.equal([webhookFullName(name, 'labels')]);
  });

  it('Native: refuses on apply a webhook that cannot be native, naming the field and why', async function () {
    const handled = webhook('labels', { validations: undefined, enforcement: 'Native', handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } } });
    let error: unknown;
    try {
      await createSuite('native-refused', spec([handled]));
    } catch (err) {
      error = err;
    }
    const status = errorStatus(error);
    expect(status.code).to.equal(422);
    expect(status.message).to.contain('spec.webhooks[0].enforcement: Invalid value: "Native": webhook labels cannot be enforced natively (handler: the built-in handler RequiredLabels runs in the operator');
    expect(await getSuite('native-refused')).to.equal(undefined);
  });

  it('where native enforcement is off (the default): Native refused on apply saying how to turn it on, Auto served by webhook', async function () {
    await operator!.stop();
    operator = await startTestOperator();
    try {
      await waitForSuiteValidation(operator);
      let error: unknown;
      try {
        await createSuite('native-off', spec([webhook('deny-off', { enforcement: 'Native' })]));
      } catch (err) {
        error = err;
      }
      expect(errorStatus(error).message).to.contain('spec.webhooks[0].enforcement: Invalid value: "Native": this operator does not enforce natively (it runs without --native-enforcement');
      await createSuite('native-off', spec([webhook('deny-off')], { enforcement: 'Auto' }));
      const ready = await waitForCondition('native-off', 'Ready', 'True');
      expect(ready.status?.webhooks?.map((w) => [w.enforcement, w.reason])).to.deep.equal([
        ['Webhook', "this operator does not enforce natively (it runs without --native-enforcement, the chart's nativeEnforcement.enabled, which needs the grants of deploy/optional/native-enforcement.yaml)"],
      ]);
      const denied = await eventually(async () => (await createSelected('deny-off', { forbidden: 'x' })) ?? Promise.reject(new Error('admitted')), { what: 'the webhook to deny' });
      expect(denied.message).to.equal(`admission webhook "${webhookFullName('native-off', 'deny-off')}" denied the request: ${MESSAGE}`);
    } finally {
      await deleteSuite('native-off');
      await operator.stop();
      operator = await startTestOperator({ nativeEnforcement: true });
      await waitForSuiteValidation(operator);
    }
  });

  it('a policy the API server would refuse: Native refused on apply in its words, Auto served by webhook saying why', async function () {
    // A conditional in a conditional's first branch: cel-go's grammar refuses it (the branch is a
    // conditionalOr), cel-js nests it and Portcullis takes it (celjs/limits.ts); the one known
    // expression of that kind (cel.bind was, until refused as the API server refuses it), so the
    // refusal comes from the API server.
    const name = 'native-refused-by-api';
    const bound = (enforcement: 'Native' | 'Auto') => webhook('deny-bound', { enforcement, validations: [{ expression: "has(object.data) ? 'forbidden' in object.data ? false : true : true", message: MESSAGE }] });
    let error: unknown;
    try {
      await createSuite(name, spec([bound('Native')]));
    } catch (err) {
      error = err;
    }
    expect(errorStatus(error).message).to.match(
      /spec\.webhooks\[0\]: the API server refuses it as a ValidatingAdmissionPolicy \(enforcement: Native\): ValidatingAdmissionPolicy.admissionregistration.k8s.io "deny-bound\.native-refused-by-api\.admission\.portcullis\.dev" is invalid: spec\.validations\[0\]\.expression: Invalid value: .*Syntax error/,
    );
    expect(await getSuite(name)).to.equal(undefined);

    await createSuite(name, spec([bound('Auto')]));
    try {
      const ready = await waitForCondition(name, 'Ready', 'True');
      expect(ready.status?.webhooks?.[0]?.enforcement).to.equal('Webhook');
      expect(ready.status?.webhooks?.[0]?.reason).to.match(/^the API server refused its ValidatingAdmissionPolicy \(served by the webhook\): /);
      const denied = await eventually(async () => (await createSelected('deny-bound', { forbidden: 'x' })) ?? Promise.reject(new Error('admitted')), { what: 'the webhook to deny' });
      expect(denied.message).to.equal(`admission webhook "${webhookFullName(name, 'deny-bound')}" denied the request: ${MESSAGE}`);
    } finally {
      await deleteSuite(name);
    }
  });

  it('removes the native policy and binding with the suite', async function () {
    const name = webhookFullName('native-basic', 'deny');
    await deleteSuiteObject('native-basic');
    await eventually(
      async () => {
        for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const) {
          if (await getObject(cluster().kube, header(kind, name))) throw new Error(`the ${kind} is still there`);
        }
      },
      { what: 'garbage collection of the native objects', timeoutMs: 90_000 },
    );
    // The API server stops enforcing a deleted policy a moment after it is gone.
    await eventually(async () => expect(await createSelected('deny', { forbidden: 'x' })).to.equal(undefined), { what: 'the policy to stop enforcing' });
  });
});
