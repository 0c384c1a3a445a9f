/**
 * PodTolerationRestriction, after the in-tree admission plugin of that name. Mutating side (Pods,
 * CREATE and UPDATE): on CREATE the namespace's default tolerations (the JSON list in its
 * scheduler.alpha.kubernetes.io/defaultTolerations annotation; the config's `default` when the
 * namespace has no such annotation) are merged into the Pod's, and any Pod that is not
 * BestEffort gets the node.kubernetes.io/memory-pressure NoSchedule toleration, merged as upstream
 * (a toleration another one covers is dropped); then the whitelist is checked as below. Validating
 * side (Pods, CREATE and UPDATE): every toleration must be covered by one of the namespace's
 * whitelist (scheduler.alpha.kubernetes.io/tolerationsWhitelist; the config's `whitelist` when the
 * namespace has no such annotation; an empty list allows all). A conflict is refused with 403
 * (upstream answers a plain error, 500: see docs/handlers.md's table). A namespace not yet in the cache
 * is answered as not ready.
 */
import { allowed, denied, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import { LookupNotReady, type ClusterView, type Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { isPod, metadataOf, podSpecOf, type PodSpec } from './pods.ts';
import { mergeTolerations, verifyAgainstWhitelist, type Toleration } from './tolerations.ts';
import { compare, parseQuantity } from '../kubernetes/quantity.ts';
import { isLabelValue, isQualifiedName } from '../kubernetes/validation.ts';

export const NS_DEFAULT_TOLERATIONS = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const NS_WHITELIST_TOLERATIONS = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';
const MEMORY_PRESSURE: Toleration = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

export interface PodTolerationRestrictionConfig {
  /** Cluster default tolerations, for namespaces without the defaultTolerations annotation. */
  default: Toleration[];
  /** Cluster whitelist, for namespaces without the tolerationsWhitelist annotation; empty allows all. */
  whitelist: Toleration[];
}

/** The namespace's list under `key`: undefined without the annotation, [] for an empty one; throws on bad JSON, as upstream errs. */
function namespaceTolerations(request: AdmissionRequest, view: ClusterView, key: string): Toleration[] | undefined {
  const name = request.namespace ?? '';
  const namespace = view.namespace(name);
  if (!namespace) throw new LookupNotReady('Namespace');
  const text = metadataOf(namespace)?.annotations?.[key];
  if (text === undefined) return undefined;
  if (text === '') return [];
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error(`the ${key} annotation of namespace ${name} is not a list of tolerations`);
  return parsed as Toleration[];
}

// Pod QoS class (k8s.io/kubernetes/pkg/apis/core/helper/qos), as far as BestEffort goes.
type Resources = { requests?: Record<string, string>; limits?: Record<string, string> };
const quantity = (text: string | undefined) => (text === undefined ? undefined : parseQuantity(text)) ?? { num: 0n, den: 1n };
function bestEffortRequirements(resources: Resources | undefined): boolean {
  const requests = resources?.requests ?? {};
  const limits = resources?.limits ?? {};
  if (Object.keys(requests).length === 0 && Object.keys(limits).length === 0) return true;
  return ['cpu', 'memory'].every((r) => {
    const req = quantity(requests[r]);
    return compare(req, quantity(limits[r])) === 0 && req.num === 0n;
  });
}

export function isBestEffort(pod: Record<string, any>): boolean {
  const qos = isPlainObject(pod.status) ? pod.status.qosClass : undefined;
  if (typeof qos === 'string' && qos !== '') return qos === 'BestEffort';
  const spec = (podSpecOf(pod) ?? {}) as PodSpec;
  const podLevel = spec.resources;
  if (isPlainObject(podLevel) && (Object.keys(podLevel.requests ?? {}).length || Object.keys(podLevel.limits ?? {}).length)) return bestEffortRequirements(podLevel);
  return [...(spec.initContainers ?? []), ...(spec.containers ?? [])].every((c) => bestEffortRequirements(c.resources));
}

function checkWhitelist(request: AdmissionRequest, tolerations: Toleration[], config: PodTolerationRestrictionConfig, view: ClusterView): Decision | undefined {
  if (tolerations.length === 0) return undefined;
  let whitelist = namespaceTolerations(request, view, NS_WHITELIST_TOLERATIONS);
  let scope = 'namespace';
  if (whitelist === undefined) [whitelist, scope] = [config.whitelist, 'cluster'];
  if (verifyAgainstWhitelist(tolerations, whitelist)) return undefined;
  return denied(`pod tolerations (possibly merged with namespace default tolerations) conflict with its ${scope} whitelist`);
}

const handles = (request: AdmissionRequest) => isPod(request) && (request.operation === 'CREATE' || request.operation === 'UPDATE') && isPlainObject(request.object);

// Config --------------------------------------------------------------------------------------

const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** upstream's ValidateTolerations, field by field. */
function parseTolerations(read: ConfigReader, field: string): Toleration[] {
  const raw = read.raw(field);
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    read.error(field, 'must be a list of tolerations ({key, operator, value, effect, tolerationSeconds})');
    return [];
  }
  const out: Toleration[] = [];
  raw.forEach((item: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isPlainObject(item)) return read.error(at, 'must be a toleration');
    for (const key of Object.keys(item)) if (!['key', 'operator', 'value', 'effect', 'tolerationSeconds'].includes(key)) read.error(`${at}.${key}`, 'unknown field; a toleration takes key, operator, value, effect, tolerationSeconds');
    const str = (name: string) => {
      const value = item[name];
      if (value === undefined || value === null) return '';
      if (typeof value !== 'string') read.error(`${at}.${name}`, 'must be a string');
      return typeof value === 'string' ? value : '';
    };
    const [key, operator, value, effect] = [str('key'), str('operator'), str('value'), str('effect')];
    if (key !== '') for (const problem of isQualifiedName(key)) read.error(`${at}.key`, problem);
    if (key === '' && operator !== 'Exists') read.error(`${at}.operator`, 'operator must be Exists when `key` is empty, which means "match all values and all keys"');
    const seconds = item.tolerationSeconds;
    if (seconds !== undefined && seconds !== null && (typeof seconds !== 'number' || !Number.isSafeInteger(seconds))) read.error(`${at}.tolerationSeconds`, 'must be an integer');
    if (seconds !== undefined && seconds !== null && effect !== 'NoExecute') read.error(`${at}.effect`, "effect must be 'NoExecute' when `tolerationSeconds` is set");
    if (operator === 'Equal' || operator === '') for (const problem of isLabelValue(value)) read.error(`${at}.value`, problem);
    else if (operator === 'Exists') {
      if (value !== '') read.error(`${at}.value`, "value must be empty when `operator` is 'Exists'");
    } else read.error(`${at}.operator`, `Unsupported value: "${operator}": supported values: "Equal", "Exists"`);
    if (effect !== '' && !EFFECTS.includes(effect)) read.error(`${at}.effect`, `Unsupported value: "${effect}": supported values: "${EFFECTS.join('", "')}"`);
    out.push(item as Toleration);
  });
  return out;
}

