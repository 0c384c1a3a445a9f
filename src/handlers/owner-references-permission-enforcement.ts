/**
 * OwnerReferencesPermissionEnforcement, after the in-tree plugin (plugin/pkg/admission/gc): changing
 * metadata.ownerReferences needs permission to delete the object (a create is exempt), and a reference
 * newly set to blockOwnerDeletion: true needs update on the owner's `finalizers` subresource (or finalize
 * on anything). Asked for the requesting user through `view.authorize`, the owner's resource found by
 * `view.restMappings`. A pure function of the request and those answers.
 */
import { allowed, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import { authorizationUser, type AuthorizationAttributes, type AuthorizationDecision } from '../api/authorization.ts';
import { parseGroupVersion } from '../api/kind-mapper.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { forbidden } from './errors.ts';
import { metadataOf } from './pods.ts';

interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** The object's ownerReferences; undefined when it has no metadata (upstream: no accessor, no references). */
function ownerReferences(object: unknown): OwnerReference[] | undefined {
  const meta = metadataOf(object);
  if (!meta) return undefined;
  const refs = (meta as { ownerReferences?: unknown }).ownerReferences;
  return Array.isArray(refs) ? refs.filter(isPlainObject).map((r) => r as OwnerReference) : [];
}

/** apiequality.Semantic.DeepEqual of two OwnerReferences: unset and false differ, as nil and &false do. */
function sameReference(a: OwnerReference, b: OwnerReference): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && a.uid === b.uid && a.controller === b.controller && a.blockOwnerDeletion === b.blockOwnerDeletion;
}

/** upstream isChangingOwnerReference. */
function isChanging(refs: OwnerReference[] | undefined, old: OwnerReference[] | undefined, creating: boolean): boolean {
  if (!refs) return false;
  if (creating) return refs.length > 0;
  if (!old) return false;
  return refs.length !== old.length || refs.some((ref, i) => !sameReference(ref, old[i]!));
}

/** upstream newBlockingOwnerDeletionRefs: references that block and did not (by uid) before. */
function newlyBlocking(refs: OwnerReference[], old: OwnerReference[] | undefined): OwnerReference[] {
  const blocking = refs.filter((ref) => ref.blockOwnerDeletion === true);
  if (!old) return blocking;
  const before = new Map(old.map((ref) => [ref.uid, ref]));
  return blocking.filter((ref) => before.get(ref.uid)?.blockOwnerDeletion !== true);
}

/** How Go's `%v, %v` prints an authorizer's reason and error (a nil error is `<nil>`). */
function reasonAndError(decision: AuthorizationDecision): string {
  return `${decision.reason}, ${decision.evaluationError || '<nil>'}`;
}

const PODS_STATUS = (request: AdmissionRequest) => request.resource.group === '' && request.resource.resource === 'pods' && request.subResource === 'status';

function judge(request: AdmissionRequest, view: ClusterView): Decision {
  // Upstream leaves pods/status alone: the pod status strategy keeps ownerReferences from changing there.
  if ((request.operation !== 'CREATE' && request.operation !== 'UPDATE') || PODS_STATUS(request)) return allowed();
  const creating = request.operation === 'CREATE';
  const refs = ownerReferences(request.object);
  const old = creating ? undefined : ownerReferences(request.oldObject);
  if (!isChanging(refs, old, creating)) return allowed();
  const authorize = view.authorize!;
  const user = authorizationUser(request.userInfo);
  const namespace = request.namespace ?? '';
  if (!creating) {
    const resource = request.requestResource ?? request.resource;
    const check: AuthorizationAttributes = {
      user,
      resource: { verb: 'delete', group: resource.group, resource: resource.resource, subresource: request.requestSubResource ?? request.subResource ?? '', namespace, name: request.name ?? '' },
    };
    const [decision] = authorize([check]);
    if (!decision!.allowed) return forbidden(request, `cannot set an ownerRef on a resource you can't delete: ${reasonAndError(decision!)}`);
  }
  const blocking = newlyBlocking(refs!, old);
  if (blocking.length === 0) return allowed();
  // One check first that answers for every owner, as upstream does (it spares the discovery below).
  const [anything] = authorize([{ user, resource: { verb: 'update', group: '*', resource: '*', subresource: 'finalizers', namespace: '', name: '*' } }]);
  if (anything!.allowed) return allowed();
  const kinds = blocking.map((ref) => {
    const gv = parseGroupVersion(ref.apiVersion ?? '');
    return 'error' in gv ? { group: '', version: '', kind: ref.kind ?? '', error: gv.error } : { ...gv, kind: ref.kind ?? '' };
  });
  const mappings = view.restMappings!(kinds.filter((k) => !('error' in k)));
  // Upstream goes owner by owner and stops at the first refusal: the checks of every owner up to
  // the first one that cannot be mapped are asked together, then read in that order.
  const owners: ({ unmapped: string } | { checks: AuthorizationAttributes[] })[] = [];
  let answered = 0;
  for (const [i, ref] of blocking.entries()) {
    const kind = kinds[i]!;
    const mapped = 'error' in kind ? { error: kind.error } : mappings[answered++]!;
    if ('error' in mapped) {
      owners.push({ unmapped: `cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${ref.apiVersion ?? ''} Kind ${ref.kind ?? ''}: ${mapped.error}` });
      break;
    }
    // An owner in a namespace is in the dependent's: ownerReferences cannot cross namespaces.
    const checks = mapped.mappings.map((mapping) => ({
      user,
      resource: { verb: 'update', group: kind.group, resource: mapping.resource, subresource: 'finalizers', namespace: mapping.namespaced ? namespace : '', name: ref.name ?? '' },
    }));
    owners.push({ checks });
  }
  const decisions = authorize(owners.flatMap((o) => ('checks' in o ? o.checks : [])));
  let next = 0;
  for (const owner of owners) {
    if ('unmapped' in owner) return forbidden(request, owner.unmapped);
    for (let c = 0; c < owner.checks.length; c++) {
      const decision = decisions[next++]!;
      if (!decision.allowed) return forbidden(request, `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: ${reasonAndError(decision)}`);
    }
  }
  return allowed();
}

export const ownerReferencesPermissionEnforcement: Handler<Record<string, never>> = {
  name: 'OwnerReferencesPermissionEnforcement',
  resources: [{ group: '*', resource: '*' }],
  asks: true,
  parseConfig(config) {
    const read = new ConfigReader(config, 'OwnerReferencesPermissionEnforcement', []);
    return { config: {}, errors: read.errors };
  },
  validate(request, _config, view) {
    return judge(request, view);
  },
};
