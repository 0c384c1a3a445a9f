/**
 * Runs last (test/node/mocharc.json lists it after the others): stops the node cluster and shows
 * the machine is as it was before the run: namespaces, links, routes, iptables rules, mounts,
 * cgroups, the kubelet's sysctls and hard-coded files.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import { leftovers } from '../../cleanup.ts';
import { hostState } from '../../host-state.ts';
import { hostStateBefore, nodeCluster } from '../../hooks.ts';
import { layout, NETNS } from '../../layout.ts';

describe('node cluster: stopping it', function () {
  it('stops and leaves nothing of the run on the machine', async function () {
    const cluster = nodeCluster();
    // Waited for, not timed (the suite's timeout is the ceiling): its time depends on the machine.
    const started = Date.now();
    await cluster.stop();
    process.stderr.write(`      stopped in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

    const before = hostStateBefore();
    const after = hostState();
    expect(after.netns.join('\n')).to.not.contain(NETNS);
    expect(after.netns, 'ip netns').to.deep.equal(before.netns);
    expect(after.links, 'ip link').to.deep.equal(before.links);
    expect(after.routes, 'ip route').to.deep.equal(before.routes);
    expect(after.iptables, 'iptables-save').to.deep.equal(before.iptables);
    expect(after.mounts, 'mounts').to.deep.equal(before.mounts);
    expect(fs.readFileSync('/proc/mounts', 'utf8')).to.not.match(/kubelet|containerd/);
    expect(after.cgroups, 'cgroups').to.deep.equal(before.cgroups);
    expect(after.cgroups.filter((d) => d.endsWith('/kubepods'))).to.deep.equal([]);
    expect(after.sysctls, 'sysctls').to.deep.equal(before.sysctls);
    expect(after.files, 'files outside the scratch folder').to.deep.equal(before.files);
    expect(leftovers(layout(cluster.dir))).to.deep.equal([]);
  });
});
