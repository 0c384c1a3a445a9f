/**
 * ExtendedResourceToleration, after the in-tree admission plugin of that name: a Pod whose
 * containers or init containers request an extended resource (example.com/gpu: not in the
 * kubernetes.io domain, not `requests.`-prefixed) gets a toleration {key: <resource>, operator:
 * Exists, effect: NoSchedule} for each, in name order, so it can land on the nodes tainted for
 * that hardware. CREATE and UPDATE of Pods proper.
 */
import { allowed, patched } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader } from './config.ts';
import { isPod, podSpecOf } from './pods.ts';
import { isQualifiedName } from '../kubernetes/validation.ts';
import { addOrUpdateToleration, type Toleration } from './tolerations.ts';

/** upstream's IsExtendedResourceName. */
export function isExtendedResourceName(name: string): boolean {
  const native = !name.includes('/') || name.includes('kubernetes.io/');
  if (native || name.startsWith('requests.')) return false;
  return isQualifiedName(`requests.${name}`).length === 0;
}

export const extendedResourceToleration: Handler<Record<string, never>> = {
  name: 'ExtendedResourceToleration',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'ExtendedResourceToleration', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request) {
    if (!isPod(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
    const spec = podSpecOf(request.object);
    if (!spec) return allowed();
    const resources = new Set<string>();
    for (const container of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
      for (const name of Object.keys(container.resources?.requests ?? {})) if (isExtendedResourceName(name)) resources.add(name);
    }
    let tolerations: Toleration[] = spec.tolerations ?? [];
    let changed = false;
    for (const key of [...resources].sort()) {
      const next = addOrUpdateToleration(tolerations, { key, operator: 'Exists', effect: 'NoSchedule' });
      if (next) [tolerations, changed] = [next, true];
    }
    return changed ? patched([{ op: 'add', path: '/spec/tolerations', value: tolerations }]) : allowed();
  },
};
