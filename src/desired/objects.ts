/**
 * The objects a suite should have, as pure functions of the suite, the operator's settings and
 * the certificates: the serving Secret, the Service, and the webhook configurations (the Service
 * and clientConfig shapes shared with the operator's own suite-validation webhook, controller/suite-validation-webhook.ts), and
 * the operator-owned configurations that serve every AdmissionPolicy (controller/admission-policies.ts). The
 * reconcilers apply them, the audit and the CLI read them to know what is registered; nothing here
 * talks to the API server, and nothing here may import the rooms that use it (controller, audit, cli).
 */
import { API_VERSION, KIND, type AdmissionSuite, type RuleWithOperations, type WebhookSpec, type WebhookType } from '../api/types.ts';
import { admitPath, configurationName, defaultServiceName, MANAGED_BY_LABELS, NAMESPACED, POD_LABELS, SUITE_LABEL, webhookFullName } from '../api/names.ts';
import type { OperatorConfig } from '../config.ts';
import type { KubeObject } from '../apiserver/client.ts';
import { passedThroughConditions } from '../policy/engine/match-conditions.ts';
import { registeredRules, resourceCondition } from '../api/resource-match.ts';
import { selfProtection } from '../api/self-protection.ts';
import { protectedNamespaces as protectedNamespacesOf } from '../api/protected-namespaces.ts';

const optional = <T>(value: T | undefined): T[] => (value === undefined ? [] : [value]);

export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export function ownerReference(suite: AdmissionSuite): OwnerReference {
  return { apiVersion: API_VERSION, kind: KIND, name: suite.metadata.name, uid: suite.metadata.uid, controller: true, blockOwnerDeletion: false };
}

export function metadataFor(suite: AdmissionSuite, name: string, namespace?: string): ObjectMetadata {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    labels: { ...MANAGED_BY_LABELS, [SUITE_LABEL]: suite.metadata.name },
    ownerReferences: [ownerReference(suite)],
  };
}

export interface ServiceRef {
  namespace: string;
  name: string;
  port: number;
}

export function serviceRef(suite: AdmissionSuite, config: OperatorConfig): ServiceRef {
  const service = suite.spec.service ?? {};
  return {
    namespace: service.namespace ?? config.namespace,
    name: service.name ?? defaultServiceName(suite.metadata.name),
    port: service.port ?? 443,
  };
}

