/**
 * kube: the Kubernetes client, watches and caches, and the small verbs the controller uses
 * (server-side apply, get-or-undefined, status replace). Knows nothing about admission.
 */
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { errorMessage } from '../error-message.ts';

export type KubeObject = k8s.KubernetesObject & Record<string, unknown>;

export const FIELD_MANAGER = 'portcullis-operator';

/** Objects whose last apply applyOwned remembers: a few per suite, for many thousands of suites. */
const APPLIED_KEPT = 50_000;

export interface Kube {
  config: k8s.KubeConfig;
  /** Writes of this process; with many replicas only the leader's may grow. */
  writes: { count: number };
  /** Every write asks first; a replica that is not the leader must not write. */
  mayWrite: () => boolean;
  /**
   * What applyOwned last applied to each object (a digest of it) and the resourceVersion the API
   * server answered: the same object applied again to an object still at that version changes
   * nothing, so it is not sent (the reconcile our own writes' watch events wake, a restart's resync).
   */
  applied: Map<string, { digest: string; resourceVersion: string }>;
  objects: k8s.KubernetesObjectApi;
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  admissionregistration: k8s.AdmissionregistrationV1Api;
}

/** In a pod: the service account. Elsewhere: the kubeconfig named, or KUBECONFIG / ~/.kube/config. */
export function loadKubeConfig(kubeconfigPath?: string): k8s.KubeConfig {
  const config = new k8s.KubeConfig();
  if (kubeconfigPath) config.loadFromFile(kubeconfigPath);
  else config.loadFromDefault();
  return config;
}

/** True when there is a cluster to talk to without starting a local one. */
export function clusterConfigured(): boolean {
  if (process.env.KUBERNETES_SERVICE_HOST) return true;
  const files = (process.env.KUBECONFIG ?? `${process.env.HOME}/.kube/config`).split(':').filter(Boolean);
  return files.some((file) => fs.existsSync(file));
}

export function connect(config: k8s.KubeConfig): Kube {
  return {
    config,
    writes: { count: 0 },
    mayWrite: () => true,
    applied: new Map(),
    objects: k8s.KubernetesObjectApi.makeApiClient(config),
    core: config.makeApiClient(k8s.CoreV1Api),
    custom: config.makeApiClient(k8s.CustomObjectsApi),
    admissionregistration: config.makeApiClient(k8s.AdmissionregistrationV1Api),
  };
}

export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

export const isNotFound = (err: unknown) => statusCode(err) === 404;
export const isConflict = (err: unknown) => statusCode(err) === 409;

