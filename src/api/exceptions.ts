/**
 * api: the AdmissionException (issue 55) as users write it, a suite's `spec.exceptions` opt-in,
 * and the pure questions about them: is an exception well-formed and allowed where it stands (the
 * operator's validation webhook asks, and so does the request path, so that one written past a
 * stopped operator still lets nothing through), and does it cover a request at an instant. Owns
 * no store (registry/exceptions.ts) and no decision (registry/compile.ts applies it). Pure.
 */
import type { AdmissionRequest, Decision } from './admission-review.ts';
import { GROUP, type API_VERSION, type AdmissionSuite, type Condition, type ObjectMeta } from './types.ts';
import type { FieldError } from './validate.ts';
import { EXCEPTIONS_NOT_NATIVE, requestedEnforcement } from './enforcement.ts';
import { labelSelectorProblems, selects, type LabelSelector } from '../kubernetes/selectors.ts';

export const EXCEPTION_KIND = 'AdmissionException';
export const EXCEPTION_PLURAL = 'admissionexceptions';
/** The cluster-scoped form: a grant in every namespace its spec.namespaceSelector selects. */
export const CLUSTER_EXCEPTION_KIND = 'ClusterAdmissionException';
export const CLUSTER_EXCEPTION_PLURAL = 'clusteradmissionexceptions';

/** The operator's webhook that refuses AdmissionExceptions on apply (controller/suite-validation-webhook.ts registers it beside the suites' one). */
export const EXCEPTIONS = {
  validationWebhook: `admissionexceptions.validation.${GROUP}`,
  validationPath: '/validate/admissionexceptions',
  crd: `admissionexceptions.${GROUP}`,
  clusterCrd: `clusteradmissionexceptions.${GROUP}`,
} as const;

export interface ExceptionMatch {
  names?: string[];
  kinds?: string[];
  objectSelector?: LabelSelector;
  users?: string[];
  groups?: string[];
}

/** What an exception lets through a PodSecurity handler's webhook: some controls, optionally only for some images. */
export interface PodSecurityExceptionSpec {
  /** The controls whose failures it lets through (POD_SECURITY_CONTROLS); every other check of the level still applies. */
  controls: string[];
  /**
   * Exact image references, or prefixes ending in `*`: a control is let through only when every
   * container its failure names runs one of them (never for a failure of the pod's own fields).
   */
  images?: string[];
}

export interface ExceptionSpec {
  suite: string;
  webhook: string;
  /** Indexes in the webhook's validations; unset, all of them. */
  validations?: number[];
  /** For a webhook whose handler is PodSecurity (and only for one): the controls it lets through. */
  podSecurity?: PodSecurityExceptionSpec;
  match?: ExceptionMatch;
  /** A ClusterAdmissionException's only: the namespaces it applies in (unset: every one the suite takes exceptions from); never a protected one. */
  namespaceSelector?: LabelSelector;
  reason: string;
  /** RFC 3339. */
  expires: string;
}

/**
 * What the operator writes of an exception (controller/exception-status.ts): how often and when
 * it last let a request through (every replica's uses, added together), and its `Expired`
 * condition, turned True at `expires`.
 */
export interface ExceptionStatus {
  /** Requests it let through, every replica's added together. */
  uses?: number;
  /** RFC 3339, to the second: the latest request it let through, on any replica. */
  lastUsed?: string;
  conditions?: Condition[];
}

export interface AdmissionException {
  apiVersion: typeof API_VERSION;
  kind: typeof EXCEPTION_KIND;
  metadata: ObjectMeta & { namespace: string };
  spec: ExceptionSpec;
  status?: ExceptionStatus;
}

/**
 * A ClusterAdmissionException: an AdmissionException without a namespace, applying in the
 * namespaces its spec.namespaceSelector selects. Held in the same store, under the namespace ''
 * (metadata.namespace is set to '' when it is read in), and named by its name alone.
 */
export interface ClusterAdmissionException {
  apiVersion: typeof API_VERSION;
  kind: typeof CLUSTER_EXCEPTION_KIND;
  metadata: ObjectMeta & { namespace?: '' };
  spec: ExceptionSpec;
  status?: ExceptionStatus;
}

