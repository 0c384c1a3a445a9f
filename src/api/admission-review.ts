/**
 * The AdmissionReview wire types (admission.k8s.io v1 and v1beta1 share this shape) and the
 * Decision a handler returns. A handler is a pure function of an AdmissionRequest to a Decision;
 * turning a Decision into a response (uid, patch encoding) is the admission server's job.
 */
import type { JsonPatchOperation, Reason } from './types.ts';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}
export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: Record<string, unknown> | null;
  oldObject?: Record<string, unknown> | null;
  dryRun?: boolean;
  options?: Record<string, unknown> | null;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; reason?: string; message?: string };
  patch?: string;
  patchType?: 'JSONPatch';
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface Decision {
  allowed: boolean;
  code?: number;
  reason?: string;
  message?: string;
  patch?: JsonPatchOperation[];
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export const REASON_CODES: Record<Reason, number> = {
  Unauthorized: 401,
  Forbidden: 403,
  Invalid: 422,
  RequestEntityTooLarge: 413,
};

export const allowed = (): Decision => ({ allowed: true });

export const denied = (message: string, reason: Reason = 'Forbidden'): Decision => ({
  allowed: false,
  code: REASON_CODES[reason],
  reason,
  message,
});

export const patched = (patch: JsonPatchOperation[]): Decision => (patch.length ? { allowed: true, patch } : { allowed: true });

/**
 * A handler or expression that failed, answered according to the webhook's failurePolicy.
 * Declarative rules fail as ValidatingAdmissionPolicy does (Invalid, 422); handlers as Forbidden.
 */
export const errored = (message: string, failurePolicy: 'Fail' | 'Ignore', reason: Reason = 'Forbidden'): Decision => markFailed(failurePolicy === 'Ignore' ? { allowed: true } : denied(message, reason));

/**
 * Decisions that are an error answered by failurePolicy rather than the rules' verdict (for the
 * metrics and logs). Kept beside the decision, not in it, so a Decision's fields stay what is
 * sent to the API server.
 */
const FAILED = new WeakMap<Decision, string | undefined>();

/**
 * `detail`: why, for the operator's log only, where the message sent is a fixed one (a handler's
 * backend that failed: what it found at the URL is not for the requester).
 */
export function markFailed(decision: Decision, detail?: string): Decision {
  FAILED.set(decision, detail);
  return decision;
}

export const followedFailurePolicy = (decision: Decision): boolean => FAILED.has(decision);

/** The detail a failed decision was marked with, for the log line of its answer. */
export const failureDetail = (decision: Decision): string | undefined => FAILED.get(decision);

/** What a decision was, for metrics and logs: an error answered by failurePolicy (either way), a denial, a patch, warnings, a plain allow. */
export const OUTCOMES = ['allowed', 'denied', 'patched', 'warned', 'error'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export function outcomeOf(decision: Decision): Outcome {
  if (followedFailurePolicy(decision)) return 'error';
  if (!decision.allowed) return 'denied';
  if (decision.patch?.length) return 'patched';
  if (decision.warnings?.length) return 'warned';
  return 'allowed';
}
