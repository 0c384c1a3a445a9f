/** The work queue: bounded concurrency, one run per key at a time, exclusive keys alone, per-key backoff. */
import { expect } from 'chai';
import { WorkQueue, type QueueHooks, type ReconcileResult } from '../../../src/controller/queue.ts';

const quiet: QueueHooks = { onError: () => undefined, onRecovered: () => undefined };
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

/** A reconcile that records what runs at once and finishes when told. */
function recorder() {
  const running = new Set<string>();
  const overlaps: string[][] = [];
  const runs: string[] = [];
  const gates = new Map<string, () => void>();
  let peak = 0;
  const reconcile = async (key: string): Promise<ReconcileResult> => {
    if (running.has(key)) throw new Error(`${key} ran twice at once`);
    running.add(key);
    runs.push(key);
    peak = Math.max(peak, running.size);
    overlaps.push([...running]);
    await new Promise<void>((resolve) => gates.set(key, resolve));
    running.delete(key);
  };
  const finish = async (key: string) => {
    for (let i = 0; i < 200 && !gates.has(key); i++) await tick(1);
    const gate = gates.get(key);
    if (!gate) throw new Error(`${key} never started`);
    gates.delete(key);
    gate();
    await tick(1);
  };
  return { reconcile, finish, running, overlaps, runs, peak: () => peak, started: () => [...gates.keys()] };
}

describe('controller work queue', () => {
  it('runs up to `concurrency` different keys at once, and no more', async () => {
    const r = recorder();
    const queue = new WorkQueue(r.reconcile, quiet, { concurrency: 3 });
    for (const key of ['a', 'b', 'c', 'd', 'e']) queue.add(key);
    await tick();
    expect(r.started().sort()).to.deep.equal(['a', 'b', 'c']);
    await r.finish('b');
    await tick();
    expect(r.started().sort()).to.deep.equal(['a', 'c', 'd']);
    for (const key of ['a', 'c', 'd', 'e']) await r.finish(key);
    expect(r.peak()).to.equal(3);
    expect(r.runs).to.have.length(5);
    queue.stop();
  });

  it('never runs one key twice at once: added while it runs, it runs once more afterwards', async () => {
    const r = recorder();
    const queue = new WorkQueue(r.reconcile, quiet, { concurrency: 4 });
    queue.add('a');
    await tick();
    queue.add('a');
    queue.add('a');
    await tick();
    expect(r.started()).to.deep.equal(['a']);
    await r.finish('a');
    await tick();
    expect(r.started()).to.deep.equal(['a']);
    await r.finish('a');
    await tick();
    expect(r.runs).to.deep.equal(['a', 'a']);
    queue.stop();
  });

  it('runs an exclusive key alone: it waits for the running keys, and nothing queued starts before it ends', async () => {
    const r = recorder();
    const queue = new WorkQueue(r.reconcile, quiet, { concurrency: 4, exclusive: (key) => key === '#ca' });
    queue.add('a');
    queue.add('b');
    await tick();
    queue.add('#ca');
    queue.add('c');
    await tick();
    expect(r.started().sort()).to.deep.equal(['a', 'b']);
    await r.finish('a');
    await tick();
    expect(r.started(), 'c must not start while the exclusive key waits').to.deep.equal(['b']);
    await r.finish('b');
    await tick();
    expect(r.started()).to.deep.equal(['#ca']);
    await r.finish('#ca');
    await tick();
    expect(r.started()).to.deep.equal(['c']);
    await r.finish('c');
    for (const overlap of r.overlaps) if (overlap.includes('#ca')) expect(overlap).to.deep.equal(['#ca']);
    queue.stop();
  });

  it('takes a waiting exclusive key before the keys queued ahead of it', async () => {
    const r = recorder();
    const queue = new WorkQueue(r.reconcile, quiet, { concurrency: 2, exclusive: (key) => key === '#ca' });
    queue.setActive(false);
    for (const key of ['a', 'b', 'c', '#ca']) queue.add(key);
    queue.setActive(true);
    await tick();
    expect(r.started()).to.deep.equal(['#ca']);
    await r.finish('#ca');
    await tick();
    expect(r.started().sort()).to.deep.equal(['a', 'b']);
    await r.finish('a');
    await r.finish('b');
    await r.finish('c');
    queue.stop();
  });

  it('backs a failing key off on its own, while other keys go on', async () => {
    const attempts: Record<string, number> = {};
    const errors: { key: string; retryInMs: number }[] = [];
    const recovered: string[] = [];
    const queue = new WorkQueue(
      async (key) => {
        attempts[key] = (attempts[key] ?? 0) + 1;
        if (key === 'bad' && attempts[key]! < 3) throw new Error('not yet');
      },
      { onError: (key, _err, retryInMs) => errors.push({ key, retryInMs }), onRecovered: (key) => recovered.push(key) },
      { concurrency: 2 },
    );
    queue.add('bad');
    for (let i = 0; i < 5; i++) queue.add(`good-${i}`);
    await tick(50);
    expect(Object.keys(attempts).filter((k) => k.startsWith('good-'))).to.have.length(5);
    expect(errors.map((e) => e.key)).to.deep.equal(['bad']);
    expect(errors[0]!.retryInMs).to.be.greaterThan(0);
    await tick(3000);
    expect(attempts.bad).to.equal(3);
    expect(errors[1]!.retryInMs, 'the second failure waits longer').to.be.greaterThan(errors[0]!.retryInMs);
    expect(recovered).to.deep.equal(['bad']);
    queue.stop();
  });

  it('an inactive queue keeps its keys and starts none; a stopped one drops them', async () => {
    const r = recorder();
    const queue = new WorkQueue(r.reconcile, quiet, { concurrency: 2 });
    queue.setActive(false);
    queue.add('a');
    await tick();
    expect(r.started()).to.deep.equal([]);
    expect(queue.depth).to.equal(1);
    queue.setActive(true);
    await tick();
    expect(r.started()).to.deep.equal(['a']);
    queue.stop();
    queue.add('b');
    await r.finish('a');
    await tick();
    expect(r.runs).to.deep.equal(['a']);
  });

  it('refuses a concurrency below one', () => {
    expect(() => new WorkQueue(async () => undefined, quiet, { concurrency: 0 })).to.throw(/at least 1/);
  });
});
