/**
 * AlwaysPullImages, after the Kubernetes admission plugin: every container's imagePullPolicy becomes
 * Always, so a Pod cannot use an image pulled with someone else's credentials. On UPDATE only
 * containers whose image changed; Pods proper only, not subresources (as upstream). The validating
 * side refuses in the plugin's words and code (403), naming only the first container at fault (init
 * containers, containers, ephemeral containers), as the API server answers with the plugin's first error.
 */
import { allowed, patched, type AdmissionRequest } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { Handler } from './handler.ts';
import { forbidden } from './errors.ts';

const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

interface Container {
  name?: string;
  image?: string;
  imagePullPolicy?: string;
}

type PodSpec = Partial<Record<(typeof CONTAINER_LISTS)[number], Container[]>>;

function podSpec(object: unknown): PodSpec | undefined {
  return (object as { spec?: PodSpec } | null | undefined)?.spec;
}

/** Upstream skips UPDATEs that bring no new image: old Pods keep running as they are. */
function isRelevant(request: AdmissionRequest): boolean {
  if (request.resource.resource !== 'pods' || request.resource.group !== '') return false;
  if (request.subResource) return false;
  if (request.operation === 'CREATE') return true;
  if (request.operation !== 'UPDATE') return false;
  const oldImages = new Set(CONTAINER_LISTS.flatMap((list) => (podSpec(request.oldObject)?.[list] ?? []).map((c) => c.image)));
  return CONTAINER_LISTS.some((list) => (podSpec(request.object)?.[list] ?? []).some((c) => !oldImages.has(c.image)));
}

export const alwaysPullImages: Handler<Record<string, never>> = {
  name: 'AlwaysPullImages',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const extra = Object.keys(config);
    return { config: {}, errors: extra.map((key) => ({ field: key, message: 'AlwaysPullImages takes no configuration' })) };
  },
  mutate(request) {
    if (!isRelevant(request)) return allowed();
    const spec = podSpec(request.object);
    const ops: JsonPatchOperation[] = [];
    for (const list of CONTAINER_LISTS) {
      spec?.[list]?.forEach((container, i) => {
        if (container.imagePullPolicy === 'Always') return;
        ops.push({ op: container.imagePullPolicy === undefined ? 'add' : 'replace', path: `/spec/${list}/${i}/imagePullPolicy`, value: 'Always' });
      });
    }
    return patched(ops);
  },
  validate(request) {
    if (!isRelevant(request)) return allowed();
    const spec = podSpec(request.object);
    for (const list of CONTAINER_LISTS) {
      const i = spec?.[list]?.findIndex((c) => c.imagePullPolicy !== 'Always') ?? -1;
      if (i < 0) continue;
      return forbidden(request, `spec.${list}[${i}].imagePullPolicy: Unsupported value: "${spec![list]![i]!.imagePullPolicy ?? ''}": supported values: "Always"`);
    }
    return allowed();
  },
};
