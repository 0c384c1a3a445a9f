/**
 * DefaultResources, after the Kubernetes LimitRanger admission plugin. The LimitRange objects of
 * the request's namespace (from the operator's watch cache; ordered by name) are applied; when the
 * namespace has none, the `limits` of the config (LimitRangeItems, defaulted as the API server
 * defaults a LimitRange: default from max, defaultRequest from default, then from min) stand in.
 *
 * Mutating side (CREATE of Pods): each container and init container that lacks a request or a
 * limit for a resource gets the `defaultRequest` / `default` of the Container-type items (the
 * first LimitRange that defaults a resource wins), and the Pod is annotated
 * kubernetes.io/limit-ranger with what was set, as upstream. Ephemeral containers take no
 * resources and are left alone.
 *
 * Validating side, as upstream: Pods on CREATE (and pods/resize, where a container's request and
 * limit that did not change are not checked again), PersistentVolumeClaims on CREATE and UPDATE
 * (requests that did not change are not checked again); a Pod UPDATE is not checked, since
 * containers cannot change. Container items bound every container and init container (min on
 * request and limit, max on limit and request, maxLimitRequestRatio on limit/request); Pod items
 * bound the Pod's effective requests and limits (the sum of its containers and restartable init
 * containers, or the largest init container if that is larger; pod-level resources when set);
 * PersistentVolumeClaim items bound spec.resources.requests. An UPDATE of an object being deleted
 * is never refused. Refused in the plugin's words and code (403): `pods "web" is forbidden:
 * <violation>`, several violations of one LimitRange as `[<a>, <b>]` (repeats once), as upstream's
 * aggregated errors read. When several LimitRanges refuse, the plugin makes one Forbidden error of
 * each and the API server answers with the first alone: here the first by name (the plugin's
 * order is its informer's, which is not fixed). The annotation reads `LimitRanger plugin set: ...`.
 */
import { allowed, patched, type AdmissionRequest } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { ClusterView, Handler } from './handler.ts';
import { compare, exceedsRatio, formatQuantity, parseQuantity, ratioString, sign, type Quantity } from '../kubernetes/quantity.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { aggregate, forbidden } from './errors.ts';
import { isPod, metadataOf, pointer, podSpecOf, type Container, type PodSpec, type ResourceList } from './pods.ts';
import { podTotals, quantities, type Quantities } from './pod-resources.ts';

export const LIMIT_RANGER_ANNOTATION = 'kubernetes.io/limit-ranger';

const LIMIT_TYPES = ['Container', 'Pod', 'PersistentVolumeClaim'] as const;
type LimitType = (typeof LIMIT_TYPES)[number];
const ITEM_LISTS = ['min', 'max', 'default', 'defaultRequest', 'maxLimitRequestRatio'] as const;

export interface LimitRangeItem {
  type: LimitType | string;
  min?: ResourceList;
  max?: ResourceList;
  default?: ResourceList;
  defaultRequest?: ResourceList;
  maxLimitRequestRatio?: ResourceList;
}

export interface DefaultResourcesConfig {
  /** Used only in namespaces that have no LimitRange. */
  limits: LimitRangeItem[];
}

interface Range {
  items: LimitRangeItem[];
}

