/**
 * Two operator processes against one control plane, sharing the admission port (reusePort):
 * exactly one writes, both answer, and killing the leader hands over within the lease duration
 * plus two retry periods, deleting nothing.
 */
import { expect } from 'chai';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { freePort } from '../../src/local/ports.ts';
import { fixtures } from '../fixtures/reviews.ts';

const SUITE = 'replicated';
const NS = 'replicas-e2e';
const LEASE_MS = 4000;
const RETRY_MS = 500;

describe('lifecycle: two replicas, one leader', function () {
  this.timeout(120_000);
  let replicas: OperatorProcess[] = [];
  let servingPort: number;
  const lease = () => cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: 'portcullis-operator' });
  const holderPid = async () => Number((await lease()).spec?.holderIdentity?.split('-').at(-2));

  before(async function () {
    await ensureNamespace(NS);
    servingPort = await freePort();
    const args = ['--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms'];
    replicas = [await spawnOperator({ servingPort, metricsPort: await freePort(), extra: args }), await spawnOperator({ servingPort, metricsPort: await freePort(), extra: args })];
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'no-forbidden',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          validations: [{ expression: "!object.metadata.name.startsWith('forbidden')", message: 'forbidden names are forbidden' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    await deleteSuite(SUITE);
    for (const replica of replicas) await replica.kill('SIGTERM');
  });

  it('exactly one replica writes', async function () {
    const pid = await eventually(async () => (await holderPid()) || Promise.reject(new Error('no holder')));
    const leader = replicas.find((r) => r.child.pid === pid)!;
    const follower = replicas.find((r) => r.child.pid !== pid)!;
    expect(leader, 'the lease holder is one of our replicas').to.not.equal(undefined);
    expect(await leader.metric('portcullis_api_writes_total')).to.be.greaterThan(0);
    expect(await follower.metric('portcullis_api_writes_total')).to.equal(0);
  });

  it('both replicas answer admission requests on the shared port', async function () {
    const caBundle = Buffer.from((await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` })).webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
    const review = JSON.stringify(fixtures.deploymentCreate());
    // Fresh connections from fresh source ports: the kernel spreads them over both listeners.
    for (let i = 0; i < 60; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: servingPort,
            path: `/admit/${SUITE}/no-forbidden`,
            method: 'POST',
            servername: `portcullis-${SUITE}.${OPERATOR_NAMESPACE}.svc`,
            ca: caBundle,
            agent: false,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve());
          },
        );
        req.on('error', reject);
        req.end(review);
      });
    }
    for (const replica of replicas) expect(await replica.metric('portcullis_admission_requests_total'), `replica ${replica.child.pid}`).to.be.greaterThan(0);
  });

  it('killing the leader hands over within the lease duration plus two retry periods, and deletes nothing', async function () {
    const configBefore = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` });
    const pid = await holderPid();
    const leader = replicas.find((r) => r.child.pid === pid)!;
    const follower = replicas.find((r) => r.child.pid !== pid)!;
    const killedAt = Date.now();
    await leader.kill('SIGKILL');
    await eventually(async () => ((await holderPid()) === follower.child.pid ? true : Promise.reject(new Error('not handed over'))), { intervalMs: 50, timeoutMs: 60_000, what: 'handover' });
    const handover = Date.now() - killedAt;
    console.log(`      handover took ${handover} ms (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`);
    // client-go's bound, with our jitter of up to a fifth of a retry period, and the poll's own step.
    expect(handover).to.be.at.most(LEASE_MS + 2 * RETRY_MS * 1.2 + 100);
    const configAfter = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` });
    expect(configAfter.metadata?.uid).to.equal(configBefore.metadata?.uid);
    await waitForCondition(SUITE, 'Ready', 'True');
    const refused = await refusal(() => createConfigMap(NS, 'forbidden-after-handover'));
    expect(refused?.message).to.contain('forbidden names are forbidden');
    expect(await createConfigMap(NS, 'fine-after-handover')).to.have.nested.property('metadata.name', 'fine-after-handover');
  });
});
