/**
 * A Pod's resources added up as the scheduler and kubelet count them (component-helpers
 * resource.PodRequests and PodLimits): containers and sidecars summed, plain init containers as
 * the largest step, pod-level resources overriding cpu and memory, and the Pod's overhead on top
 * where asked. Pure arithmetic on the Pod's spec; shared by DefaultResources and PodResizeValidator.
 */
import { add, compare, parseQuantity, type Quantity } from '../kubernetes/quantity.ts';
import type { PodSpec, ResourceList } from './pods.ts';

export type Quantities = Map<string, Quantity>;

export function quantities(list: ResourceList | undefined): Quantities {
  const out: Quantities = new Map();
  for (const [name, text] of Object.entries(list ?? {})) {
    const q = parseQuantity(text);
    if (q) out.set(name, q);
  }
  return out;
}

function addInto(total: Quantities, list: Quantities): void {
  for (const [name, q] of list) total.set(name, total.has(name) ? add(total.get(name)!, q) : q);
}

function maxInto(total: Quantities, list: Quantities): void {
  for (const [name, q] of list) if (!total.has(name) || compare(q, total.get(name)!) > 0) total.set(name, q);
}

/**
 * A Pod's effective requests or limits (upstream's podRequests/podLimits): its containers and
 * restartable init containers (sidecars) add up; a plain init container counts with the sidecars
 * started before it, and the largest of those wins where it is larger; pod-level resources,
 * when set, override cpu and memory.
 */
export function podTotals(spec: PodSpec, kind: 'requests' | 'limits'): Quantities {
  const total: Quantities = new Map();
  for (const container of spec.containers ?? []) addInto(total, quantities(container.resources?.[kind]));
  const sidecars: Quantities = new Map();
  const init: Quantities = new Map();
  for (const container of spec.initContainers ?? []) {
    const own = quantities(container.resources?.[kind]);
    if (container.restartPolicy === 'Always') {
      addInto(total, own);
      addInto(sidecars, own);
      maxInto(init, sidecars);
    } else {
      const withSidecars: Quantities = new Map(sidecars);
      addInto(withSidecars, own);
      maxInto(init, withSidecars);
    }
  }
  maxInto(total, init);
  const podLevel = quantities(spec.resources?.[kind]);
  for (const name of ['cpu', 'memory']) if (podLevel.has(name)) total.set(name, podLevel.get(name)!);
  return total;
}

/** resource.PodRequests with its default options: podTotals of the requests, plus the Pod's overhead. */
export function podRequests(spec: PodSpec & { overhead?: ResourceList }): Quantities {
  const total = podTotals(spec, 'requests');
  addInto(total, quantities(spec.overhead));
  return total;
}
