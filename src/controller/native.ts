/**
 * The hand-over between a suite webhook and its native policy, for the serving operator's suite
 * reconciler (the native process, src/manager/native.ts, writes the policies): which webhooks stay
 * registered while their native policy comes into force, read from the caches (only when each form
 * was first seen in place is remembered). Decides no enforcement (desired/native.ts) and registers
 * no webhook (reconciler.ts). Why HANDOVER_MS: docs/adr/0017-native-hand-over.md
 */
import type { AdmissionSuite, WebhookSpec } from '../api/types.ts';
import { configurationName, webhookFullName } from '../api/names.ts';
import { assertOurs, getObject, isOurs, type CacheLookup, type Kube } from '../apiserver/client.ts';
import { plannedEnforcement, requestedEnforcement, type EnforcementPlan } from '../api/enforcement.ts';
import { nativeObjects } from '../desired/native.ts';
import { DryRunUnavailable, nativeRefusal } from '../native/dry-run.ts';
import type { OperatorConfig } from '../config.ts';
import { CONFIGURATION_KINDS } from '../desired/objects.ts';

/** How long a new form must have been in place before the old one goes. */
export const HANDOVER_MS = 5_000;

export interface NativeDeps {
  kube: Kube;
  config: OperatorConfig;
  cached: CacheLookup;
  /** The API server's refusal of a webhook's native policy (a dry run: native/dry-run.ts), or undefined. */
  refusal?(suite: AdmissionSuite, webhook: WebhookSpec): Promise<string | undefined>;
  now(): number;
}

/** A webhook's plan once the API server has had its say, and whether its native policy holds yet. */
export interface WebhookPlan extends EnforcementPlan {
  webhook: WebhookSpec;
  /** The API server refused the native policy (its message); the webhook serves meanwhile. */
  refused?: string;
  /** Registered as a webhook in this reconcile (its own enforcement, or until its native policy holds). */
  register: boolean;
  /** Planned Native, and its policy and binding are not written yet (by the native process). */
  awaitingNative?: boolean;
}

export class NativeHandover {
  private readonly deps: NativeDeps;
  /** `${suite uid}/${webhook}/${form}` -> when that form was first seen in place. */
  private readonly since = new Map<string, number>();
  /** `${suite uid}/${generation}/${webhook}` -> the API server's refusal of its policy (undefined: taken). */
  private readonly refusals = new Map<string, string | undefined>();

  constructor(deps: NativeDeps) {
    this.deps = deps;
  }

  /**
   * Says which webhooks must be registered: those enforced by webhook, and a native one's until
   * its policy and binding have been in place for HANDOVER_MS (only when it is registered now: a
   * webhook never registered needs no hand-over). A policy the API server refuses (asked as a dry
   * run, once per generation) leaves its webhook served by webhook, and is reported.
   */
  async applyNative(suite: AdmissionSuite): Promise<{ plans: WebhookPlan[]; requeueAfterMs?: number }> {
    const plans: WebhookPlan[] = [];
    let requeueAfterMs: number | undefined;
    for (const webhook of suite.spec.webhooks) {
      let plan: EnforcementPlan = plannedEnforcement(suite, webhook, this.deps.config.nativeEnforcement);
      let refused: string | undefined;
      if (plan.enforcement === 'Native') {
        refused = await this.refusal(suite, webhook);
        if (refused !== undefined) {
          const how = requestedEnforcement(suite, webhook) === 'Auto' ? 'served by the webhook' : 'served by the webhook until it is fixed';
          plan = { enforcement: 'Webhook', reason: `the API server refused its ValidatingAdmissionPolicy (${how}): ${refused}` };
        }
      }
      const key = this.key(suite, webhook.name, 'native');
      let register = plan.enforcement === 'Webhook';
      let awaitingNative = false;
      if (plan.enforcement === 'Native') {
        if (!(await this.inPlace(suite, webhook))) {
          // Not written yet: its policy's watch event wakes the suite again.
          this.since.delete(key);
          awaitingNative = true;
          register = this.isRegistered(suite, webhook);
        } else {
          const held = this.held(key);
          if (held < HANDOVER_MS && this.isRegistered(suite, webhook)) {
            register = true;
            requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, HANDOVER_MS - held);
          }
        }
      } else this.since.delete(key);
      plans.push({ ...plan, webhook, register, ...(refused ? { refused } : {}), ...(awaitingNative ? { awaitingNative } : {}) });
    }
    return { plans, ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}) };
  }

  /** A deleted suite: its objects go by garbage collection; what was remembered of it goes now. */
  forget(uid: string | undefined): void {
    if (!uid) return;
    for (const key of this.since.keys()) if (key.startsWith(`${uid}/`)) this.since.delete(key);
    for (const key of this.refusals.keys()) if (key.startsWith(`${uid}/`)) this.refusals.delete(key);
  }

  /** How long the form under `key` has been in place, counting from now when first asked. */
  private held(key: string): number {
    const now = this.deps.now();
    const since = this.since.get(key);
    if (since === undefined) {
      this.since.set(key, now);
      return 0;
    }
    return now - since;
  }

  private key(suite: AdmissionSuite, webhook: string, form: 'native' | 'webhook'): string {
    return `${suite.metadata.uid}/${webhook}/${form}`;
  }

  /** The dry run's answer, asked once per suite generation and webhook. */
  private async refusal(suite: AdmissionSuite, webhook: WebhookSpec): Promise<string | undefined> {
    const key = `${suite.metadata.uid}/${suite.metadata.generation ?? 0}/${webhook.name}`;
    if (this.refusals.has(key)) return this.refusals.get(key);
    const ask = this.deps.refusal ?? ((s: AdmissionSuite, w: WebhookSpec) => nativeRefusal(this.deps.kube, this.deps.config, s, w));
    let refused: string | undefined;
    try {
      refused = await ask(suite, webhook);
    } catch (err) {
      // Not asked (the native process has not run yet): nothing is written before it runs either; asked again next time.
      if (err instanceof DryRunUnavailable) return undefined;
      throw err;
    }
    for (const old of this.refusals.keys()) if (old.startsWith(`${suite.metadata.uid}/`) && old.endsWith(`/${webhook.name}`)) this.refusals.delete(old);
    this.refusals.set(key, refused);
    return refused;
  }

  /**
   * Whether the webhook's native policy and binding are in our (read-only) caches, as this suite's.
   * A name someone else holds is never taken over (the native process leaves it): read once to
   * say whose it is, a Conflict (ForeignObjectError), as when the operator wrote them itself.
   */
  private async inPlace(suite: AdmissionSuite, webhook: WebhookSpec): Promise<boolean> {
    let all = true;
    for (const desired of nativeObjects(suite, webhook, this.deps.config)) {
      const known = this.deps.cached(desired);
      if (known && isOurs(known, desired)) continue;
      all = false;
      if (this.deps.cached.free?.(desired) === false) {
        const name = desired.metadata?.name ?? '';
        assertOurs(await getObject(this.deps.kube, { apiVersion: desired.apiVersion!, kind: desired.kind!, metadata: { name } }), desired);
      }
    }
    return all;
  }

  /** Whether the suite's configuration in our cache registers this webhook now. */
  private isRegistered(suite: AdmissionSuite, webhook: WebhookSpec): boolean {
    const configuration = this.deps.cached({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: CONFIGURATION_KINDS[webhook.type],
      metadata: { name: configurationName(suite.metadata.name) },
    }) as { webhooks?: { name?: string }[] } | undefined;
    const full = webhookFullName(suite.metadata.name, webhook.name);
    return (configuration?.webhooks ?? []).some((w) => w.name === full);
  }
}
