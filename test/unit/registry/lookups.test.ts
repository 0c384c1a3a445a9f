/**
 * The shared lookup caches as the registry and the review worker use them: which kinds the served
 * suites need (the caches the operator keeps), what a handler answers before its cache has synced
 * (it waits a little, then is refused as the in-tree plugins refuse: "not yet ready to handle
 * request", by failurePolicy), and a large review judged in the worker reads the same lookups.
 */
import { expect } from 'chai';
import { SuiteRegistry } from '../../../src/registry/registry.ts';
import { LookupNotReady, type ClusterView, type LookupKind } from '../../../src/handlers/handler.ts';
import { LARGE_BODY } from '../../../src/admission/threads/offload.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { startTestEndpoint } from '../../support/endpoint.ts';

const claims = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['persistentvolumeclaims'] }];
const defaulting = (failurePolicy: 'Fail' | 'Ignore' = 'Fail'): WebhookSpec => ({ name: 'default-class', type: 'Mutating', rules: claims, failurePolicy, handler: { name: 'DefaultStorageClass' } });

function suiteOf(name: string, webhooks: WebhookSpec[]): AdmissionSuite {
  return { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name, uid: name, generation: 1 }, spec: { webhooks } };
}

const fast = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast', creationTimestamp: '2026-01-01T00:00:00Z', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } };

/** A view whose StorageClass cache syncs when `sync()` is called (or never). */
function syncingView() {
  let synced = false;
  let release: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => (release = resolve));
  const view: ClusterView = {
    namespace: (name) => ({ metadata: { name } }),
    limitRanges: () => [],
    list: (kind: LookupKind) => {
      if (!synced) throw new LookupNotReady(kind);
      return kind === 'StorageClass' ? [fast] : [];
    },
    whenReady: (_kinds, timeoutMs) => Promise.race([ready.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), Math.min(timeoutMs, 200)))]),
  };
  return { view, sync: () => ((synced = true), release!()) };
}

const claim = (padding = 0) =>
  requestFor('persistentvolumeclaims', 'CREATE', {
    object: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'team-a', ...(padding ? { annotations: { padding: 'x'.repeat(padding) } } : {}) }, spec: {} },
  });

describe('registry: the lookups of built-in handlers', function () {
  it('names the kinds the served suites look up, and none once those suites are gone', function () {
    const registry = new SuiteRegistry();
    expect([...registry.lookups()]).to.deep.equal([]);
    registry.sync(suiteOf('classes', [defaulting(), { name: 'priority', type: 'Mutating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], handler: { name: 'Priority' } }]));
    registry.sync(suiteOf('plain', [{ name: 'pull', type: 'Mutating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], handler: { name: 'AlwaysPullImages' } }]));
    expect([...registry.lookups()].sort()).to.deep.equal(['PriorityClass', 'StorageClass']);
    registry.remove('classes');
    expect([...registry.lookups()]).to.deep.equal([]);
  });

  it('waits for a cache that is syncing, then answers from it', async function () {
    const { view, sync } = syncingView();
    const registry = new SuiteRegistry({ view });
    registry.sync(suiteOf('classes', [defaulting()]));
    const answer = registry.webhook('classes', 'default-class')!.admit(claim());
    expect(answer).to.be.instanceOf(Promise);
    sync();
    expect(await answer).to.deep.equal({ allowed: true, patch: [{ op: 'add', path: '/spec/storageClassName', value: 'fast' }] });
  });

  it('refuses as the in-tree plugins do while the cache has not synced (failurePolicy Fail), admits under Ignore', async function () {
    const { view } = syncingView();
    const registry = new SuiteRegistry({ view });
    registry.sync(suiteOf('classes', [defaulting('Fail'), { ...defaulting('Ignore'), name: 'lenient' }]));
    expect(await registry.webhook('classes', 'default-class')!.admit(claim())).to.deep.equal({
      allowed: false,
      code: 403,
      reason: 'Forbidden',
      message: 'persistentvolumeclaims "data" is forbidden: not yet ready to handle request',
    });
    expect(await registry.webhook('classes', 'lenient')!.admit(claim())).to.deep.equal({ allowed: true });
  });

  it('a large review judged in the review worker reads the same lookups, and is refused alike before they sync', async function () {
    const { view, sync } = syncingView();
    const registry = new SuiteRegistry({ view });
    registry.sync(suiteOf('classes', [defaulting()]));
    const endpoint = await startTestEndpoint(registry, 'classes');
    try {
      const review = (padding: number) => JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: claim(padding) });
      const refused = await endpoint.post('/admit/classes/default-class', review(LARGE_BODY + 1000));
      expect(refused.body.response.status).to.deep.equal({ code: 403, reason: 'Forbidden', message: 'persistentvolumeclaims "data" is forbidden: not yet ready to handle request' });
      sync();
      const small = await endpoint.post('/admit/classes/default-class', review(0));
      const large = await endpoint.post('/admit/classes/default-class', review(LARGE_BODY + 1000));
      expect(large.body.response.allowed).to.equal(true);
      expect(JSON.parse(Buffer.from(large.body.response.patch, 'base64').toString())).to.deep.equal([{ op: 'add', path: '/spec/storageClassName', value: 'fast' }]);
      expect(large.body.response.patch).to.equal(small.body.response.patch);
    } finally {
      await endpoint.close();
    }
  });
});
