/**
 * What the MutatingAdmissionPolicy differentials share (test/e2e/map-differential.test.ts and
 * map-apply-differential.test.ts): a dry-run create's outcome as they compare it (the object
 * without what differs by namespace and by request, or a refusal's own words with each side's
 * wrapper taken off), an object without the row's label, the wait until a row is enforced in a
 * namespace, and the writer named as a team's policy's author. Owns these helpers only; the rows, and what each installs, are each test's.
 */
import { expect } from 'chai';
import { rawRequest } from './raw.ts';
import { eventually } from './wait.ts';
import { NAMESPACED } from '../../src/api/names.ts';

/** Each side's wrapper, in the order they are taken off: the MAP's (whatever names its policy and binding), the webhook's, then the name of the AdmissionPolicy that refused. */
const WRAPPERS = [/^(?:\S+ "[^"]*" is (?:forbidden|invalid): )?(?:MutatingAdmissionPolicy|policy) '[^']*' with binding '[^']*' denied request: /, /^admission webhook "[^"]*" denied the request: /, /^AdmissionPolicy [a-z0-9-]+: /];

export interface Outcome {
  status: number;
  /** The returned object without what differs by namespace and by request; the policy's own words when refused. */
  result: unknown;
}

/** A dry-run create of `body` at `collection` (its API path), as the differentials compare it. */
export async function dryRunCreate(collection: string, body: unknown): Promise<Outcome> {
  const response = await rawRequest('POST', `${collection}?dryRun=All`, body);
  if (response.status >= 300) return { status: response.status, result: WRAPPERS.reduce((m, w) => m.replace(w, ''), response.body.message ?? '') };
  const { name: _n, namespace: _ns, uid: _u, resourceVersion: _rv, creationTimestamp: _ct, managedFields: _mf, ...rest } = response.body.metadata as Record<string, unknown>;
  return { status: response.status, result: { ...response.body, metadata: rest } };
}

/** An object's result without the row label `label`, to compare with the same create no row selects. */
export function withoutLabel(result: unknown, label: string): unknown {
  if (typeof result !== 'object' || result === null) return result;
  const copy = structuredClone(result) as { metadata?: { labels?: Record<string, string> } };
  delete copy.metadata?.labels?.[label];
  return copy;
}

/** Whether any of `outcomes` is refused or differs from `plain` (the same creates no row selects) but for the row label. */
export function changedAny(outcomes: Outcome[], plain: Outcome[], label: string): boolean {
  return outcomes.some((o, i) => o.status >= 300 || JSON.stringify(withoutLabel(o.result, label)) !== JSON.stringify(withoutLabel(plain[i]!.result, label)));
}

/** Waits until a row is enforced where `creates` sends it: a create comes back changed or refused, beside `plain`'s. */
export async function waitEnforced(what: string, label: string, creates: () => Promise<Outcome[]>, plain: () => Promise<Outcome[]>): Promise<void> {
  await eventually(
    async () => {
      const outcomes = await creates();
      expect(changedAny(outcomes, await plain(), label), `${what}: ${JSON.stringify(outcomes)}`).to.equal(true);
    },
    { what: `${what} enforced` },
  );
}

/**
 * The writer, named as the policy's author: the install's guard records it itself where the API
 * server serves MAP v1, and on an older one (1.35) holds the writer to name themself.
 */
export async function writer(): Promise<Record<string, string>> {
  const review = await rawRequest('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  const { username, groups } = (review.body.status as { userInfo: { username: string; groups?: string[] } }).userInfo;
  return { [NAMESPACED.authorAnnotation]: username, [NAMESPACED.authorGroupsAnnotation]: (groups ?? []).join(',') };
}
