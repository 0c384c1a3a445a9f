/**
 * What a team's AdmissionPolicy may reach beyond validate.ts' checks: a Mutating policy changes others'
 * writes, and the API server's escalation checks judge the writer, not the author. So it never touches
 * what grants rights, quotas or traffic (RBAC, ResourceQuotas, LimitRanges, Endpoints, EndpointSlices,
 * ServiceAccount tokens, the Namespace), and names at most MAX_MUTATED_RESOURCES pairs its author may
 * `update` and `patch` (asked by apiserver/policy-author.ts and by config/base/admission-policy-guard.yaml,
 * which reads the same list). Pure: owns the list and the pairs, not the checks' answers.
 */
import type { AuthorizationAttributes, AuthorizationDecision, Authorizer } from './authorization.ts';
import type { AdmissionRequest } from './admission-review.ts';
import type { NamedRuleWithOperations } from './types.ts';

/** One group/resource a policy's rules name (`resource` may carry a subresource: `deployments/scale`, `*`). */
export interface GroupResource {
  group: string;
  resource: string;
}

/**
 * Never mutated by a team's policy. `subresource` undefined: the resource and all its subresources.
 * Keep in step with the guard's `forbidden` variable (config/base/admission-policy-guard.yaml).
 */
export const NEVER_MUTATED: readonly { group: string; resource: string; subresource?: string; why: string }[] = [
  { group: 'rbac.authorization.k8s.io', resource: '*', why: 'RBAC objects grant rights' },
  { group: '', resource: 'resourcequotas', why: 'ResourceQuotas bound what every team may use' },
  { group: '', resource: 'limitranges', why: 'LimitRanges bound what every team may use' },
  { group: '', resource: 'endpoints', why: "Endpoints route a Service's traffic" },
  { group: 'discovery.k8s.io', resource: 'endpointslices', why: "EndpointSlices route a Service's traffic" },
  { group: '', resource: 'serviceaccounts', subresource: 'token', why: 'token requests mint credentials' },
  { group: '', resource: 'namespaces', why: 'the Namespace is not the team’s to change' },
];

/** The API server's guard can afford two authorizer checks (update, patch) per pair within its cost budget. */
export const MAX_MUTATED_RESOURCES = 8;

/** Every group/resource pair the rules name, in order, each once. */
export function groupResources(rules: NamedRuleWithOperations[] | undefined): GroupResource[] {
  const seen = new Set<string>();
  const out: GroupResource[] = [];
  for (const rule of Array.isArray(rules) ? rules : []) {
    for (const group of rule?.apiGroups ?? []) {
      for (const resource of rule?.resources ?? []) {
        const key = `${group}|${resource}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ group, resource });
      }
    }
  }
  return out;
}

/** `deployments/scale` -> [`deployments`, `scale`]; `pods` -> [`pods`, ``]. */
export function splitResource(resource: string): [string, string] {
  const slash = resource.indexOf('/');
  return slash < 0 ? [resource, ''] : [resource.slice(0, slash), resource.slice(slash + 1)];
}

/** Why a rule naming `pair` could reach something never mutated, or undefined. Wildcards reach everything. */
export function neverMutatedReason(pair: GroupResource): string | undefined {
  const [resource, sub] = splitResource(pair.resource);
  for (const entry of NEVER_MUTATED) {
    if (pair.group !== '*' && pair.group !== entry.group) continue;
    if (resource !== '*' && entry.resource !== '*' && resource !== entry.resource) continue;
    // `serviceaccounts` alone (no subresource) does not reach `serviceaccounts/token`.
    if (entry.subresource !== undefined && sub !== '*' && sub !== entry.subresource) continue;
    return entry.why;
  }
  return undefined;
}

/** Whether a request is for something no team's mutation may change (checked on every request, whatever the rules say). */
export function neverMutated(request: Pick<AdmissionRequest, 'resource' | 'subResource' | 'requestResource' | 'requestSubResource'>): boolean {
  const reached = (group: string, resource: string, sub: string) =>
    NEVER_MUTATED.some((entry) => entry.group === group && (entry.resource === '*' || entry.resource === resource) && (entry.subresource === undefined || entry.subresource === sub));
  // Both the resource the rules matched and the one the writer named (matchPolicy Equivalent may convert).
  if (reached(request.resource.group, request.resource.resource, request.subResource ?? '')) return true;
  const asked = request.requestResource;
  return asked !== undefined && reached(asked.group, asked.resource, request.requestSubResource ?? '');
}

/** A Mutating policy's own refusals, naming the field: what it may never reach, and how many pairs it names. */
export function mutationReachErrors(rules: NamedRuleWithOperations[] | undefined): { field: string; message: string }[] {
  const errors: { field: string; message: string }[] = [];
  (Array.isArray(rules) ? rules : []).forEach((rule, i) => {
    for (const group of rule?.apiGroups ?? []) {
      for (const resource of rule?.resources ?? []) {
        const why = neverMutatedReason({ group, resource });
        if (why) errors.push({ field: `spec.rules[${i}]`, message: `a Mutating policy may not reach ${describe({ group, resource })}: ${why}, and a team's mutation would change what others write there` });
      }
    }
  });
  // Counted as written, repeats included, as the API server's guard counts them.
  const pairs = (Array.isArray(rules) ? rules : []).reduce((n, rule) => n + (rule?.apiGroups?.length ?? 0) * (rule?.resources?.length ?? 0), 0);
  if (pairs > MAX_MUTATED_RESOURCES) {
    errors.push({ field: 'spec.rules', message: `a Mutating policy may name at most ${MAX_MUTATED_RESOURCES} group/resource pairs (its author's right to update and patch each is checked), not ${pairs}` });
  }
  return errors;
}

export function describe(pair: GroupResource): string {
  const group = pair.group === '' ? 'core' : pair.group === '*' ? 'any group' : pair.group;
  return `${pair.resource === '*' ? 'any resource' : pair.resource} (${group})`;
}

/**
 * CEL's `authorizer` for a policy of `namespace`: checks of resources in that namespace only. Any
 * other (another namespace's, a cluster-scoped resource's, a non-resource path's) is never asked and
 * is answered as a check that could not be made (not allowed, `errored()`): the operator's SubjectAccessReviews
 * must not tell a team what it could not ask the API server itself (whether some ServiceAccount
 * may list Secrets elsewhere). Checks for any user are allowed within the namespace: its
 * RoleBindings are the team's to read.
 */
export function confinedAuthorizer(namespace: string, authorizer: Authorizer): Authorizer {
  return {
    check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
      const asked = attributes.resource?.namespace;
      if (asked !== namespace) {
        const what = attributes.resource ? (asked ? `namespace ${asked}` : 'cluster-scoped resources') : 'non-resource paths';
        return Promise.reject(new Error(`authorizer: a policy in namespace ${namespace} may only ask about resources in ${namespace}, not ${what}`));
      }
      return authorizer.check(attributes);
    },
  };
}
