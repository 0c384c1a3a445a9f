/** Kubernetes Events on a suite, so `kubectl describe asuite` shows what the operator did and why it retries. */
import { API_VERSION, KIND, type AdmissionSuite } from '../api/types.ts';
import { describeError, write, type Kube } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';

/** Events of cluster-scoped objects live in the default namespace. */
const EVENT_NAMESPACE = 'default';

export class EventRecorder {
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly instance: string;

  constructor(kube: Kube, log: Logger, instance: string) {
    this.kube = kube;
    this.log = log;
    this.instance = instance;
  }

  async record(suite: Pick<AdmissionSuite, 'metadata'>, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    try {
      await write(this.kube, () => this.kube.objects.create({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        // client-go's naming: <object>.<unix nanos in hex>.
        metadata: { name: `${suite.metadata.name}.${(BigInt(now.getTime()) * 1_000_000n + process.hrtime.bigint() % 1_000_000n).toString(16)}`, namespace: EVENT_NAMESPACE },
        eventTime: now.toISOString().replace('Z', '000Z'),
        reportingController: 'admission.portcullis.dev/operator',
        reportingInstance: this.instance,
        action: 'Reconcile',
        type,
        reason,
        note: message.slice(0, 1024),
        regarding: { apiVersion: API_VERSION, kind: KIND, name: suite.metadata.name, uid: suite.metadata.uid },
      } as never));
    } catch (err) {
      // An Event is a courtesy; failing to write one must not fail the reconcile.
      this.log.warn('could not record an event', { reason, error: describeError(err) });
    }
  }
}