export const podTolerationRestriction: Handler<PodTolerationRestrictionConfig> = {
  name: 'PodTolerationRestriction',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'PodTolerationRestriction', ['default', 'whitelist']);
    return { config: { default: parseTolerations(read, 'default'), whitelist: parseTolerations(read, 'whitelist') }, errors: read.errors };
  },
  mutate(request, config, view) {
    if (!handles(request)) return allowed();
    const pod = request.object as Record<string, any>;
    const current: Toleration[] = (podSpecOf(pod)?.tolerations ?? []) as Toleration[];
    let extra: Toleration[] = [];
    if (request.operation === 'CREATE') extra = namespaceTolerations(request, view, NS_DEFAULT_TOLERATIONS) ?? config.default;
    if (!isBestEffort(pod)) extra = [...extra, MEMORY_PRESSURE];
    const tolerations = extra.length ? mergeTolerations(current, extra) : current;
    const refused = checkWhitelist(request, tolerations, config, view);
    if (refused) return refused;
    if (JSON.stringify(tolerations) === JSON.stringify(current)) return allowed();
    return patched([{ op: 'add', path: '/spec/tolerations', value: tolerations }]);
  },
  validate(request, config, view) {
    if (!handles(request)) return allowed();
    return checkWhitelist(request, (podSpecOf(request.object)?.tolerations ?? []) as Toleration[], config, view) ?? allowed();
  },
};
