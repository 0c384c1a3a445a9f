/**
 * The order the operator's parts start and stop in (src/manager/lifecycle.ts), with stand-in
 * parts that record what was done to them. Starts no operator and touches no API server (the e2e
 * tests start the real composition, test/support/operator.ts).
 */
import { expect } from 'chai';
import { Lifecycle, type Runnable } from '../../../src/manager/lifecycle.ts';
import { eventually } from '../../support/wait.ts';

describe('manager/lifecycle', function () {
  function setup() {
    const done: string[] = [];
    let markSynced!: () => void;
    const synced = new Promise<void>((resolve) => (markSynced = resolve));
    const part = (name: string, extra: Partial<Runnable> = {}): Runnable => ({
      name,
      start: () => void done.push(`start ${name}`),
      leading: (leading) => void done.push(`${name} ${leading ? 'leads' : 'follows'}`),
      stop: () => void done.push(`stop ${name}`),
      ...extra,
    });
    let tell!: (leading: boolean) => void;
    let leader = false;
    const lifecycle = new Lifecycle(
      {
        caches: [part('state'), part('owned', { synced })],
        everyReplica: [part('endpoint'), part('following')],
        leaderOnly: [part('queue'), part('audit')],
      },
      (leading) => {
        tell = leading;
        return {
          start: () => void done.push('start elector'),
          stop: async () => void done.push('stop elector'),
          isLeader: () => leader,
        };
      },
    );
    const lead = (leading: boolean) => ((leader = leading), tell(leading));
    return { lifecycle, done, markSynced, lead };
  }

  it('starts the caches, then what every replica runs, and the elector only once the caches have listed (a leader with empty caches would take every suite for deleted)', async function () {
    const { lifecycle, done, markSynced } = setup();
    await lifecycle.start();
    expect(done).to.deep.equal(['start state', 'start owned', 'start endpoint', 'start following']);
    markSynced();
    await eventually(async () => expect(done).to.include('start elector'));
    expect(done.slice(4)).to.deep.equal(['start elector']);
  });

  it('turns the writers on and off with leadership, and the runnables of every replica that follow it', async function () {
    const { lifecycle, done, lead } = setup();
    await lifecycle.start();
    done.length = 0;
    lead(true);
    lead(false);
    expect(done).to.deep.equal(['queue leads', 'audit leads', 'endpoint leads', 'following leads', 'queue follows', 'audit follows', 'endpoint follows', 'following follows']);
  });

  it('stops the writers first, then hands leadership over, then the servers (still answering until then), the caches last', async function () {
    const { lifecycle, done, markSynced } = setup();
    await lifecycle.start();
    markSynced();
    await eventually(async () => expect(done).to.include('start elector'));
    done.length = 0;
    await lifecycle.stop();
    expect(done).to.deep.equal(['stop audit', 'stop queue', 'stop elector', 'stop following', 'stop endpoint', 'stop owned', 'stop state']);
  });

  it('hands over without stopping the servers (a draining replica still answers), and stops each writer once', async function () {
    const { lifecycle, done, markSynced } = setup();
    await lifecycle.start();
    markSynced();
    await eventually(async () => expect(done).to.include('start elector'));
    done.length = 0;
    await lifecycle.handOver();
    expect(done).to.deep.equal(['stop audit', 'stop queue', 'stop elector']);
    await lifecycle.stop();
    expect(done).to.deep.equal(['stop audit', 'stop queue', 'stop elector', 'stop following', 'stop endpoint', 'stop owned', 'stop state']);
  });

  it('never starts the elector of a replica stopped before its caches listed (it would write after its stop)', async function () {
    const { lifecycle, done, markSynced } = setup();
    await lifecycle.start();
    await lifecycle.stop();
    markSynced();
    // The sync's continuation runs after this one.
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).to.not.include('start elector');
  });
});