/** Either kind, as the store holds it: a cluster one's namespace is ''. */
export type AnyException = AdmissionException | (Omit<ClusterAdmissionException, 'metadata'> & { metadata: ObjectMeta & { namespace: '' } });

/** The built-in handler whose checks an exception names by control (spec.podSecurity). */
export const POD_SECURITY_HANDLER = 'PodSecurity';

/**
 * The Pod Security controls an exception may name: the handler's check IDs without their level
 * suffix (handlers/pod-security/checks.ts controlOf; handlers/pod-security.ts refuses to load if a
 * check's control is not here). Listed here, below the handlers, so that an exception is judged on
 * apply where the handlers are not imported.
 */
export const POD_SECURITY_CONTROLS: readonly string[] = [
  'allowPrivilegeEscalation',
  'appArmorProfile',
  'capabilities',
  'hostNamespaces',
  'hostPathVolumes',
  'hostPorts',
  'hostProbesAndHostLifecycle',
  'privileged',
  'procMount',
  'restrictedVolumes',
  'runAsNonRoot',
  'runAsUser',
  'seLinuxOptions',
  'seccompProfile',
  'sysctls',
  'windowsHostProcess',
];

/** Whether `image` is one of `patterns`: equal to one, or starting with one that ends in `*` (without it). */
export function imageListed(patterns: readonly string[], image: string): boolean {
  return patterns.some((p) => (p.endsWith('*') ? image.startsWith(p.slice(0, -1)) : image === p));
}

/** The annotation key the API server records as `<webhook name>/exception` in the audit log. */
export const EXCEPTION_AUDIT_KEY = 'exception';

/** `namespace/name` (a cluster exception: its name alone): how warnings, annotations and logs name an exception. */
export const exceptionRef = (exception: { metadata: { namespace?: string; name: string } }) => (exception.metadata.namespace ? `${exception.metadata.namespace}/${exception.metadata.name}` : exception.metadata.name);

/** The audit annotation's value: the exceptions a request used, `namespace/name, ...`. */
export const exceptionsAnnotation = (used: readonly { metadata: { namespace?: string; name: string } }[]) => used.map(exceptionRef).join(', ');

/** The exceptions a decision's audit annotation names (none when it has none): how a decision made elsewhere, a review worker's, is counted. */
export function exceptionsNamed(decision: Pick<Decision, 'auditAnnotations'>): { namespace: string; name: string }[] {
  const value = decision.auditAnnotations?.[EXCEPTION_AUDIT_KEY];
  if (!value) return [];
  // Neither a namespace nor a name holds '/' or ', '.
  return value.split(', ').flatMap((ref) => {
    const slash = ref.indexOf('/');
    // No namespace: a ClusterAdmissionException's name.
    if (slash < 0) return ref ? [{ namespace: '', name: ref }] : [];
    return slash > 0 ? [{ namespace: ref.slice(0, slash), name: ref.slice(slash + 1) }] : [];
  });
}

const WARNING_PREFIX = 'admitted by exception ';

/** The warning a request it let through carries (kubectl prints it). */
export const exceptionWarning = (exception: AnyException) => `${WARNING_PREFIX}${exceptionRef(exception)} (expires ${exception.spec.expires}): ${exception.spec.reason}`;

/** Whether a decision's warning is one exceptionWarning wrote (the audit reports it as the skip's message). */
export const isExceptionWarning = (warning: string) => warning.startsWith(WARNING_PREFIX);

/** RFC 3339 with a time zone, as the API server's date-time format; the instant in ms, or undefined. */
export function expiryOf(expires: unknown): number | undefined {
  if (typeof expires !== 'string' || !/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(expires)) return undefined;
  const ms = Date.parse(expires);
  return Number.isNaN(ms) ? undefined : ms;
}

/** suiteRefusal's namespace when a cluster exception is judged on apply: which namespaces it reaches is judged per request. */
export const ANY_NAMESPACE = Symbol('any namespace');

/**
 * Why `suite` takes no exception from `namespace` (undefined when it does): it does not accept
 * exceptions, or its selector leaves the namespace out. `namespaceLabels` undefined: not known
 * here (the namespace is not in the cache), which a selector cannot select.
 */
