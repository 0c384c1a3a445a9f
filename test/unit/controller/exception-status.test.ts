/**
 * The AdmissionExceptions' status writer (src/controller/exception-status.ts), over an in-memory
 * API that checks resourceVersions as the API server does: two replicas counting uses of one
 * exception with stale caches lose none of each other's counts; a burst of uses is written
 * coalesced; Expired turns True at expires with no other change, and only the leader writes it.
 * The e2e (test/e2e/exceptions-status.test.ts) shows the same through the real API server. Owns
 * nothing but its fakes.
 */
import { expect } from 'chai';
import type { Kube } from '../../../src/apiserver/client.ts';
import type { AdmissionException } from '../../../src/api/exceptions.ts';
import { ExceptionStatusWriter } from '../../../src/controller/exception-status.ts';
import { componentLogger } from '../../../src/log.ts';
import { ExceptionStore } from '../../../src/registry/exceptions.ts';
import { eventually } from '../../support/wait.ts';

const log = componentLogger('exception-status-test');

const exception = (expires: string): AdmissionException => ({
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionException',
  metadata: { name: 'legacy', namespace: 'team-a', uid: 'u1', generation: 1, resourceVersion: '1' },
  spec: { suite: 's', webhook: 'w', reason: 'because', expires },
});

/** One stored exception behind a status endpoint that refuses a stale resourceVersion (409) as the API server does. */
function fakeApi(initial: AdmissionException) {
  let stored = structuredClone(initial);
  let version = Number(initial.metadata.resourceVersion);
  const api = {
    writes: 0,
    conflicts: 0,
    get stored() {
      return stored;
    },
    kube: {
      custom: {
        replaceNamespacedCustomObjectStatus: async ({ body }: { body: AdmissionException }) => {
          // Another writer may come in between: a turn of the event loop, as a request would.
          await new Promise((resolve) => setImmediate(resolve));
          if (body.metadata.resourceVersion !== stored.metadata.resourceVersion) {
            api.conflicts += 1;
            throw Object.assign(new Error('Conflict'), { code: 409 });
          }
          api.writes += 1;
          stored = { ...structuredClone(stored), status: structuredClone(body.status) };
          stored.metadata.resourceVersion = String(++version);
          return structuredClone(stored);
        },
        getNamespacedCustomObject: async () => structuredClone(stored),
      },
    } as unknown as Kube,
  };
  return api;
}

describe('controller/exception-status', function () {
  const writers: ExceptionStatusWriter[] = [];
  afterEach(() => writers.splice(0).forEach((w) => w.stop()));
  const writer = (kube: Kube, exceptions: ExceptionStore, usesIntervalMs: number) => {
    const made = new ExceptionStatusWriter({ kube, exceptions, log, usesIntervalMs });
    writers.push(made);
    return made;
  };

  it("adds every replica's uses to the stored count, whatever their caches hold, and keeps the latest lastUsed", async function () {
    const api = fakeApi(exception('2099-01-01T00:00:00Z'));
    // Two replicas whose watch caches never see each other's (or their own) writes: every write after the first conflicts and is made again over what is stored.
    const replicas = [0, 1].map(() => {
      const store = new ExceptionStore();
      store.set(structuredClone(api.stored));
      return { store, writer: writer(api.kube, store, 20) };
    });
    for (let i = 0; i < 7; i++) replicas[0]!.writer.used('team-a', 'legacy');
    for (let i = 0; i < 5; i++) replicas[1]!.writer.used('team-a', 'legacy');
    await eventually(async () => void expect(api.stored.status?.uses).to.equal(12), { what: "both replicas' uses written" });
    expect(api.conflicts, "the writes that met the other replica's").to.be.at.least(1);
    const lastUsed = Date.parse(api.stored.status!.lastUsed!);
    expect(lastUsed)
      .to.be.at.most(Date.now())
      .and.at.least(Date.now() - 60_000);
    expect(api.stored.status!.lastUsed).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // Later uses add to the count again.
    replicas[1]!.writer.used('team-a', 'legacy');
    await eventually(async () => void expect(api.stored.status?.uses).to.equal(13), { what: 'a later use written' });
  });

  it('writes a burst of uses coalesced: at once for the first, the rest together after the interval', async function () {
    const api = fakeApi(exception('2099-01-01T00:00:00Z'));
    const store = new ExceptionStore();
    store.set(structuredClone(api.stored));
    const status = writer(api.kube, store, 300);
    status.used('team-a', 'legacy');
    await eventually(async () => void expect(api.stored.status?.uses).to.equal(1), { what: 'the first use written' });
    store.set(structuredClone(api.stored));
    for (let i = 0; i < 20; i++) status.used('team-a', 'legacy');
    await eventually(async () => void expect(api.stored.status?.uses).to.equal(21), { what: 'the burst written' });
    expect(api.writes, 'status writes for 21 uses').to.equal(2);
  });

  it('turns Expired True once expires passes, with nothing else changed; False with Active before', async function () {
    const expiresAt = Math.ceil((Date.now() + 1500) / 1000) * 1000;
    const expires = new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const api = fakeApi(exception(expires));
    const store = new ExceptionStore();
    store.set(structuredClone(api.stored));
    const status = writer(api.kube, store, 20);
    status.leading(true);
    const active = await eventually(
      async () => {
        const found = api.stored.status?.conditions?.find((c) => c.type === 'Expired');
        expect(found?.status).to.equal('False');
        return found!;
      },
      { what: 'Expired False' },
    );
    expect(active).to.include({ reason: 'Active', observedGeneration: 1 });
    // The store is not told of that write, nor of anything else: only the writer's own wake-up at expires can turn it True.
    const expired = await eventually(
      async () => {
        const found = api.stored.status?.conditions?.find((c) => c.type === 'Expired');
        expect(found?.status).to.equal('True');
        return found!;
      },
      { what: 'Expired True' },
    );
    expect(Date.now()).to.be.at.least(expiresAt);
    expect(expired.reason).to.equal('Expired');
    expect(expired.message).to.contain(`expired at ${expires}`);
    expect(Date.parse(expired.lastTransitionTime)).to.be.at.least(expiresAt);
  });

  it('writes no condition on a replica that does not lead', async function () {
    const api = fakeApi(exception('2000-01-01T00:00:00Z'));
    const store = new ExceptionStore();
    store.set(structuredClone(api.stored));
    const status = writer(api.kube, store, 20);
    // Uses are still written (every replica writes its own): once they are, a condition would have been too.
    status.used('team-a', 'legacy');
    await eventually(async () => void expect(api.stored.status?.uses).to.equal(1), { what: 'the use written' });
    expect(api.stored.status?.conditions).to.equal(undefined);
    status.leading(true);
    await eventually(async () => void expect(api.stored.status?.conditions?.[0]).to.include({ type: 'Expired', status: 'True', reason: 'Expired' }), { what: 'the leader to write Expired' });
    expect(api.stored.status?.uses, 'the uses written before kept').to.equal(1);
  });
});
