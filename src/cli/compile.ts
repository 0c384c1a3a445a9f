/**
 * `portcullis compile`, for GitOps users who commit native objects rather than the suite: the VAPs and
 * bindings of a suite's Native or Auto webhooks, and the MAPs of its Auto Mutating webhooks whose
 * mutations are MAP's own (the operator keeps those webhooks: api/enforcement.ts), by the
 * operator's compiler (desired/native.ts); what stays a webhook is said
 * with its reason. Printed without ownership (no owner reference or managed-by label): an operator never
 * takes such an object over (it reports a Conflict), so committing them and applying the suite is seen.
 */
import * as yaml from 'js-yaml';
import { DEFAULTS } from '../config.ts';
import { MANAGED_BY_LABELS } from '../api/names.ts';
import { mutatingPolicyObstacles, plannedEnforcement, requestedEnforcement } from '../api/enforcement.ts';
import type { AdmissionSuite } from '../api/types.ts';
import { mutatingPolicyObjects, nativeObjects } from '../desired/native.ts';
import type { KubeObject } from '../apiserver/client.ts';

export interface Compiled {
  objects: KubeObject[];
  /** `suite/webhook: why` for each webhook asked to be native (Native or Auto) that stays a webhook. */
  webhooks: string[];
}

/** The native objects of `suites` (already validated) as a cluster with native enforcement on would have them. */
export function compileSuites(suites: AdmissionSuite[], operatorNamespace: string): Compiled {
  const objects: KubeObject[] = [];
  const webhooks: string[] = [];
  for (const suite of suites) {
    for (const webhook of suite.spec.webhooks) {
      if (requestedEnforcement(suite, webhook) === 'Webhook') continue;
      if (webhook.type === 'Mutating') {
        // For a user who commits the policy instead of the suite: nothing of the operator's runs to order it after the teams' mutations
        const obstacles = mutatingPolicyObstacles(webhook);
        if (obstacles.length) webhooks.push(`${suite.metadata.name}/${webhook.name}: stays a webhook: ${obstacles.map((o) => `${o.field}: ${o.reason}`).join('; ')}`);
        else objects.push(...mutatingPolicyObjects(suite, webhook, { ...DEFAULTS, namespace: operatorNamespace }).map(unowned));
        continue;
      }
      const plan = plannedEnforcement(suite, webhook);
      if (plan.enforcement === 'Webhook') {
        webhooks.push(`${suite.metadata.name}/${webhook.name}: stays a webhook: ${plan.reason}`);
        continue;
      }
      objects.push(...nativeObjects(suite, webhook, { ...DEFAULTS, namespace: operatorNamespace }).map(unowned));
    }
  }
  return { objects, webhooks };
}

function unowned(object: KubeObject): KubeObject {
  const { ownerReferences: _owners, labels, ...metadata } = object.metadata as KubeObject['metadata'] & { ownerReferences?: unknown; labels?: Record<string, string> };
  const kept = Object.fromEntries(Object.entries(labels ?? {}).filter(([key]) => !(key in MANAGED_BY_LABELS)));
  return { ...object, metadata: { ...metadata, ...(Object.keys(kept).length ? { labels: kept } : {}) } } as KubeObject;
}

export function compiledText(compiled: Compiled, output: 'yaml' | 'json'): string {
  if (output === 'json') return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: compiled.objects }, null, 2)}\n`;
  return compiled.objects.map((o) => yaml.dump(o, { lineWidth: -1, noRefs: true })).join('---\n');
}