/** The names the suite's serving certificate must carry. */
export function servingNames(suite: AdmissionSuite, config: OperatorConfig): string[] {
  if (suite.spec.url) return [new URL(suite.spec.url).hostname];
  const { name, namespace } = serviceRef(suite, config);
  return [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`, `${name}.${namespace}`, name];
}

export interface ObjectMetadata {
  name: string;
  namespace?: string;
  labels: Record<string, string>;
  ownerReferences: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export function tlsSecret(metadata: ObjectMetadata, certPem: string, keyPem: string, caBundle: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(certPem).toString('base64'),
      'tls.key': Buffer.from(keyPem).toString('base64'),
      'ca.crt': Buffer.from(caBundle).toString('base64'),
    },
  };
}

/**
 * A Service that brings the API server's calls on `ref.port` to the operator's pods; in local
 * mode, with no kube-proxy outside a cluster, an ExternalName the API server resolves to localhost.
 * Shared by the suites and the operator's own suite-validation webhook.
 */
export function operatorService(metadata: ObjectMetadata, ref: ServiceRef, config: OperatorConfig): KubeObject {
  const spec = config.mode === 'local' ? { type: 'ExternalName', externalName: 'localhost' } : { type: 'ClusterIP', selector: { ...POD_LABELS }, ports: [{ name: 'https', port: ref.port, targetPort: config.servingPort, protocol: 'TCP' }] };
  return { apiVersion: 'v1', kind: 'Service', metadata, spec };
}

/** A webhook's clientConfig for a Service made by operatorService. */
export function serviceClientConfig(ref: ServiceRef, path: string, config: OperatorConfig, caBundle: string) {
  // For an ExternalName Service the API server dials <externalName>:<this port>.
  const port = config.mode === 'local' ? config.servingPort : ref.port;
  return { service: { namespace: ref.namespace, name: ref.name, path, port }, caBundle: Buffer.from(caBundle).toString('base64') };
}

export function service(suite: AdmissionSuite, config: OperatorConfig): KubeObject | undefined {
  if (suite.spec.url) return undefined;
  const ref = serviceRef(suite, config);
  return operatorService(metadataFor(suite, ref.name, ref.namespace), ref, config);
}

function clientConfig(suite: AdmissionSuite, webhook: WebhookSpec, config: OperatorConfig, caBundle: string) {
  const path = admitPath(suite.metadata.name, webhook.name);
  if (suite.spec.url) return { url: `${suite.spec.url.replace(/\/+$/, '')}${path}`, caBundle: Buffer.from(caBundle).toString('base64') };
  return serviceClientConfig(serviceRef(suite, config), path, config, caBundle);
}

/** The namespaces no webhook of ours is ever called for, so the cluster can always be repaired (api/protected-namespaces.ts). */
export function protectedNamespaces(config: Pick<OperatorConfig, 'namespace'>): string[] {
  return protectedNamespacesOf(config.namespace);
}

/** A suite webhook's namespaceSelector as registered (webhook or native policy): its own or the suite's, never the protected namespaces. */
export function suiteNamespaceSelector(suite: AdmissionSuite, webhook: WebhookSpec, config: Pick<OperatorConfig, 'namespace'>) {
  const selector = webhook.namespaceSelector ?? suite.spec.namespaceSelector ?? {};
  return {
    ...selector,
    matchExpressions: [...(selector.matchExpressions ?? []), { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: protectedNamespaces(config) }],
  };
}

function webhookEntry(suite: AdmissionSuite, webhook: WebhookSpec, config: OperatorConfig, caBundle: string) {
  const failurePolicy = webhook.failurePolicy ?? suite.spec.failurePolicy ?? 'Fail';
  // resourceNames and excludeResourceRules, which webhook rules cannot hold, go to a matchCondition.
  const rules = registeredRules(webhook);
  const entry: Record<string, unknown> = {
    name: webhookFullName(suite.metadata.name, webhook.name),
    clientConfig: clientConfig(suite, webhook, config, caBundle),
    rules,
    namespaceSelector: suiteNamespaceSelector(suite, webhook, config),
    objectSelector: webhook.objectSelector ?? {},
    // Only the conditions the API server decides as VAP would; Portcullis evaluates the others.
    matchConditions: [...optional(selfProtection(rules, webhook.handler?.name)), ...optional(resourceCondition(webhook)), ...passedThroughConditions(webhook, failurePolicy)],
    matchPolicy: webhook.matchPolicy ?? 'Equivalent',
    failurePolicy,
    timeoutSeconds: webhook.timeoutSeconds ?? suite.spec.timeoutSeconds ?? 5,
    sideEffects: webhook.sideEffects ?? 'None',
    admissionReviewVersions: webhook.admissionReviewVersions ?? ['v1', 'v1beta1'],
  };
  if (webhook.type === 'Mutating') entry.reinvocationPolicy = webhook.reinvocationPolicy ?? 'Never';
  return entry;
}

export const CONFIGURATION_KINDS: Record<WebhookType, string> = {
  Mutating: 'MutatingWebhookConfiguration',
  Validating: 'ValidatingWebhookConfiguration',
};

/**
 * One configuration per webhook type the suite registers, webhooks in declared order. `registered`
 * chooses which webhooks are (all by default; those enforced natively are not, once their native
 * policy holds: controller/reconciler.ts).
 */
export function webhookConfigurations(suite: AdmissionSuite, config: OperatorConfig, caBundle: string, registered: (webhook: WebhookSpec) => boolean = () => true): Map<WebhookType, KubeObject> {
  const out = new Map<WebhookType, KubeObject>();
  for (const type of ['Mutating', 'Validating'] as const) {
    const webhooks = suite.spec.webhooks.filter((w) => w.type === type && registered(w));
    if (webhooks.length === 0) continue;
    out.set(type, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: CONFIGURATION_KINDS[type],
      metadata: metadataFor(suite, configurationName(suite.metadata.name)),
      webhooks: webhooks.map((w) => webhookEntry(suite, w, config, caBundle)),
    });
  }
  return out;
}

/** What the namespaced configurations need of the served policies. */
export interface ServedPolicy {
  namespace: string;
  rules: RuleWithOperations[];
}

/**
 * The operator-owned configuration of `type` that sends AdmissionPolicies' requests to the
 * operator (NAMESPACED.paths), through its own Service and serving certificate as the
 * suite-validation webhook. What keeps requests no policy wants from reaching the operator at all:
 * namespaceSelector lists the namespaces that have a served policy of this type (by the
 * immutable `kubernetes.io/metadata.name` label, so the operator needs no write access to
 * Namespaces and nobody can opt a namespace in or out by labelling it); rules are the union of
 * those policies' rules, namespaced resources only. The operator matches each policy's own rules
 * and objectSelector (registry/policy-webhook.ts). Undefined when no policy of this type is served.
 */
export function namespacedConfiguration(type: WebhookType, policies: ServedPolicy[], metadata: ObjectMetadata, ref: ServiceRef, config: OperatorConfig, caBundle: string): KubeObject | undefined {
  if (policies.length === 0) return undefined;
  const namespaces = [...new Set(policies.map((p) => p.namespace))].sort();
  const rules = new Map<string, RuleWithOperations>();
  for (const rule of policies.flatMap((p) => p.rules)) {
    const scoped = { operations: rule.operations, apiGroups: rule.apiGroups, apiVersions: rule.apiVersions, resources: rule.resources, scope: 'Namespaced' };
    rules.set(JSON.stringify(scoped), scoped);
  }
  const registered = [...rules.keys()].sort().map((key) => rules.get(key)!);
  const webhook: Record<string, unknown> = {
    name: NAMESPACED.webhook,
    clientConfig: serviceClientConfig(ref, NAMESPACED.paths[type], config, caBundle),
    rules: registered,
    namespaceSelector: {
      matchExpressions: [
        { key: NAMESPACE_NAME_LABEL, operator: 'In', values: namespaces },
        { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: protectedNamespaces(config) },
      ],
    },
    objectSelector: {},
    matchConditions: optional(selfProtection(registered)),
    matchPolicy: 'Equivalent',
    // A team's rules hold while the operator is down, as a suite's with Fail (only its namespaces are concerned).
    failurePolicy: 'Fail',
    timeoutSeconds: 10,
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
  };
  if (type === 'Mutating') webhook.reinvocationPolicy = 'Never';
  return { apiVersion: 'admissionregistration.k8s.io/v1', kind: CONFIGURATION_KINDS[type], metadata: { ...metadata, name: NAMESPACED.configuration }, webhooks: [webhook] };
}
