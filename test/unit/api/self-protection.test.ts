/**
 * Self-protection (src/api/self-protection.ts): the condition the API server evaluates keeps every
 * protected resource away and lets others through, and a webhook carries it exactly when its rules
 * could reach one of them.
 */
import { expect } from 'chai';
import { reachesProtected, SELF_PROTECTION_CONDITION } from '../../../src/api/self-protection.ts';
import { compile } from '../../../src/policy/engine/environment.ts';
import { toCel } from '../../../src/policy/values/convert.ts';

const condition = compile(SELF_PROTECTION_CONDITION.expression, 'matchConditions[0]', ['bool']);
const sent = (group: string, resource: string) =>
  condition({ object: null, oldObject: null, params: null, namespaceObject: null, request: toCel({ operation: 'UPDATE', resource: { group, version: 'v1', resource } }), variables: {} } as never);

const rule = (apiGroups: string[], resources: string[]) => [{ operations: ['*'], apiGroups, apiVersions: ['*'], resources }];

const PROTECTED: [string, string][] = [
  ['', 'nodes'],
  ['coordination.k8s.io', 'leases'],
  ['certificates.k8s.io', 'certificatesigningrequests'],
  ['authentication.k8s.io', 'tokenreviews'],
  ['authorization.k8s.io', 'subjectaccessreviews'],
  ['authorization.k8s.io', 'localsubjectaccessreviews'],
  ['admission.portcullis.dev', 'admissionsuites'],
];

describe('api/self-protection', function () {
  it('the condition keeps Nodes, Leases, CSRs, token and access reviews and AdmissionSuites away', function () {
    for (const [group, resource] of PROTECTED) expect(sent(group, resource), `${group}/${resource}`).to.equal(false);
  });

  it('the condition lets everything else through, same-named resources of other groups included', function () {
    for (const [group, resource] of [['', 'configmaps'], ['apps', 'deployments'], ['coordination.k8s.io', 'leasecandidates'], ['example.com', 'nodes'], ['', 'leases']]) {
      expect(sent(group!, resource!), `${group}/${resource}`).to.equal(true);
    }
  });

  it('every protected resource is reached by a rule naming it, its group with "*", or "*" in either place, subresources included', function () {
    for (const [group, resource] of PROTECTED) {
      for (const rules of [rule([group], [resource]), rule([group], [`${resource}/status`]), rule(['*'], [resource]), rule([group], ['*']), rule([group], ['*/*']), rule(['*'], ['*'])]) {
        expect(reachesProtected(rules), `${group}/${resource}: ${JSON.stringify(rules[0])}`).to.equal(true);
      }
    }
  });

  it('rules that name no protected resource do not reach one, so their webhook costs the API server no CEL per request', function () {
    expect(reachesProtected(rule([''], ['configmaps', 'pods', 'pods/status']))).to.equal(false);
    expect(reachesProtected(rule(['apps', 'batch'], ['*']))).to.equal(false);
    expect(reachesProtected(rule(['coordination.k8s.io'], ['leasecandidates']))).to.equal(false);
    expect(reachesProtected(rule(['example.com'], ['nodes']))).to.equal(false);
    expect(reachesProtected([])).to.equal(false);
    expect(reachesProtected(undefined)).to.equal(false);
  });
});
