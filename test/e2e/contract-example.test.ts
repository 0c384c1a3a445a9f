/** The contract's example suite (`platform-guards`), applied as written, through the real API server. */
import { expect } from 'chai';
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { deleteSuite, waitForCondition } from '../support/suites.ts';
import { deployment, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply } from '../../src/kube/client.ts';
import type { Operator } from '../../src/operator.ts';

const NS = 'contract-example-e2e';
const SAMPLE = 'config/samples/platform-guards.yaml';

describe('the contract example suite, as written', function () {
  let operator: Operator;

  before(async function () {
    await ensureNamespace(NS);
    await cluster().kube.core.createNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, body: { metadata: { name: 'replica-limits' }, data: { max: '3' } } });
    operator = await startTestOperator();
    await apply(cluster().kube, k8s.loadYaml(fs.readFileSync(SAMPLE, 'utf8')) as never);
    await waitForCondition('platform-guards', 'Ready', 'True');
  });

  after(async function () {
    await deleteSuite('platform-guards');
    await cluster().kube.core.deleteNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, name: 'replica-limits' });
    await operator.stop();
  });

  it('limits replicas to the number in its params ConfigMap, saying so', async function () {
    const refused = await eventually(
      async () => (await refusal(() => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('too-many', 4) }))) ?? Promise.reject(new Error('admitted')),
      { what: 'the replica limit to hold' },
    );
    expect(refused.code).to.equal(422);
    expect(refused.message).to.contain('replica-limit.platform-guards.admission.portcullis.dev');
    expect(refused.message).to.contain('replicas must be no greater than 3');
    const admitted = await cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('within', 3) });
    expect(admitted.spec?.replicas).to.equal(3);
  });

  it('follows a change of the params ConfigMap without a suite change', async function () {
    await cluster().kube.core.patchNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, name: 'replica-limits', body: { data: { max: '5' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    const admitted = await eventually(() => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('five', 5) }), { what: 'the new limit' });
    expect(admitted.spec?.replicas).to.equal(5);
  });

  it('labels new Pods and makes every container pull always', async function () {
    const pod = await cluster().kube.core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'web' }, spec: { containers: [{ name: 'a', image: 'nginx:1.27' }, { name: 'b', image: 'busybox:1.36', imagePullPolicy: 'Never' }] } },
    });
    expect(pod.metadata?.labels).to.deep.equal({ team: 'unassigned' });
    expect(pod.spec?.containers.map((c) => c.imagePullPolicy)).to.deep.equal(['Always', 'Always']);
    const labelled = await cluster().kube.core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'owned', labels: { team: 'core' } }, spec: { containers: [{ name: 'a', image: 'nginx:1.27' }] } } });
    expect(labelled.metadata?.labels).to.deep.equal({ team: 'core' });
  });
});
