/** Which params objects a webhook's params select for a request (src/api/params.ts), as VAP's CollectParams picks them. */
import { expect } from 'chai';
import { PARAMS_ERRORS, selectParams, type ParamsStore } from '../../../src/api/params.ts';
import type { ParamsRef } from '../../../src/api/types.ts';

const cm = (namespace: string | undefined, name: string, labels: Record<string, string> = {}) => ({ metadata: { name, ...(namespace ? { namespace } : {}), labels } });
const objects = [cm('team-b', 'limits', { tier: 'gold' }), cm('team-a', 'limits', { tier: 'gold' }), cm('team-a', 'other', { tier: 'silver' }), cm('team-a', 'alpha', { tier: 'gold' })];

function store(namespaced: boolean, all = objects): ParamsStore {
  const inNs = (namespace?: string) => all.filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  return { namespaced, get: (name, namespace) => inNs(namespace).find((o) => o.metadata.name === name), list: inNs };
}
const ref = (r: Partial<ParamsRef>): ParamsRef => ({ apiVersion: 'v1', kind: 'ConfigMap', ...r });
const names = (selection: ReturnType<typeof selectParams>) => (selection.state === 'selected' ? selection.objects.map((o) => `${(o.metadata as any).namespace}/${(o.metadata as any).name}`) : selection);

describe('api/params: which params objects a request gets', function () {
  it('by name: the object in the given namespace, or none', function () {
    expect(names(selectParams(ref({ namespace: 'team-b', name: 'limits' }), 'team-a', store(true)))).to.deep.equal(['team-b/limits']);
    expect(names(selectParams(ref({ namespace: 'team-c', name: 'limits' }), 'team-a', store(true)))).to.deep.equal([]);
  });

  it("namespace unset on a namespaced kind: the request's own namespace", function () {
    expect(names(selectParams(ref({ name: 'limits' }), 'team-a', store(true)))).to.deep.equal(['team-a/limits']);
    expect(names(selectParams(ref({ name: 'limits' }), 'team-b', store(true)))).to.deep.equal(['team-b/limits']);
  });

  it('namespace unset, a cluster-scoped request: a configuration error in the API server’s words, not "not found"', function () {
    expect(selectParams(ref({ name: 'limits' }), undefined, store(true))).to.deep.equal({ state: 'misconfigured', reason: PARAMS_ERRORS.clusterScopedRequest });
  });

  it('a namespace on a cluster-scoped kind is a configuration error; without one, the object by name', function () {
    const clusterScoped = store(false, [cm(undefined, 'limits')]);
    expect(selectParams(ref({ namespace: 'x', name: 'limits' }), 'team-a', clusterScoped).state).to.equal('misconfigured');
    expect(selectParams(ref({ name: 'limits' }), 'team-a', clusterScoped)).to.deep.include({ state: 'selected' });
    expect(names(selectParams(ref({ name: 'limits' }), undefined, clusterScoped))).to.deep.equal(['undefined/limits']);
  });

  it('by selector: every object it selects, in namespace/name order; {} selects all', function () {
    expect(names(selectParams(ref({ namespace: 'team-a', selector: { matchLabels: { tier: 'gold' } } }), 'x', store(true)))).to.deep.equal(['team-a/alpha', 'team-a/limits']);
    expect(names(selectParams(ref({ selector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] } }), 'team-a', store(true)))).to.deep.equal(['team-a/other']);
    expect(names(selectParams(ref({ selector: {} }), 'team-b', store(true)))).to.deep.equal(['team-b/limits']);
    expect(names(selectParams(ref({ selector: { matchLabels: { tier: 'bronze' } } }), 'team-a', store(true)))).to.deep.equal([]);
    expect(names(selectParams(ref({ selector: { matchLabels: { tier: 'gold' } } }), undefined, store(false)))).to.deep.equal(['team-a/alpha', 'team-a/limits', 'team-b/limits']);
  });
});