export function suiteRefusal(suite: Pick<AdmissionSuite, 'spec' | 'metadata'> | undefined, namespaceLabels: Record<string, string> | undefined | typeof ANY_NAMESPACE): string | undefined {
  if (!suite) return 'names no AdmissionSuite';
  const accepts = suite.spec.exceptions;
  if (accepts?.allowed !== true) return `AdmissionSuite ${suite.metadata.name} accepts no exceptions (its spec.exceptions.allowed is not true): it is protected`;
  if (namespaceLabels !== ANY_NAMESPACE && accepts.namespaces && !selects(accepts.namespaces, namespaceLabels ?? {})) return `AdmissionSuite ${suite.metadata.name} accepts no exceptions from this namespace (spec.exceptions.namespaces)`;
  return undefined;
}

/**
 * What is wrong with `exception` where it stands: its own shape (reason, expires, the selector),
 * a protected namespace, a suite that does not take it, a webhook it does not have or that has no
 * CEL validations, an index past them; for a PodSecurity webhook, no controls or unknown ones, and
 * podSecurity on any other webhook. Every problem with its field path.
 */
export function validateException(
  exception: AdmissionException | ClusterAdmissionException,
  context: { protectedNamespaces: readonly string[]; suite: AdmissionSuite | undefined; namespaceLabels: Record<string, string> | undefined },
): FieldError[] {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ field, message });
  const spec = exception?.spec;
  const cluster = exception?.kind === CLUSTER_EXCEPTION_KIND;
  const namespace = exception?.metadata?.namespace ?? '';
  if (!cluster && context.protectedNamespaces.includes(namespace)) {
    err('metadata.namespace', `${namespace} is protected: no exception applies there (the operator's namespace, kube-system and kube-node-lease are never sent to a webhook of ours)`);
  }
  if (!spec) return [...errors, { field: 'spec', message: 'is required' }];
  if (!cluster && spec.namespaceSelector !== undefined) err('spec.namespaceSelector', `an AdmissionException applies in its own namespace only: for several, a ${CLUSTER_EXCEPTION_KIND}`);
  if (cluster && spec.namespaceSelector !== undefined) errors.push(...labelSelectorProblems(spec.namespaceSelector, 'spec.namespaceSelector'));
  if (typeof spec.reason !== 'string' || spec.reason.trim() === '') err('spec.reason', 'Required value: say why the exception is granted');
  if (expiryOf(spec.expires) === undefined) err('spec.expires', `Required value: an RFC 3339 time such as 2026-12-31T00:00:00Z${spec.expires === undefined ? '' : `, not ${JSON.stringify(spec.expires)}`}`);
  if (spec.match?.objectSelector !== undefined) errors.push(...labelSelectorProblems(spec.match.objectSelector, 'spec.match.objectSelector'));
  // A cluster exception's namespaces are judged per request (the suite's spec.exceptions.namespaces, never a protected one).
  const refusal = suiteRefusal(context.suite, cluster ? ANY_NAMESPACE : context.namespaceLabels);
  if (refusal) {
    err('spec.suite', refusal);
    return errors;
  }
  const webhook = context.suite!.spec.webhooks.find((w) => w.name === spec.webhook);
  const podSecurity = webhook?.type === 'Validating' && webhook.handler?.name === POD_SECURITY_HANDLER;
  if (!webhook) err('spec.webhook', `AdmissionSuite ${spec.suite} has no webhook named ${JSON.stringify(spec.webhook)}`);
  else if (requestedEnforcement(context.suite!, webhook) === 'Native') err('spec.webhook', `webhook ${spec.webhook} is enforced natively (enforcement: Native): ${EXCEPTIONS_NOT_NATIVE} (enforcement: Auto or Webhook applies them)`);
  else if (podSecurity) errors.push(...podSecurityProblems(spec));
  else if (spec.podSecurity !== undefined) err('spec.podSecurity', `webhook ${spec.webhook}'s handler is not ${POD_SECURITY_HANDLER}: podSecurity applies to a PodSecurity webhook only`);
  else if (webhook.type !== 'Validating' || webhook.handler || !webhook.validations?.length)
    err('spec.webhook', `webhook ${spec.webhook} has no CEL validations: exceptions apply to a Validating webhook's validations, or to a PodSecurity webhook's controls, only`);
  else {
    (spec.validations ?? []).forEach((index, i) => {
      if (!Number.isInteger(index) || index < 0 || index >= webhook.validations!.length)
        err(`spec.validations[${i}]`, `webhook ${spec.webhook} has ${webhook.validations!.length} validations (indexes 0 to ${webhook.validations!.length - 1})`);
    });
  }
  return errors;
}

