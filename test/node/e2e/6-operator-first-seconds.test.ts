/**
 * The first seconds of a suite in a real cluster (issue 21): a suite applied while creates it
 * judges arrive at 20/s. Until the API server has the suite's configuration it admits them
 * itself; from then on the policy answers every one; no create ever fails on the way (no
 * `failed calling webhook ... connection refused / no route to host`: the operator registers
 * only once the suite's ClusterIP answers through kube-proxy). Reports the window from apply to
 * the policy's first answer.
 */
import { expect } from 'chai';
import { eventually } from '../../support/wait.ts';
import { apply, kc } from '../kubectl.ts';
import { CreateLoad, describeLoad, ensureLoadNamespace, ensureOperator, LOAD_SUITE, loadSuite, OPERATOR_NS, seconds, summarize, verdict, waitSuiteReady } from '../operator.ts';

/** Creates a second, as an open loop sends them. */
const RATE = 20;

describe('the operator: a suite applied under load', function () {
  this.timeout(8 * 60_000);

  before(async function () {
    await ensureOperator();
    await ensureLoadNamespace();
    // From nothing: no configuration of an earlier run of this suite may answer for it.
    await kc(['delete', 'admissionsuite', LOAD_SUITE, '--ignore-not-found', '--wait=true']);
    await eventually(
      async () => {
        const left = await kc(['get', `validatingwebhookconfiguration/portcullis-${LOAD_SUITE}`, `service/portcullis-${LOAD_SUITE}`, '-n', OPERATOR_NS, '--ignore-not-found', '-o', 'name']);
        if (left.trim()) throw new Error(`still there: ${left.trim()}`);
      },
      { what: `the objects of an earlier ${LOAD_SUITE} to be collected`, timeoutMs: 60_000 },
    );
  });

  it('creates at 20/s while the suite is applied: admitted by the API server, then judged by the policy; none fails', async function () {
    const load = new CreateLoad(RATE);
    // Creates before the suite exists: all admitted, none judged.
    await eventually(
      async () => {
        if (load.outcomes.length < RATE) throw new Error(`${load.outcomes.length} answered`);
      },
      { what: `${RATE} creates answered before the suite is applied`, timeoutMs: 60_000 },
    );
    const appliedAt = load.now();
    await apply(loadSuite);
    await waitSuiteReady(LOAD_SUITE, 180_000);
    const readyAt = load.now();
    // Then the policy at work: as many deny-labelled creates sent after Ready come back as a second of load sends.
    await eventually(
      async () => {
        const judged = load.outcomes.filter((o) => o.deny && o.sentAt > readyAt).length;
        if (judged < RATE) throw new Error(`${judged} deny-labelled creates sent after Ready answered`);
      },
      { what: `${RATE} deny-labelled creates sent after Ready to be answered`, timeoutMs: 120_000 },
    );
    const summary = await load.stop();
    const firstPolicy = load.outcomes.filter((o) => verdict(o) === 'policy').sort((a, b) => a.doneAt - b.doneAt)[0];
    process.stderr.write(
      `      ${describeLoad(summary)}\n      suite applied at ${seconds(appliedAt)}, Ready at ${seconds(readyAt)} (+${seconds(readyAt - appliedAt)}), ` +
        `first policy answer at ${firstPolicy ? seconds(firstPolicy.doneAt) : 'never'} (+${firstPolicy ? seconds(firstPolicy.doneAt - appliedAt) : '?'} after apply)\n`,
    );

    expect(summary.failed, `creates that failed: ${summary.failures.join('; ')}`).to.equal(0);
    // The load held its rate throughout (an open loop: a create a twentieth of a second, however long the run), so the window was covered.
    expect(summary.sent, describeLoad(summary)).to.be.at.least(Math.floor(RATE * summary.seconds * 0.9));
    expect(load.outcomes.filter((o) => o.sentAt < appliedAt).length, 'creates sent before the suite was applied').to.be.at.least(RATE);
    expect(firstPolicy, 'a create refused by the suite').to.not.equal(undefined);
    // Unjudged only before the API server had the configuration: every deny-labelled create sent
    // after the policy's first answer came back was refused.
    const lateUnjudged = load.outcomes.filter((o) => o.deny && o.sentAt > firstPolicy!.doneAt && verdict(o) !== 'policy');
    expect(summarize(lateUnjudged, 0).unjudgedSamples).to.deep.equal([]);
  });
});
