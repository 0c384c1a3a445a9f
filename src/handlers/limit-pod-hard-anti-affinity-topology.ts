/**
 * LimitPodHardAntiAffinityTopology, after the in-tree admission plugin of that name: a Pod whose
 * required (hard) pod anti-affinity terms name a topologyKey other than kubernetes.io/hostname is
 * refused, so one Pod cannot keep a whole zone from others. CREATE and UPDATE of Pods proper.
 */
import { allowed, denied } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { isPod, metadataOf, podSpecOf } from './pods.ts';

export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

export const limitPodHardAntiAffinityTopology: Handler<Record<string, never>> = {
  name: 'LimitPodHardAntiAffinityTopology',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'LimitPodHardAntiAffinityTopology', []);
    return { config: {}, errors: read.errors };
  },
  validate(request) {
    if (!isPod(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
    const antiAffinity = (podSpecOf(request.object) as { affinity?: { podAntiAffinity?: unknown } } | undefined)?.affinity?.podAntiAffinity;
    if (!isPlainObject(antiAffinity)) return allowed();
    const terms = antiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
    for (const term of Array.isArray(terms) ? terms : []) {
      const key = isPlainObject(term) && typeof term.topologyKey === 'string' ? term.topologyKey : '';
      if (key !== HOSTNAME_LABEL) {
        // upstream names the Pod by its own name (not the request's), as apierrors.NewForbidden is given it.
        return denied(`pods "${metadataOf(request.object)?.name ?? ''}" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey ${key} but only key ${HOSTNAME_LABEL} is allowed`);
      }
    }
    return allowed();
  },
};