/** An exception for a PodSecurity webhook: the controls it names, known ones, and its images' patterns. */
function podSecurityProblems(spec: ExceptionSpec): FieldError[] {
  const errors: FieldError[] = [];
  const podSecurity = spec.podSecurity;
  if (podSecurity === undefined || podSecurity === null) {
    return [{ field: 'spec.podSecurity', message: `Required value: webhook ${spec.webhook} is a ${POD_SECURITY_HANDLER} webhook: name the controls it lets through (spec.podSecurity.controls)` }];
  }
  if (spec.validations !== undefined) errors.push({ field: 'spec.validations', message: `webhook ${spec.webhook} has no CEL validations: name PodSecurity controls in spec.podSecurity.controls` });
  if (!Array.isArray(podSecurity.controls) || podSecurity.controls.length === 0) errors.push({ field: 'spec.podSecurity.controls', message: `Required value: one or more of ${POD_SECURITY_CONTROLS.join(', ')}` });
  else {
    podSecurity.controls.forEach((control, i) => {
      if (!POD_SECURITY_CONTROLS.includes(control)) errors.push({ field: `spec.podSecurity.controls[${i}]`, message: `Unsupported value: ${JSON.stringify(control)}: supported values: ${POD_SECURITY_CONTROLS.join(', ')}` });
    });
  }
  if (podSecurity.images !== undefined) {
    if (!Array.isArray(podSecurity.images) || podSecurity.images.length === 0) errors.push({ field: 'spec.podSecurity.images', message: 'must list one or more images (unset: any image)' });
    else {
      podSecurity.images.forEach((image, i) => {
        if (typeof image !== 'string' || image === '' || image === '*') errors.push({ field: `spec.podSecurity.images[${i}]`, message: 'must be an image reference, or a prefix of one ending in * (unset images: any image)' });
        else if (image.indexOf('*') !== image.length - 1 && image.includes('*')) errors.push({ field: `spec.podSecurity.images[${i}]`, message: `${JSON.stringify(image)}: a * may only end a prefix` });
      });
    }
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

/** One kind of write an exception lets through: the verbs of a group/resource as its webhook's rules name them. */
export interface ExceptionWrite {
  group: string;
  version: string;
  resource: string;
  /** The authorization verbs of the rule's operations (CREATE -> create, ...; `*`: create, update, delete). */
  verbs: string[];
}

const OPERATION_VERBS: Record<string, string[]> = { CREATE: ['create'], UPDATE: ['update'], DELETE: ['delete'], CONNECT: ['create'], '*': ['create', 'update', 'delete'] };

/**
 * What an exception could let through, before its `match.kinds` narrow it (the caller narrows by
 * the kinds the API server serves; a wildcard stays whole, so `*` asks for `*`): every
 * group/version/resource of its webhook's rules, with the verbs of their operations. None when
 * the suite or webhook is not there (validateException refuses that).
 */
export function exceptionWrites(spec: Pick<ExceptionSpec, 'webhook'> | undefined, suite: AdmissionSuite | undefined): ExceptionWrite[] {
  const webhook = suite?.spec?.webhooks?.find((w) => w.name === spec?.webhook);
  const out: ExceptionWrite[] = [];
  const seen = new Set<string>();
  for (const rule of webhook?.rules ?? []) {
    const verbs = [...new Set((rule.operations ?? []).flatMap((op) => OPERATION_VERBS[op] ?? []))];
    for (const group of rule.apiGroups ?? []) {
      for (const version of rule.apiVersions ?? []) {
        for (const resource of rule.resources ?? []) {
          const key = JSON.stringify([group, version, resource, verbs]);
          if (seen.has(key)) continue;
          seen.add(key);
          out.push({ group, version, resource, verbs });
        }
      }
    }
  }
  return out;
}
