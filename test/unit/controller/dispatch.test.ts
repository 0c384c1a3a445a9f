/** Which reconciler a work-queue key runs (src/controller/dispatch.ts), and what its metrics are told. */
import { expect } from 'chai';
import { CA_KEY, CaNotIssuedError } from '../../../src/controller/ca.ts';
import { CA_WAIT_MS, dispatcher, kindOf } from '../../../src/controller/dispatch.ts';
import { ORPHANS_KEY } from '../../../src/controller/orphans.ts';
import { SELF_KEY } from '../../../src/controller/self.ts';
import { NAMESPACED_KEY } from '../../../src/controller/namespaced.ts';
import { NotLeaderError } from '../../../src/apiserver/client.ts';

describe('controller/dispatch', function () {
  function setup(fail?: Error) {
    const ran: string[] = [];
    const observed: string[] = [];
    let caAdded = 0;
    const run = (name: string) => async () => {
      ran.push(name);
      if (fail) throw fail;
      return name === 'suite' ? undefined : { requeueAfterMs: 10 };
    };
    const reconcile = dispatcher(
      { ca: { reconcile: run('ca') }, self: { reconcile: run('self') }, orphans: { reconcile: run('orphans') }, namespaced: { reconcile: run('namespaced') }, suite: { reconcile: (key) => run('suite')().then((r) => (ran.push(key), r)) } },
      (kind, result) => void observed.push(`${kind}:${result}`),
      () => void caAdded++,
    );
    return { reconcile, ran, observed, caAdded: () => caAdded };
  }

  it("runs the CA's, the suite-validation webhook's, the sweep's, the AdmissionPolicies' or the named suite's reconciler, reporting each by kind", async function () {
    const { reconcile, ran, observed } = setup();
    for (const key of [CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'guards']) await reconcile(key);
    expect(ran).to.deep.equal(['ca', 'self', 'orphans', 'namespaced', 'suite', 'guards']);
    expect(observed).to.deep.equal(['ca:requeue', 'suite-validation:requeue', 'orphans:requeue', 'namespaced:requeue', 'suite:success']);
    expect([CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'guards'].map(kindOf)).to.deep.equal(['ca', 'suite-validation', 'orphans', 'namespaced', 'suite']);
  });

  it('with no CA yet, queues the CA and runs the key again soon rather than failing it', async function () {
    const { reconcile, observed, caAdded } = setup(new CaNotIssuedError());
    expect(await reconcile('guards')).to.deep.equal({ requeueAfterMs: CA_WAIT_MS });
    expect(caAdded()).to.equal(1);
    expect(observed).to.deep.equal(['suite:requeue']);
  });

  it('drops a key whose leadership moved (the new leader takes it), and rethrows any other error for backoff', async function () {
    const lost = setup(new NotLeaderError());
    expect(await lost.reconcile('guards')).to.equal(undefined);
    expect(lost.observed).to.deep.equal(['suite:not-leader']);
    const broken = setup(new Error('boom'));
    let thrown: unknown;
    await broken.reconcile(SELF_KEY).catch((err) => (thrown = err));
    expect((thrown as Error).message).to.equal('boom');
    expect(broken.observed).to.deep.equal(['suite-validation:error']);
  });
});
