/**
 * Small pieces the built-in handlers share: reading a handler's config with field-named errors,
 * Pod specs (of Pods and of workload templates), JSON pointers, and Kubernetes label syntax.
 * Pure functions only.
 */
import type { AdmissionRequest } from '../api/review.ts';

export interface ConfigError {
  field: string;
  message: string;
}

/**
 * Reads a handler's config field by field: each accessor checks the type, returns the value or
 * its default, and records a problem under the field's name (relative to `config`).
 */
export class ConfigReader {
  readonly errors: ConfigError[] = [];
  private readonly config: Record<string, unknown>;

  constructor(config: Record<string, unknown>, handler: string, known: string[]) {
    this.config = config;
    for (const key of Object.keys(config)) {
      if (!known.includes(key)) {
        this.error(key, known.length ? `unknown field; ${handler} takes ${known.join(', ')}` : `${handler} takes no configuration`);
      }
    }
  }

  error(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  has(field: string): boolean {
    return this.config[field] !== undefined && this.config[field] !== null;
  }

  raw(field: string): unknown {
    return this.config[field];
  }

  string(field: string, fallback: string): string {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'string') {
      this.error(field, 'must be a string');
      return fallback;
    }
    return value;
  }

  integer(field: string, fallback: number, min = 0): number {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
      this.error(field, `must be an integer no less than ${min}`);
      return fallback;
    }
    return value;
  }

  stringList(field: string, fallback: string[]): string[] {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (!Array.isArray(value)) {
      this.error(field, 'must be a list of strings');
      return fallback;
    }
    value.forEach((item, i) => {
      if (typeof item !== 'string' || item === '') this.error(`${field}[${i}]`, 'must be a non-empty string');
    });
    return value.filter((item): item is string => typeof item === 'string' && item !== '');
  }

  stringMap(field: string): Record<string, string> {
    const value = this.config[field];
    if (value === undefined || value === null) return {};
    if (!isPlainObject(value)) {
      this.error(field, 'must be a map of strings');
      return {};
    }
    const out: Record<string, string> = {};
    for (const [key, item] of Object.entries(value)) {
      if (typeof item !== 'string') this.error(`${field}.${key}`, 'must be a string');
      else out[key] = item;
    }
    return out;
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An RFC 6901 JSON pointer from its unescaped segments. */
export function pointer(...segments: (string | number)[]): string {
  return segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

// Pods and their specs ----------------------------------------------------------------------

export const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;
export type ContainerList = (typeof CONTAINER_LISTS)[number];

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
