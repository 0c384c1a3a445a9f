/** The node cluster's controllers and scheduler at work: a deleted pod is replaced; a drain evicts, uncordon brings back. */
import { expect } from 'chai';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, deployment, getJson, kc, namespace, testPod, waitAvailable } from '../kubectl.ts';

const NS = 'lifecycle';

interface Pod {
  metadata: { name: string; deletionTimestamp?: string };
  status: { phase: string; conditions?: { type: string; status: string; reason?: string }[] };
}

async function pods(): Promise<Pod[]> {
  return (await getJson(['get', 'pods', '-n', NS, '-l', 'app=drained'])).items as Pod[];
}
const isReady = (p: Pod) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function twoReady(): Promise<Pod[]> {
  return eventually(
    async () => {
      const live = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
      if (live.length !== 2 || !live.every(isReady)) throw new Error(`pods: ${live.map((p) => `${p.metadata.name} ${p.status.phase}`).join(', ')}`);
      return live;
    },
    { what: '2 Ready pods', timeoutMs: 60_000 },
  );
}

describe('node cluster: pod lifecycle', function () {
  let removeNamespace: () => Promise<void>;
  before(async function () {
    removeNamespace = await namespace(NS);
    await apply(deployment('drained', NS, 2, testPod()));
    await waitAvailable('drained', NS);
  });
  after(async function () {
    await kc(['uncordon', nodeCluster().nodeName]);
    await removeNamespace();
  });

  it('a deleted pod of the Deployment is replaced', async function () {
    const [victim, survivor] = await twoReady();
    await kc(['delete', 'pod', '-n', NS, victim!.metadata.name, '--wait=true', '--timeout=60s'], undefined, 70_000);
    const now = (await twoReady()).map((p) => p.metadata.name);
    expect(now).to.include(survivor!.metadata.name);
    expect(now).to.not.include(victim!.metadata.name);
  });

  it('kubectl drain evicts the pods, which go Pending; uncordon brings them back', async function () {
    const node = nodeCluster().nodeName;
    const before = (await twoReady()).map((p) => p.metadata.name);
    const drained = await kc(['drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--grace-period=1', '--timeout=90s'], undefined, 100_000);
    for (const name of before) expect(drained).to.contain(`pod/${name} evicted`);
    expect((await getJson(['get', 'node', node])).spec.unschedulable).to.equal(true);
    const pending = await eventually(
      async () => {
        const live = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
        const unschedulable = live.filter((p) => p.status.phase === 'Pending' && p.status.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable'));
        if (live.length !== 2 || unschedulable.length !== 2) throw new Error(`pods: ${JSON.stringify(live.map((p) => [p.metadata.name, p.status.phase]))}`);
        return live.map((p) => p.metadata.name);
      },
      { what: 'the replacements to be Pending and unschedulable', timeoutMs: 60_000 },
    );
    for (const name of pending) expect(before).to.not.include(name);

    await kc(['uncordon', node]);
    const back = (await twoReady()).map((p) => p.metadata.name).sort();
    expect(back).to.deep.equal([...pending].sort());
    await kc(['wait', '-n', NS, 'deployment/drained', '--for=condition=Available', '--timeout=60s'], undefined, 70_000);
  });
});