/** The LimitRanges that apply in `namespace` (by name), or the config's limits when it has none. */
export function rangesFor(namespace: string, config: DefaultResourcesConfig, view: ClusterView): Range[] {
  const found = view
    .limitRanges(namespace)
    .map((lr) => ({ name: String(metadataOf(lr)?.name ?? ''), items: (lr.spec?.limits ?? []) as LimitRangeItem[] }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (found.length) return found.map((lr) => ({ items: lr.items }));
  return config.limits.length ? [{ items: config.limits }] : [];
}

// Defaulting ----------------------------------------------------------------------------------

/** The defaults of a LimitRange's Container items: later items override earlier ones, as upstream. */
export function containerDefaults(items: LimitRangeItem[]): { requests: ResourceList; limits: ResourceList } {
  const requests: ResourceList = {};
  const limits: ResourceList = {};
  for (const item of items) {
    if (item.type !== 'Container') continue;
    Object.assign(requests, item.defaultRequest ?? {});
    Object.assign(limits, item.default ?? {});
  }
  return { requests, limits };
}

const DEFAULTED_LISTS = [
  ['containers', 'container'],
  ['initContainers', 'init container'],
] as const;

function mutatePod(request: AdmissionRequest, config: DefaultResourcesConfig, view: ClusterView) {
  const spec = podSpecOf(request.object);
  if (!spec) return allowed();
  const ranges = rangesFor(request.namespace ?? '', config, view);
  if (ranges.length === 0) return allowed();
  const ops: JsonPatchOperation[] = [];
  const notes: string[] = [];
  for (const [list, word] of DEFAULTED_LISTS) {
    (spec[list] ?? []).forEach((container, i) => {
      const set = { requests: {} as ResourceList, limits: {} as ResourceList };
      const has = { requests: { ...(container.resources?.requests ?? {}) }, limits: { ...(container.resources?.limits ?? {}) } };
      for (const range of ranges) {
        const defaults = containerDefaults(range.items);
        for (const kind of ['requests', 'limits'] as const) {
          for (const [resource, value] of Object.entries(defaults[kind])) {
            if (resource in has[kind]) continue;
            has[kind][resource] = String(value);
            set[kind][resource] = String(value);
          }
        }
      }
      ops.push(...containerPatch(container, `/spec/${list}/${i}`, set));
      const setRequests = Object.keys(set.requests).sort();
      const setLimits = Object.keys(set.limits).sort();
      if (setRequests.length) notes.push(`${setRequests.join(', ')} request for ${word} ${container.name ?? ''}`);
      if (setLimits.length) notes.push(`${setLimits.join(', ')} limit for ${word} ${container.name ?? ''}`);
    });
  }
  if (notes.length === 0) return allowed();
  const value = `LimitRanger plugin set: ${notes.join('; ')}`;
  const annotations = metadataOf(request.object)?.annotations;
  ops.push(annotations ? { op: 'add', path: pointer('metadata', 'annotations', LIMIT_RANGER_ANNOTATION), value } : { op: 'add', path: '/metadata/annotations', value: { [LIMIT_RANGER_ANNOTATION]: value } });
  return patched(ops);
}

/** The smallest patch that adds `set` to a container's resources. */
function containerPatch(container: Container, base: string, set: { requests: ResourceList; limits: ResourceList }): JsonPatchOperation[] {
  const kinds = (['requests', 'limits'] as const).filter((kind) => Object.keys(set[kind]).length);
  if (kinds.length === 0) return [];
  if (!isPlainObject(container.resources)) {
    return [{ op: 'add', path: `${base}/resources`, value: Object.fromEntries(kinds.map((kind) => [kind, set[kind]])) }];
  }
  return kinds.flatMap((kind): JsonPatchOperation[] =>
    isPlainObject(container.resources![kind])
      ? Object.entries(set[kind]).map(([resource, value]) => ({ op: 'add', path: `${base}/resources/${kind}${pointer(resource)}`, value }))
      : [{ op: 'add', path: `${base}/resources/${kind}`, value: set[kind] }],
  );
}

// Constraints ---------------------------------------------------------------------------------

const show = (q: Quantity | undefined, text?: string) => text ?? (q ? formatQuantity(q) : '');

/**
 * The min, max and ratio checks of one item on one set of requests and limits (a container's or
 * a Pod's), skipping resources for which `unchanged` says the request and limit did not move.
 */
function checkBounds(item: LimitRangeItem, requests: Quantities, limits: Quantities, unchanged: (resource: string) => boolean): string[] {
  const type = item.type;
  const errors: string[] = [];
  const sorted = (list?: ResourceList) => Object.entries(list ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [resource, text] of sorted(item.min)) {
    const min = parseQuantity(text);
    if (!min || unchanged(resource)) continue;
    const req = requests.get(resource);
    const lim = limits.get(resource);
    if (!req) errors.push(`minimum ${resource} usage per ${type} is ${text}.  No request is specified`);
    else if (compare(min, req) > 0) errors.push(`minimum ${resource} usage per ${type} is ${text}, but request is ${show(req)}`);
    else if (lim && compare(min, lim) > 0) errors.push(`minimum ${resource} usage per ${type} is ${text}, but limit is ${show(lim)}`);
  }
  for (const [resource, text] of sorted(item.max)) {
    const max = parseQuantity(text);
    if (!max || unchanged(resource)) continue;
    const req = requests.get(resource);
    const lim = limits.get(resource);
    if (!lim) errors.push(`maximum ${resource} usage per ${type} is ${text}.  No limit is specified`);
    else if (compare(lim, max) > 0) errors.push(`maximum ${resource} usage per ${type} is ${text}, but limit is ${show(lim)}`);
    else if (req && compare(req, max) > 0) errors.push(`maximum ${resource} usage per ${type} is ${text}, but request is ${show(req)}`);
  }
  for (const [resource, text] of sorted(item.maxLimitRequestRatio)) {
    const ratio = parseQuantity(text);
    if (!ratio || unchanged(resource)) continue;
    const req = requests.get(resource);
    const lim = limits.get(resource);
    if (!req || sign(req) === 0) errors.push(`${resource} max limit to request ratio per ${type} is ${text}, but no request is specified or request is 0`);
    else if (!lim || sign(lim) === 0) errors.push(`${resource} max limit to request ratio per ${type} is ${text}, but no limit is specified or limit is 0`);
    else if (exceedsRatio(lim, req, ratio)) errors.push(`${resource} max limit to request ratio per ${type} is ${text}, but provided ratio is ${ratioString(lim, req)}`);
  }
  return errors;
}

function same(a: Quantities, b: Quantities, resource: string): boolean {
  const x = a.get(resource);
  const y = b.get(resource);
  return x === undefined || y === undefined ? x === y : compare(x, y) === 0;
}

function containerErrors(item: LimitRangeItem, spec: PodSpec, old: PodSpec | undefined): string[] {
  const errors: string[] = [];
  for (const [list] of DEFAULTED_LISTS) {
    for (const container of spec[list] ?? []) {
      const requests = quantities(container.resources?.requests);
      const limits = quantities(container.resources?.limits);
      const before = old?.[list]?.find((c) => c.name === container.name);
      const oldRequests = quantities(before?.resources?.requests);
      const oldLimits = quantities(before?.resources?.limits);
      const unchanged = (r: string) => !!before && same(requests, oldRequests, r) && same(limits, oldLimits, r);
      errors.push(...checkBounds(item, requests, limits, unchanged));
    }
  }
  return errors;
}

function podErrors(item: LimitRangeItem, spec: PodSpec, old: PodSpec | undefined): string[] {
  const requests = podTotals(spec, 'requests');
  const limits = podTotals(spec, 'limits');
  const oldRequests = old ? podTotals(old, 'requests') : undefined;
  const oldLimits = old ? podTotals(old, 'limits') : undefined;
  const unchanged = (r: string) => !!old && same(requests, oldRequests!, r) && same(limits, oldLimits!, r);
  return checkBounds(item, requests, limits, unchanged);
}

function claimErrors(item: LimitRangeItem, object: unknown, oldObject: unknown): string[] {
  const requests = quantities(podSpecOf(object)?.resources?.requests);
  const old = oldObject ? quantities(podSpecOf(oldObject)?.resources?.requests) : undefined;
  const unchanged = (r: string) => !!old && requests.has(r) && same(requests, old, r);
  // A claim's limits are not user input here: min and max bound the request only.
  const errors = checkBounds({ type: item.type, min: item.min }, requests, new Map(), unchanged);
  for (const [resource, text] of Object.entries(item.max ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const max = parseQuantity(text);
    if (!max || unchanged(resource)) continue;
    const req = requests.get(resource);
    if (!req) errors.push(`maximum ${resource} usage per ${item.type} is ${text}.  No request is specified`);
    else if (compare(req, max) > 0) errors.push(`maximum ${resource} usage per ${item.type} is ${text}, but request is ${show(req)}`);
  }
  return errors;
}

function validateRequest(request: AdmissionRequest, config: DefaultResourcesConfig, view: ClusterView) {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
  if (metadataOf(request.oldObject)?.deletionTimestamp) return allowed();
  const isClaim = request.resource.group === '' && request.resource.resource === 'persistentvolumeclaims' && !request.subResource;
  const isResize = isPod(request, ['resize']) && request.subResource === 'resize' && request.operation === 'UPDATE';
  const isPodCreate = isPod(request) && request.operation === 'CREATE';
  if (!isClaim && !isResize && !isPodCreate) return allowed();
  const spec = podSpecOf(request.object);
  if (!spec) return allowed();
  const old = isResize ? podSpecOf(request.oldObject) : undefined;
  // Each LimitRange's violations are one Forbidden error, as upstream's per-range aggregate; of several, the first is the answer.
  for (const range of rangesFor(request.namespace ?? '', config, view)) {
    const errors: string[] = [];
    for (const item of range.items) {
      errors.push(
        ...(isClaim && item.type === 'PersistentVolumeClaim'
          ? claimErrors(item, request.object, request.operation === 'UPDATE' ? request.oldObject : undefined)
          : !isClaim && item.type === 'Container'
            ? containerErrors(item, spec, old)
            : !isClaim && item.type === 'Pod'
              ? podErrors(item, spec, old)
              : []),
      );
    }
    if (errors.length) return forbidden(request, aggregate(errors));
  }
  return allowed();
}

// Config --------------------------------------------------------------------------------------

/** The API server's defaulting of a Container LimitRangeItem (SetDefaults_LimitRangeItem). */
export function defaultItem(item: LimitRangeItem): LimitRangeItem {
  if (item.type !== 'Container') return item;
  const defaults: ResourceList = { ...(item.max ?? {}), ...(item.default ?? {}) };
  const defaultRequest: ResourceList = { ...(item.min ?? {}), ...defaults, ...(item.defaultRequest ?? {}) };
  return { ...item, default: defaults, defaultRequest };
}

function parseItems(read: ConfigReader): LimitRangeItem[] {
  const raw = read.raw('limits');
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    read.error('limits', 'must be a list of LimitRangeItems ({type, min, max, default, defaultRequest, maxLimitRequestRatio})');
    return [];
  }
  const items: LimitRangeItem[] = [];
  raw.forEach((entry: unknown, i) => {
    const field = `limits[${i}]`;
    if (!isPlainObject(entry)) return read.error(field, 'must be a LimitRangeItem');
    const type = entry.type;
    if (typeof type !== 'string' || !(LIMIT_TYPES as readonly string[]).includes(type)) {
      read.error(`${field}.type`, `must be one of ${LIMIT_TYPES.join(', ')}`);
    }
    const item: LimitRangeItem = { type: String(type) };
    for (const key of Object.keys(entry)) {
      if (key !== 'type' && !(ITEM_LISTS as readonly string[]).includes(key)) read.error(`${field}.${key}`, `unknown field; a LimitRangeItem takes type, ${ITEM_LISTS.join(', ')}`);
    }
    for (const list of ITEM_LISTS) {
      const value = entry[list];
      if (value === undefined || value === null) continue;
      if (!isPlainObject(value)) {
        read.error(`${field}.${list}`, 'must be a map of resource names to quantities');
        continue;
      }
      if ((list === 'default' || list === 'defaultRequest') && type !== 'Container') {
        read.error(`${field}.${list}`, 'may only be set on a Container item');
      }
      const quantitiesOf: ResourceList = {};
      for (const [resource, text] of Object.entries(value)) {
        if (!parseQuantity(text)) read.error(`${field}.${list}.${resource}`, `"${String(text)}" is not a quantity such as 500m, 2, 128Mi`);
        else quantitiesOf[resource] = String(text);
      }
      item[list] = quantitiesOf;
    }
    const defaulted = defaultItem(item);
    const reported = new Set<string>();
    const check = (lower: keyof LimitRangeItem, upper: keyof LimitRangeItem) => {
      for (const [resource, text] of Object.entries((defaulted[lower] as ResourceList | undefined) ?? {})) {
        const high = (defaulted[upper] as ResourceList | undefined)?.[resource];
        if (high === undefined || compare(parseQuantity(text)!, parseQuantity(high)!) <= 0 || reported.has(resource)) continue;
        reported.add(resource);
        read.error(`${field}.${lower}.${resource}`, `${text} must be no greater than ${upper} ${high}`);
      }
    };
    check('min', 'max');
    check('defaultRequest', 'default');
    check('min', 'defaultRequest');
    check('default', 'max');
    for (const [resource, text] of Object.entries(item.maxLimitRequestRatio ?? {})) {
      if (compare(parseQuantity(text)!, { num: 1n, den: 1n }) < 0) read.error(`${field}.maxLimitRequestRatio.${resource}`, 'must be no less than 1');
    }
    items.push(defaulted);
  });
  return items;
}

export const defaultResources: Handler<DefaultResourcesConfig> = {
  name: 'DefaultResources',
  resources: [
    { group: '', resource: 'pods' },
    { group: '', resource: 'persistentvolumeclaims' },
  ],
  parseConfig(config) {
    const read = new ConfigReader(config, 'DefaultResources', ['limits']);
    return { config: { limits: parseItems(read) }, errors: read.errors };
  },
  mutate(request, config, view) {
    if (!isPod(request) || request.operation !== 'CREATE') return allowed();
    return mutatePod(request, config, view);
  },
  validate: validateRequest,
};
