/**
 * Whether a user may read what a suite names as `params`, asked of the API server as VAP asks it of a
 * binding's writer: the operator reads params with its own identity and a messageExpression can show
 * them to anyone denied, so without this it would read for an author what they may not (a confused
 * deputy). Asked on apply by the validation webhooks, and before serving, about the recorded author
 * (controller/suite-author.ts), so it holds when that webhook did not answer. Never reads the params.
 */
import type * as k8s from '@kubernetes/client-node';
import type { AuthorizationUser, Authorizer } from '../api/authorization.ts';
import type { AdmissionPolicy, AdmissionSuite, ParamsRef } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { Discovery } from './discovery.ts';
import { describeError } from './client.ts';

/** The verbs the operator uses on a params collection: the object by name, and the collection's list and watch. */
const VERBS = ['get', 'list', 'watch'] as const;

export interface ParamsUse {
  /** The field that names the params, for the refusal's message. */
  field: string;
  ref: ParamsRef;
  /** A policy's params: read in its own namespace only, so a cluster-scoped kind is refused. */
  namespacedOnly?: boolean;
}

/**
 * Every params reference of a suite: what its writer, on every create and update whatever the
 * update changed, and its recorded author, before it is served, must be allowed to read.
 * (ValidatingAdmissionPolicy asks again only when a binding's paramRef changes; here that would
 * let a writer who may not read the params change the expressions that show them: a
 * messageExpression of `string(params.data)`.)
 */
export function suiteParamsUses(suite: AdmissionSuite): ParamsUse[] {
  return (suite.spec?.webhooks ?? []).flatMap((webhook, i) => (webhook.params ? [{ field: `spec.webhooks[${i}].params`, ref: webhook.params }] : []));
}

/**
 * An AdmissionPolicy's params, read in its own namespace and only of a namespaced kind: what its
 * writer, on every write, and its recorded author, before it is served, must be allowed to read.
 */
export function policyParamsUses(policy: AdmissionPolicy): ParamsUse[] {
  const params = policy.spec?.params;
  return params ? [{ field: 'spec.params', ref: { ...params, namespace: policy.metadata.namespace }, namespacedOnly: true }] : [];
}

export class ParamsAccess {
  private readonly discovery: Discovery;
  private readonly authorizer: Authorizer;

  constructor(config: k8s.KubeConfig, authorizer: Authorizer) {
    this.discovery = config.makeApiClient(Discovery);
    this.authorizer = authorizer;
  }

  /** One error per params reference that `user` may not read in full; none when every one is readable. */
  async refusals(user: AuthorizationUser, uses: ParamsUse[]): Promise<FieldError[]> {
    const { refused, unknown } = await this.check(user, uses);
    // Unknown is not allowed: the operator would read them with its own rights.
    return [...refused, ...unknown];
  }

  /**
   * What `user` may not read (`refused`), and what could not be asked (`unknown`: the API server
   * did not answer, or does not serve the kind): the reconciler asks again about the latter
   * rather than taking a passing error for a refusal it remembers.
   */
  async check(user: AuthorizationUser, uses: ParamsUse[]): Promise<{ refused: FieldError[]; unknown: FieldError[] }> {
    const refused: FieldError[] = [];
    const unknown: FieldError[] = [];
    for (const { field, ref, namespacedOnly } of uses) {
      const what = `${ref.kind} (${ref.apiVersion}) ${ref.namespace ? `in namespace ${ref.namespace}` : 'in all namespaces'}`;
      try {
        if (namespacedOnly && (await this.discovery.lookup(ref.apiVersion, ref.kind))?.namespaced === false) {
          refused.push({ field, message: `${ref.kind} (${ref.apiVersion}) is cluster-scoped: a policy's params are read in its own namespace, so they must be of a namespaced kind` });
          continue;
        }
        const denied = await this.deniedVerbs(user, ref);
        if (denied.length === 0) continue;
        refused.push({ field, message: `user "${user.username}" may not ${denied.join(', ')} ${what}; params are read only for an author who may read them` });
      } catch (err) {
        unknown.push({ field, message: `cannot check whether user "${user.username}" may read ${what}: ${describeError(err)}` });
      }
    }
    return { refused, unknown };
  }

  private async deniedVerbs(user: AuthorizationUser, ref: ParamsRef): Promise<string[]> {
    const resource = await this.discovery.lookup(ref.apiVersion, ref.kind);
    if (!resource) throw new Error(`the API server serves no ${ref.kind} in ${ref.apiVersion}`);
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0]! : '';
    const namespace = resource.namespaced ? (ref.namespace ?? '') : '';
    // A selector names no object: as VAP asks `list` of a binding's author then, we ask list and watch.
    const verbs = ref.name ? VERBS : VERBS.filter((verb) => verb !== 'get');
    const answers = await Promise.all(
      verbs.map((verb) =>
        this.authorizer.check({
          user,
          resource: { verb, group, resource: resource.name, subresource: '', namespace, name: verb === 'get' ? (ref.name ?? '') : '' },
        }),
      ),
    );
    return verbs.filter((_, i) => !answers[i]!.allowed);
  }
}
