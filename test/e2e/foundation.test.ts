/**
 * One AdmissionSuite end to end through the real API server: the operator issues the TLS
 * material, registers the webhooks with the caBundle it wrote, and the API server calls our
 * endpoint over verified TLS (through the suite's Service) and enforces the decision.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { condition, createSuite, deleteSuite, deleteSuiteObject, getSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { getObject, type KubeObject } from '../../src/apiserver/client.ts';
import { deployment, errorStatus } from '../support/objects.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { SuiteSpec } from '../../src/api/types.ts';

const NS = 'foundation-e2e';

const replicaLimit: SuiteSpec = {
  webhooks: [
    {
      name: 'replica-limit',
      type: 'Validating',
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
      validations: [{ expression: 'object.spec.replicas <= 5', message: 'replicas must be no greater than 5' }],
    },
  ],
};

describe('Foundation: one suite admitting end to end through the real API server', function () {
  let operator: Operator;

  before(async function () {
    const { kube } = cluster();
    await kube.objects.patch({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, undefined, undefined, 'test', true, k8s.PatchStrategy.ServerSideApply);
    operator = await startTestOperator();
  });

  after(async function () {
    for (const name of ['replica-guard', 'label-adder', 'broken']) await deleteSuite(name);
    await operator?.stop();
  });

  it('denies a Deployment over the replica limit, naming the suite and webhook, and admits one within it', async function () {
    await createSuite('replica-guard', replicaLimit);
    const ready = await waitForCondition('replica-guard', 'Ready', 'True');
    expect(condition(ready, 'CertificateReady')?.status).to.equal('True');
    expect(condition(ready, 'WebhooksRegistered')?.status).to.equal('True');
    expect(ready.status?.webhooks).to.deep.equal([{ name: 'replica-limit.replica-guard.admission.portcullis.dev', type: 'Validating', enforcement: 'Webhook' }]);
    expect(new Date(ready.status!.certificate!.renewalTime!).getTime()).to.be.greaterThan(Date.now());

    const denial = await eventually(
      async () => {
        try {
          await cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('too-many', 6, NS) });
        } catch (err) {
          return errorStatus(err);
        }
        await cluster().apps.deleteNamespacedDeployment({ namespace: NS, name: 'too-many' });
        throw new Error('a Deployment with 6 replicas was admitted');
      },
      { what: 'the webhook to deny' },
    );
    expect(denial.code).to.equal(422);
    expect(denial.message).to.contain('replica-limit.replica-guard.admission.portcullis.dev');
    expect(denial.message).to.contain('replicas must be no greater than 5');

    const admitted = await cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('within', 3, NS) });
    expect(admitted.spec?.replicas).to.equal(3);
  });

  it('is enforced for kubectl too', async function () {
    const manifest = JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', ...deployment('kubectl-too-many', 7, NS) });
    const result = await kubectl(['create', '-f', '-'], manifest);
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain('admission webhook "replica-limit.replica-guard.admission.portcullis.dev" denied the request');
    expect(result.stderr).to.contain('replicas must be no greater than 5');
  });

  it('was reached through the suite Service, with the caBundle the operator wrote', async function () {
    const { admissionregistration, kube } = cluster();
    const configuration = await admissionregistration.readValidatingWebhookConfiguration({ name: 'portcullis-replica-guard' });
    const webhook = configuration.webhooks![0]!;
    expect(webhook.clientConfig.service).to.deep.include({ namespace: OPERATOR_NAMESPACE, name: 'portcullis-replica-guard', path: '/admit/replica-guard/replica-limit', port: operator.servingPort });
    expect(webhook.clientConfig.url).to.equal(undefined);
    const ca = await getObject<{ data: Record<string, string> } & KubeObject>(kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'portcullis-ca', namespace: OPERATOR_NAMESPACE } });
    expect(Buffer.from(webhook.clientConfig.caBundle!, 'base64').toString()).to.equal(Buffer.from(ca!.data['ca-bundle.crt']!, 'base64').toString());
    const service = await cluster().kube.core.readNamespacedService({ namespace: OPERATOR_NAMESPACE, name: 'portcullis-replica-guard' });
    expect(service.spec).to.include({ type: 'ExternalName', externalName: 'localhost' });
    const served = operator.certificates.served('replica-guard')!;
    expect(new (await import('node:crypto')).X509Certificate(served).subjectAltName).to.contain('DNS:portcullis-replica-guard.portcullis-system.svc');
  });

  it('mutates: a ConfigMap created through the API server comes back with the label', async function () {
    await createSuite('label-adder', {
      webhooks: [
        {
          name: 'team-label',
          type: 'Mutating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          objectSelector: { matchExpressions: [{ key: 'portcullis-test', operator: 'In', values: ['mutate'] }] },
          mutations: [{ condition: "!('team' in object.metadata.labels)", patch: [{ op: 'add', path: '/metadata/labels/team', value: 'unassigned' }] }],
        },
      ],
    });
    await waitForCondition('label-adder', 'Ready', 'True');
    const created = await eventually(
      async () => {
        const name = `labelled-${Date.now()}`;
        const cm = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name, labels: { 'portcullis-test': 'mutate' } } } });
        if (cm.metadata?.labels?.team !== 'unassigned') throw new Error(`labels are ${JSON.stringify(cm.metadata?.labels)}`);
        return cm;
      },
      { what: 'the mutation to apply' },
    );
    expect(created.metadata?.labels).to.deep.equal({ 'portcullis-test': 'mutate', team: 'unassigned' });
    const kept = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'has-team', labels: { 'portcullis-test': 'mutate', team: 'core' } } } });
    expect(kept.metadata?.labels?.team).to.equal('core');
  });

  it('reports a suite whose CEL does not compile as Ready=False naming the field, and registers nothing', async function () {
    // Such a suite is refused on apply while the operator runs; with the operator stopped it gets in
    // (the suite-validation webhook fails open), and the operator reports it once it starts.
    await operator.stop();
    await createSuite('broken', {
      webhooks: [
        {
          name: 'bad',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          validations: [{ expression: 'object.spec.replicas <= 5' }, { expression: 'object.metadata.name.startsWith(' }],
        },
      ],
    });
    operator = await startTestOperator();
    const suite = await waitForCondition('broken', 'Ready', 'False');
    const ready = condition(suite, 'Ready')!;
    expect(ready.reason).to.equal('InvalidSpec');
    expect(ready.message).to.contain('spec.webhooks[0].validations[1].expression');
    const { admissionregistration } = cluster();
    const configurations = await admissionregistration.listValidatingWebhookConfiguration();
    expect(configurations.items.map((c) => c.metadata?.name)).to.not.include('portcullis-broken');
    expect(await getObject(cluster().kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'portcullis-broken-tls', namespace: OPERATOR_NAMESPACE } })).to.equal(undefined);
  });

  it('deleting the suite removes its configurations, Secret and Service, and the denied create is admitted', async function () {
    const { kube } = cluster();
    const owned = [
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'portcullis-replica-guard' } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'portcullis-replica-guard-tls', namespace: OPERATOR_NAMESPACE } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'portcullis-replica-guard', namespace: OPERATOR_NAMESPACE } },
    ];
    for (const header of owned) expect(await getObject(kube, header), `${header.kind} before deletion`).to.not.equal(undefined);
    await deleteSuiteObject('replica-guard');
    await eventually(
      async () => {
        for (const header of owned) if (await getObject(kube, header)) throw new Error(`${header.kind} ${header.metadata.name} still exists`);
      },
      { what: 'garbage collection of the suite objects', timeoutMs: 60_000 },
    );
    expect(await getSuite('replica-guard')).to.equal(undefined);
    const admitted = await eventually(() => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('too-many-after', 6, NS) }), {
      what: 'a 6-replica Deployment to be admitted',
    });
    expect(admitted.spec?.replicas).to.equal(6);
  });
});
