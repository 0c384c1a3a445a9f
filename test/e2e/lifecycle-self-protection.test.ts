/**
 * Self-protection: with the operator stopped and a `failurePolicy: Fail` suite registered that
 * matches everything, the cluster can still heal itself and the admin can still repair it.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { getObject } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { API_VERSION, GROUP, PLURAL, VERSION } from '../../src/api/types.ts';

const SUITE = 'match-everything';
const NS = 'self-protection-e2e';

describe('lifecycle: self-protection with the operator stopped', function () {
  let operator: Operator | undefined;
  const coordination = () => cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api);

  before(async function () {
    await ensureNamespace(NS);
    // A Node and a Lease exist before the suite, as in a running cluster.
    await cluster().kube.core.createNode({ body: { metadata: { name: 'worker-1' } } });
    await coordination().createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'some-controller' }, spec: { holderIdentity: 'a' } } });
    operator = await startTestOperator();
    await createSuite(SUITE, {
      failurePolicy: 'Fail',
      webhooks: [
        {
          name: 'all',
          type: 'Validating',
          rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }],
          validations: [{ expression: 'true' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
    await operator.stop();
    operator = undefined;
    // The API server sees the webhook and cannot reach it: ordinary writes now fail closed.
    await eventually(
      async () => {
        const refused = await refusal(() => createConfigMap(NS, `probe-${Date.now()}`));
        if (!refused) throw new Error('a ConfigMap was admitted with the Fail webhook unreachable');
      },
      { what: 'the unreachable Fail webhook to refuse ordinary writes' },
    );
  });

  after(async function () {
    await deleteSuite(SUITE);
    await eventually(
      async () => {
        if (await getObject(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: `portcullis-${SUITE}` } })) {
          throw new Error('configuration still registered');
        }
      },
      { what: 'garbage collection of the match-everything configuration', timeoutMs: 60_000 },
    );
    await cluster()
      .kube.core.deleteNode({ name: 'worker-1' })
      .catch(() => undefined);
    await operator?.stop();
  });

  it('an ordinary namespace is refused (so the checks below can fail)', async function () {
    const refused = await refusal(() => createConfigMap(NS, 'refused'));
    expect(refused?.message).to.contain('all.match-everything.admission.portcullis.dev');
  });

  it('objects in kube-system and in the operator namespace can be created and deleted', async function () {
    for (const namespace of ['kube-system', OPERATOR_NAMESPACE]) {
      await createConfigMap(namespace, 'repair-note', { note: 'fixing things' });
      await cluster().kube.core.deleteNamespacedConfigMap({ namespace, name: 'repair-note' });
    }
  });

  it('Nodes and Leases (in any namespace) can be updated', async function () {
    const node = await cluster().kube.core.readNode({ name: 'worker-1' });
    node.metadata!.labels = { ...node.metadata!.labels, repaired: 'yes' };
    const updated = await cluster().kube.core.replaceNode({ name: 'worker-1', body: node });
    expect(updated.metadata?.labels?.repaired).to.equal('yes');
    const lease = await coordination().readNamespacedLease({ namespace: 'default', name: 'some-controller' });
    lease.spec!.holderIdentity = 'b';
    const renewed = await coordination().replaceNamespacedLease({ namespace: 'default', name: 'some-controller', body: lease });
    expect(renewed.spec?.holderIdentity).to.equal('b');
  });

  it('AdmissionSuites can be created, edited and deleted', async function () {
    const { custom } = cluster().kube;
    await createSuite('repair-suite', { webhooks: [{ name: 'x', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }], validations: [{ expression: 'true' }] }] });
    const suite = (await getSuite('repair-suite'))!;
    suite.spec.timeoutSeconds = 3;
    await custom.replaceClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name: 'repair-suite', body: { ...suite, apiVersion: API_VERSION } });
    expect((await getSuite('repair-suite'))!.spec.timeoutSeconds).to.equal(3);
    await deleteSuite('repair-suite');
    await eventually(async () => {
      if (await getSuite('repair-suite')) throw new Error('still there');
    });
  });
});
