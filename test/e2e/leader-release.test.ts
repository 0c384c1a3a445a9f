/**
 * Leader election's hand-over: a leader that stops gives the lease up, even when it stops while a
 * renewal is in flight (a release written under a renewal was refused as a conflict, or the
 * renewal wrote the lease back to the stopping replica, and the successor waited out the lease).
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { eventually } from '../support/wait.ts';
import { connect } from '../../src/apiserver/client.ts';
import { LeaderElector } from '../../src/controller/leader.ts';
import { logger } from '../../src/log.ts';

const LEASE = 'portcullis-release-test';

describe('leader election: stopping hands the lease over', function () {
  const leases = () => cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api);

  after(async function () {
    await leases()
      .deleteNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: LEASE })
      .catch(() => undefined);
  });

  it('leaves the lease unheld after every stop, renewals in flight or not', async function () {
    this.timeout(120_000);
    const kube = connect(cluster().kubeConfig);
    // Renewing every few milliseconds, a stop lands inside a renewal most of the time.
    const settings = { namespace: OPERATOR_NAMESPACE, name: LEASE, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 5 };
    for (let round = 0; round < 30; round++) {
      let leading = false;
      const elector = new LeaderElector(kube, { ...settings, identity: `replica-${round}` }, logger, (now) => (leading = now));
      elector.start();
      await eventually(async () => expect(leading, `replica-${round} to lead`).to.equal(true), { what: `replica-${round} to lead` });
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
      await elector.stop();
      expect(leading, 'a stopped replica does not lead').to.equal(false);
      const lease = await leases().readNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: LEASE });
      expect(lease.spec?.holderIdentity ?? '', `after stop ${round + 1}`).to.equal('');
    }
  });
});
