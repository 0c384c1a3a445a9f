/**
 * The worker kit itself (src/workers/kit.ts), with tiny workers of its own (test/support/workers/kit-*.ts):
 * calls and their matched replies, timeouts, calls lost with their worker, state replayed to a new one,
 * backoff and quarantine. Each worker kind's own rules are tested with the kind (worker-restarts.test.ts).
 */
import { expect } from 'chai';
import { CallTimeout, Restarting, StateLog, WorkerLost, WorkerThread, type Death, type DeathCause } from '../../../src/workers/kit.ts';
import { Quarantine, QUARANTINE_AFTER } from '../../../src/workers/restarts.ts';
import type { AdderIn, AdderOut } from '../../support/workers/kit-adder.ts';
import type { HolderIn, HolderOut } from '../../support/workers/kit-holder.ts';
import { eventually } from '../../support/wait.ts';

const ADDER = new URL('../../support/workers/kit-adder.ts', import.meta.url);
const HOLDER = new URL('../../support/workers/kit-holder.ts', import.meta.url);

/** The words a kind would give a death: what the pending calls are rejected with. */
const words = (cause: DeathCause) => ('exitCode' in cause ? `exited with ${cause.exitCode}` : 'error' in cause ? `failed: ${cause.error.message}` : `stopped: ${cause.stopped}`);

type Holder = WorkerThread<HolderIn, HolderOut, string>;

/** Holder workers started by the kit's Restarting, fed `state`; `onDeath` is the kind's rule, before the restart. */
function holders(state: StateLog<HolderIn>, backoff: { initialMs: number; maxMs: number; stableMs: number }, onDeath: (death: Death<string>) => void = () => undefined) {
  const deaths: Death<string>[] = [];
  const waits: number[] = [];
  const restarting: Restarting<Holder> = new Restarting(
    backoff,
    () =>
      new WorkerThread<HolderIn, HolderOut, string>({
        entry: HOLDER,
        state,
        replies: ['holding'],
        receive: () => undefined,
        describe: words,
        died: (death) => {
          deaths.push(death);
          onDeath(death);
          waits.push(restarting.died());
        },
      }),
  );
  return { restarting, deaths, waits };
}

const holding = async (worker: Holder) => (await worker.call({ type: 'held' }, { timeoutMs: 60_000 }).reply).keys;

