/**
 * audit: whom a target's results may be shown to. The operator lists with its own identity, so
 * results, counts or messages would tell an author about objects they may not read (issue 49: forty
 * one-bit Audit webhooks read a password back from `status.audit`). The reader is the author the API
 * server recorded (the guards' `admission.portcullis.dev/author` annotation); their `list` right where
 * judged is asked with SubjectAccessReviews, cached a minute, only through the Authorizer handed in.
 */
import type { AuthorizationUser, Authorizer } from '../api/authorization.ts';
import { CachingAuthorizer } from '../apiserver/authorizer.ts';
import type { ListableResource } from './listable-resources.ts';

/** How long an author's answer is reused: a scan asks about each resource and namespace once. */
export const ACCESS_TTL_MS = 60_000;

/**
 * Who a target's results are for. `judge`: judged only where `user` may list (an AdmissionPolicy:
 * its status and its namespace's Report are its author's to read). `count`: judged everywhere, each
 * namespace's results in that namespace's Report (for those who may read it), but counted in the
 * target's status only where `user` may list (a suite, cluster-scoped: its status is its author's).
 * `user` undefined: no author is recorded, so nothing is judged (`judge`) or counted (`count`).
 */
export interface TargetReader {
  user: AuthorizationUser | undefined;
  scope: 'judge' | 'count';
}

/** Whether a user may list a resource in a namespace ('' for all namespaces, or a cluster-scoped resource). */
export interface ListAccess {
  /** Rejects when the API server could not answer: not shown then either. */
  mayList(user: AuthorizationUser, resource: Pick<ListableResource, 'group' | 'resource'>, namespace: string): Promise<boolean>;
}

/** ListAccess by SubjectAccessReviews, each answer kept ACCESS_TTL_MS (failures are asked again). */
export class ReviewedListAccess implements ListAccess {
  private readonly authorizer: Authorizer;

  constructor(reviewer: Authorizer, ttlMs = ACCESS_TTL_MS) {
    this.authorizer = new CachingAuthorizer(reviewer, { ttlMs });
  }

  async mayList(user: AuthorizationUser, resource: Pick<ListableResource, 'group' | 'resource'>, namespace: string): Promise<boolean> {
    const decision = await this.authorizer.check({ user, resource: { verb: 'list', group: resource.group, resource: resource.resource, subresource: '', namespace, name: '' } });
    return decision.allowed;
  }
}
