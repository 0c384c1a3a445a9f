/**
 * What the run's API server serves that differs across the supported Kubernetes versions (1.35 to
 * 1.37, docs/operating.md#kubernetes-versions), asked of the API server itself, and the install
 * as it is on each: on 1.35, `kubectl apply -f deploy/` makes everything but the guards'
 * MutatingAdmissionPolicies (served from 1.36) and says so for each of them, exiting 1.
 */
import { expect } from 'chai';
import { kubectl, type CommandResult } from './cluster.ts';

let mutatingPolicies: Promise<boolean> | undefined;

/** Whether the API server serves MutatingAdmissionPolicy at admissionregistration.k8s.io/v1 (1.36 and later). */
export function servesMutatingAdmissionPolicy(): Promise<boolean> {
  return (mutatingPolicies ??= (async () => {
    const result = await kubectl(['get', '--raw', '/apis/admissionregistration.k8s.io/v1']);
    expect(result.code, result.stderr).to.equal(0);
    const list = JSON.parse(result.stdout) as { resources: { name: string }[] };
    return list.resources.some((r) => r.name === 'mutatingadmissionpolicies');
  })());
}

const NOT_SERVED = /resource mapping not found for name: "[^"]+" namespace: "[^"]*" from "[^"]+": no matches for kind "MutatingAdmissionPolicy(Binding)?" in version "admissionregistration\.k8s\.io\/v1"\nensure CRDs are installed first/g;

/**
 * A `kubectl apply` or `delete` of deploy/ files: exit 0 where MutatingAdmissionPolicy is served;
 * before 1.36, kubectl does the rest and reports only that kind's objects, `expectedMissing` of
 * them (one error, or several as `[first, second]`), nothing else.
 */
export async function expectAppliedAsServed(result: CommandResult, expectedMissing: number): Promise<void> {
  if (await servesMutatingAdmissionPolicy()) {
    expect(result.code, result.stderr).to.equal(0);
    return;
  }
  expect(result.stderr.match(NOT_SERVED) ?? [], result.stderr).to.have.length(expectedMissing);
  const rest = result.stderr
    .replace(NOT_SERVED, '')
    .replace(/^error: /, '')
    .replace(/[[\],\s]/g, '');
  expect(rest, `nothing but the MutatingAdmissionPolicies is reported:\n${result.stderr}`).to.equal('');
  expect(result.code).to.equal(1);
}
