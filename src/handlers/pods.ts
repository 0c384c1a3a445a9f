/**
 * Pod specs where the built-in handlers find them: in Pods and in workload templates (the
 * resources and paths of each), their containers and metadata, and the JSON pointers the
 * handlers' patches name. Pure functions of the request's objects; reading a handler's config is
 * config.ts's.
 */
import type { AdmissionRequest } from '../api/admission-review.ts';
import { isPlainObject } from './config.ts';

/** An RFC 6901 JSON pointer from its unescaped segments. */
export function pointer(...segments: (string | number)[]): string {
  return segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

// Pods and their specs ----------------------------------------------------------------------

export const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

export type ResourceList = Record<string, string>;

export interface Container {
  name?: string;
  image?: string;
  restartPolicy?: string;
  resources?: { requests?: ResourceList; limits?: ResourceList };
}

export interface PodSpec {
  initContainers?: Container[];
  containers?: Container[];
  ephemeralContainers?: Container[];
  nodeSelector?: Record<string, string>;
  tolerations?: { key?: string; operator?: string; value?: string; effect?: string; tolerationSeconds?: number }[];
  resources?: { requests?: ResourceList; limits?: ResourceList };
}

export interface ObjectMetaLike {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
}

export function metadataOf(object: unknown): ObjectMetaLike | undefined {
  return isPlainObject(object) && isPlainObject(object.metadata) ? (object.metadata as ObjectMetaLike) : undefined;
}

/** The request is about core/v1 pods themselves (no subresource), or a subresource in `allowed`. */
export function isPod(request: AdmissionRequest, allowedSubresources: string[] = []): boolean {
  if (request.resource.group !== '' || request.resource.resource !== 'pods') return false;
  return !request.subResource || allowedSubresources.includes(request.subResource);
}

export function podSpecOf(object: unknown): PodSpec | undefined {
  return isPlainObject(object) && isPlainObject(object.spec) ? (object.spec as PodSpec) : undefined;
}

/** Where the Pod spec lives in each kind of workload that carries one, as JSON pointer segments. */
const POD_SPEC_PATHS: Record<string, string[]> = {
  '/pods': ['spec'],
  '/replicationcontrollers': ['spec', 'template', 'spec'],
  'apps/deployments': ['spec', 'template', 'spec'],
  'apps/replicasets': ['spec', 'template', 'spec'],
  'apps/statefulsets': ['spec', 'template', 'spec'],
  'apps/daemonsets': ['spec', 'template', 'spec'],
  'batch/jobs': ['spec', 'template', 'spec'],
  'batch/cronjobs': ['spec', 'jobTemplate', 'spec', 'template', 'spec'],
};

export const WORKLOAD_RESOURCES = Object.keys(POD_SPEC_PATHS).map((key) => {
  const [group, resource] = key.split('/') as [string, string];
  return { group, resource };
});

/** The path of the Pod spec in an object of `resource`, or undefined for kinds that carry none. */
export function podSpecPath(resource: { group: string; resource: string }): string[] | undefined {
  return POD_SPEC_PATHS[`${resource.group}/${resource.resource}`];
}

export function at(object: unknown, path: string[]): unknown {
  let current: unknown = object;
  for (const segment of path) {
    if (!isPlainObject(current)) return undefined;
    current = current[segment];
  }
  return current;
}
