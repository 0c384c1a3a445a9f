/**
 * The first step of a graceful stop (what SIGTERM starts): the replica says it is not ready, hands
 * over the lease, and keeps answering admissions, each answer closing its connection so the API
 * server's next call opens one to another replica.
 */
import { expect } from 'chai';
import http from 'node:http';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { configurationName, defaultServiceName, OPERATOR_NAME } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { freePort } from '../../src/local/ports.ts';

const SUITE = 'draining';

function get(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', () => resolve(0));
  });
}

describe('shutdown: a draining replica', function () {
  let operator: Operator;
  let metricsPort: number;

  before(async function () {
    metricsPort = await freePort();
    operator = await startTestOperator({ metricsPort });
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'replicas',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
          objectSelector: { matchLabels: { 'shutdown-e2e': 'never' } },
          validations: [{ expression: 'object.spec.replicas <= 2', message: 'at most 2 replicas' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
    await eventually(async () => expect(await get(metricsPort, '/readyz')).to.equal(200), { what: 'the operator to be ready' });
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator.stop();
  });

  it('is unready, hands over the lease, and keeps answering with each connection closed after its answer', async function () {
    await eventually(async () => expect(operator.isLeader()).to.equal(true), { what: 'this operator to lead' });
    await operator.drain();
    expect(await get(metricsPort, '/readyz')).to.equal(503);
    expect(await get(metricsPort, '/healthz')).to.equal(200);
    const lease = await cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: OPERATOR_NAME });
    expect(lease.spec?.holderIdentity ?? '').to.equal('');

    const configuration = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: configurationName(SUITE) });
    const ca = Buffer.from(configuration.webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
    const servername = `${defaultServiceName(SUITE)}.${OPERATOR_NAMESPACE}.svc`;
    const answer = await new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port: operator.servingPort, path: `/admit/${SUITE}/replicas`, method: 'POST', servername, ca, headers: { 'content-type': 'application/json' }, agent: new https.Agent({ keepAlive: true }) },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(fixtures.deploymentCreate()));
    });
    expect(answer.status).to.equal(200);
    expect(answer.connection).to.equal('close');
    expect(JSON.parse(answer.body).response.status.message).to.equal('at most 2 replicas');
  });
});
