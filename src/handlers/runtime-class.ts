/**
 * RuntimeClass, after the in-tree admission plugin, on two webhooks (Pods, CREATE) as upstream's two
 * sides. Mutating: a Pod naming a runtimeClassName gets its overhead (a differing preset one refused),
 * its scheduling nodeSelector merged (a key set to another value refused) and its tolerations merged
 * as upstream; an unknown RuntimeClass is refused. Validating: the Pod's overhead must be the
 * RuntimeClass's (none without one). RuntimeClasses come from the shared lookup cache.
 */
import { allowed, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { isPod, podSpecOf, type ResourceList } from './pods.ts';
import { byName } from './classes.ts';
import { forbidden } from './errors.ts';
import { mergeTolerations, type Toleration } from './tolerations.ts';
import { compare, parseQuantity } from '../kubernetes/quantity.ts';

type Obj = Record<string, any>;

/** Semantic equality of resource lists: the same names, equal quantities; an empty list is no list. */
export function sameResources(a: ResourceList | undefined, b: ResourceList | undefined): boolean {
  const [x, y] = [a ?? {}, b ?? {}];
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  return keys.every((k) => {
    if (!(k in y)) return false;
    const [p, q] = [parseQuantity(x[k]), parseQuantity(y[k])];
    return p && q ? compare(p, q) === 0 : x[k] === y[k];
  });
}

/** The RuntimeClass a Pod names: undefined when it names none; a refusal when it names one that does not exist. */
function runtimeClassOf(request: AdmissionRequest, view: ClusterView): { runtimeClass?: Obj; refused?: Decision } {
  const name = (podSpecOf(request.object) as Obj | undefined)?.runtimeClassName;
  if (typeof name !== 'string') return {};
  const runtimeClass = byName(view.list('RuntimeClass'), name);
  if (!runtimeClass) return { refused: forbidden(request, `pod rejected: RuntimeClass "${name}" not found`) };
  return { runtimeClass };
}

const OVERHEAD_DIFFERS = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";
const handles = (request: AdmissionRequest) => isPod(request) && request.operation === 'CREATE' && isPlainObject(request.object) && isPlainObject(request.object.spec);

function admit(request: AdmissionRequest, view: ClusterView): Decision {
  const { runtimeClass, refused } = runtimeClassOf(request, view);
  if (refused) return refused;
  if (!runtimeClass) return allowed();
  const spec = request.object!.spec as Obj;
  const ops: JsonPatchOperation[] = [];
  if (isPlainObject(runtimeClass.overhead)) {
    const fixed = runtimeClass.overhead.podFixed as ResourceList | undefined;
    const preset = spec.overhead as ResourceList | undefined;
    if (preset && Object.keys(preset).length > 0 && !sameResources(fixed, preset)) return forbidden(request, OVERHEAD_DIFFERS);
    if (fixed !== undefined) ops.push({ op: 'add', path: '/spec/overhead', value: fixed });
    else if (preset !== undefined) ops.push({ op: 'remove', path: '/spec/overhead' });
  }
  if (isPlainObject(runtimeClass.scheduling)) {
    const classSelector = (runtimeClass.scheduling.nodeSelector ?? {}) as Record<string, string>;
    let selector: Record<string, string> | undefined = spec.nodeSelector;
    if (!selector) selector = runtimeClass.scheduling.nodeSelector as Record<string, string> | undefined;
    else {
      selector = { ...selector };
      for (const [key, value] of Object.entries(classSelector)) {
        if (key in selector && selector[key] !== value) {
          return forbidden(request, `conflict: runtimeClass.scheduling.nodeSelector[${key}] = ${value}; pod.spec.nodeSelector[${key}] = ${selector[key]}`);
        }
        selector[key] = value;
      }
    }
    if (selector && JSON.stringify(selector) !== JSON.stringify(spec.nodeSelector)) ops.push({ op: 'add', path: '/spec/nodeSelector', value: selector });
    const current = (spec.tolerations ?? []) as Toleration[];
    const merged = mergeTolerations(current, (runtimeClass.scheduling.tolerations ?? []) as Toleration[]);
    if (JSON.stringify(merged) !== JSON.stringify(current)) ops.push({ op: 'add', path: '/spec/tolerations', value: merged });
  }
  return patched(ops);
}

function validate(request: AdmissionRequest, view: ClusterView): Decision {
  const { runtimeClass, refused } = runtimeClassOf(request, view);
  if (refused) return refused;
  const overhead = (request.object!.spec as Obj).overhead as ResourceList | undefined;
  if (runtimeClass && isPlainObject(runtimeClass.overhead)) {
    if (!sameResources(runtimeClass.overhead.podFixed as ResourceList | undefined, overhead)) return forbidden(request, OVERHEAD_DIFFERS);
  } else if (overhead !== undefined && overhead !== null) {
    return forbidden(request, 'pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead');
  }
  return allowed();
}

export const runtimeClass: Handler<Record<string, never>> = {
  name: 'RuntimeClass',
  resources: [{ group: '', resource: 'pods' }],
  lookups: ['RuntimeClass'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'RuntimeClass', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request, _config, view) {
    return handles(request) ? admit(request, view) : allowed();
  },
  validate(request, _config, view) {
    return handles(request) ? validate(request, view) : allowed();
  },
};
