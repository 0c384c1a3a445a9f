/**
 * test/node/hooks.ts: mocha root hooks of the cluster tests (`npm run test:cluster`, config
 * test/node/mocharc.json): one node cluster for the whole run, and the machine's state as it was
 * before it (hostState), for the teardown test to compare with. Not the local control plane's
 * hooks (test/support/hooks.ts), which these tests never load.
 * A machine that cannot run the cluster fails the run here, with what is missing; nothing skips.
 */
import { startNodeCluster, type NodeCluster } from './cluster.ts';
import { hostState, type HostState } from './host-state.ts';

let current: NodeCluster | undefined;
let before: HostState | undefined;

export function nodeCluster(): NodeCluster {
  if (!current) throw new Error('the node cluster is not running: test/node/hooks.ts starts it (mocha --config test/node/mocharc.json)');
  return current;
}

export function hostStateBefore(): HostState {
  if (!before) throw new Error('no host state was taken before the cluster started');
  return before;
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    // A cold machine builds the node's programs from Go modules first (many minutes on 2 cores).
    this.timeout(60 * 60_000);
    current = await startNodeCluster({
      log: (line) => process.stderr.write(`${line}\n`),
      // After a killed predecessor's leftovers are removed, before this run adds anything.
      afterCleanup: () => (before = hostState()),
    });
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    // The teardown test stops it and checks the machine; this only covers a run that did not reach it.
    await current?.stop();
  },
};
