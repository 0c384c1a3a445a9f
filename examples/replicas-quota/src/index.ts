/**
 * ReplicasQuota: a limit on the total replicas of the Deployments of one namespace (the quota row
 * of volcano's admission service: count what exists, deny what would exceed it). It counts from
 * the operator's Deployment cache (`lookups: ['Deployment']`), never the API server on the request
 * path; the limit is `maxReplicas`, or the namespace's own when it carries the annotation named by
 * `namespaceAnnotation`.
 *
 * Under concurrent creates it is not exact, and says so: each request is judged against the cache
 * before the others are in it, so N Deployments created at one moment may together exceed the limit
 * by up to what they ask. Scaling down is always allowed (a namespace over its limit can come back
 * under it). ResourceQuota is the API server's exact, atomic count; this is a cheaper fence for what
 * ResourceQuota cannot express.
 *
 * A Portcullis handler module (portcullis/sdk): built into dist/index.js (npm run build), loaded by
 * the operator from --handler-modules, named by suites as `handler: {name: example.portcullis.dev/ReplicasQuota, config: {maxReplicas: 10}}`.
 */
import { ConfigReader, HANDLER_API_VERSION, allow, deny, type AdmissionRequest, type ClusterView, type CustomHandler } from 'portcullis/sdk';

export const apiVersion = HANDLER_API_VERSION;

export interface ReplicasQuotaConfig {
  maxReplicas: number;
  /** A Namespace annotation whose value (a whole number) is that namespace's limit instead. */
  namespaceAnnotation?: string;
}

/** A Deployment's replicas as the API server defaults them (1 when unset). */
export const replicasOf = (object: Record<string, any> | null | undefined): number => (typeof object?.spec?.replicas === 'number' ? object.spec.replicas : 1);

function parseConfig(config: Record<string, unknown>): { config: ReplicasQuotaConfig; errors: { field: string; message: string }[] } {
  // The built-ins' reader: unknown fields and types refused by field name.
  const read = new ConfigReader(config, 'ReplicasQuota', ['maxReplicas', 'namespaceAnnotation']);
  if (!read.has('maxReplicas')) read.error('maxReplicas', 'required: the most replicas the Deployments of a namespace may have together');
  const maxReplicas = read.integer('maxReplicas', 0);
  const namespaceAnnotation = read.string('namespaceAnnotation', '');
  return { config: { maxReplicas, ...(namespaceAnnotation ? { namespaceAnnotation } : {}) }, errors: read.errors };
}

/** The namespace's limit: its annotation's when it has a whole number there, else maxReplicas. */
function limitOf(namespace: string, config: ReplicasQuotaConfig, view: ClusterView): number {
  const value = config.namespaceAnnotation && view.namespace(namespace)?.metadata?.annotations?.[config.namespaceAnnotation];
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : config.maxReplicas;
}

function validate(request: AdmissionRequest, config: ReplicasQuotaConfig, view: ClusterView) {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allow();
  const namespace = request.namespace ?? '';
  // The Deployment itself, or its scale subresource (kubectl scale: a Scale whose spec.replicas is the new count).
  const name = request.name || (request.object as Record<string, any> | undefined)?.metadata?.name;
  const asked = replicasOf(request.object as Record<string, any>);
  if (request.operation === 'UPDATE' && asked <= replicasOf(request.oldObject as Record<string, any>)) return allow();
  const others = view.list('Deployment', namespace).filter((d) => d.metadata?.name !== name);
  const used = others.reduce((sum, d) => sum + replicasOf(d), 0);
  const limit = limitOf(namespace, config, view);
  if (used + asked <= limit) return allow();
  return deny(403, 'Forbidden', `exceeded quota: the Deployments of namespace ${namespace} may have ${limit} replicas in total; ${used} are used by ${others.length} other Deployment(s), and ${name} asks for ${asked}`);
}

export const replicasQuota: CustomHandler<ReplicasQuotaConfig> = {
  name: 'example.portcullis.dev/ReplicasQuota',
  resources: [{ group: 'apps', resource: 'deployments' }],
  lookups: ['Deployment'],
  parseConfig,
  validate,
};

export const handlers = [replicasQuota];
