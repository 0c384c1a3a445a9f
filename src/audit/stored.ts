/**
 * audit: a stored object as the scan judges it: the CREATE of it the API server would send, the
 * labels of its namespace, what a report names it by, and a target's results for it. Pure, no I/O;
 * shared by the scanner and `portcullis audit`. Must not list, watch or keep anything.
 */
import { randomUUID } from 'node:crypto';
import type { AdmissionRequest } from '../api/admission-review.ts';
import { describeError } from '../apiserver/client.ts';
import type { ListableResource } from './listable-resources.ts';
import type { KubeItem } from './list.ts';
import type { ObjectRef } from './results.ts';
import type { AuditTarget, CheckResult } from './targets.ts';

/** The AdmissionRequest the API server would send for a CREATE of `object`. */
export function storedCreate(object: KubeItem, resource: ListableResource): AdmissionRequest {
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  const full = { apiVersion, kind: resource.kind, ...object };
  const kind = { group: resource.group, version: resource.version, kind: resource.kind };
  const gvr = { group: resource.group, version: resource.version, resource: resource.resource };
  const namespace = object.metadata?.namespace;
  return {
    uid: randomUUID(),
    kind,
    resource: gvr,
    requestKind: kind,
    requestResource: gvr,
    name: object.metadata?.name ?? '',
    ...(namespace ? { namespace } : {}),
    operation: 'CREATE',
    userInfo: {},
    object: full,
    oldObject: null,
    dryRun: false,
    options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
  };
}

/**
 * The labels a stored object's namespace is judged with (undefined for a cluster-scoped object):
 * those `known` has, else the one label the API server sets on every Namespace.
 */
export function namespaceLabelsOf(namespace: string | undefined, known: (namespace: string) => Record<string, string> | undefined): Record<string, string> | undefined {
  return namespace ? (known(namespace) ?? { 'kubernetes.io/metadata.name': namespace }) : undefined;
}

/** `target`'s results for a stored object's CREATE (undefined: it does not judge it); a judge that throws is an `error`. */
export async function judgeStored(target: AuditTarget, request: AdmissionRequest, labels: Record<string, string> | undefined): Promise<CheckResult[] | undefined> {
  try {
    return await target.judge(request, labels);
  } catch (err) {
    return [{ rule: 'judge', result: 'error', message: describeError(err) }];
  }
}

/** What a report names a stored object by. */
export function refOf(object: KubeItem, resource: ListableResource): ObjectRef {
  const meta = object.metadata ?? {};
  return {
    apiVersion: resource.group ? `${resource.group}/${resource.version}` : resource.version,
    kind: resource.kind,
    name: meta.name ?? '',
    ...(meta.namespace ? { namespace: meta.namespace } : {}),
    uid: meta.uid ?? `${meta.namespace ?? ''}/${meta.name ?? ''}`,
  };
}
