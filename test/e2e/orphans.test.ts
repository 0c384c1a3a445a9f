/**
 * The orphan sweep: objects the operator made for a suite that no longer exists, which garbage
 * collection did not remove (it cannot once the suite's CRD is gone), are removed by the leader
 * when it starts leading; an object of a suite that exists, or without our labels, stays.
 */
import { expect } from 'chai';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { MANAGED_BY_LABELS, SUITE_LABEL } from '../../src/api/names.ts';
import { apply, getObject } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';

const configuration = (name: string, labels: Record<string, string>) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name, labels },
  webhooks: [
    {
      name: `${name}.orphans.portcullis.dev`,
      clientConfig: { url: 'https://127.0.0.1:1/never' },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      // Matches nothing a test creates: a leftover must not break the run if this test fails.
      objectSelector: { matchLabels: { 'portcullis-test': 'orphans-never' } },
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
});

describe('orphan sweep: what a vanished suite left behind', function () {
  this.timeout(90_000);
  let operator: Operator | undefined;

  afterEach(async function () {
    await operator?.stop();
    operator = undefined;
    await deleteSuite('orphans-live');
    const { kube } = cluster();
    for (const name of ['portcullis-orphans-ghost', 'orphans-not-ours']) {
      await kube.admissionregistration.deleteValidatingWebhookConfiguration({ name }).catch(() => undefined);
    }
    await kube.core.deleteNamespacedSecret({ name: 'portcullis-orphans-ghost-tls', namespace: OPERATOR_NAMESPACE }).catch(() => undefined);
  });

  it('removes the configuration and Secret of a suite that does not exist, and leaves what is not an orphan', async function () {
    const { kube } = cluster();
    // Left by a suite that is gone (as after its CRD was removed before garbage collection knew the type).
    await apply(kube, configuration('portcullis-orphans-ghost', { ...MANAGED_BY_LABELS, [SUITE_LABEL]: 'orphans-ghost' }));
    await apply(kube, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'portcullis-orphans-ghost-tls', namespace: OPERATOR_NAMESPACE, labels: { ...MANAGED_BY_LABELS, [SUITE_LABEL]: 'orphans-ghost' } },
      type: 'Opaque',
      data: { note: Buffer.from('left behind').toString('base64') },
    });
    // Someone else's, under a name like ours but without our labels.
    await apply(kube, configuration('orphans-not-ours', { [SUITE_LABEL]: 'orphans-ghost' }));

    operator = await startTestOperator();
    await createSuite('orphans-live', {
      webhooks: [
        {
          name: 'w',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          objectSelector: { matchLabels: { 'portcullis-test': 'orphans-never' } },
          validations: [{ expression: 'true' }],
        },
      ],
    });
    await waitForCondition('orphans-live', 'Ready', 'True');

    const header = (kind: string, name: string, namespace?: string) => ({
      apiVersion: kind === 'Secret' ? 'v1' : 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name, ...(namespace ? { namespace } : {}) },
    });
    await eventually(
      async () => {
        if (await getObject(kube, header('ValidatingWebhookConfiguration', 'portcullis-orphans-ghost'))) throw new Error('the orphaned configuration is still there');
        if (await getObject(kube, header('Secret', 'portcullis-orphans-ghost-tls', OPERATOR_NAMESPACE))) throw new Error('the orphaned Secret is still there');
      },
      { what: 'the orphans to be removed', timeoutMs: 60_000 },
    );
    expect(await getObject(kube, header('ValidatingWebhookConfiguration', 'orphans-not-ours')), 'an object without our labels is never touched').to.not.equal(undefined);
    expect(await getObject(kube, header('ValidatingWebhookConfiguration', 'portcullis-orphans-live')), "a live suite's configuration stays").to.not.equal(undefined);
    expect(await getObject(kube, header('Secret', 'portcullis-orphans-live-tls', OPERATOR_NAMESPACE)), "a live suite's Secret stays").to.not.equal(undefined);
  });
});
