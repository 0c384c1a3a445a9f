/**
 * The hand-over between a suite webhook and its native policy (src/native), for the suite
 * reconciler: which webhooks stay registered while their native policy comes into force, which
 * native policies stay while their webhook comes into force, and the applying and removing of the
 * native objects. The API server takes a moment to enforce what was just written (a new
 * ValidatingAdmissionPolicy measured 350-470 ms after its apply returned, a webhook configuration
 * less), so each form is kept until the other has been in place for HANDOVER_MS: at no moment does
 * neither enforce. Level-based: what is in place is read from the caches; only when each form was
 * first seen in place is remembered, and a new leader, remembering nothing, waits the full period
 * again (both forms for a few seconds more, never neither). Decides no enforcement itself
 * (native/compile.ts does) and registers no webhook (reconciler.ts does).
 */
import type { AdmissionSuite, WebhookSpec } from '../api/types.ts';
import { configurationName, webhookFullName } from '../api/names.ts';
import { applyOwnedExactly, deleteIfExists, describeError, statusCode, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import { plannedEnforcement, requestedEnforcement, type EnforcementPlan } from '../api/enforcement.ts';
import { nativeName, nativeObjects } from '../native/compile.ts';
import type { OperatorConfig } from '../config.ts';
import { CONFIGURATION_KINDS } from './desired.ts';

/** How long a new form must have been in place before the old one goes. */
export const HANDOVER_MS = 5_000;

export interface NativeDeps {
  kube: Kube;
  config: OperatorConfig;
  cached: CacheLookup;
  /** The native objects (policies and bindings) our caches hold for a suite, by its label. */
  nativeOwned(suite: string): KubeObject[];
  now(): number;
}

/** A webhook's plan once the API server has had its say, and whether its native policy holds yet. */
export interface WebhookPlan extends EnforcementPlan {
  webhook: WebhookSpec;
  /** The API server refused the native policy (its message); the webhook serves meanwhile. */
  refused?: string;
  /** Registered as a webhook in this reconcile (its own enforcement, or until its native policy holds). */
  register: boolean;
}

export class NativeHandover {
  private readonly deps: NativeDeps;
  /** `${suite uid}/${webhook}/${form}` -> when that form was first seen in place. */
  private readonly since = new Map<string, number>();

  constructor(deps: NativeDeps) {
    this.deps = deps;
  }

  /**
   * Applies the native policies of the webhooks planned Native, and says which webhooks must be
   * registered: those enforced by webhook, and a native one's until its policy has held for
   * HANDOVER_MS (only when it is registered now: a webhook never registered needs no hand-over).
   * A policy the API server refuses (an expression it does not take, say) leaves its webhook
   * registered and is reported.
   */
  async applyNative(suite: AdmissionSuite): Promise<{ plans: WebhookPlan[]; requeueAfterMs?: number }> {
    const plans: WebhookPlan[] = [];
    let requeueAfterMs: number | undefined;
    for (const webhook of suite.spec.webhooks) {
      let plan: EnforcementPlan = plannedEnforcement(suite, webhook, this.deps.config.nativeEnforcement);
      let refused: string | undefined;
      if (plan.enforcement === 'Native') {
        try {
          for (const object of nativeObjects(suite, webhook, this.deps.config)) await applyOwnedExactly(this.deps.kube, object, this.deps.cached);
        } catch (err) {
          const code = statusCode(err);
          if (code !== 422 && code !== 400) throw err;
          refused = describeError(err).replace(/^\d+: /, '');
          const how = requestedEnforcement(suite, webhook) === 'Auto' ? 'served by the webhook' : 'served by the webhook until it is fixed';
          plan = { enforcement: 'Webhook', reason: `the API server refused its ValidatingAdmissionPolicy (${how}): ${refused}` };
        }
      }
      const key = this.key(suite, webhook.name, 'native');
      let register = plan.enforcement === 'Webhook';
      if (plan.enforcement === 'Native') {
        const held = this.held(key);
        if (held < HANDOVER_MS && this.isRegistered(suite, webhook)) {
          register = true;
          requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, HANDOVER_MS - held);
        }
      } else this.since.delete(key);
      plans.push({ ...plan, webhook, register, ...(refused ? { refused } : {}) });
    }
    return { plans, ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}) };
  }

  /**
   * Once the configurations are applied: removes the native objects no webhook is planned Native
   * for, each only after its webhook has been registered for HANDOVER_MS (a webhook gone from the
   * spec has none to wait for). Returns when to look again, if something is still waiting.
   */
  async removeStale(suite: AdmissionSuite, plans: WebhookPlan[]): Promise<number | undefined> {
    const nativeNow = new Set(plans.filter((p) => p.enforcement === 'Native').map((p) => nativeName(suite.metadata.name, p.webhook.name)));
    const byName = new Map(plans.map((p) => [nativeName(suite.metadata.name, p.webhook.name), p]));
    for (const plan of plans) {
      const key = this.key(suite, plan.webhook.name, 'webhook');
      if (plan.register) this.held(key);
      else this.since.delete(key);
    }
    let requeueAfterMs: number | undefined;
    for (const object of this.deps.nativeOwned(suite.metadata.name)) {
      const name = object.metadata?.name ?? '';
      if (nativeNow.has(name)) continue;
      const plan = byName.get(name);
      if (plan) {
        const held = this.held(this.key(suite, plan.webhook.name, 'webhook'));
        if (held < HANDOVER_MS) {
          requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, HANDOVER_MS - held);
          continue;
        }
      }
      await deleteIfExists(this.deps.kube, { apiVersion: object.apiVersion!, kind: object.kind!, metadata: { name } });
    }
    return requeueAfterMs;
  }

  /** A deleted suite: its objects go by garbage collection; what was remembered of it goes now. */
  forget(uid: string | undefined): void {
    if (!uid) return;
    for (const key of this.since.keys()) if (key.startsWith(`${uid}/`)) this.since.delete(key);
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
