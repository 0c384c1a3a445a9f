/**
 * desired/native: a webhook planned Native (api/enforcement.ts) compiled into a ValidatingAdmissionPolicy
 * and binding (for `portcullis compile`, a Mutating one into a MutatingAdmissionPolicy), named as its
 * webhook (`<webhook>.<suite>.admission.portcullis.dev`) and owned by the suite. Pure: the reconciler
 * applies it; nothing here talks to the API server, and nothing may approximate: a webhook a native
 * policy cannot say in full stays a webhook, with the reason.
 */
import { webhookFullName } from '../api/names.ts';
import { selfProtection } from '../api/self-protection.ts';
import type { AdmissionSuite, NamedRuleWithOperations, WebhookSpec } from '../api/types.ts';
import type { OperatorConfig } from '../config.ts';
import { metadataFor, suiteNamespaceSelector } from './objects.ts';
import type { KubeObject } from '../apiserver/client.ts';

export const NATIVE_API_VERSION = 'admissionregistration.k8s.io/v1';
export const NATIVE_KINDS = { policy: 'ValidatingAdmissionPolicy', binding: 'ValidatingAdmissionPolicyBinding' } as const;

/** The name of the native policy and binding of a webhook (the webhook's registered name). */
export const nativeName = (suite: string, webhook: string): string => webhookFullName(suite, webhook);

const copyRule = ({ operations, apiGroups, apiVersions, resources, scope, resourceNames }: NamedRuleWithOperations) => ({
  ...(operations ? { operations } : {}),
  ...(apiGroups ? { apiGroups } : {}),
  ...(apiVersions ? { apiVersions } : {}),
  ...(resources ? { resources } : {}),
  ...(scope ? { scope } : {}),
  ...(resourceNames?.length ? { resourceNames } : {}),
});

/**
 * The ValidatingAdmissionPolicy and binding that enforce `webhook` as its webhook would: the same
 * rules (with names and exclusions, which a policy says itself), the same selectors with the same
 * protected namespaces left out, the same self-protection condition, then the webhook's own
 * conditions, variables, validations, audit annotations, failurePolicy, actions and params.
 */
export function nativeObjects(suite: AdmissionSuite, webhook: WebhookSpec, config: Pick<OperatorConfig, 'namespace'>): KubeObject[] {
  const name = nativeName(suite.metadata.name, webhook.name);
  const policy = {
    apiVersion: NATIVE_API_VERSION,
    kind: NATIVE_KINDS.policy,
    metadata: metadataFor(suite, name),
    spec: {
      ...matching(suite, webhook, config),
      ...(webhook.validations?.length ? { validations: webhook.validations } : {}),
      ...(webhook.auditAnnotations?.length ? { auditAnnotations: webhook.auditAnnotations } : {}),
    },
  };
  const binding = {
    apiVersion: NATIVE_API_VERSION,
    kind: NATIVE_KINDS.binding,
    metadata: metadataFor(suite, name),
    spec: { policyName: name, validationActions: webhook.validationActions ?? ['Deny'], ...paramRef(webhook) },
  };
  return [policy, binding];
}

/**
 * The MutatingAdmissionPolicy and binding a Mutating webhook is, for `portcullis compile` (the
 * operator keeps such a webhook a webhook: api/enforcement.ts says why): matched as the VAP above
 * is, its mutations (MAP's own entries, api/enforcement.ts' mutatingPolicyObstacles holds the
 * others back) and reinvocationPolicy as they are.
 */
export function mutatingPolicyObjects(suite: AdmissionSuite, webhook: WebhookSpec, config: Pick<OperatorConfig, 'namespace'>): KubeObject[] {
  const name = nativeName(suite.metadata.name, webhook.name);
  const policy = {
    apiVersion: NATIVE_API_VERSION,
    kind: MUTATING_KINDS.policy,
    metadata: metadataFor(suite, name),
    spec: { ...matching(suite, webhook, config), mutations: webhook.mutations ?? [], reinvocationPolicy: webhook.reinvocationPolicy ?? 'Never' },
  };
  const binding = { apiVersion: NATIVE_API_VERSION, kind: MUTATING_KINDS.binding, metadata: metadataFor(suite, name), spec: { policyName: name, ...paramRef(webhook) } };
  return [policy, binding];
}

const MUTATING_KINDS = { policy: 'MutatingAdmissionPolicy', binding: 'MutatingAdmissionPolicyBinding' } as const;

/** What a policy of either kind says of where it applies, as the webhook's registration and conditions say it. */
function matching(suite: AdmissionSuite, webhook: WebhookSpec, config: Pick<OperatorConfig, 'namespace'>) {
  const rules = webhook.rules.map(copyRule);
  const guard = selfProtection(rules);
  const params = webhook.params;
  return {
    failurePolicy: webhook.failurePolicy ?? suite.spec.failurePolicy ?? 'Fail',
    ...(params ? { paramKind: { apiVersion: params.apiVersion, kind: params.kind } } : {}),
    matchConstraints: {
      resourceRules: rules,
      ...(webhook.excludeResourceRules?.length ? { excludeResourceRules: webhook.excludeResourceRules.map(copyRule) } : {}),
      namespaceSelector: suiteNamespaceSelector(suite, webhook, config),
      objectSelector: webhook.objectSelector ?? {},
      matchPolicy: webhook.matchPolicy ?? 'Equivalent',
    },
    ...(guard || webhook.matchConditions?.length ? { matchConditions: [...(guard ? [guard] : []), ...(webhook.matchConditions ?? [])] } : {}),
    ...(webhook.variables?.length ? { variables: webhook.variables } : {}),
  };
}

/** A binding's paramRef, for a webhook with params. */
function paramRef({ params }: WebhookSpec) {
  if (!params) return {};
  return {
    paramRef: {
      ...(params.name !== undefined ? { name: params.name } : {}),
      ...(params.selector !== undefined ? { selector: params.selector } : {}),
      ...(params.namespace !== undefined ? { namespace: params.namespace } : {}),
      parameterNotFoundAction: params.notFoundAction ?? 'Deny',
    },
  };
}
