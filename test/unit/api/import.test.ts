/**
 * native/import.ts' matching arithmetic: a binding that narrows its policy becomes one webhook whose
 * rules and selectors match exactly what the policy and the binding both match. Checked against the
 * matcher the operator itself uses for registered rules and selectors (registry/match.ts,
 * kubernetes/selectors.ts) over every request of a grid, for every pair of a set of rules and
 * selectors (wildcards, subresources, scopes, names, conflicting labels).
 */
import { expect } from 'chai';
import { bothSelectors, importPolicies, intersectRules } from '../../../src/native/import.ts';
import { ruleMatches } from '../../../src/registry/match.ts';
import { selects } from '../../../src/kubernetes/selectors.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';
import type { LabelSelector, NamedRuleWithOperations } from '../../../src/api/types.ts';

const RULES: NamedRuleWithOperations[] = [
  { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] },
  { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] },
  { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
  { operations: ['CREATE', 'UPDATE'], apiGroups: ['', 'apps'], apiVersions: ['v1'], resources: ['pods', 'deployments'] },
  { operations: ['UPDATE'], apiGroups: ['*'], apiVersions: ['v1'], resources: ['pods/*'] },
  { operations: ['*'], apiGroups: [''], apiVersions: ['*'], resources: ['*/status'] },
  { operations: ['*'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments/scale'], scope: 'Namespaced' },
  { operations: ['DELETE', 'CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'namespaces'], scope: 'Cluster' },
  { operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], resourceNames: ['a', 'b'] },
  { operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['configmaps'], resourceNames: ['b', 'c'], scope: '*' },
];

function* requests(): Generator<AdmissionRequest> {
  for (const operation of ['CREATE', 'UPDATE', 'DELETE']) {
    for (const [group, resource] of [
      ['', 'pods'],
      ['', 'configmaps'],
      ['', 'namespaces'],
      ['apps', 'deployments'],
    ] as const) {
      for (const subResource of [undefined, 'status', 'scale']) {
        for (const namespace of ['', 'team']) {
          for (const name of ['a', 'b', 'c']) {
            yield { uid: 'u', operation, resource: { group, version: 'v1', resource }, ...(subResource ? { subResource } : {}), namespace, name, userInfo: {} } as unknown as AdmissionRequest;
          }
        }
      }
    }
  }
}

const SELECTORS: (LabelSelector | undefined)[] = [
  undefined,
  {},
  { matchLabels: { env: 'prod' } },
  { matchLabels: { env: 'staging' } },
  { matchLabels: { env: 'prod', team: 'a' } },
  { matchExpressions: [{ key: 'team', operator: 'In', values: ['a', 'b'] }] },
  { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] },
  { matchExpressions: [{ key: 'team', operator: 'Exists' }], matchLabels: { env: 'prod' } },
];
const LABELS: Record<string, string>[] = [{}, { env: 'prod' }, { env: 'staging' }, { env: 'prod', team: 'a' }, { env: 'prod', team: 'b' }, { team: 'c' }];

describe('portcullis import: a binding that narrows its policy, as one webhook', function () {
  it('intersected rules match exactly the requests both rules match', function () {
    let both = 0;
    for (const a of RULES) {
      for (const b of RULES) {
        const common = intersectRules(a, b);
        for (const request of requests()) {
          const expected = ruleMatches(a, request) && ruleMatches(b, request);
          if (expected) both++;
          const got = common !== undefined && ruleMatches(common, request);
          expect(
            got,
            `${JSON.stringify(a)} and ${JSON.stringify(b)} on ${request.operation} ${request.resource.group}/${request.resource.resource}/${request.subResource ?? ''} ns=${request.namespace} name=${request.name}: ${JSON.stringify(common)}`,
          ).to.equal(expected);
        }
      }
    }
    expect(both, 'the grid holds requests both match').to.be.greaterThan(100);
  });

  it('and-ed selectors select exactly the labels both select', function () {
    for (const a of SELECTORS) {
      for (const b of SELECTORS) {
        const common = bothSelectors(a, b);
        for (const labels of LABELS) {
          expect(selects(common, labels), `${JSON.stringify(a)} and ${JSON.stringify(b)} on ${JSON.stringify(labels)}: ${JSON.stringify(common)}`).to.equal(selects(a, labels) && selects(b, labels));
        }
      }
    }
  });

  it('says why a policy or binding is not carried over', function () {
    const rule = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] };
    const vap = (name: string, spec: Record<string, unknown> = {}) => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: { matchConstraints: { resourceRules: [rule] }, validations: [{ expression: 'true' }], ...spec },
    });
    const binding = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { validationActions: ['Deny'], ...spec } });
    const { suites, notes } = importPolicies([
      vap('unbound'),
      vap('with-params', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } }),
      binding('no-param-ref', { policyName: 'with-params' }),
      vap('narrowed'),
      binding('disjoint', { policyName: 'narrowed', matchResources: { resourceRules: [{ ...rule, resources: ['configmaps'] }] } }),
      binding('Kept.Binding', { policyName: 'narrowed', validationActions: ['Warn', 'Audit'], matchResources: { resourceRules: [{ ...rule, operations: ['*'] }] } }),
      binding('missing', { policyName: 'nowhere' }),
    ]);
    expect(notes).to.deep.equal([
      'ValidatingAdmissionPolicyBinding/missing: its policy nowhere is not among the objects given; not imported',
      'ValidatingAdmissionPolicy/unbound: no binding names it, so the API server enforces it nowhere; not imported',
      'ValidatingAdmissionPolicyBinding/no-param-ref: its policy has a paramKind and it gives no paramRef; not imported',
      "ValidatingAdmissionPolicyBinding/disjoint: its matchResources.resourceRules and its policy's resourceRules have no request in common; not imported",
    ]);
    expect(suites.map((s) => s.suite.metadata.name)).to.deep.equal(['narrowed']);
    expect(suites[0]!.suite.spec.webhooks.map((w) => [w.name, w.validationActions, w.rules])).to.deep.equal([['kept-binding', ['Warn', 'Audit'], [rule]]]);
  });
});
