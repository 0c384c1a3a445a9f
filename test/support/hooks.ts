/**
 * Mocha root hooks: one control plane for the whole run, started before the first test and
 * stopped after the last. A missing toolchain or a failed build fails the run with the reason.
 */
import { startCluster, stopCluster } from './cluster.ts';
import { stopReferenceCluster } from './reference.ts';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    // The first build of the control plane from Go modules takes many minutes on 2 cores.
    this.timeout(60 * 60_000);
    await startCluster();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await Promise.all([stopCluster(), stopReferenceCluster()]);
  },
};
