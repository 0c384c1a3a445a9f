/**
 * The native process's writer (src/controller/native-writer.ts), against a recording stand-in for
 * the API server: it writes a webhook's policy and binding only where the serving leader's status
 * about the current generation says Native and the suite's own spec asked for it (so whoever can
 * write a suite's status, as the serving pods' token can, chooses no more than that), and removes
 * one only once its webhook has been registered for the hand-over, or at once when the status
 * lists no such webhook. Owns no file and no cluster object.
 */
import { expect } from 'chai';
import type { KubernetesObject } from '@kubernetes/client-node';
import { configurationName, MANAGED_BY_LABELS, SUITE_LABEL, webhookFullName } from '../../../src/api/names.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import type { CacheLookup, Kube, KubeObject } from '../../../src/apiserver/client.ts';
import type { WatchedCache } from '../../../src/apiserver/watch.ts';
import type { EventRecorder } from '../../../src/controller/events.ts';
import { HANDOVER_MS } from '../../../src/controller/native.ts';
import { NativeWriter } from '../../../src/controller/native-writer.ts';
import { componentLogger } from '../../../src/log.ts';

const rule = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };
const native: WebhookSpec = { name: 'native', type: 'Validating', enforcement: 'Native', rules: [rule], validations: [{ expression: 'true' }] };
const plain: WebhookSpec = { name: 'plain', type: 'Validating', rules: [rule], validations: [{ expression: 'true' }] };
const handled: WebhookSpec = { name: 'handled', type: 'Validating', enforcement: 'Native', rules: [rule], handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } } };

function suiteOf(webhooks: WebhookSpec[], status: { generation?: number; native?: string[]; webhook?: string[] }): AdmissionSuite {
  const entry = (name: string, enforcement: 'Native' | 'Webhook') => ({ name: webhookFullName('s', name), type: 'Validating' as const, enforcement });
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 's', uid: 'uid-s', generation: 2 },
    spec: { webhooks },
    status: { observedGeneration: status.generation ?? 2, webhooks: [...(status.native ?? []).map((n) => entry(n, 'Native')), ...(status.webhook ?? []).map((n) => entry(n, 'Webhook'))] },
  };
}

const cacheOf = <T extends KubernetesObject>(items: T[]): WatchedCache<T> => ({
  list: () => items,
  get: (name) => items.find((o) => o.metadata?.name === name),
  synced: Promise.resolve(),
  failure: () => undefined,
  stop: async () => undefined,
});

/** A writer over `suite`, with `existing` native objects and the webhooks `registered`; what it writes is recorded. */
function harness(suite: AdmissionSuite, existing: string[] = [], registered: string[] = []) {
  const writes: string[] = [];
  let now = 1_000_000;
  const kube = {
    writes: { count: 0 },
    mayWrite: () => true,
    applied: new Map(),
    objects: {
      patch: async (object: KubeObject) => {
        writes.push(`apply ${object.kind} ${object.metadata?.name}`);
        return { ...object, metadata: { ...object.metadata, resourceVersion: '1' } };
      },
      delete: async (object: KubeObject) => void writes.push(`delete ${object.kind} ${object.metadata?.name}`),
    },
  } as unknown as Kube;
  const owned = existing.flatMap((name) =>
    (['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const).map((kind) => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name: webhookFullName('s', name), labels: { ...MANAGED_BY_LABELS, [SUITE_LABEL]: 's' } },
    })),
  );
  const configuration = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: configurationName('s') }, webhooks: registered.map((n) => ({ name: webhookFullName('s', n) })) };
  const cached = Object.assign(
    (header: { kind?: string; metadata?: { name?: string } }) => (header.kind === 'ValidatingWebhookConfiguration' && header.metadata?.name === configurationName('s') ? configuration : undefined) as KubeObject | undefined,
    { free: () => true },
  ) as CacheLookup;
  const writer = new NativeWriter({
    kube,
    config: { namespace: 'portcullis-system' },
    suites: cacheOf([suite]),
    cached,
    nativeOwned: () => owned as KubeObject[],
    events: { record: async () => undefined } as unknown as EventRecorder,
    log: componentLogger('native-writer-test'),
    now: () => now,
  });
  return { writer, writes, advance: (ms: number) => (now += ms) };
}

describe('the native writer (the native process, --role=native)', function () {
  it('writes the policy and binding of a webhook the status says is Native and whose spec asked for it', async function () {
    const { writer, writes } = harness(suiteOf([native, plain], { native: ['native'], webhook: ['plain'] }));
    await writer.reconcile('s');
    expect(writes).to.deep.equal([`apply ValidatingAdmissionPolicy ${webhookFullName('s', 'native')}`, `apply ValidatingAdmissionPolicyBinding ${webhookFullName('s', 'native')}`]);
  });

  it('writes nothing a status claims Native for a webhook whose spec did not ask, or cannot be native', async function () {
    const { writer, writes } = harness(suiteOf([plain, handled], { native: ['plain', 'handled'] }));
    await writer.reconcile('s');
    expect(writes).to.deep.equal([]);
  });

  it("waits for the leader's status of the current generation", async function () {
    const { writer, writes } = harness(suiteOf([native], { generation: 1, native: ['native'] }));
    await writer.reconcile('s');
    expect(writes).to.deep.equal([]);
  });

  it('keeps a policy whose webhook went back to the webhook until it has been registered for the hand-over', async function () {
    const name = webhookFullName('s', 'native');
    const back = suiteOf([{ ...native, enforcement: 'Webhook' }], { webhook: ['native'] });
    const unregistered = harness(back, ['native']);
    expect(await unregistered.writer.reconcile('s')).to.deep.equal({ requeueAfterMs: HANDOVER_MS });
    expect(unregistered.writes).to.deep.equal([]);

    const { writer, writes, advance } = harness(back, ['native'], ['native']);
    expect(await writer.reconcile('s')).to.deep.equal({ requeueAfterMs: HANDOVER_MS });
    advance(HANDOVER_MS - 1);
    await writer.reconcile('s');
    expect(writes).to.deep.equal([]);
    advance(1);
    expect(await writer.reconcile('s')).to.equal(undefined);
    expect(writes).to.deep.equal([`delete ValidatingAdmissionPolicy ${name}`, `delete ValidatingAdmissionPolicyBinding ${name}`]);
  });

  it('removes at once the policy of a webhook the status no longer lists (gone from the spec, or nothing served)', async function () {
    const { writer, writes } = harness(suiteOf([native], {}), ['native', 'gone']);
    await writer.reconcile('s');
    expect(writes.filter((w) => w.startsWith('delete'))).to.have.length(4);
  });
});
