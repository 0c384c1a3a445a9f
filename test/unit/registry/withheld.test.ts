/**
 * registry/withheld: which valid AdmissionPolicies are not served, so that no team can break what
 * the others have: beyond the policies allowed per namespace, and beyond what the shared
 * configuration can hold. The oldest keep their place, so a new policy never pushes out one that
 * is enforced.
 */
import { expect } from 'chai';
import { withheldPolicies } from '../../../src/registry/withheld.ts';
import type { CompiledPolicy } from '../../../src/registry/policies.ts';

function policy(namespace: string, name: string, created: number, type: 'Mutating' | 'Validating' = 'Validating', size = 10): CompiledPolicy {
  const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['x'.repeat(size)] }];
  const source = { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionPolicy', metadata: { name, namespace, uid: name }, spec: { type, rules } } as const;
  return { namespace, name, created, type, generation: 1, rules, excludeResourceRules: [], errors: [], source };
}

/** A configuration's size: a fixed header and each kept policy's rule. */
const measure = (_type: string, kept: CompiledPolicy[]) => 100 + kept.reduce((n, p) => n + (p.rules[0]?.resources?.[0]?.length ?? 0), 0);

describe('registry/withheld: what no team may break for the others', function () {
  it('serves at most the allowed number of policies in a namespace, the oldest, and withholds the newer naming the flag', function () {
    const policies = [policy('shop', 'c', 3), policy('shop', 'a', 1), policy('shop', 'b', 2), policy('other', 'z', 9)];
    const withheld = withheldPolicies(policies, { perNamespace: 2, configurationBytes: 1e6 }, measure);
    expect([...withheld.keys()]).to.deep.equal(['shop/c']);
    expect(withheld.get('shop/c')!.message).to.contain('--namespaced-policies-per-namespace');
    expect(withheld.get('shop/c')!.limit).to.equal(true);
  });

  it("keeps the shared configuration within its size: a tenant's huge new policy is withheld, the others' older ones stay served", function () {
    const policies = [policy('a', 'small', 1, 'Validating', 50), policy('b', 'small', 2, 'Validating', 50), policy('shop', 'huge', 3, 'Validating', 900), policy('c', 'late', 4, 'Validating', 10), policy('shop', 'mut', 5, 'Mutating', 10)];
    const withheld = withheldPolicies(policies, { perNamespace: 50, configurationBytes: 400 }, measure);
    // The oldest that fit (a, b): the huge one and every newer one of its type wait; the Mutating configuration is apart.
    expect([...withheld.keys()].sort()).to.deep.equal(['c/late', 'shop/huge']);
    expect(withheld.get('shop/huge')!.message).to.contain('the shared Validating configuration would pass 400 bytes');
  });

  it('withholds nothing within the limits', function () {
    expect(withheldPolicies([policy('a', 'p', 1), policy('b', 'p', 1)], { perNamespace: 1, configurationBytes: 1e6 }, measure).size).to.equal(0);
  });
});