describe('worker kit: one way to start, call and restart a worker', function () {
  this.timeout(120_000);
  const cleanup: (() => unknown)[] = [];
  afterEach(async function () {
    for (const undo of cleanup.splice(0)) await undo();
  });

  const adder = (died: (death: Death<string>) => void = () => undefined) => {
    const notes: AdderOut[] = [];
    const thread = new WorkerThread<AdderIn, AdderOut, string>({ entry: ADDER, replies: ['sum'], receive: (message) => notes.push(message), describe: words, died });
    cleanup.push(() => thread.terminate());
    return { thread, notes };
  };

  it('matches each reply to its call by id, whatever order the worker answers in, and hands other messages to the kind', async function () {
    const { thread, notes } = adder();
    const slow = thread.call({ type: 'add', a: 1, b: 2, delayMs: 300 });
    const fast = thread.call({ type: 'add', a: 10, b: 20, delayMs: 0 });
    // A call is one of the messages the worker takes, without its id (the kit numbers it): the type check refuses any other.
    // @ts-expect-error a reply's type is not a call
    void (() => thread.call({ type: 'sum', value: 1 }));
    const first = await Promise.race([slow.reply.then(() => 'slow'), fast.reply.then(() => 'fast')]);
    expect(first).to.equal('fast');
    expect(await fast.reply).to.deep.equal({ type: 'sum', id: fast.id, value: 30 });
    expect(await slow.reply).to.deep.equal({ type: 'sum', id: slow.id, value: 3 });
    thread.post({ type: 'say', text: 'unasked' });
    await eventually(async () => expect(notes).to.deep.equal([{ type: 'note', text: 'unasked' }]));
  });

  it('rejects a call not answered within its timeout, and the worker serves the next call', async function () {
    const { thread } = adder();
    const hung = thread.call({ type: 'hang' }, { timeoutMs: 100 });
    const error = await hung.reply.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).to.be.instanceOf(CallTimeout);
    expect(thread.alive).to.equal(true);
    expect(await thread.call({ type: 'add', a: 2, b: 2, delayMs: 0 }).reply).to.include({ value: 4 });
  });

  it('rejects every pending call when its worker dies, in the kind’s words, and tells the kind once which tagged calls were in it', async function () {
    const told: Death<string>[] = [];
    const { thread } = adder((death) => told.push(death));
    const hung = thread.call({ type: 'hang' }, { tag: 'request-1' });
    const slow = thread.call({ type: 'add', a: 1, b: 1, delayMs: 60_000 });
    const lost = Promise.allSettled([hung.reply, slow.reply]);
    thread.post({ type: 'exit', code: 3 });
    const [a, b] = await lost;
    for (const settled of [a, b]) {
      expect(settled.status).to.equal('rejected');
      const reason = (settled as PromiseRejectedResult).reason as Error;
      expect(reason).to.be.instanceOf(WorkerLost);
      expect(reason.message).to.equal('exited with 3');
    }
    expect(told).to.have.length(1);
    expect(told[0]).to.deep.include({ cause: { exitCode: 3 }, why: 'exited with 3', calls: [{ id: hung.id, tag: 'request-1' }] });
    expect(thread.alive).to.equal(false);
    // A call to a dead worker is lost at once, not left to wait.
    const late = await thread.call({ type: 'add', a: 1, b: 1, delayMs: 0 }).reply.catch((err: unknown) => err);
    expect(late).to.be.instanceOf(WorkerLost);
  });

  it('replays the state, as it stands, to a worker started again after a death', async function () {
    const state = new StateLog<HolderIn>();
    state.put('a', { type: 'put', key: 'a', value: '1' });
    state.put('b', { type: 'put', key: 'b', value: '2' });
    const { restarting } = holders(state, { initialMs: 20, maxMs: 80, stableMs: 60_000 });
    cleanup.push(() => (restarting.close(), restarting.alive?.terminate()));
    const first = restarting.ensure()!;
    expect(await holding(first)).to.deep.equal(['a', 'b']);
    // Changes reach the worker alive, and are kept for the next one.
    state.drop('a', { type: 'drop', key: 'a' });
    state.put('c', { type: 'put', key: 'c', value: '3' });
    expect(await holding(first)).to.deep.equal(['b', 'c']);
    await first.terminate();
    const second = await eventually(async () => {
      const worker = restarting.alive;
      if (!worker || worker === first) throw new Error('not started again yet');
      return worker;
    });
    expect(await holding(second)).to.deep.equal(['b', 'c']);
  });

  it('starts a worker that keeps dying again at once, then after waits that double up to their cap', async function () {
    const state = new StateLog<HolderIn>();
    state.put('x', { type: 'put', key: 'x', value: 'poison' });
    const { restarting, deaths, waits } = holders(state, { initialMs: 20, maxMs: 80, stableMs: 60_000 });
    cleanup.push(() => (restarting.close(), restarting.alive?.terminate()));
    restarting.ensure();
    await eventually(async () => expect(waits.length).to.be.at.least(6), { what: 'six deaths in a row' });
    restarting.close();
    expect(waits.slice(0, 6)).to.deep.equal([0, 20, 40, 80, 80, 80]);
    // Each death blames what the worker said it was taking in.
    expect(deaths.slice(0, 6).map((d) => d.suspect)).to.deep.equal(['x', 'x', 'x', 'x', 'x', 'x']);
  });

  it('quarantines the input that keeps killing its worker, which then serves the others', async function () {
    const state = new StateLog<HolderIn>();
    state.put('good', { type: 'put', key: 'good', value: 'fine' });
    state.put('bad', { type: 'put', key: 'bad', value: 'poison' });
    const quarantine = new Quarantine();
    const { restarting, deaths } = holders(state, { initialMs: 5, maxMs: 40, stableMs: 60_000 }, (death) => {
      // The kind's rule: what was in the worker when it died counts a death; at the last, it is sent no more.
      if (death.suspect && quarantine.died(death.suspect, death.why)) state.drop(death.suspect, { type: 'drop', key: death.suspect });
    });
    cleanup.push(() => (restarting.close(), restarting.alive?.terminate()));
    restarting.ensure();
    const survivor = await eventually(async () => {
      const worker = restarting.alive;
      if (!worker) throw new Error('no worker alive');
      expect(await holding(worker)).to.deep.equal(['good']);
      return worker;
    });
    expect(quarantine.why('bad')).to.equal(`it stopped its worker ${QUARANTINE_AFTER} times (last: exited with 5)`);
    expect(deaths).to.have.length(QUARANTINE_AFTER);
    expect(survivor.alive).to.equal(true);
  });
});
