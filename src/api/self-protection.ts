/**
 * What the API server must never send a webhook of ours, so a stopped operator cannot lock the cluster
 * out of healing itself (Nodes, Leases, CSRs, token and access reviews, AdmissionSuites), said once as
 * data for both the matchCondition written and "could these rules reach one". Configurations are
 * desired/objects.ts's, the 64-condition count api/validate.ts's. One opt-in exception: a certificate
 * plugin's webhook (CSR_HANDLERS) is sent CSRs, its suite warned on apply (csrLockOutWarnings).
 */
import type { MatchCondition, RuleWithOperations, SuiteSpec } from './types.ts';

/** `resource: '*'`: every resource of the group. */
const PROTECTED: readonly { group: string; resource: string }[] = [
  { group: '', resource: 'nodes' },
  { group: 'coordination.k8s.io', resource: 'leases' },
  { group: 'certificates.k8s.io', resource: 'certificatesigningrequests' },
  { group: 'authentication.k8s.io', resource: '*' },
  { group: 'authorization.k8s.io', resource: '*' },
  { group: 'admission.portcullis.dev', resource: '*' },
];

const CSRS = PROTECTED.find((p) => p.resource === 'certificatesigningrequests')!;

/**
 * The handlers whose webhooks are sent CertificateSigningRequests (the in-tree certificate
 * plugins re-created): naming one is the suite author's opt-in; every other protected resource
 * stays away from them too.
 */
export const CSR_HANDLERS: readonly string[] = ['CertificateApproval', 'CertificateSigning', 'CertificateSubjectRestriction'];

const optsIntoCsrs = (handler: string | undefined) => handler !== undefined && CSR_HANDLERS.includes(handler);
const protectedFor = (handler: string | undefined) => (optsIntoCsrs(handler) ? PROTECTED.filter((p) => p !== CSRS) : PROTECTED);

const literal = (value: string) => `'${value}'`;

function conditionOf(resources: readonly { group: string; resource: string }[]): MatchCondition {
  return {
    name: 'portcullis-self-protection',
    expression: resources
      .map(({ group, resource }) => (resource === '*' ? `!(request.resource.group == ${literal(group)})` : `!(request.resource.group == ${literal(group)} && request.resource.resource == ${literal(resource)})`))
      .join(' && '),
  };
}

/** Evaluated by the API server, so it holds with no operator running. */
export const SELF_PROTECTION_CONDITION: MatchCondition = conditionOf(PROTECTED);

/** The same, CertificateSigningRequests let through: a certificate handler's webhook's (same name). */
export const CSR_OPT_IN_CONDITION: MatchCondition = conditionOf(protectedFor(CSR_HANDLERS[0]));

const names = (values: unknown): string[] => (Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string') : []);

/**
 * Whether some rule can match a protected resource (or one of its subresources). Only then does a
 * webhook need the condition: the API server calls a webhook only for requests its rules match,
 * and `matchPolicy: Equivalent` cannot bring a protected resource to a rule that names none, since
 * none of them is served under another group. So a webhook on ConfigMaps costs the API server no
 * CEL evaluation per request, and one on `*` keeps the guard.
 */
export function reachesProtected(rules: readonly RuleWithOperations[] | undefined, handler?: string): boolean {
  return reaches(rules, protectedFor(handler));
}

/** Whether some rule can match one of `resources` (or a subresource of one). */
function reaches(rules: readonly RuleWithOperations[] | undefined, resources: readonly { group: string; resource: string }[]): boolean {
  if (!Array.isArray(rules)) return false;
  return rules.some((rule) => {
    const groups = names(rule?.apiGroups);
    const named = names(rule?.resources).map((r) => r.split('/')[0]);
    return resources.some(({ group, resource }) => (groups.includes('*') || groups.includes(group)) && named.some((r) => resource === '*' || r === '*' || r === resource));
  });
}

/**
 * The self-protection condition for a webhook with these rules and this handler (its name), or
 * undefined when they cannot reach a resource protected from it.
 */
export function selfProtection(rules: readonly RuleWithOperations[] | undefined, handler?: string): MatchCondition | undefined {
  if (!reachesProtected(rules, handler)) return undefined;
  return optsIntoCsrs(handler) ? CSR_OPT_IN_CONDITION : SELF_PROTECTION_CONDITION;
}

/**
 * What a suite is told on apply for each webhook that opts into CertificateSigningRequests and
 * whose rules reach them: with failurePolicy Fail (the default), while no operator replica
 * answers, the API server refuses every such request, kubelets' certificates included; with
 * Ignore, such requests then go unchecked.
 */
export function csrLockOutWarnings(spec: SuiteSpec | undefined): string[] {
  const webhooks = Array.isArray(spec?.webhooks) ? spec.webhooks : [];
  return webhooks.flatMap((webhook, i) => {
    const handler = webhook?.handler?.name;
    if (!optsIntoCsrs(handler) || !reaches(webhook.rules, [CSRS])) return [];
    const field = `spec.webhooks[${i}] (${webhook.name})`;
    const failurePolicy = webhook.failurePolicy ?? spec?.failurePolicy ?? 'Fail';
    return failurePolicy === 'Fail'
      ? [
          `${field}: handler ${handler} is sent CertificateSigningRequests, which Portcullis otherwise keeps from every webhook: with failurePolicy Fail, ` +
            'while no operator replica answers, the API server refuses every CertificateSigningRequest request its rules match, ' +
            "kubelets' client and serving certificates included (nodes cannot join or renew); run several replicas, or accept the risk knowingly",
        ]
      : [`${field}: handler ${handler} is sent CertificateSigningRequests with failurePolicy Ignore: while no operator replica answers, those requests are admitted unchecked`];
  });
}
