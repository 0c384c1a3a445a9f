/**
 * Priority, after the in-tree plugin, on two webhooks as upstream's two sides. Mutating (Pods): on CREATE
 * priorityClassName resolved (none: the global default, the lowest-valued if several; no default:
 * priority 0, PreemptLowerPriority), spec.priority and preemptionPolicy set from it, an unknown class or
 * a differing preset refused; on UPDATE what is left out is kept from the old Pod. Validating
 * (PriorityClasses): a second globalDefault refused. PodGroups left alone, as upstream with its
 * GenericWorkload feature off (the default). PriorityClasses come from the shared lookup cache.
 */
import { allowed, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { isPod } from './pods.ts';
import { byName } from './classes.ts';
import { forbidden } from './errors.ts';

type Obj = Record<string, any>;

/** The class that gives Pods without priorityClassName their priority: the globalDefault one of lowest value. */
export function defaultPriorityClass(view: ClusterView): Obj | undefined {
  let found: Obj | undefined;
  for (const pc of view.list('PriorityClass')) if (pc.globalDefault === true && (!found || found.value > pc.value)) found = pc;
  return found;
}

function admitPod(request: AdmissionRequest, view: ClusterView): Decision {
  const pod = request.object;
  if (!isPlainObject(pod)) return allowed();
  const spec: Obj = isPlainObject(pod.spec) ? pod.spec : {};
  const ops: JsonPatchOperation[] = [];
  const set = (field: string, value: unknown) => ops.push({ op: 'add', path: `/spec/${field}`, value });
  if (request.operation === 'UPDATE') {
    const old: Obj = isPlainObject(request.oldObject) && isPlainObject(request.oldObject.spec) ? request.oldObject.spec : {};
    if (spec.priority == null && old.priority != null) set('priority', old.priority);
    if (spec.preemptionPolicy == null && old.preemptionPolicy != null) set('preemptionPolicy', old.preemptionPolicy);
    return isPlainObject(pod.spec) ? patched(ops) : allowed();
  }
  let name = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
  let priority: number;
  let preemptionPolicy: string | undefined;
  if (name === '') {
    const pc = defaultPriorityClass(view);
    [name, priority, preemptionPolicy] = pc ? [pc.metadata.name, pc.value, pc.preemptionPolicy] : ['', 0, 'PreemptLowerPriority'];
  } else {
    const pc = byName(view.list('PriorityClass'), name);
    if (!pc) return forbidden(request, `no PriorityClass with name ${name} was found`);
    [priority, preemptionPolicy] = [pc.value, pc.preemptionPolicy];
  }
  if (name !== (spec.priorityClassName ?? '')) set('priorityClassName', name);
  if (spec.priority != null && spec.priority !== priority) {
    return forbidden(request, `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`);
  }
  if (spec.priority == null) set('priority', priority);
  if (preemptionPolicy != null) {
    if (spec.preemptionPolicy != null && spec.preemptionPolicy !== preemptionPolicy) {
      return forbidden(request, `the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${preemptionPolicy} from the given PriorityClass name`);
    }
    if (spec.preemptionPolicy == null) set('preemptionPolicy', preemptionPolicy);
  }
  if (!isPlainObject(pod.spec)) return patched([{ op: 'add', path: '/spec', value: Object.fromEntries(ops.map((op) => [op.path.slice('/spec/'.length), op.value])) }]);
  return patched(ops);
}

function validatePriorityClass(request: AdmissionRequest, view: ClusterView): Decision {
  const pc = request.object;
  if (!isPlainObject(pc) || pc.globalDefault !== true) return allowed();
  const current = defaultPriorityClass(view);
  if (!current) return allowed();
  if (request.operation === 'CREATE' || current.metadata.name !== (isPlainObject(pc.metadata) ? pc.metadata.name : undefined)) {
    return forbidden(request, `PriorityClass ${current.metadata.name} is already marked as default. Only one default can exist`);
  }
  return allowed();
}

const isPriorityClass = (request: AdmissionRequest) => request.resource.group === 'scheduling.k8s.io' && request.resource.resource === 'priorityclasses' && !request.subResource;

export const priority: Handler<Record<string, never>> = {
  name: 'Priority',
  resources: [
    { group: '', resource: 'pods' },
    { group: 'scheduling.k8s.io', resource: 'priorityclasses' },
  ],
  lookups: ['PriorityClass'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'Priority', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request, _config, view) {
    if (!isPod(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
    return admitPod(request, view);
  },
  validate(request, _config, view) {
    if (!isPriorityClass(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
    return validatePriorityClass(request, view);
  },
};
