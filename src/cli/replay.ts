/**
 * `portcullis test --replay LOG`: the write requests an API server's audit log recorded (JSON
 * lines of audit.k8s.io/v1 Events, at `RequestResponse` level for the resources that matter),
 * asked again of suites offline (evaluate.ts), each answer compared with the one recorded.
 * Owns reading the log, turning an event back into the request the webhooks were sent, what was
 * recorded (allowed, or denied by which webhook with which message) and the comparison; no I/O
 * but the caller's reading of the file.
 *
 * An event records the request and its response, not the AdmissionReview: what it leaves out is
 * taken from the log itself or the request is not replayed, never guessed. The old object of an
 * update or a delete is not in its event: it is the object as the log last recorded it stored
 * (the response of the latest successful create, update or patch of it, before this event); a
 * request for an object the log has no earlier write of is not replayed. A patch's request
 * object is the patch, not the object: the object is the response's (what was stored: after the
 * mutating webhooks, which are run again); a refused patch is not replayed.
 */
import type { AdmissionRequest } from '../api/admission-review.ts';
import type { Evaluation, Scenario } from './evaluate.ts';
import { errorMessage } from '../error-message.ts';

type KubeObject = Record<string, any>;

/** The fields of an audit.k8s.io/v1 Event this reads. */
export interface AuditEvent {
  level?: string;
  auditID?: string;
  stage?: string;
  requestURI?: string;
  verb?: string;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  impersonatedUser?: AuditEvent['user'];
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; apiVersion?: string; subresource?: string };
  responseStatus?: { code?: number; message?: string };
  requestObject?: KubeObject;
  responseObject?: KubeObject;
}

/** What the API server answered, as far as admission decided it. */
export type Recorded = { allowed: true } | { allowed: false; webhook: string; message: string };

export interface Replayable {
  /** The event's line in the log (1-based). */
  line: number;
  event: AuditEvent;
  scenario: Scenario;
  recorded: Recorded;
}

export interface NotReplayed {
  line: number;
  event: AuditEvent;
  reason: string;
}

/** A request answered otherwise than recorded. */
export interface Difference {
  line: number;
  request: string;
  recorded: string;
  replayed: string;
}

const OPERATIONS: Record<string, AdmissionRequest['operation']> = { create: 'CREATE', update: 'UPDATE', patch: 'UPDATE', delete: 'DELETE' };
const READS = new Set(['get', 'list', 'watch']);
/** The API server's words for a webhook's denial (and for a call that failed). */
const DENIED = /^admission webhook "([^"]+)" denied the request/;
const CALL_FAILED = /failed calling webhook "([^"]+)"/;

/** The events of a log, with their lines; a line that is not a JSON object is an input error. */
export function parseAuditLog(text: string, file = 'the audit log'): { line: number; event: AuditEvent }[] {
  const out: { line: number; event: AuditEvent }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let event: unknown;
    try {
      event = JSON.parse(raw);
    } catch (err) {
      throw new Error(`${file}:${i + 1}: not a JSON audit event: ${errorMessage(err)}`);
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new Error(`${file}:${i + 1}: not a JSON audit event`);
    out.push({ line: i + 1, event: event as AuditEvent });
  });
  return out;
}

/** What the API server answered: allowed, denied by a webhook, or (undefined) decided elsewhere, with why. */
export function recordedOf(event: AuditEvent): Recorded | { reason: string } {
  const code = event.responseStatus?.code;
  if (code === undefined) return { reason: 'no response status recorded' };
  if (code < 400) return { allowed: true };
  const message = event.responseStatus?.message ?? '';
  const denied = DENIED.exec(message);
  if (denied) return { allowed: false, webhook: denied[1]!, message };
  const failed = CALL_FAILED.exec(message);
  if (failed) return { reason: `the call to webhook ${failed[1]} failed` };
  // Authorization, validation, conflicts, other admission plugins: no webhook's answer to compare.
  return { reason: `refused outside the admission webhooks (${code})` };
}

