/**
 * A suite's mutations through the real API server: condition-guarded literal patches, a
 * patchExpression over every container, a patch that cannot apply under Fail and under Ignore,
 * a webhook that speaks admission.k8s.io/v1beta1, and a dry-run create that stores nothing.
 * Each webhook is scoped to this file's namespace and to objects labelled for it.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { isNotFound } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { WebhookSpec } from '../../src/api/types.ts';

const NS = 'mutations-e2e';
const SUITE = 'mutations';
const LABEL = 'mutations-e2e';
const IMAGE = 'registry.k8s.io/pause:3.10';

const configMaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const scoped = (value: string): Pick<WebhookSpec, 'namespaceSelector' | 'objectSelector'> => ({
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
  objectSelector: { matchLabels: { [LABEL]: value } },
});

const WEBHOOKS: WebhookSpec[] = [
  {
    name: 'tier-default',
    type: 'Mutating',
    rules: configMaps,
    ...scoped('tier'),
    reinvocationPolicy: 'IfNeeded',
    mutations: [
      { condition: '!has(object.data)', patch: [{ op: 'add', path: '/data', value: {} }] },
      { condition: '!has(object.data.tier)', patch: [{ op: 'add', path: '/data/tier', value: 'standard' }] },
    ],
  },
  {
    name: 'pull-always',
    type: 'Mutating',
    rules: pods,
    ...scoped('pull'),
    mutations: [
      {
        patchExpression: 'object.spec.containers.map(c, {"op": "add", "path": "/spec/containers/" + string(object.spec.containers.indexOf(c)) + "/imagePullPolicy", "value": "Always"})',
      },
    ],
  },
  { name: 'broken-closed', type: 'Mutating', rules: configMaps, ...scoped('fail-closed'), failurePolicy: 'Fail', mutations: [{ patch: [{ op: 'replace', path: '/metadata/annotations/missing', value: 'x' }] }] },
  { name: 'broken-open', type: 'Mutating', rules: configMaps, ...scoped('fail-open'), failurePolicy: 'Ignore', mutations: [{ patch: [{ op: 'replace', path: '/metadata/annotations/missing', value: 'x' }] }] },
  {
    name: 'old-protocol',
    type: 'Mutating',
    rules: configMaps,
    ...scoped('v1beta1'),
    admissionReviewVersions: ['v1beta1'],
    mutations: [{ patchExpression: "[{'op': 'add', 'path': '/data', 'value': {'protocol': 'v1beta1'}}]" }],
  },
];

function configMap(name: string, label: string, data?: Record<string, string>): k8s.V1ConfigMap {
  return { metadata: { name, labels: { [LABEL]: label } }, ...(data ? { data } : {}) };
}

describe('Mutations through the real API server', function () {
  let operator: Operator;
  let serial = 0;
  const unique = (prefix: string) => `${prefix}-${++serial}`;

  before(async function () {
    await ensureNamespace(NS);
    operator = await startTestOperator();
    await createSuite(SUITE, { webhooks: WEBHOOKS });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it('without the suite the API server stores a ConfigMap as sent (the baseline the mutations change)', async function () {
    const plain = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('plain'), 'none') });
    expect(plain.data).to.equal(undefined);
  });

  it('applies condition-guarded literal patches in order, and leaves what is already there', async function () {
    const created = await eventually(
      async () => {
        const cm = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('tier'), 'tier') });
        if (!cm.data) throw new Error('not mutated yet');
        return cm;
      },
      { what: 'the tier mutation to apply' },
    );
    expect(created.data).to.deep.equal({ tier: 'standard' });
    const kept = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('tier'), 'tier', { tier: 'gold', other: '1' }) });
    expect(kept.data).to.deep.equal({ tier: 'gold', other: '1' });
    const configuration = await cluster().admissionregistration.readMutatingWebhookConfiguration({ name: `portcullis-${SUITE}` });
    expect(configuration.webhooks!.find((w) => w.name.startsWith('tier-default.'))!.reinvocationPolicy).to.equal('IfNeeded');
  });

  it('sets every container to pull always with a patchExpression', async function () {
    const pod = await cluster().kube.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: unique('pull'), labels: { [LABEL]: 'pull' } },
        spec: {
          containers: [
            { name: 'a', image: IMAGE, imagePullPolicy: 'Never' },
            { name: 'b', image: IMAGE },
            { name: 'c', image: IMAGE, imagePullPolicy: 'IfNotPresent' },
          ],
        },
      },
    });
    expect(pod.spec!.containers.map((c) => c.imagePullPolicy)).to.deep.equal(['Always', 'Always', 'Always']);
  });

  it('refuses under Fail a patch that cannot apply, naming the mutation, and admits unchanged under Ignore', async function () {
    const refused = await refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('closed'), 'fail-closed') }));
    expect(refused?.message).to.match(/^admission webhook "broken-closed\.mutations\.admission\.portcullis\.dev" denied the request: spec\.webhooks\[2\]\.mutations\[0\]: patch failed/);
    const open = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('open'), 'fail-open') });
    expect(open.metadata?.annotations).to.equal(undefined);
    expect(open.data).to.equal(undefined);
  });

  it('answers a webhook registered for admission.k8s.io/v1beta1 in v1beta1 (the API server refuses any other answer)', async function () {
    const configuration = await cluster().admissionregistration.readMutatingWebhookConfiguration({ name: `portcullis-${SUITE}` });
    expect(configuration.webhooks!.find((w) => w.name.startsWith('old-protocol.'))!.admissionReviewVersions).to.deep.equal(['v1beta1']);
    const cm = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(unique('beta'), 'v1beta1') });
    expect(cm.data).to.deep.equal({ protocol: 'v1beta1' });
  });

  it('mutates a dry-run create in the answer and stores nothing', async function () {
    const name = unique('dry');
    const answered = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: configMap(name, 'tier'), dryRun: 'All' });
    expect(answered.data).to.deep.equal({ tier: 'standard' });
    try {
      await cluster().kube.core.readNamespacedConfigMap({ namespace: NS, name });
      expect.fail('a dry-run create was stored');
    } catch (err) {
      expect(isNotFound(err), String(err)).to.equal(true);
    }
  });
});
