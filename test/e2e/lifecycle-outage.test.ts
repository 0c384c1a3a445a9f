/**
 * An API server outage: the API server stops for 30 s and starts again; the operator recovers
 * without a restart, the suite is Ready again, admission works, and Events show the retries.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import type { Operator } from '../../src/manager/operator.ts';

const SUITE = 'outage';
const NS = 'outage-e2e';

describe('lifecycle: API server outage', function () {
  this.timeout(180_000);
  let operator: Operator;

  before(async function () {
    await ensureNamespace(NS);
    // A lease that outlives the outage's first seconds, so the leader is still trying when calls fail.
    operator = await startTestOperator({ leaseDurationMs: 20_000, renewDeadlineMs: 15_000 });
    await createSuite(SUITE, {
      // Renewals fall due every few seconds, so reconciles run (and fail) during the outage.
      certificate: { duration: '60s', renewBefore: '55s' },
      webhooks: [
        {
          name: 'names',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          validations: [{ expression: "!object.metadata.name.startsWith('bad')", message: 'bad name' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator.stop();
  });

  it('recovers without a restart, and Events show the retries', async function () {
    const { controlPlane } = cluster();
    await controlPlane.stopApiServer();
    await new Promise((r) => setTimeout(r, 30_000));
    await controlPlane.startApiServer();

    const events = cluster().kubeConfig.makeApiClient(k8s.EventsV1Api);
    const suite = (await getSuite(SUITE))!;
    const recovered = await eventually(
      async () => {
        const list = await events.listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${SUITE}` });
        const found = list.items.find((e) => e.reason === 'Recovered' && e.regarding?.uid === suite.metadata.uid);
        return found ?? Promise.reject(new Error(`events: ${list.items.map((e) => e.reason).join(', ')}`));
      },
      { what: 'a Recovered event', timeoutMs: 60_000 },
    );
    expect(recovered.note).to.match(/reconciled after \d+ failed attempt\(s\)/);
    await waitForCondition(SUITE, 'Ready', 'True', 60_000);
    const refused = await eventually(async () => (await refusal(() => createConfigMap(NS, `bad-${Date.now()}`))) ?? Promise.reject(new Error('admitted')), {
      what: 'the webhook to deny again',
      timeoutMs: 60_000,
    });
    expect(refused.message).to.contain('bad name');
  });
});