/** `request.options` as the API server decodes it from the request's query (and a delete's body). */
function optionsOf(event: AuditEvent, operation: AdmissionRequest['operation']): KubeObject {
  const query = new URL(event.requestURI ?? '/', 'https://api').searchParams;
  const fromQuery = {
    ...(query.getAll('dryRun').length ? { dryRun: query.getAll('dryRun') } : {}),
    ...(operation !== 'DELETE' && query.get('fieldManager') ? { fieldManager: query.get('fieldManager') } : {}),
    ...(operation !== 'DELETE' && query.get('fieldValidation') ? { fieldValidation: query.get('fieldValidation') } : {}),
  };
  if (operation === 'DELETE') {
    const body = event.requestObject?.kind === 'DeleteOptions' ? event.requestObject : {};
    const { kind: _k, apiVersion: _v, ...given } = body;
    return { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', ...given, ...fromQuery };
  }
  return { kind: operation === 'CREATE' ? 'CreateOptions' : 'UpdateOptions', apiVersion: 'meta.k8s.io/v1', ...fromQuery };
}

const isObject = (o: unknown): o is KubeObject => typeof o === 'object' && o !== null && !Array.isArray(o) && typeof (o as KubeObject).kind === 'string' && (o as KubeObject).kind !== 'Status';

/**
 * The write requests of `events` as requests to replay, and those that cannot be, with why;
 * reads, requests for no resource and events of other stages are left out. `namespaces`: each
 * Namespace as the log last recorded it stored (its labels select webhooks).
 */
export function replayable(events: { line: number; event: AuditEvent }[]): { requests: Replayable[]; skipped: NotReplayed[]; namespaces: KubeObject[] } {
  const requests: Replayable[] = [];
  const skipped: NotReplayed[] = [];
  /** group/resource/namespace/name -> the object as last recorded stored. */
  const stored = new Map<string, KubeObject>();
  for (const { line, event } of events) {
    const ref = event.objectRef;
    if (event.stage !== 'ResponseComplete' || !ref?.resource || !event.verb || READS.has(event.verb)) continue;
    // (a create of a generateName has its name in the response only)
    const name = ref.name || (isObject(event.responseObject) ? event.responseObject.metadata?.name : undefined) || '';
    const key = `${ref.apiGroup ?? ''}/${ref.resource}/${ref.namespace ?? ''}/${name}`;
    const wholeObject = !ref.subresource || ref.subresource === 'status';
    const before = wholeObject ? stored.get(key) : undefined;
    const skip = (reason: string) => skipped.push({ line, event, reason });
    const recorded = recordedOf(event);
    // What the log knows of the object from here on, whatever becomes of this request.
    if ('allowed' in recorded && recorded.allowed && wholeObject && isObject(event.responseObject)) {
      const gone = event.verb === 'delete' && !(event.responseObject.metadata?.finalizers?.length > 0);
      if (gone) stored.delete(key);
      else stored.set(key, event.responseObject);
    }
    let operation = OPERATIONS[event.verb];
    if (!operation) {
      skip(`verb ${event.verb}: ${event.verb === 'deletecollection' ? 'the objects it deleted are not in the log' : 'not a create, update, patch or delete'}`);
      continue;
    }
    if ('reason' in recorded) {
      skip(recorded.reason);
      continue;
    }
    if (event.level !== 'RequestResponse' && event.level !== 'Request') {
      skip(`recorded at ${event.level ?? 'no'} level: no request object`);
      continue;
    }
    let object: KubeObject | null = null;
    let oldObject: KubeObject | null = null;
    if (event.verb === 'create') {
      if (!isObject(event.requestObject)) {
        skip('no request object recorded');
        continue;
      }
      object = event.requestObject;
    } else if (event.verb === 'update') {
      if (!isObject(event.requestObject)) {
        skip('no request object recorded');
        continue;
      }
      object = event.requestObject;
      oldObject = before ?? null;
    } else if (event.verb === 'patch') {
      if (!recorded.allowed || !isObject(event.responseObject)) {
        skip('a refused patch: the object it would have made is not in the log');
        continue;
      }
      object = event.responseObject;
      oldObject = before ?? null;
      // A patch that made the object (server-side apply) was a create.
      if (!before && event.responseStatus?.code === 201) operation = 'CREATE';
    } else {
      oldObject = before ?? (recorded.allowed && isObject(event.responseObject) ? event.responseObject : null);
    }
    if (operation !== 'CREATE' && !oldObject) {
      skip(`the old object is not in the log (no earlier write of ${ref.subresource && !wholeObject ? `its ${ref.subresource}` : 'it'} recorded)`);
      continue;
    }
    const user = event.impersonatedUser ?? event.user ?? {};
    requests.push({
      line,
      event,
      recorded,
      scenario: {
        operation,
        object,
        oldObject,
        resource: ref.resource,
        resourceGroupVersion: { group: ref.apiGroup ?? '', version: ref.apiVersion ?? '' },
        ...(ref.subresource ? { subResource: ref.subresource } : {}),
        ...(ref.name ? { name: ref.name } : {}),
        ...(ref.namespace ? { namespace: ref.namespace } : {}),
        userInfo: { username: user.username ?? '', ...(user.uid ? { uid: user.uid } : {}), groups: user.groups ?? [], ...(user.extra ? { extra: user.extra } : {}) } as AdmissionRequest['userInfo'],
        dryRun: new URL(event.requestURI ?? '/', 'https://api').searchParams.getAll('dryRun').length > 0,
        options: optionsOf(event, operation),
      },
    });
  }
  const namespaces = [...stored.entries()].filter(([key]) => key.startsWith('/namespaces/')).map(([, o]) => o);
  return { requests, skipped, namespaces };
}

/** How the request reads in a line: `CREATE configmaps shop/web (by alice)`. */
export function describeRequest(r: Replayable): string {
  const ref = r.event.objectRef!;
  const resource = `${ref.apiGroup ? `${ref.resource}.${ref.apiGroup}` : ref.resource}${ref.subresource ? `/${ref.subresource}` : ''}`;
  return `${r.scenario.operation} ${resource} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? ''} (by ${r.scenario.userInfo?.username || 'unknown'})`;
}

/**
 * How the replayed answer differs from the recorded one, or undefined when it is the same, or why
 * they cannot be compared. A recorded denial is the same when the webhook that denied it denies
 * again with the same message (validating webhooks are called in parallel: the API server reports
 * whichever denial came first, so another's denial beside it is no difference).
 */
export function compare(recorded: Recorded, evaluation: Evaluation): { differs?: { recorded: string; replayed: string }; reason?: string } {
  const replayed = evaluation.allowed ? 'allowed' : `denied: ${evaluation.message ?? ''}`;
  if (recorded.allowed) return evaluation.allowed ? {} : { differs: { recorded: 'allowed', replayed } };
  const run = evaluation.webhooks.find((w) => w.fullName === recorded.webhook);
  if (!run) return { reason: `denied by webhook ${recorded.webhook}, which none of the suites replayed has` };
  const response = run.review?.response;
  if (!run.called || !response || response.allowed) return { differs: { recorded: `denied: ${recorded.message}`, replayed } };
  const again = `admission webhook "${recorded.webhook}" denied the request: ${response.status?.message ?? ''}`;
  return again === recorded.message ? {} : { differs: { recorded: `denied: ${recorded.message}`, replayed: `denied: ${again}` } };
}

/** The skipped requests as counts per reason, most frequent first. */
export function skippedSummary(skipped: NotReplayed[]): string[] {
  const counts = new Map<string, number>();
  for (const s of skipped) counts.set(s.reason, (counts.get(s.reason) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${n}: ${reason}`);
}