/** The object, or undefined when it does not exist. */
export async function getObject<T extends KubeObject>(kube: Kube, header: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<T | undefined> {
  try {
    return (await kube.objects.read(header as Parameters<k8s.KubernetesObjectApi['read']>[0])) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export class NotLeaderError extends Error {
  constructor() {
    super('this replica is not the leader; it does not write');
  }
}

/** Runs one write through the leader gate and counts it. */
export async function write<T>(kube: Kube, call: () => Promise<T>): Promise<T> {
  if (!kube.mayWrite()) throw new NotLeaderError();
  kube.writes.count += 1;
  return call();
}

/** Server-side apply: declares the fields we own; an unchanged object is not written. */
export async function apply<T extends KubeObject>(kube: Kube, object: T): Promise<T> {
  return write(kube, async () => (await kube.objects.patch(object, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply)) as T);
}

/**
 * Server-side apply of an object no one was seen to have (not read first: names.ts), without
 * force. Someone who made it meanwhile owns its fields: the apply then fails (a conflict, or an
 * immutable field) rather than taking them over, and the object is read to say whose it is.
 */
export async function applyNew<T extends KubeObject>(kube: Kube, object: T): Promise<T> {
  try {
    return await write(kube, async () => (await kube.objects.patch(object, undefined, undefined, FIELD_MANAGER, false, k8s.PatchStrategy.ServerSideApply)) as T);
  } catch (err) {
    if (err instanceof NotLeaderError) throw err;
    assertOurs(await getObject(kube, object as Parameters<typeof getObject>[1]), object);
    throw err;
  }
}

type Metadata = { name?: string; namespace?: string; labels?: Record<string, string>; ownerReferences?: { uid: string }[] };

/** An object we would write exists and is someone else's: it is never adopted, overwritten or deleted. */
export class ForeignObjectError extends Error {
  /** `Kind namespace/name`, for the Conflict condition. */
  readonly object: string;
  constructor(object: string) {
    super(`${object} exists and is not managed by Portcullis; it is left untouched (delete or rename it to let Portcullis create its own)`);
    this.object = object;
  }
}

/**
 * Whether `existing` is the object `desired` describes: it names the same owner (by uid), or it
 * carries every one of desired's labels (ours from an earlier owner of the same name, such as a
 * suite deleted and applied again before garbage collection ran).
 */
export function isOurs(existing: { metadata?: Metadata }, desired: { metadata?: Metadata }): boolean {
  const want = desired.metadata ?? {};
  const have = existing.metadata ?? {};
  if (want.ownerReferences?.some((w) => have.ownerReferences?.some((h) => h.uid === w.uid))) return true;
  const labels = Object.entries(want.labels ?? {});
  return labels.length > 0 && labels.every(([k, v]) => have.labels?.[k] === v);
}

/** Throws ForeignObjectError when `existing` is there and not ours. */
export function assertOurs(existing: { metadata?: Metadata } | undefined, desired: KubeObject): void {
  if (!existing || isOurs(existing, desired)) return;
  const { namespace, name } = desired.metadata ?? {};
  throw new ForeignObjectError(`${desired.kind} ${namespace ? `${namespace}/` : ''}${name}`);
}

/** What the operator's label-selected watch caches hold of one object, by its header. */
type ObjectHeader = { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };
export type CacheLookup = ((header: ObjectHeader) => KubeObject | undefined) & {
  /** True when no object at all was seen with the header's name, ours or anyone's (names.ts): it is then written with applyNew, not read first. */
  free?: (header: ObjectHeader) => boolean;
};

/**
 * The digest of what applyOwned last applied, written on the object with it: after a restart, an
 * object that carries the digest of what we would apply, and that no one else has written since,
 * is not applied again (a restart with thousands of suites otherwise re-applies every object).
 */
export const APPLIED_DIGEST_ANNOTATION = 'admission.portcullis.dev/applied-digest';

/**
 * Server-side apply of an object that must be ours: one that exists and is someone else's is left
 * alone (ForeignObjectError). An object in our label-selected caches (`cached`) is known, so only
 * one that is not there is read first; someone else's never carries our labels, so is never there.
 * Not sent at all when the cache holds the very version our last apply of the same object made, or
 * (after a restart, with nothing remembered) an object our apply of the same digest wrote last.
 */
export async function applyOwned<T extends KubeObject>(kube: Kube, object: T, cached?: CacheLookup): Promise<T> {
  const key = `${object.apiVersion}/${object.kind}/${object.metadata?.namespace ?? ''}/${object.metadata?.name}`;
  const digest = createHash('sha256').update(JSON.stringify(object)).digest('base64');
  const known = cached?.(object);
  const last = kube.applied.get(key);
  if (known && isOurs(known, object) && (last ? last.digest === digest && last.resourceVersion === known.metadata?.resourceVersion : lastWrittenByOurApply(known, digest))) {
    if (!last && known.metadata?.resourceVersion) kube.applied.set(key, { digest, resourceVersion: known.metadata.resourceVersion });
    return known as T;
  }
  const sent = { ...object, metadata: { ...object.metadata, annotations: { ...object.metadata?.annotations, [APPLIED_DIGEST_ANNOTATION]: digest } } };
  let applied: T;
  if (!known && cached?.free?.(object)) applied = await applyNew(kube, sent);
  else {
    assertOurs(await readOurs(kube, object as Parameters<typeof getObject>[1] & { metadata: Metadata }, cached), object);
    applied = await apply(kube, sent);
  }
  const resourceVersion = applied.metadata?.resourceVersion;
  kube.applied.delete(key);
  if (resourceVersion) kube.applied.set(key, { digest, resourceVersion });
  // Bounded, oldest first: objects of suites long deleted (by the garbage collector) go in time.
  if (kube.applied.size > APPLIED_KEPT) kube.applied.delete(kube.applied.keys().next().value!);
  return applied;
}

/**
 * applyOwned, then, when someone else owns part of the object's spec, the whole object replaced
 * by ours. An apply takes back the fields we set, but leaves what others added beside them (an
 * item added to a set such as a binding's validationActions, a field we leave unset): for an
 * object whose every field must say what the suite says, a native policy, that is not healed.
 */
export async function applyOwnedExactly<T extends KubeObject>(kube: Kube, object: T, cached?: CacheLookup): Promise<T> {
  const applied = await applyOwned(kube, object, cached);
  const managers = (applied.metadata as { managedFields?: { manager?: string; fieldsV1?: unknown }[] } | undefined)?.managedFields ?? [];
  if (!managers.some((m) => m.manager !== FIELD_MANAGER && JSON.stringify(m.fieldsV1 ?? {}).includes('"f:spec"'))) return applied;
  const annotations = { ...object.metadata?.annotations, [APPLIED_DIGEST_ANNOTATION]: applied.metadata?.annotations?.[APPLIED_DIGEST_ANNOTATION] ?? '' };
  const ours = { ...object, metadata: { ...object.metadata, annotations, resourceVersion: applied.metadata?.resourceVersion } };
  return write(kube, async () => (await kube.objects.replace(ours as k8s.KubernetesObject, undefined, undefined, FIELD_MANAGER)) as T);
}

/**
 * Whether `existing` is as our apply of `digest` left it: it carries the digest, and every field
 * manager of it is our apply (anyone else's write, `kubectl edit` included, adds a manager of its own).
 */
function lastWrittenByOurApply(existing: KubeObject, digest: string): boolean {
  const metadata = existing.metadata as { annotations?: Record<string, string>; managedFields?: { manager?: string; operation?: string }[] } | undefined;
  if (metadata?.annotations?.[APPLIED_DIGEST_ANNOTATION] !== digest) return false;
  const managers = metadata.managedFields ?? [];
  return managers.length > 0 && managers.every((m) => m.manager === FIELD_MANAGER && m.operation === 'Apply');
}

/**
 * The object `desired` names as it is now: from our caches when they hold it as ours, else from
 * the API server (undefined when it does not exist, or when no one was seen to have the name: the
 * caller then writes it with applyNew). The caller decides what a foreign one means.
 */
export async function readOurs<T extends KubeObject>(kube: Kube, desired: { apiVersion: string; kind: string; metadata: Metadata & { name: string } }, cached?: CacheLookup): Promise<T | undefined> {
  const known = cached?.(desired);
  if (known && isOurs(known, desired)) return known as T;
  if (!known && cached?.free?.(desired)) return undefined;
  return getObject<T>(kube, desired);
}

export async function deleteIfExists(kube: Kube, header: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<boolean> {
  try {
    await write(kube, () => kube.objects.delete(header as k8s.KubernetesObject));
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** A short description of an API error for conditions and Events. */
export function describeError(err: unknown): string {
  const code = statusCode(err);
  const status = statusBody((err as { body?: unknown }).body);
  const message = status?.message ?? errorMessage(err).split('\n')[0]!;
  return code ? `${code}: ${message}` : message;
}

/** The API server's Status from an error body, which client-node may hand over as JSON text (even twice encoded). */
function statusBody(body: unknown): { message?: string } | undefined {
  for (let i = 0; i < 2 && typeof body === 'string'; i++) {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return body && typeof body === 'object' ? (body as { message?: string }) : undefined;
}
