/**
 * audit: the live results of rules being rolled out: a request a suite webhook allowed with Warn or Audit
 * failures becomes results of the object written (per validation, by the `validation_failure` annotation;
 * reports.ts names them `source: admission`). Not dry runs (nothing written), Secrets (never audited:
 * listable-resources.ts), nor an object the scanner's watch has not seen by uid (anyone may send a request,
 * scanner.ts). Pure: the admission thread and the main thread both call it; no I/O, no state.
 */
import type { AdmissionRequest, Decision } from '../api/admission-review.ts';
import type { ObjectRef } from './results.ts';
import type { CheckResult } from './targets.ts';
import { NEVER_AUDITED } from './listable-resources.ts';

/** The audit annotation VAP (and a suite webhook) lists its Audit failures under, as JSON. */
const VALIDATION_FAILURE = 'validation_failure';

/** Whether `decision` holds failures that did not deny (Warn, Audit): cheap, for the request path. */
export function shadowed(request: Pick<AdmissionRequest, 'dryRun'>, decision: Decision): boolean {
  return decision.allowed && !request.dryRun && (decision.warnings !== undefined || decision.auditAnnotations?.[VALIDATION_FAILURE] !== undefined);
}

/** The object `request` wrote and the failures `decision` let through, or undefined when it names no object. */
export function liveResults(request: AdmissionRequest, decision: Decision): { ref: ObjectRef; results: CheckResult[] } | undefined {
  const object = (request.object ?? request.oldObject) as { metadata?: { name?: string; namespace?: string; uid?: string } } | null | undefined;
  const name = object?.metadata?.name || request.name;
  const uid = object?.metadata?.uid;
  if (!name || !uid || request.subResource) return undefined;
  if (NEVER_AUDITED.has(`${request.resource?.group ?? ''}/${request.resource?.resource ?? ''}`) || NEVER_AUDITED.has(`${request.kind.group}/${request.kind.kind.toLowerCase()}s`)) return undefined;
  const namespace = request.namespace || object?.metadata?.namespace;
  const { group, version, kind } = request.kind;
  const ref: ObjectRef = {
    apiVersion: group ? `${group}/${version}` : version,
    kind,
    name,
    ...(namespace ? { namespace } : {}),
    uid,
  };
  const results: CheckResult[] = [];
  const audited = decision.auditAnnotations?.[VALIDATION_FAILURE];
  if (audited) {
    try {
      for (const f of JSON.parse(audited) as { message?: string; expressionIndex?: number }[]) results.push({ rule: `validations[${f.expressionIndex ?? 0}]`, result: 'fail', message: f.message ?? '' });
    } catch {
      // not ours to judge: an annotation that is not VAP's JSON is left out
    }
  }
  // Warn and Audit together report each failure twice: the annotation's entries name the validation.
  if (results.length === 0) for (const warning of decision.warnings ?? []) results.push({ rule: 'warning', result: 'warn', message: warning });
  return results.length ? { ref, results } : undefined;
}
