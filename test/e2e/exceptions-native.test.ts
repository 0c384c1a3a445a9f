/**
 * AdmissionExceptions and native enforcement through the real API server (issue 55): in a suite
 * that accepts exceptions, an `enforcement: Auto` webhook stays served by the operator, its status
 * saying why, so that an exception still admits there; an `enforcement: Native` webhook is
 * written as a ValidatingAdmissionPolicy, its status says exceptions do not apply to it, and an
 * exception naming it is refused on apply rather than silently ignored. Owns its namespace
 * (exc-native), its suite (exc-native) and its exceptions; touches nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, VERSION, type WebhookSpec } from '../../src/api/types.ts';
import { EXCEPTION_PLURAL } from '../../src/api/exceptions.ts';
import { EXCEPTIONS_NOT_NATIVE } from '../../src/api/enforcement.ts';
import { webhookFullName } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'exc-native';
const LABEL = { 'exceptions-native-e2e': 'true' };
const SUITE = 'exc-native';

/** Denies ConfigMaps (Auto) or Secrets (Native) without a team label, in this file's namespace only. */
const webhook = (name: string, resource: string, enforcement: 'Auto' | 'Native'): WebhookSpec => ({
  name,
  type: 'Validating',
  enforcement,
  rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: [resource] }],
  namespaceSelector: { matchLabels: LABEL },
  validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: `${resource} need a team label` }],
});

const createException = (name: string, webhookName: string) =>
  cluster().kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: EXCEPTION_PLURAL,
    namespace: NS,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name }, spec: { suite: SUITE, webhook: webhookName, reason: 'legacy', expires: '2099-01-01T00:00:00Z' } },
  });

describe('AdmissionExceptions and native enforcement', function () {
  let operator: Operator;

  before(async function () {
    await ensureNamespace(NS, LABEL);
    operator = await startTestOperator({ nativeEnforcement: true });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, { exceptions: { allowed: true }, webhooks: [webhook('auto', 'configmaps', 'Auto'), webhook('native', 'secrets', 'Native')] });
  });

  after(async function () {
    for (const name of ['on-auto', 'on-native']) await deleteIfExists(cluster().kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name, namespace: NS } });
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it('keeps an Auto webhook served by the operator and says a Native one takes no exception, on the suite status', async function () {
    const ready = await waitForCondition(SUITE, 'Ready', 'True');
    expect(ready.status?.webhooks?.map((w) => [w.name, w.enforcement, w.reason])).to.deep.equal([
      [webhookFullName(SUITE, 'auto'), 'Webhook', `spec.exceptions: ${EXCEPTIONS_NOT_NATIVE}`],
      [webhookFullName(SUITE, 'native'), 'Native', `spec.exceptions: ${EXCEPTIONS_NOT_NATIVE}: none applies to this Native webhook, and one naming it is refused on apply`],
    ]);
  });

  it('admits through the Auto webhook by exception', async function () {
    await createException('on-auto', 'auto');
    const admitted = await eventually(
      async () => {
        const result = await kubectl(['create', 'configmap', 'unlabelled', '-n', NS, '--from-literal=a=b', '--dry-run=server']);
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: 'the exception to admit through the Auto webhook' },
    );
    expect(admitted.stderr).to.contain(`admitted by exception ${NS}/on-auto`);
  });

  it('refuses on apply an exception naming the Native webhook', async function () {
    const refused = await refusal(() => createException('on-native', 'native'));
    expect(refused?.message).to.contain('spec.webhook: webhook native is enforced natively (enforcement: Native)').and.contain(EXCEPTIONS_NOT_NATIVE);
  });
});
