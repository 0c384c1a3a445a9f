/**
 * Whether a Mutating AdmissionPolicy's author may themselves `update` and `patch` every group/resource
 * its rules name in its namespace (SubjectAccessReviews, as ParamsAccess asks about params): a policy
 * must not change what its author could not. Asked on apply by the policy-validation webhook; the API
 * server asks the same in config/base/admission-policy-guard.yaml while no operator answers. What is
 * never mutated is src/api/tenancy.ts'. Also an exception's (`writeRefusals`): its writer may write all it lets through.
 */
import type { AuthorizationUser, Authorizer } from '../api/authorization.ts';
import type { ExceptionWrite } from '../api/exceptions.ts';
import type { NamedRuleWithOperations } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { describe, groupResources, splitResource } from '../api/tenancy.ts';
import { describeError } from './client.ts';

/** The verbs a mutation stands in for: it rewrites an object as an update or a patch would. */
const VERBS = ['update', 'patch'] as const;

export class PolicyAuthorRights {
  private readonly authorizer: Authorizer;

  constructor(authorizer: Authorizer) {
    this.authorizer = authorizer;
  }

  /** One error (naming every pair) when `user` may not update and patch each group/resource in `namespace`; none when all are allowed. */
  async mutationRefusals(user: AuthorizationUser, namespace: string, rules: NamedRuleWithOperations[]): Promise<FieldError[]> {
    const { refused, unknown } = await this.check(user, namespace, rules);
    // Unknown is not allowed: the policy would change others' writes with the operator's reach.
    const all = [...refused, ...unknown];
    if (all.length === 0) return [];
    return [{ field: 'spec.rules', message: `${all.join('; ')}; a Mutating policy may only change what its author may update and patch` }];
  }

  /**
   * One message per write `user` may not make itself in `namespace` ('' : at the cluster scope),
   * in the API server's terms: asked of an exception's writer, which must not let others' writes
   * through that it could not make. A check that could not be asked is a refusal too (fail closed).
   */
  async writeRefusals(user: AuthorizationUser, namespace: string, writes: Pick<ExceptionWrite, 'group' | 'resource' | 'verbs'>[]): Promise<string[]> {
    const where = namespace === '' ? 'at the cluster scope' : `in namespace "${namespace}"`;
    const answers = await Promise.all(
      writes.map(async (write) => {
        const [resource, subresource] = splitResource(write.resource);
        const what = write.group === '' ? write.resource : `${write.resource}.${write.group}`;
        try {
          const decisions = await Promise.all(write.verbs.map((verb) => this.authorizer.check({ user, resource: { verb, group: write.group, resource, subresource, namespace, name: '' } })));
          const denied = write.verbs.filter((_, i) => !decisions[i]!.allowed);
          return denied.length === 0 ? [] : [`user "${user.username}" may not ${denied.join(' or ')} ${what} ${where}`];
        } catch (err) {
          return [`cannot check whether user "${user.username}" may ${write.verbs.join(' or ')} ${what} ${where}: ${describeError(err)}`];
        }
      }),
    );
    return answers.flat();
  }

  /** What `user` may not update and patch (`refused`), and what could not be asked (`unknown`: the API server did not answer). */
  async check(user: AuthorizationUser, namespace: string, rules: NamedRuleWithOperations[]): Promise<{ refused: string[]; unknown: string[] }> {
    const pairs = groupResources(rules);
    const answers = await Promise.all(
      pairs.map(async (pair) => {
        const [resource, subresource] = splitResource(pair.resource);
        try {
          const decisions = await Promise.all(VERBS.map((verb) => this.authorizer.check({ user, resource: { verb, group: pair.group, resource, subresource, namespace, name: '' } })));
          const denied = VERBS.filter((_, i) => !decisions[i]!.allowed);
          return denied.length === 0 ? undefined : { refused: `user "${user.username}" may not ${denied.join(' or ')} ${describe(pair)} in namespace ${namespace}` };
        } catch (err) {
          return { unknown: `cannot check whether user "${user.username}" may update ${describe(pair)} in namespace ${namespace}: ${describeError(err)}` };
        }
      }),
    );
    return {
      refused: answers.flatMap((a) => (a?.refused !== undefined ? [a.refused] : [])),
      unknown: answers.flatMap((a) => (a?.unknown !== undefined ? [a.unknown] : [])),
    };
  }
}
