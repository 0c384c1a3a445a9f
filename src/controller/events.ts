/**
 * Kubernetes Events: on a suite, so `kubectl describe asuite` shows what the operator did and why
 * it retries; and on the operator's own admission endpoint (its suite-validation
 * ValidatingWebhookConfiguration, which every replica's endpoint serves), for what a replica sees
 * coming before it fails, such as connections nearing their limits. Writes Events only.
 */
import { API_VERSION, KIND, type AdmissionSuite } from '../api/types.ts';
import { SUITE_VALIDATION } from '../api/names.ts';
import { describeError, write, type Kube } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';

/** Events of cluster-scoped objects live in the default namespace. */
const EVENT_NAMESPACE = 'default';

/** At most one endpoint warning per key in this long: a condition that holds is said again, not once per connection. */
export const ENDPOINT_WARNING_EVERY_MS = 5 * 60_000;

export interface Regarding {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
}

export class EventRecorder {
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly instance: string;
  /** When each endpoint warning (by key) was last recorded. */
  private readonly endpointWarned = new Map<string, number>();

  constructor(kube: Kube, log: Logger, instance: string) {
    this.kube = kube;
    this.log = log;
    this.instance = instance;
  }

  /** An Event on the suite; the leader's (a reconcile's outcome). */
  async record(suite: Pick<AdmissionSuite, 'metadata'>, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.create({ apiVersion: API_VERSION, kind: KIND, name: suite.metadata.name, uid: suite.metadata.uid }, 'Reconcile', type, reason, message, true);
  }

  /**
   * A Warning on the operator's admission endpoint, from whichever replica sees it (each replica
   * serves its own connections; `reportingInstance` names it), at most once per
   * ENDPOINT_WARNING_EVERY_MS for each `key`.
   */
  async endpointWarning(key: string, reason: string, message: string, now = Date.now()): Promise<void> {
    const last = this.endpointWarned.get(key);
    if (last !== undefined && now - last < ENDPOINT_WARNING_EVERY_MS) return;
    this.endpointWarned.set(key, now);
    const regarding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', name: SUITE_VALIDATION.configuration };
    await this.create(regarding, 'Serve', 'Warning', reason, message, false);
  }

  /** A Warning on a cluster-scoped object of the install (the token guard's policy, say); the leader's. */
  async warnOn(regarding: Regarding, reason: string, message: string): Promise<void> {
    await this.create(regarding, 'Reconcile', 'Warning', reason, message, true);
  }

  /** `leaderOnly`: through the leader gate, as every write of the reconcilers. */
  private async create(regarding: Regarding, action: string, type: 'Normal' | 'Warning', reason: string, message: string, leaderOnly: boolean): Promise<void> {
    const now = new Date();
    const event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // client-go's naming: <object>.<unix nanos in hex>.
      metadata: { name: `${regarding.name}.${(BigInt(now.getTime()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n)).toString(16)}`, namespace: EVENT_NAMESPACE },
      eventTime: now.toISOString().replace('Z', '000Z'),
      reportingController: 'admission.portcullis.dev/operator',
      reportingInstance: this.instance,
      action,
      type,
      reason,
      note: message.slice(0, 1024),
      regarding,
    };
    try {
      if (leaderOnly) await write(this.kube, () => this.kube.objects.create(event as never));
      else {
        this.kube.writes.count += 1;
        await this.kube.objects.create(event as never);
      }
    } catch (err) {
      // An Event is a courtesy; failing to write one must not fail the reconcile, nor the serving.
      this.log.warn('could not record an event', { reason, error: describeError(err) });
    }
  }
}
