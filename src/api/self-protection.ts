/**
 * What the API server must never send a webhook of ours, so that a stopped operator cannot lock the
 * cluster out of healing itself: Nodes, Leases, CertificateSigningRequests, token and access
 * reviews, and AdmissionSuites. Said once here, as data; the matchCondition the operator writes and
 * the question "could these rules reach one of them" both come from it. The configurations
 * themselves are controller/desired.ts's; the count of the API server's 64 conditions is
 * api/validate.ts's.
 */
import type { MatchCondition, RuleWithOperations } from './types.ts';

/** `resource: '*'`: every resource of the group. */
const PROTECTED: readonly { group: string; resource: string }[] = [
  { group: '', resource: 'nodes' },
  { group: 'coordination.k8s.io', resource: 'leases' },
  { group: 'certificates.k8s.io', resource: 'certificatesigningrequests' },
  { group: 'authentication.k8s.io', resource: '*' },
  { group: 'authorization.k8s.io', resource: '*' },
  { group: 'admission.portcullis.dev', resource: '*' },
];

const literal = (value: string) => `'${value}'`;

/** Evaluated by the API server, so it holds with no operator running. */
export const SELF_PROTECTION_CONDITION: MatchCondition = {
  name: 'portcullis-self-protection',
  expression: PROTECTED.map(({ group, resource }) =>
    resource === '*'
      ? `!(request.resource.group == ${literal(group)})`
      : `!(request.resource.group == ${literal(group)} && request.resource.resource == ${literal(resource)})`,
  ).join(' && '),
};

const names = (values: unknown): string[] => (Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string') : []);

/**
 * Whether some rule can match a protected resource (or one of its subresources). Only then does a
 * webhook need the condition: the API server calls a webhook only for requests its rules match,
 * and `matchPolicy: Equivalent` cannot bring a protected resource to a rule that names none, since
 * none of them is served under another group. So a webhook on ConfigMaps costs the API server no
 * CEL evaluation per request, and one on `*` keeps the guard.
 */
export function reachesProtected(rules: readonly RuleWithOperations[] | undefined): boolean {
  if (!Array.isArray(rules)) return false;
  return rules.some((rule) => {
    const groups = names(rule?.apiGroups);
    const resources = names(rule?.resources).map((r) => r.split('/')[0]);
    return PROTECTED.some(
      ({ group, resource }) =>
        (groups.includes('*') || groups.includes(group)) && resources.some((r) => resource === '*' || r === '*' || r === resource),
    );
  });
}

/** The self-protection condition for a webhook with these rules, or undefined when they cannot reach a protected resource. */
export function selfProtection(rules: readonly RuleWithOperations[] | undefined): MatchCondition | undefined {
  return reachesProtected(rules) ? SELF_PROTECTION_CONDITION : undefined;
}
