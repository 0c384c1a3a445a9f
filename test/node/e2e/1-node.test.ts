/** The node cluster's Node: Ready, and its kubelet the same Kubernetes version as the API server. */
import { expect } from 'chai';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { getJson, kc } from '../kubectl.ts';

describe('node cluster: the Node', function () {
  it('is Ready, with a podCIDR from the cluster range', async function () {
    const node = await getJson(['get', 'node', nodeCluster().nodeName]);
    const ready = node.status.conditions.find((c: { type: string }) => c.type === 'Ready');
    expect(ready.status, ready.message).to.equal('True');
    expect(node.spec.podCIDR).to.match(/^10\.215\.\d+\.0\/24$/);
    expect(node.status.addresses).to.deep.include({ type: 'InternalIP', address: '10.213.0.2' });
    // The not-ready taint the kubelet registers with goes once the node lifecycle controller sees Ready.
    await eventually(async () => expect((await getJson(['get', 'node', nodeCluster().nodeName])).spec.taints ?? []).to.deep.equal([]), {
      what: 'the Node to have no taints',
    });
  });

  it("runs a kubelet of the API server's version, on containerd", async function () {
    const version = JSON.parse(await kc(['version', '-o', 'json']));
    const node = await getJson(['get', 'node', nodeCluster().nodeName]);
    expect(version.serverVersion.gitVersion).to.match(/^v1\.\d+\.\d+/);
    expect(node.status.nodeInfo.kubeletVersion).to.equal(version.serverVersion.gitVersion);
    expect(node.status.nodeInfo.containerRuntimeVersion).to.match(/^containerd:\/\//);
  });

  it('has the images built here, and no other', async function () {
    const node = await getJson(['get', 'node', nodeCluster().nodeName]);
    const names: string[] = node.status.images.flatMap((i: { names: string[] }) => i.names);
    for (const image of Object.values(nodeCluster().images)) expect(names).to.include(image);
    expect(names.filter((n) => !n.startsWith('localhost/') && !n.startsWith('sha256:'))).to.deep.equal([]);
  });
});
