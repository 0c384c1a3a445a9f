/**
 * NamespaceProtection: deletion protection as a validating handler. No upstream plugin does this
 * (the API server itself only protects kube-system, kube-public and default); the behaviour
 * follows the deletion protection users know from Kinitiras' seed policies, OpenKruise and the
 * Kyverno/Gatekeeper samples:
 *
 * - DELETE of a Namespace named in `namespaces` is denied;
 * - DELETE of a CustomResourceDefinition is denied when `customResourceDefinitions` lists it or
 *   "*" (the default: every CRD the webhook's rules send here), since deleting a CRD deletes
 *   every object of its kind;
 * - DELETE of any object carrying the `protectionLabel` (any value; default
 *   admission.portcullis.dev/deletion-protection) is denied.
 *
 * Every denial says how to lift the protection. Only DELETE is looked at (a DeleteCollection
 * reaches webhooks as one DELETE per object). The object being deleted is the request's oldObject;
 * when the API server sends none, a Namespace's labels are read from the operator's cache, and
 * other objects are judged by name alone. The namespace controller's deletes are refused like
 * anyone's: a Namespace that holds a labelled object stays Terminating until the label goes.
 *
 * `namespaces` may not name the operator's namespace, kube-system or kube-node-lease: every
 * suite's namespaceSelector leaves them out (api/protected-namespaces.ts), so no DELETE of them
 * would ever reach this handler and the config would silently protect nothing; it is refused on
 * apply instead, naming the entry.
 */
import { allowed, denied, type AdmissionRequest } from '../api/admission-review.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader } from './config.ts';
import { metadataOf } from './pods.ts';
import { labelKeyProblem } from '../kubernetes/validation.ts';
import { protectedNamespaces, SYSTEM_NAMESPACES } from '../api/protected-namespaces.ts';

export const DEFAULT_PROTECTION_LABEL = 'admission.portcullis.dev/deletion-protection';

export interface NamespaceProtectionConfig {
  namespaces: string[];
  /** CRD names (plural.group); "*" for all. */
  customResourceDefinitions: string[];
  protectionLabel: string;
}

const isNamespace = (r: AdmissionRequest['resource']) => r.group === '' && r.resource === 'namespaces';
const isCRD = (r: AdmissionRequest['resource']) => r.group === 'apiextensions.k8s.io' && r.resource === 'customresourcedefinitions';

/** How kubectl names the resource of the request: "configmaps", "deployments.apps". */
function kubectlResource(r: AdmissionRequest['resource']): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

function describe(request: AdmissionRequest): string {
  const what = `${request.kind.kind} "${request.name ?? ''}"`;
  return request.namespace ? `${what} in namespace "${request.namespace}"` : what;
}

function labelsOf(request: AdmissionRequest, view: ClusterView): Record<string, string> {
  const meta = metadataOf(request.oldObject);
  if (meta) return meta.labels ?? {};
  if (isNamespace(request.resource) && request.name) return metadataOf(view.namespace(request.name))?.labels ?? {};
  return {};
}

/** Why deleting the object of `request` is refused, with the way to lift it; undefined when it is not. */
export function protection(request: AdmissionRequest, config: NamespaceProtectionConfig, view: ClusterView): string | undefined {
  const name = request.name ?? '';
  if (isNamespace(request.resource) && config.namespaces.includes(name)) {
    return `namespace "${name}" is protected from deletion by the namespaces of this NamespaceProtection webhook's config; ` + `to delete it, first remove "${name}" from that list in the AdmissionSuite`;
  }
  if (isCRD(request.resource) && (config.customResourceDefinitions.includes('*') || config.customResourceDefinitions.includes(name))) {
    const lift = config.customResourceDefinitions.includes(name)
      ? `first remove "${name}" from the customResourceDefinitions of this webhook's config in the AdmissionSuite`
      : 'first narrow the customResourceDefinitions of this webhook\'s config (now "*", every CRD) to the ones to keep, or exclude this CRD with the webhook\'s objectSelector, in the AdmissionSuite';
    return `CustomResourceDefinition "${name}" is protected from deletion (deleting it would delete every object of its kind); to delete it, ${lift}`;
  }
  const labels = labelsOf(request, view);
  if (config.protectionLabel in labels) {
    const namespaceFlag = request.namespace ? ` -n ${request.namespace}` : '';
    return (
      `${describe(request)} carries the label ${config.protectionLabel}, which protects it from deletion; ` +
      `to delete it, first remove the label: kubectl label ${kubectlResource(request.resource)} ${name}${namespaceFlag} ${config.protectionLabel}-`
    );
  }
  return undefined;
}

/** Why `name` cannot be protected here, in words that say where the exclusion comes from. */
function unseenNamespace(name: string, operatorNamespace: string | undefined): string {
  const which = name === operatorNamespace ? "the operator's own namespace" : name;
  const operators = operatorNamespace === undefined ? "the operator's namespace" : `the operator's namespace (${operatorNamespace})`;
  return (
    `${which} is never sent to a suite's webhooks (every namespaceSelector leaves out ${operators}, kube-system and kube-node-lease, ` +
    `so the cluster can always be repaired): NamespaceProtection would protect nothing there; remove "${name}" from namespaces`
  );
}

export const namespaceProtection: Handler<NamespaceProtectionConfig> = {
  name: 'NamespaceProtection',
  resources: [
    { group: '', resource: 'namespaces' },
    { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
    // Any object may carry the protection label.
    { group: '*', resource: '*' },
  ],
  parseConfig(config, context = {}) {
    const read = new ConfigReader(config, 'NamespaceProtection', ['namespaces', 'customResourceDefinitions', 'protectionLabel']);
    const protectionLabel = read.string('protectionLabel', DEFAULT_PROTECTION_LABEL);
    const problem = labelKeyProblem(protectionLabel);
    if (problem) read.error('protectionLabel', `must be a label key: ${problem}`);
    const parsed: NamespaceProtectionConfig = {
      namespaces: read.stringList('namespaces', []),
      customResourceDefinitions: read.stringList('customResourceDefinitions', ['*']),
      protectionLabel,
    };
    // Where the operator's namespace is not known (the review worker), the system ones still are.
    const unseen = context.operatorNamespace === undefined ? SYSTEM_NAMESPACES : protectedNamespaces(context.operatorNamespace);
    const raw = read.raw('namespaces');
    (Array.isArray(raw) ? raw : []).forEach((name, i) => {
      if (typeof name === 'string' && unseen.includes(name)) read.error(`namespaces[${i}]`, unseenNamespace(name, context.operatorNamespace));
    });
    return { config: parsed, errors: read.errors };
  },
  validate(request, config, view) {
    if (request.operation !== 'DELETE' || request.subResource) return allowed();
    const reason = protection(request, config, view);
    return reason ? denied(`NamespaceProtection: ${reason}`) : allowed();
  },
};
