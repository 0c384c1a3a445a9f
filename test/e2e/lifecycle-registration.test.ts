/**
 * Registration only when serving, and convergence after the operator ends between writing the
 * serving Secret and the configurations: a restarted operator reaches the same state, reusing the
 * certificate it issued, with no duplicate objects.
 */
import { expect } from 'chai';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { condition, createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { scrape } from '../support/prometheus.ts';
import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../src/api/types.ts';
import { getObject, type KubeObject } from '../../src/apiserver/client.ts';
import { freePort } from '../../src/local/ports.ts';
import { readCertificate } from '../../src/certs/x509.ts';
import type { Operator } from '../../src/manager/operator.ts';

const SUITE = 'late-server';
const configHeader = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: `portcullis-${SUITE}` } };
const secretHeader = { apiVersion: 'v1', kind: 'Secret', metadata: { name: `portcullis-${SUITE}-tls`, namespace: OPERATOR_NAMESPACE } };

async function servingSerial(): Promise<string | undefined> {
  const secret = await getObject<KubeObject & { data: Record<string, string> }>(cluster().kube, secretHeader);
  return secret ? readCertificate(Buffer.from(secret.data['tls.crt']!, 'base64').toString()).serial : undefined;
}

describe('lifecycle: registration only when serving', function () {
  let first: Operator | undefined;
  let second: Operator | undefined;
  let third: Operator | undefined;
  let port: number;

  before(async function () {
    port = await freePort();
  });

  after(async function () {
    await deleteSuite(SUITE);
    await first?.stop();
    await third?.stop();
    await second?.stop();
  });

  it('does not register while the endpoint is not listening, and registers once it is', async function () {
    first = await startTestOperator({ servingPort: port }, { serve: false });
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'names',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          objectSelector: { matchLabels: { 'portcullis-test': SUITE } },
          validations: [{ expression: "object.metadata.name.startsWith('ok-')" }],
        },
      ],
    });
    const waiting = await waitForCondition(SUITE, 'WebhooksRegistered', 'False');
    expect(condition(waiting, 'WebhooksRegistered')!.reason).to.equal('WaitingForEndpoint');
    expect(condition(waiting, 'CertificateReady')!.status).to.equal('True');
    expect(await servingSerial(), 'the serving Secret is written before registration').to.be.a('string');
    // Still not registered a while later: the operator keeps probing, and never registers blind.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await getObject(cluster().kube, configHeader)).to.equal(undefined);
  });

  it('a new operator started after the first ended mid-way converges to the same objects, with no duplicates', async function () {
    const serialBefore = await servingSerial();
    await first!.stop();
    first = undefined;
    const metricsPort = await freePort();
    second = await startTestOperator({ servingPort: port, metricsPort });
    await waitForCondition(SUITE, 'Ready', 'True');
    const config = await eventually(async () => (await getObject(cluster().kube, configHeader)) ?? Promise.reject(new Error('no configuration')), { what: 'registration' });
    expect(await servingSerial(), 'the certificate issued before is reused').to.equal(serialBefore);
    const configs = await cluster().admissionregistration.listValidatingWebhookConfiguration({ labelSelector: `admission.portcullis.dev/suite=${SUITE}` });
    expect(configs.items).to.have.length(1);
    const services = await cluster().kube.core.listNamespacedService({ namespace: OPERATOR_NAMESPACE, labelSelector: `admission.portcullis.dev/suite=${SUITE}` });
    expect(services.items).to.have.length(1);
    // A second reconcile pass changes nothing.
    const version = (config as KubeObject & { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const suite = await getSuite(SUITE);
    await new Promise((r) => setTimeout(r, 1500));
    const again = (await getObject(cluster().kube, configHeader)) as KubeObject & { metadata: { resourceVersion: string } };
    expect(again.metadata.resourceVersion).to.equal(version);
    expect((await getSuite(SUITE))!.metadata.resourceVersion).to.equal(suite!.metadata.resourceVersion);

    // A reconcile woken with nothing to change (an annotation on the suite) sends no write at all:
    // what it would apply is what this operator last applied, and the objects are still at that version.
    const suiteReconciles = async () =>
      (await scrape(metricsPort))
        .get('portcullis_reconcile_duration_seconds')!
        .samples.filter((s) => s.name.endsWith('_count') && s.labels.kind === 'suite')
        .reduce((sum, s) => sum + s.value, 0);
    const reconcilesBefore = await suiteReconciles();
    const writesBefore = second.kube.writes.count;
    await cluster().kube.custom.patchClusterCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, name: SUITE, body: { metadata: { annotations: { 'example.com/touched': 'yes' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually(async () => expect(await suiteReconciles()).to.be.greaterThan(reconcilesBefore), { what: 'a reconcile of the annotated suite' });
    expect(second.kube.writes.count - writesBefore, 'writes of a reconcile with nothing to change').to.equal(0);
  });

  it('a restart applies nothing that its last apply left as it was, and takes back what someone changed meanwhile', async function () {
    await second!.stop();
    second = undefined;
    // While no operator runs, someone else changes the configuration (as `kubectl edit` would).
    const before = (await getObject(cluster().kube, configHeader)) as KubeObject & { webhooks: { timeoutSeconds: number }[] };
    const timeout = before.webhooks[0]!.timeoutSeconds;
    await cluster().admissionregistration.patchValidatingWebhookConfiguration(
      { name: configHeader.metadata.name, body: [{ op: 'replace', path: '/webhooks/0/timeoutSeconds', value: timeout === 29 ? 28 : 29 }], fieldManager: 'kubectl-edit' },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    const metricsPort = await freePort();
    third = await startTestOperator({ servingPort: port, metricsPort });
    await eventually(async () => expect(((await getObject(cluster().kube, configHeader)) as typeof before).webhooks[0]!.timeoutSeconds).to.equal(timeout), { what: 'the changed configuration applied again' });
    await waitForCondition(SUITE, 'Ready', 'True');
    // The Secret and the Service are as the last apply left them: only the configuration was sent.
    expect(third.kube.writes.count, 'writes of the restarted operator').to.equal(1);
  });
});
