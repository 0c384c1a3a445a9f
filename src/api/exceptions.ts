/**
 * api: the AdmissionException (issue 55) as users write it, a suite's `spec.exceptions` opt-in,
 * and the pure questions about them: is an exception well-formed and allowed where it stands (the
 * operator's validation webhook asks, and so does the request path, so that one written past a
 * stopped operator still lets nothing through), and does it cover a request at an instant. Owns
 * no store (registry/exceptions.ts) and no decision (registry/compile.ts applies it). Pure.
 */
import type { AdmissionRequest } from './admission-review.ts';
import { GROUP, type API_VERSION, type AdmissionSuite, type ObjectMeta } from './types.ts';
import type { FieldError } from './validate.ts';
import { labelSelectorProblems, selects, type LabelSelector } from '../kubernetes/selectors.ts';

export const EXCEPTION_KIND = 'AdmissionException';
export const EXCEPTION_PLURAL = 'admissionexceptions';

/** The operator's webhook that refuses AdmissionExceptions on apply (controller/self.ts registers it beside the suites' one). */
export const EXCEPTIONS = {
  validationWebhook: `admissionexceptions.validation.${GROUP}`,
  validationPath: '/validate/admissionexceptions',
  crd: `admissionexceptions.${GROUP}`,
} as const;


export interface ExceptionMatch {
  names?: string[];
  kinds?: string[];
  objectSelector?: LabelSelector;
  users?: string[];
  groups?: string[];
}

export interface ExceptionSpec {
  suite: string;
  webhook: string;
  /** Indexes in the webhook's validations; unset, all of them. */
  validations?: number[];
  match?: ExceptionMatch;
  reason: string;
  /** RFC 3339. */
  expires: string;
}

export interface AdmissionException {
  apiVersion: typeof API_VERSION;
  kind: typeof EXCEPTION_KIND;
  metadata: ObjectMeta & { namespace: string };
  spec: ExceptionSpec;
}

/** The annotation key the API server records as `<webhook name>/exception` in the audit log. */
export const EXCEPTION_AUDIT_KEY = 'exception';

/** `namespace/name`: how warnings, annotations and logs name an exception. */
export const exceptionRef = (exception: Pick<AdmissionException, 'metadata'>) => `${exception.metadata.namespace}/${exception.metadata.name}`;

/** The warning a request it let through carries (kubectl prints it). */
export const exceptionWarning = (exception: AdmissionException) => `admitted by exception ${exceptionRef(exception)} (expires ${exception.spec.expires}): ${exception.spec.reason}`;

/** RFC 3339 with a time zone, as the API server's date-time format; the instant in ms, or undefined. */
export function expiryOf(expires: unknown): number | undefined {
  if (typeof expires !== 'string' || !/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(expires)) return undefined;
  const ms = Date.parse(expires);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Why `suite` takes no exception from `namespace` (undefined when it does): it does not accept
 * exceptions, or its selector leaves the namespace out. `namespaceLabels` undefined: not known
 * here (the namespace is not in the cache), which a selector cannot select.
 */
export function suiteRefusal(suite: Pick<AdmissionSuite, 'spec' | 'metadata'> | undefined, namespaceLabels: Record<string, string> | undefined): string | undefined {
  if (!suite) return 'names no AdmissionSuite';
  const accepts = suite.spec.exceptions;
  if (accepts?.allowed !== true) return `AdmissionSuite ${suite.metadata.name} accepts no exceptions (its spec.exceptions.allowed is not true): it is protected`;
  if (accepts.namespaces && !selects(accepts.namespaces, namespaceLabels ?? {})) return `AdmissionSuite ${suite.metadata.name} accepts no exceptions from this namespace (spec.exceptions.namespaces)`;
  return undefined;
}

/**
 * What is wrong with `exception` where it stands: its own shape (reason, expires, the selector),
 * a protected namespace, a suite that does not take it, a webhook it does not have or that has no
 * CEL validations, an index past them. Every problem with its field path.
 */
export function validateException(
  exception: AdmissionException,
  context: { protectedNamespaces: readonly string[]; suite: AdmissionSuite | undefined; namespaceLabels: Record<string, string> | undefined },
): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field, message });
  const spec = exception?.spec;
  const namespace = exception?.metadata?.namespace ?? '';
  if (context.protectedNamespaces.includes(namespace)) {
    err('metadata.namespace', `${namespace} is protected: no exception applies there (the operator's namespace, kube-system and kube-node-lease are never sent to a webhook of ours)`);
  }
  if (!spec) return [...errors, { field: 'spec', message: 'is required' }];
  if (typeof spec.reason !== 'string' || spec.reason.trim() === '') err('spec.reason', 'Required value: say why the exception is granted');
  if (expiryOf(spec.expires) === undefined) err('spec.expires', `Required value: an RFC 3339 time such as 2026-12-31T00:00:00Z${spec.expires === undefined ? '' : `, not ${JSON.stringify(spec.expires)}`}`);
  if (spec.match?.objectSelector !== undefined) errors.push(...labelSelectorProblems(spec.match.objectSelector, 'spec.match.objectSelector'));
  const refusal = suiteRefusal(context.suite, context.namespaceLabels);
  if (refusal) {
    err('spec.suite', refusal);
    return errors;
  }
  const webhook = context.suite!.spec.webhooks.find((w) => w.name === spec.webhook);
  if (!webhook) err('spec.webhook', `AdmissionSuite ${spec.suite} has no webhook named ${JSON.stringify(spec.webhook)}`);
  else if (webhook.type !== 'Validating' || webhook.handler || !webhook.validations?.length) err('spec.webhook', `webhook ${spec.webhook} has no CEL validations: exceptions apply to a Validating webhook's validations only`);
  else {
    (spec.validations ?? []).forEach((index, i) => {
      if (!Number.isInteger(index) || index < 0 || index >= webhook.validations!.length) err(`spec.validations[${i}]`, `webhook ${spec.webhook} has ${webhook.validations!.length} validations (indexes 0 to ${webhook.validations!.length - 1})`);
    });
  }
  return errors;
}

/** Whether `match` lets `request` through (every field set must match; the namespace is the caller's). */
export function matchesRequest(match: ExceptionMatch | undefined, request: AdmissionRequest): boolean {
  if (!match) return true;
  if (match.names?.length && !match.names.includes(request.name ?? '')) return false;
  if (match.kinds?.length && !match.kinds.includes(request.kind?.kind ?? '')) return false;
  if (match.users?.length && !match.users.includes(request.userInfo?.username ?? '')) return false;
  if (match.groups?.length && !(request.userInfo?.groups ?? []).some((g) => match.groups!.includes(g))) return false;
  if (match.objectSelector) {
    const object = (request.operation === 'DELETE' ? request.oldObject : request.object) as { metadata?: { labels?: Record<string, string> } } | null | undefined;
    if (!selects(match.objectSelector, object?.metadata?.labels ?? {})) return false;
  }
  return true;
}
