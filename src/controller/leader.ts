/**
 * Leader election on a coordination.k8s.io Lease, with client-go's rules: a lease is taken
 * over only when its record has not changed for leaseDuration as observed by this replica's own
 * clock (no trust in other clocks); the leader renews every retryPeriod and steps down at once
 * when it could not renew within renewDeadline. Only the leader writes; every replica serves.
 */
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound, type Kube } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';
import { errorMessage } from '../error-message.ts';

export interface LeaderElectionSettings {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** Each wait is retryPeriod plus up to a fifth more, so replicas do not retry in step. */
const JITTER = 0.2;

export class LeaderElector {
  private readonly api: k8s.CoordinationV1Api;
  private readonly settings: LeaderElectionSettings;
  private readonly log: Logger;
  private readonly onChange: (leading: boolean) => void;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The attempt under way, which stop() lets finish before it releases the lease. */
  private attempt: Promise<void> | undefined;
  private lastRenew = 0;
  /** The record we last saw, and when we saw it change, by our own clock. */
  private observed: { record: string; at: number } | undefined;

  constructor(kube: Kube, settings: LeaderElectionSettings, log: Logger, onChange: (leading: boolean) => void) {
    this.api = kube.config.makeApiClient(k8s.CoordinationV1Api);
    this.settings = settings;
    this.log = log;
    this.onChange = onChange;
  }

  isLeader(): boolean {
    return this.leading && Date.now() - this.lastRenew < this.settings.renewDeadlineMs;
  }

  start(): void {
    void this.tick();
  }

  /**
   * Stops campaigning; a leader gives the lease up so a successor need not wait it out. A renewal
   * in flight is let finish first: released under it, the lease would be written back to us (or
   * the release refused as a conflict) and the successor would wait out the lease.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.attempt;
    if (!this.leading) return;
    this.setLeading(false);
    try {
      const lease = await this.api.readNamespacedLease({ name: this.settings.name, namespace: this.settings.namespace });
      if (lease.spec?.holderIdentity !== this.settings.identity) return;
      lease.spec = { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1 };
      await this.api.replaceNamespacedLease({ name: this.settings.name, namespace: this.settings.namespace, body: lease });
    } catch (err) {
      this.log.debug('could not release the lease', { error: errorMessage(err) });
    }
  }

  private tick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.attempt = this.attemptOnce().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  private async attemptOnce(): Promise<void> {
    try {
      const held = await this.tryAcquireOrRenew();
      if (held) this.lastRenew = Date.now();
    } catch (err) {
      this.log.debug('lease attempt failed', { error: errorMessage(err) });
    }
    if (this.leading && Date.now() - this.lastRenew >= this.settings.renewDeadlineMs) {
      this.log.warn('lost the lease: could not renew within the deadline');
      this.setLeading(false);
    }
    if (!this.stopped) {
      const wait = this.settings.retryPeriodMs * (1 + Math.random() * JITTER);
      this.timer = setTimeout(() => void this.tick(), wait);
      this.timer.unref();
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { name, namespace, identity, leaseDurationMs } = this.settings;
    const now = new Date();
    const microNow = now.toISOString().replace('Z', '000Z') as unknown as Date;
    let lease: k8s.V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const body: k8s.V1Lease = {
        metadata: { name, namespace },
        spec: { holderIdentity: identity, leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000), acquireTime: microNow, renewTime: microNow, leaseTransitions: 0 },
      };
      try {
        await this.api.createNamespacedLease({ namespace, body });
      } catch (createErr) {
        if (isConflict(createErr)) return false;
        throw createErr;
      }
      this.setLeading(true);
      return true;
    }

    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity;
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    const expired = !holder || this.observed.at + durationMs <= Date.now();
    if (holder !== identity && !expired) {
      if (this.leading) this.setLeading(false);
      return false;
    }
    // Stopped while reading: a stopping replica neither takes the lease nor renews what it is about to release.
    if (this.stopped) return false;
    const takingOver = holder !== identity;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: microNow,
      ...(takingOver ? { acquireTime: microNow, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
    };
    try {
      await this.api.replaceNamespacedLease({ name, namespace, body: lease });
    } catch (err) {
      // Someone else wrote the lease first (409): they hold it; we look again next period.
      if (isConflict(err)) return false;
      throw err;
    }
    if (takingOver) this.log.info('acquired the lease', { previousHolder: holder ?? '' });
    this.setLeading(true);
    return true;
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.onChange(leading);
  }
}
