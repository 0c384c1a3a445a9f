/**
 * The in-tree admission plugins' error words, so a handler's denial reads as the plugin's:
 * `admission.NewForbidden` (`<resource> "<name>" is forbidden: <why>`, the name taken from the
 * request, else the object's name or generateName, else "Unknown"). Pure; what each handler says
 * after the colon is its own.
 */
import { denied, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import { metadataOf } from './pods.ts';

/** The group-qualified resource as apimachinery prints it (`pods`, `priorityclasses.scheduling.k8s.io`). */
export function qualifiedResource(request: AdmissionRequest): string {
  const { group, resource } = request.resource;
  return group ? `${resource}.${group}` : resource;
}

/** The name upstream's errors give the object (extractResourceName). */
export function objectName(request: AdmissionRequest): string {
  if (request.name) return request.name;
  const meta = metadataOf(request.object);
  return meta?.name || meta?.generateName || 'Unknown';
}

/** upstream's `<resource> "<name>" is forbidden: <why>`. */
export function forbiddenMessage(request: AdmissionRequest, why: string): string {
  return `${qualifiedResource(request)} "${objectName(request)}" is forbidden: ${why}`;
}

/**
 * How apimachinery's aggregate error reads (utilerrors.NewAggregate): one message alone, several
 * (repeats dropped) as `[a, b]`, as LimitRanger words one LimitRange's violations. An aggregate of
 * several Forbidden errors is another matter: the API server answers with the first of them alone.
 */
export function aggregate(messages: string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

/** A 403 denial in upstream's words (admission.NewForbidden). */
export function forbidden(request: AdmissionRequest, why: string): Decision {
  return denied(forbiddenMessage(request, why), 'Forbidden');
}

/** What the in-tree plugins answer before their informers have synced. */
export const NOT_READY = 'not yet ready to handle request';
