/**
 * api: where a suite's webhook is enforced (`enforcement`: Webhook, Native or Auto), and what
 * keeps a webhook from being enforced natively by the API server, each obstacle naming its field.
 * Pure data on the spec: validate.ts refuses a Native webhook with obstacles, desired/native.ts
 * compiles the others, and neither repeats these rules.
 */
import type { AdmissionSuite, Enforcement, WebhookSpec } from './types.ts';

/** Where a webhook is enforced, and (when it is not where it was asked to be, or not native) why. */
export interface EnforcementPlan {
  enforcement: 'Native' | 'Webhook';
  reason?: string;
}

/** What the suite asks of a webhook: its own field, else the suite's default, else Webhook. */
export function requestedEnforcement(suite: Pick<AdmissionSuite, 'spec'>, webhook: WebhookSpec): Enforcement {
  return webhook.enforcement ?? suite.spec.enforcement ?? 'Webhook';
}

/**
 * Why this webhook cannot be enforced by a native policy (empty when it can). Each reason names
 * the field that keeps it a webhook.
 */
export function nativeObstacles(webhook: WebhookSpec): { field: string; reason: string }[] {
  const obstacles: { field: string; reason: string }[] = [];
  if (webhook.handler) {
    obstacles.push({ field: 'handler', reason: `the built-in handler ${webhook.handler.name} runs in the operator; a native policy holds only CEL` });
  }
  if (webhook.type === 'Mutating') {
    // Not an approximation we take: a suite's mutations run after the teams' (issue 37's order), a MutatingAdmissionPolicy before every webhook.
    obstacles.push({
      field: 'type',
      reason: "a MutatingAdmissionPolicy runs before every mutating webhook, the teams' AdmissionPolicies included, where a suite's Mutating webhook runs after them: a team's mutation could undo it",
    });
  }
  (webhook.validations ?? []).forEach((validation, i) => {
    // The API server takes Forbidden, Invalid and RequestEntityTooLarge as a policy's reasons; a webhook may answer 401.
    if (validation?.reason === 'Unauthorized') obstacles.push({ field: `validations[${i}].reason`, reason: 'a ValidatingAdmissionPolicy cannot answer Unauthorized' });
  });
  if (webhook.type === 'Validating' && !webhook.handler && (webhook.validations ?? []).length === 0 && (webhook.auditAnnotations ?? []).length === 0) {
    // The API server refuses a policy with neither (the webhook then allows everything it matches).
    obstacles.push({ field: 'validations', reason: 'a ValidatingAdmissionPolicy needs at least one validation or auditAnnotation' });
  }
  return obstacles;
}

/**
 * Why this Mutating webhook cannot be written as a MutatingAdmissionPolicy by `portcullis compile`
 * (empty when it can; the operator itself never makes one, for nativeObstacles' reason). A MAP
 * holds only MAP's own mutations, on what it can mutate.
 */
export function mutatingPolicyObstacles(webhook: WebhookSpec): { field: string; reason: string }[] {
  const obstacles: { field: string; reason: string }[] = [];
  if (webhook.handler) obstacles.push({ field: 'handler', reason: `the built-in handler ${webhook.handler.name} runs in the operator; a native policy holds only CEL` });
  const mutations = webhook.mutations ?? [];
  if (!webhook.handler && mutations.length === 0) obstacles.push({ field: 'mutations', reason: 'a MutatingAdmissionPolicy needs at least one mutation' });
  mutations.forEach((m, i) => {
    // patch and patchExpression are Portcullis' own: applied by fast-json-patch as the webhook's one answer, not by MAP's semantics
    if (m.patchType === undefined) obstacles.push({ field: `mutations[${i}]`, reason: "patch and patchExpression are Portcullis' own forms; a MutatingAdmissionPolicy takes patchType JSONPatch or ApplyConfiguration" });
  });
  webhook.rules.forEach((rule, i) => {
    // The API server refuses DELETE in a MAP's rules (there is no object to mutate)
    if (rule.operations?.includes('DELETE')) obstacles.push({ field: `rules[${i}].operations`, reason: 'a MutatingAdmissionPolicy does not match DELETE' });
  });
  return obstacles;
}

