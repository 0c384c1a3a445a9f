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

// Label syntax (k8s.io/apimachinery/pkg/util/validation) ------------------------------------

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a valid label key, or undefined when it is. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `"${key}": the prefix must be a DNS subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !NAME_PART.test(name)) {
    return `"${key}": the name must be 63 characters or less, alphanumeric at both ends, with '-', '_' or '.' between`;
  }
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  return value.length <= 63 && NAME_PART.test(value) ? undefined : `"${value}": a label value must be 63 characters or less, alphanumeric at both ends, with '-', '_' or '.' between`;
}

/**
 * A node selector written as "k1=v1, k2=v2" (labels.ConvertSelectorToLabelsMap): an empty string
 * is the empty set; every item must be exactly one key=value with a valid key and value.
 */
export function parseLabelSet(text: string): { labels: Record<string, string>; error?: string } {
  const labels: Record<string, string> = {};
  if (text === '') return { labels };
  for (const item of text.split(',')) {
    const parts = item.split('=');
    if (parts.length !== 2) return { labels, error: `invalid selector: "${item.trim()}" is not key=value` };
    const key = parts[0]!.trim();
    const value = parts[1]!.trim();
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem) return { labels, error: `invalid selector: ${problem}` };
    labels[key] = value;
  }
  return { labels };
}

export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
