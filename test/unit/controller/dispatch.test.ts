/** Which reconciler a work-queue key runs (src/controller/dispatch.ts), and what its metrics are told. Touches no reconciler of the product. */
import { expect } from 'chai';
import { CA_KEY, CaNotIssuedError } from '../../../src/controller/ca.ts';
import { CA_WAIT_MS, Dispatch } from '../../../src/controller/dispatch.ts';
import { ORPHANS_KEY } from '../../../src/controller/orphans.ts';
import { SELF_KEY } from '../../../src/controller/suite-validation-webhook.ts';
import { NAMESPACED_KEY } from '../../../src/controller/admission-policies.ts';
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
    const dispatch = new Dispatch(
      (kind, result) => void observed.push(`${kind}:${result}`),
      () => void caAdded++,
    );
    dispatch.register({
      ca: { key: CA_KEY, alone: true, reconcile: run('ca') },
      'suite-validation': { key: SELF_KEY, reconcile: run('self') },
      orphans: { key: ORPHANS_KEY, reconcile: run('orphans') },
      namespaced: { key: NAMESPACED_KEY, reconcile: run('namespaced') },
      suite: { reconcile: (key) => run('suite')().then((r) => (ran.push(key), r)) },
    });
    const { reconcile, kindOf } = { reconcile: dispatch.reconcile, kindOf: (key: string) => dispatch.kindOf(key) };
    return { reconcile, kindOf, alone: dispatch.alone, ran, observed, caAdded: () => caAdded };
  }

  it("runs the CA's, the suite-validation webhook's, the sweep's, the AdmissionPolicies' or the named suite's reconciler, reporting each by kind", async function () {
    const { reconcile, kindOf, alone, ran, observed } = setup();
    for (const key of [CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'guards']) await reconcile(key);
    expect(ran).to.deep.equal(['ca', 'self', 'orphans', 'namespaced', 'suite', 'guards']);
    expect(observed).to.deep.equal(['ca:requeue', 'suite-validation:requeue', 'orphans:requeue', 'namespaced:requeue', 'suite:success']);
    expect([CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'guards'].map(kindOf)).to.deep.equal(['ca', 'suite-validation', 'orphans', 'namespaced', 'suite']);
    // Only the CA runs alone: every other reconcile signs with it.
    expect([CA_KEY, SELF_KEY, 'guards'].map(alone)).to.deep.equal([true, false, false]);
  });

  it("refuses a record where two reconcilers claim one key, or none takes the suites' names, rather than running the wrong one", function () {
    const none = async () => undefined;
    const dispatch = () =>
      new Dispatch(
        () => undefined,
        () => undefined,
      );
    const base = {
      ca: { key: CA_KEY, reconcile: none },
      'suite-validation': { key: SELF_KEY, reconcile: none },
      orphans: { key: ORPHANS_KEY, reconcile: none },
      namespaced: { key: NAMESPACED_KEY, reconcile: none },
      suite: { reconcile: none },
    };
    expect(() => dispatch().register({ ...base, orphans: { key: SELF_KEY, reconcile: none } })).to.throw(`the key ${SELF_KEY} is claimed by both suite-validation and orphans`);
    expect(() => dispatch().register({ ...base, suite: { key: 'x', reconcile: none } })).to.throw('exactly one reconciler takes the keys no other claims, not 0');
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
