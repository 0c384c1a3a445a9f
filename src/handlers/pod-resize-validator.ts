/**
 * PodResizeValidator, after the in-tree admission plugin of that name: an in-place resize of a
 * bound Pod (an UPDATE of pods/resize that changes its generation) is refused when its Node is
 * not Linux or cannot hold the new cpu and memory requests (the Node's allocatable, the Pod's
 * overhead counted), and when the Node is unknown. Nodes come from the shared lookup cache.
 */
import { allowed, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { ClusterView, Handler } from './handler.ts';
import { byName } from './classes.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { forbidden } from './errors.ts';
import { metadataOf, podSpecOf, type PodSpec, type ResourceList } from './pods.ts';
import { podRequests, quantities } from './pod-resources.ts';
import { compare, ZERO, type Quantity } from '../kubernetes/quantity.ts';

/** Go's Quantity.MilliValue / Value: rounded up to a whole milli-unit or unit. */
function ceilTimes(q: Quantity, factor: bigint): bigint {
  const scaled = q.num * factor;
  const whole = scaled / q.den;
  return scaled % q.den > 0n ? whole + 1n : whole;
}

/** upstream validateRequestsWithinAllocatable, in its words; undefined when the requests fit. */
function beyondAllocatable(spec: PodSpec & { overhead?: ResourceList }, allocatable: ResourceList | undefined): string | undefined {
  const requests = podRequests(spec);
  const available = quantities(allocatable);
  const messages: string[] = [];
  const cpu = [requests.get('cpu') ?? ZERO, available.get('cpu') ?? ZERO] as const;
  const memory = [requests.get('memory') ?? ZERO, available.get('memory') ?? ZERO] as const;
  if (compare(cpu[0], cpu[1]) > 0) messages.push(`cpu, requested: ${ceilTimes(cpu[0], 1000n)}, allocatable: ${ceilTimes(cpu[1], 1000n)}`);
  if (compare(memory[0], memory[1]) > 0) messages.push(`memory, requested: ${ceilTimes(memory[0], 1n)}, allocatable: ${ceilTimes(memory[1], 1n)}`);
  return messages.length ? `node didn't have enough allocatable resources: ${messages.join('; ')}` : undefined;
}

function judge(request: AdmissionRequest, view: ClusterView): Decision {
  const { group, resource } = request.resource;
  if (request.operation !== 'UPDATE' || group !== '' || resource !== 'pods' || request.subResource !== 'resize') return allowed();
  const spec = podSpecOf(request.object) as (PodSpec & { nodeName?: string; overhead?: ResourceList }) | undefined;
  const nodeName = spec?.nodeName;
  if (!spec || typeof nodeName !== 'string' || nodeName === '') return allowed();
  // Only a change of the spec moves the generation; nothing else is a resize to judge.
  if ((metadataOf(request.oldObject) as { generation?: number } | undefined)?.generation === (metadataOf(request.object) as { generation?: number } | undefined)?.generation) return allowed();
  const node = byName(view.list('Node'), nodeName);
  if (!node) return forbidden(request, `node "${nodeName}" not found`);
  const os = node.metadata?.labels?.['kubernetes.io/os'];
  if (typeof os === 'string' && os !== 'linux') return forbidden(request, `pod resize is only supported on linux nodes, node "${nodeName}" is "${os}"`);
  const status = isPlainObject(node.status) ? node.status : {};
  const beyond = beyondAllocatable(spec, status.allocatable as ResourceList | undefined);
  return beyond ? forbidden(request, beyond) : allowed();
}

export const podResizeValidator: Handler<Record<string, never>> = {
  name: 'PodResizeValidator',
  resources: [{ group: '', resource: 'pods' }],
  lookups: ['Node'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'PodResizeValidator', []);
    return { config: {}, errors: read.errors };
  },
  validate(request, _config, view) {
    return judge(request, view);
  },
};
