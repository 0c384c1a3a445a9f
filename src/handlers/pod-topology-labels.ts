/**
 * PodTopologyLabels, after the in-tree plugin: a Pod bound to a Node gets the Node's topology labels
 * (zone and region by default; which ones is the suite's `labels`, unlike upstream), so workloads read
 * their zone through the downward API. On a pods/binding the labels go on the Binding (the API server
 * copies them onto the Pod); on a Pod created with spec.nodeName, on the Pod. Existing values are
 * overwritten; an unknown Node copies nothing, as upstream. Nodes come from the shared lookup cache.
 */
import { allowed, patched, type AdmissionRequest } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { ClusterView, Handler } from './handler.ts';
import { byName } from './classes.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { metadataOf, pointer } from './pods.ts';
import { labelKeyProblem } from '../kubernetes/validation.ts';

export interface PodTopologyLabelsConfig {
  /** The label keys copied from the Node. */
  labels: string[];
}

export const DEFAULT_TOPOLOGY_LABELS = ['topology.kubernetes.io/zone', 'topology.kubernetes.io/region'];

/** The Node's labels among `keys` ({} for a Node the cache does not hold). */
function topologyLabels(view: ClusterView, nodeName: string, keys: string[]): Record<string, string> {
  const node = byName(view.list('Node'), nodeName);
  const labels: Record<string, string> = {};
  for (const key of keys) {
    const value = node?.metadata?.labels?.[key];
    if (typeof value === 'string') labels[key] = value;
  }
  return labels;
}

/** Patches that set `labels` on `object`'s metadata, overwriting those keys. */
function labelPatch(object: Record<string, unknown>, labels: Record<string, string>): JsonPatchOperation[] {
  const existing = metadataOf(object)?.labels;
  if (!isPlainObject(existing)) return [{ op: 'add', path: '/metadata/labels', value: labels }];
  return Object.entries(labels)
    .filter(([key, value]) => existing[key] !== value)
    .map(([key, value]) => ({ op: 'add', path: pointer('metadata', 'labels', key), value }));
}

/** The Node a Binding or a Pod binds to, or undefined when there is nothing to label. */
function boundNode(request: AdmissionRequest): string | undefined {
  const object = request.object;
  if (!isPlainObject(object) || !isPlainObject(object.metadata)) return undefined;
  if (request.subResource === 'binding') {
    // The default scheduler sets only the target's kind and name.
    const target = object.target;
    return isPlainObject(target) && target.kind === 'Node' && typeof target.name === 'string' ? target.name : undefined;
  }
  const spec = object.spec;
  return isPlainObject(spec) && typeof spec.nodeName === 'string' && spec.nodeName !== '' ? spec.nodeName : undefined;
}

export const podTopologyLabels: Handler<PodTopologyLabelsConfig> = {
  name: 'PodTopologyLabels',
  resources: [{ group: '', resource: 'pods' }],
  lookups: ['Node'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'PodTopologyLabels', ['labels']);
    const labels = read.stringList('labels', DEFAULT_TOPOLOGY_LABELS);
    labels.forEach((key, i) => {
      const problem = labelKeyProblem(key);
      if (problem) read.error(`labels[${i}]`, `must be a label key: ${problem}`);
    });
    return { config: { labels }, errors: read.errors };
  },
  mutate(request, config, view) {
    const { group, resource } = request.resource;
    if (request.operation !== 'CREATE' || group !== '' || resource !== 'pods' || (request.subResource && request.subResource !== 'binding')) return allowed();
    const node = boundNode(request);
    if (!node) return allowed();
    const labels = topologyLabels(view, node, config.labels);
    if (Object.keys(labels).length === 0) return allowed();
    const patch = labelPatch(request.object as Record<string, unknown>, labels);
    return patch.length ? patched(patch) : allowed();
  },
};
