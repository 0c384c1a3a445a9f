/**
 * ImageRegistryAllowlist: no upstream admission plugin; the behaviour follows Gatekeeper
 * library's k8sallowedrepos and Kyverno's restrict-image-registries. Every container, init
 * container and ephemeral container of a Pod, or of the Pod template of a workload
 * (ReplicationController, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob), must
 * use an image whose registry is in `registries`.
 *
 * Image names are normalised as the container runtime does (distribution's
 * ParseNormalizedNamed): a name whose first component is not a host (no "." or ":", not
 * "localhost") is on docker.io, a one-component docker.io name is under library/, and
 * index.docker.io is docker.io. An entry of `registries` is a registry host ("docker.io",
 * "localhost:5000") or a host and a path ("ghcr.io/acme", "docker.io/library/nginx"); it allows
 * the images under it, whole path components only, so "ghcr.io/acme" does not allow
 * "ghcr.io/acme-evil/x" and "registry.example.com" does not allow
 * "registry.example.com.evil.io/x". A trailing "/*" (Kyverno's spelling) is accepted.
 *
 * On UPDATE only images the old object did not have are checked, so a workload that predates
 * the policy can still be scaled or relabelled; pods/ephemeralcontainers (kubectl debug) is
 * checked like an UPDATE of the Pod. The denial names every offending container at once.
 */
import { allowed, denied, type AdmissionRequest } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { at, CONTAINER_LISTS, podSpecPath, WORKLOAD_RESOURCES, type PodSpec } from './pods.ts';
import { ConfigReader, isPlainObject } from './config.ts';

export interface ImageRegistryAllowlistConfig {
  /** Normalised entries: "host" or "host/path", no trailing slash. */
  registries: string[];
}

const CONTAINER_WORDS: Record<(typeof CONTAINER_LISTS)[number], string> = {
  initContainers: 'init container',
  containers: 'container',
  ephemeralContainers: 'ephemeral container',
};

function isHost(component: string): boolean {
  return component.includes('.') || component.includes(':') || component === 'localhost' || component.toLowerCase() !== component;
}

/** "host/path" of an image reference, without tag or digest, normalised as the runtime does. */
export function normaliseImage(image: string): string {
  let name = image.trim();
  const digest = name.indexOf('@');
  if (digest >= 0) name = name.slice(0, digest);
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  let host = 'docker.io';
  let path = name;
  if (slash >= 0 && isHost(name.slice(0, slash))) {
    host = name.slice(0, slash);
    path = name.slice(slash + 1);
  }
  if (host === 'index.docker.io') host = 'docker.io';
  if (host === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  return `${host}/${path}`;
}

/** An allowlist entry in normal form, or a reason it cannot be one. */
export function normaliseEntry(entry: string): { entry?: string; error?: string } {
  let text = entry.trim();
  if (text.endsWith('/*')) text = text.slice(0, -2);
  text = text.replace(/\/+$/, '');
  const [host = '', ...rest] = text.split('/');
  if (!host || !isHost(host)) {
    return { error: `"${entry}" does not start with a registry host; write the registry as the runtime sees it, e.g. docker.io, docker.io/library/nginx, ghcr.io/acme, localhost:5000` };
  }
  if (rest.some((part) => part === '' || part.includes('*') || part.includes(':') || part.includes('@'))) {
    return { error: `"${entry}" must be a registry host, optionally followed by a path (no tag, digest or wildcard but a trailing /*)` };
  }
  return { entry: [host === 'index.docker.io' ? 'docker.io' : host, ...rest].join('/') };
}

export function isAllowed(image: string, registries: string[]): boolean {
  const name = normaliseImage(image);
  return registries.some((entry) => name === entry || name.startsWith(`${entry}/`));
}

function images(spec: PodSpec | undefined): Set<string> {
  return new Set(CONTAINER_LISTS.flatMap((list) => (spec?.[list] ?? []).map((c) => c.image ?? '')));
}

function podSpecIn(object: unknown, request: AdmissionRequest): PodSpec | undefined {
  const path = podSpecPath(request.resource);
  const spec = path ? at(object, path) : undefined;
  return isPlainObject(spec) ? (spec as PodSpec) : undefined;
}

/** One line per container whose image is not from an allowed registry (and, on UPDATE, is new). */
export function violations(request: AdmissionRequest, config: ImageRegistryAllowlistConfig): string[] {
  const spec = podSpecIn(request.object, request);
  const old = request.operation === 'UPDATE' ? images(podSpecIn(request.oldObject, request)) : new Set<string>();
  const found: string[] = [];
  for (const list of CONTAINER_LISTS) {
    for (const container of spec?.[list] ?? []) {
      const image = container.image;
      if (!image || old.has(image) || isAllowed(image, config.registries)) continue;
      found.push(`${CONTAINER_WORDS[list]} "${container.name ?? ''}" uses image "${image}" (${normaliseImage(image)})`);
    }
  }
  return found;
}

export const imageRegistryAllowlist: Handler<ImageRegistryAllowlistConfig> = {
  name: 'ImageRegistryAllowlist',
  audits: true,
  resources: WORKLOAD_RESOURCES,
  parseConfig(config) {
    const read = new ConfigReader(config, 'ImageRegistryAllowlist', ['registries']);
    const raw = read.raw('registries');
    if (raw === undefined || raw === null || (Array.isArray(raw) && raw.length === 0)) {
      read.error('registries', 'must list at least one registry images may come from, e.g. registry.k8s.io, ghcr.io/acme');
    }
    const registries: string[] = [];
    read.stringList('registries', []); // type errors, by index
    (Array.isArray(raw) ? raw : []).forEach((text: unknown, i) => {
      if (typeof text !== 'string' || text === '') return;
      const { entry, error } = normaliseEntry(text);
      if (error) read.error(`registries[${i}]`, error);
      else registries.push(entry!);
    });
    return { config: { registries }, errors: read.errors };
  },
  validate(request, config) {
    if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
    if (!podSpecPath(request.resource)) return allowed();
    if (request.subResource && !(request.resource.resource === 'pods' && request.subResource === 'ephemeralcontainers')) return allowed();
    const found = violations(request, config);
    if (found.length === 0) return allowed();
    return denied(`ImageRegistryAllowlist: ${found.join('; ')}: not from an allowed registry (${config.registries.join(', ')}); ` + "use images from an allowed registry, or add the registry to the webhook's config");
  },
};