/** Why a suite's AdmissionExceptions keep an Auto webhook served by the operator, and do not apply to a Native one. */
export const EXCEPTIONS_NOT_NATIVE = 'the suite accepts AdmissionExceptions, which apply where the operator answers the webhook; they are not compiled into a ValidatingAdmissionPolicy yet';

/** Why native enforcement is asked of an operator that does not enforce natively. */
export const NATIVE_ENFORCEMENT_OFF = "this operator does not enforce natively (it runs without --native-enforcement, the chart's nativeEnforcement.enabled, which needs the grants of deploy/optional/native-enforcement.yaml)";

/** On apply, where native enforcement is off: each webhook that asks for Native, refused with why (Auto is served by webhook). */
export function nativeEnforcementOff(suite: Pick<AdmissionSuite, 'spec'>): { field: string; message: string }[] {
  return (suite.spec?.webhooks ?? []).flatMap((webhook, i) =>
    requestedEnforcement(suite, webhook) === 'Native' ? [{ field: webhook.enforcement === 'Native' ? `spec.webhooks[${i}].enforcement` : 'spec.enforcement', message: `Invalid value: "Native": ${NATIVE_ENFORCEMENT_OFF}` }] : [],
  );
}

/**
 * Where a webhook will be enforced: as asked where it can be; Auto goes native where it can.
 * `nativeAllowed` false (the operator's --native-enforcement off): every webhook by webhook, saying why.
 */
export function plannedEnforcement(suite: Pick<AdmissionSuite, 'spec'>, webhook: WebhookSpec, nativeAllowed = true): EnforcementPlan {
  const asked = requestedEnforcement(suite, webhook);
  if (asked === 'Webhook') return { enforcement: 'Webhook' };
  if (!nativeAllowed) return { enforcement: 'Webhook', reason: NATIVE_ENFORCEMENT_OFF };
  const obstacles = nativeObstacles(webhook);
  const excepted = suite.spec.exceptions?.allowed === true;
  // Auto where exceptions may apply: served where they are applied, exactly, rather than natively where they would not be.
  if (obstacles.length === 0 && excepted && asked === 'Auto') return { enforcement: 'Webhook', reason: `spec.exceptions: ${EXCEPTIONS_NOT_NATIVE}` };
  if (obstacles.length === 0) return { enforcement: 'Native', ...(excepted ? { reason: `spec.exceptions: ${EXCEPTIONS_NOT_NATIVE}: none applies to this Native webhook, and one naming it is refused on apply` } : {}) };
  // A Native webhook with obstacles is refused on apply (api/validate.ts); here only Auto gets this far.
  return { enforcement: 'Webhook', reason: obstacles.map((o) => `${o.field}: ${o.reason}`).join('; ') };
}

/**
 * The webhooks of `suite` that ask for Native and are new or changed since `old` (the whole
 * webhook, as it would be compiled, and the suite's failurePolicy it may inherit), with their index:
 * what an apply must have the API server check again (native/dry-run.ts).
 */
export function changedNativeWebhooks(suite: Pick<AdmissionSuite, 'spec'>, old?: Pick<AdmissionSuite, 'spec'>): { index: number; webhook: WebhookSpec }[] {
  const form = (s: Pick<AdmissionSuite, 'spec'>, w: WebhookSpec) => JSON.stringify([{ ...w, enforcement: requestedEnforcement(s, w) }, s.spec.failurePolicy ?? null, s.spec.namespaceSelector ?? null]);
  const before = new Map((old?.spec?.webhooks ?? []).map((w) => [w.name, form(old!, w)]));
  return (suite.spec?.webhooks ?? []).flatMap((webhook, index) => (requestedEnforcement(suite, webhook) === 'Native' && before.get(webhook.name) !== form(suite, webhook) ? [{ index, webhook }] : []));
}
