/**
 * PodNodeSelector, after the Kubernetes admission plugin of that name. A namespace's
 * scheduler.alpha.kubernetes.io/node-selector annotation ("k1=v1,k2=v2"), or, when the
 * namespace has no such annotation, `clusterDefaultNodeSelector`, is merged into the nodeSelector
 * of each new Pod in it. An annotation that is present but empty opts the namespace out of the
 * cluster default, as upstream. A Pod whose nodeSelector gives a key another value than the
 * namespace's is denied; and when `namespaceAllowlists` has an entry for the namespace (upstream's
 * per-namespace whitelist), every key=value of the Pod's (merged) nodeSelector must be in it.
 *
 * The mutating side merges, then checks the allowlist (as upstream's Admit calls Validate); the
 * validating side checks the conflict and the allowlist on the Pod as it is. CREATE of Pods only,
 * as upstream. Refused in the plugin's words and code (403): `pods "web" is forbidden: pod node
 * label selector conflicts with its namespace node label selector`, or `... labels conflict with
 * its namespace whitelist`. A namespace annotation that is not a selector is refused in the
 * parser's words, with 403 where the in-tree plugin's plain error is a 500. Namespaces are read from the operator's cache; a namespace it has not seen yet is
 * an error, answered by the webhook's failurePolicy.
 */
import { allowed, denied, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader } from './config.ts';
import { isPod, metadataOf, pointer, podSpecOf } from './pods.ts';
import { isLabelValue, isQualifiedName, parseLabelSet } from '../kubernetes/validation.ts';
import { forbidden } from './errors.ts';

export const NODE_SELECTOR_ANNOTATION = 'scheduler.alpha.kubernetes.io/node-selector';

export interface PodNodeSelectorConfig {
  clusterDefaultNodeSelector: Record<string, string>;
  namespaceAllowlists: Record<string, Record<string, string>>;
}

type Labels = Record<string, string>;

/** The namespace's node selector, or a denial when its annotation is not a selector. */
function namespaceSelector(namespace: string, config: PodNodeSelectorConfig, view: ClusterView): { selector: Labels } | { decision: Decision } {
  const object = view.namespace(namespace);
  if (!object) throw new Error(`PodNodeSelector: namespace "${namespace}" is not in the operator's cache yet; retry`);
  const annotation = metadataOf(object)?.annotations?.[NODE_SELECTOR_ANNOTATION];
  if (annotation === undefined) return { selector: config.clusterDefaultNodeSelector };
  const parsed = parseLabelSet(annotation);
  // The in-tree plugin returns the parser's error as it is, which the API server sends as 500; the
  // same words here, with 403: it is the namespace, not the server, that is at fault.
  if (parsed.error) return { decision: denied(selectorError(annotation) ?? parsed.error, 'Forbidden') };
  return { selector: parsed.labels };
}

/**
 * The error of labels.ConvertSelectorToLabelsMap on `text`, in its words: an item that is not one
 * `=` (`invalid selector: [a b]`, Go's print of the split), or the field error of a bad key
 * (`<nil>: Invalid value: "k!": ...`) or value (`[key]: Invalid value: ...`). Undefined when it parses.
 */
export function selectorError(text: string): string | undefined {
  if (text === '') return undefined;
  for (const item of text.split(',')) {
    const parts = item.split('=');
    if (parts.length !== 2) return `invalid selector: [${parts.join(' ')}]`;
    const key = parts[0]!.trim();
    const keyErrors = isQualifiedName(key);
    if (keyErrors.length) return `<nil>: Invalid value: ${JSON.stringify(key)}: ${keyErrors.join('; ')}`;
    const value = parts[1]!.trim();
    const valueErrors = isLabelValue(value);
    if (valueErrors.length) return `[${key}]: Invalid value: ${JSON.stringify(value)}: ${valueErrors.join('; ')}`;
  }
  return undefined;
}

export function conflicts(a: Labels, b: Labels): string[] {
  return Object.keys(a).filter((key) => key in b && a[key] !== b[key]);
}

function checkPod(request: AdmissionRequest, nodeSelector: Labels, nsSelector: Labels, config: PodNodeSelectorConfig): Decision | undefined {
  const namespace = request.namespace ?? '';
  if (conflicts(nsSelector, nodeSelector).length) return forbidden(request, 'pod node label selector conflicts with its namespace node label selector');
  const allowlist = config.namespaceAllowlists[namespace];
  if (allowlist && Object.keys(allowlist).length) {
    const outside = Object.entries(nodeSelector).filter(([k, v]) => allowlist[k] !== v);
    if (outside.length) return forbidden(request, 'pod node label selector labels conflict with its namespace whitelist');
  }
  return undefined;
}

function handles(request: AdmissionRequest): boolean {
  return isPod(request) && request.operation === 'CREATE' && !!podSpecOf(request.object);
}

export const podNodeSelector: Handler<PodNodeSelectorConfig> = {
  name: 'PodNodeSelector',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'PodNodeSelector', ['clusterDefaultNodeSelector', 'namespaceAllowlists']);
    const parse = (field: string, text: string): Labels => {
      const parsed = parseLabelSet(text);
      if (parsed.error) read.error(field, parsed.error);
      return parsed.labels;
    };
    const clusterDefaultNodeSelector = parse('clusterDefaultNodeSelector', read.string('clusterDefaultNodeSelector', ''));
    const namespaceAllowlists: Record<string, Labels> = {};
    for (const [namespace, text] of Object.entries(read.stringMap('namespaceAllowlists'))) {
      namespaceAllowlists[namespace] = parse(`namespaceAllowlists.${namespace}`, text);
    }
    return { config: { clusterDefaultNodeSelector, namespaceAllowlists }, errors: read.errors };
  },
  mutate(request, config, view) {
    if (!handles(request)) return allowed();
    const found = namespaceSelector(request.namespace ?? '', config, view);
    if ('decision' in found) return found.decision;
    const current = podSpecOf(request.object)!.nodeSelector ?? {};
    const refused = checkPod(request, current, found.selector, config);
    if (refused) return refused;
    const merged = { ...found.selector, ...current };
    const denial = checkPod(request, merged, {}, config);
    if (denial) return denial;
    const added = Object.entries(found.selector).filter(([k]) => !(k in current));
    if (added.length === 0) return allowed();
    const ops: JsonPatchOperation[] = podSpecOf(request.object)!.nodeSelector
      ? added.map(([k, v]) => ({ op: 'add', path: pointer('spec', 'nodeSelector', k), value: v }))
      : [{ op: 'add', path: '/spec/nodeSelector', value: Object.fromEntries(added) }];
    return patched(ops);
  },
  validate(request, config, view) {
    if (!handles(request)) return allowed();
    const found = namespaceSelector(request.namespace ?? '', config, view);
    if ('decision' in found) return found.decision;
    return checkPod(request, podSpecOf(request.object)!.nodeSelector ?? {}, found.selector, config) ?? allowed();
  },
};
