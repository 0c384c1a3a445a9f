/**
 * The native process's reconciler (--role=native): writes the VAPs and bindings of the webhooks the
 * serving leader enforces natively (status.webhooks[].enforcement, about the current generation only),
 * each compiled from the suite's spec, never its status, and only for webhooks that asked and can be
 * native (api/enforcement.ts), so a status writer chooses no more than that. A policy goes once its
 * webhook was registered HANDOVER_MS (controller/native.ts), at once when the status lists no such
 * webhook; a deleted suite's by owner references. Writes no suite status.
 */
import type { AdmissionSuite } from '../api/types.ts';
import { configurationName, webhookFullName } from '../api/names.ts';
import { plannedEnforcement } from '../api/enforcement.ts';
import { applyOwnedExactly, deleteIfExists, describeError, ForeignObjectError, statusCode, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { WatchedCache } from '../apiserver/watch.ts';
import type { OperatorConfig } from '../config.ts';
import type { Logger } from '../log.ts';
import { nativeObjects } from '../desired/native.ts';
import { CONFIGURATION_KINDS } from '../desired/objects.ts';
import type { EventRecorder } from './events.ts';
import { HANDOVER_MS } from './native.ts';
import type { ReconcileResult } from './queue.ts';

export interface NativeWriterDeps {
  kube: Kube;
  config: Pick<OperatorConfig, 'namespace'>;
  suites: WatchedCache<AdmissionSuite>;
  /** The native policies and bindings, and the webhook configurations, our caches hold. */
  cached: CacheLookup;
  /** The native policies and bindings our caches hold for a suite, by its label. */
  nativeOwned(suite: string): KubeObject[];
  events: EventRecorder;
  log: Logger;
  now(): number;
}

export class NativeWriter {
  private readonly deps: NativeWriterDeps;
  /** `${suite uid}/${webhook}` -> when its webhook was first seen registered, after the status said Webhook. */
  private readonly registeredSince = new Map<string, number>();

  constructor(deps: NativeWriterDeps) {
    this.deps = deps;
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const suite = this.deps.suites.get(name);
    if (!suite) {
      for (const key of this.registeredSince.keys()) if (key.startsWith(`${name}/`)) this.registeredSince.delete(key);
      return;
    }
    const status = suite.status;
    // The leader has not judged this generation yet: its status write wakes this suite again.
    if (!status || status.observedGeneration !== (suite.metadata.generation ?? 0)) return;
    const enforcement = new Map((status.webhooks ?? []).map((w) => [w.name, w.enforcement]));
    const wanted = new Set<string>();
    for (const webhook of suite.spec.webhooks) {
      const full = webhookFullName(suite.metadata.name, webhook.name);
      if (enforcement.get(full) !== 'Native' || plannedEnforcement(suite, webhook, true).enforcement !== 'Native') continue;
      wanted.add(full);
      try {
        for (const object of nativeObjects(suite, webhook, this.deps.config)) await applyOwnedExactly(this.deps.kube, object, this.deps.cached);
      } catch (err) {
        // Someone else's under that name: never taken over; the serving operator reports the Conflict.
        if (err instanceof ForeignObjectError) {
          this.deps.log.info('a native policy name is held by someone else', { suite: name, webhook: webhook.name, error: err.message });
          continue;
        }
        const code = statusCode(err);
        if (code !== 422 && code !== 400) throw err;
        // The serving operator's dry run took it: the API server changed its mind (an upgrade, say). Its webhook stays registered.
        const message = `the API server refused the ValidatingAdmissionPolicy of webhook ${webhook.name}: ${describeError(err)}`;
        this.deps.log.warn('native policy refused', { suite: name, webhook: webhook.name, error: describeError(err) });
        await this.deps.events.record(suite, 'Warning', 'NativePolicyRefused', message);
      }
    }
    let requeueAfterMs: number | undefined;
    for (const object of this.deps.nativeOwned(suite.metadata.name)) {
      const objectName = object.metadata?.name ?? '';
      if (wanted.has(objectName)) continue;
      const webhook = suite.spec.webhooks.find((w) => webhookFullName(suite.metadata.name, w.name) === objectName);
      if (webhook && enforcement.get(objectName) === 'Webhook') {
        // Back to the webhook: the policy stays until the webhook has been registered a while.
        const key = `${name}/${suite.metadata.uid}/${webhook.name}`;
        if (!this.isRegistered(suite.metadata.name, webhook.type, objectName)) {
          this.registeredSince.delete(key);
          requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, HANDOVER_MS);
          continue;
        }
        const since = this.registeredSince.get(key) ?? this.deps.now();
        this.registeredSince.set(key, since);
        const held = this.deps.now() - since;
        if (held < HANDOVER_MS) {
          requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, HANDOVER_MS - held);
          continue;
        }
      }
      await deleteIfExists(this.deps.kube, { apiVersion: object.apiVersion!, kind: object.kind!, metadata: { name: objectName } });
    }
    return requeueAfterMs !== undefined ? { requeueAfterMs } : undefined;
  }

  /** Whether the suite's configuration in our cache registers this webhook now. */
  private isRegistered(suite: string, type: keyof typeof CONFIGURATION_KINDS, full: string): boolean {
    const configuration = this.deps.cached({ apiVersion: 'admissionregistration.k8s.io/v1', kind: CONFIGURATION_KINDS[type], metadata: { name: configurationName(suite) } }) as { webhooks?: { name?: string }[] } | undefined;
    return (configuration?.webhooks ?? []).some((w) => w.name === full);
  }
}
