/**
 * Every replica serves an AdmissionPolicy as the leader judged it (src/registry/policies.ts,
 * `followLeader`): a generation is served only once the status the leader wrote for that same
 * generation says so; one the leader withholds (its author may no longer change what it changes,
 * the limits) is not evaluated on any replica, nor in its tenant workers; one not judged yet is not
 * served until it is.
 */
import { expect } from 'chai';
import { leaderVerdict, PolicyRegistry } from '../../../src/registry/policies.ts';
import { namespacedWebhook } from '../../../src/registry/namespaced.ts';
import { TenantPool } from '../../../src/admission/threads/tenants.ts';
import type { AdmissionPolicy, PolicySpec } from '../../../src/api/types.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';

const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const denyAll: PolicySpec = { type: 'Validating', rules: configMaps, validations: [{ expression: 'false', message: 'nothing here' }] };
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

type Ready = { status: 'True' | 'False'; reason: string; message?: string };
const SERVED: Ready = { status: 'True', reason: 'Served', message: 'served' };
const AUTHOR_FORBIDDEN: Ready = { status: 'False', reason: 'AuthorForbidden', message: 'not served: its author may no longer change what it changes' };

/** The policy at `generation`, with the status the leader wrote for `judged` (none when absent). */
function policy(generation: number, judged?: { generation: number; ready: Ready }): AdmissionPolicy {
  const status = judged && {
    observedGeneration: judged.generation,
    conditions: [{ type: 'Ready', ...judged.ready, message: judged.ready.message ?? '', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: judged.generation }],
  };
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name: 'deny-all', namespace: 'team', uid: 'u1', generation },
    spec: denyAll,
    ...(status ? { status } : {}),
  } as AdmissionPolicy;
}

/** A replica's registry, fed as the Watches feed it: every version followed, then synced. */
function replica(): PolicyRegistry & { see(p: AdmissionPolicy): void } {
  const registry = new PolicyRegistry({ limits: { mutations: true, costBudget: 1_000_000 }, protectedNamespaces: [], operatorNamespace: 'portcullis-system', followLeader: true });
  return Object.assign(registry, {
    see(p: AdmissionPolicy) {
      registry.follow(p);
      registry.sync(p);
    },
  });
}

const configMap = () => requestFor('configmaps', 'CREATE', { namespace: 'team', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'team' } } });

function decide(registry: PolicyRegistry): Decision {
  const decision = namespacedWebhook('Validating', registry).admit(configMap());
  if (decision instanceof Promise) throw new Error('expected a synchronous answer');
  return decision;
}

describe("registry/policies: every replica serves a policy as the leader's status says", function () {
  it('does not evaluate a policy the leader withheld, on a replica that computed nothing itself', function () {
    const registry = replica();
    registry.see(policy(1, { generation: 1, ready: AUTHOR_FORBIDDEN }));
    expect(registry.get('team', 'deny-all')?.webhook, 'it compiles').to.not.equal(undefined);
    expect(decide(registry).allowed, 'withheld: not evaluated').to.equal(true);
    expect(registry.withheldEntries().map(([key, e]) => `${key}: ${e.message}`)).to.deep.equal(['team/deny-all: withheld by the leader: AuthorForbidden: not served: its author may no longer change what it changes']);
    // The leader serves it again (the author's rights back): so does this replica.
    registry.see(policy(1, { generation: 1, ready: SERVED }));
    expect(decide(registry).message).to.equal('AdmissionPolicy deny-all: nothing here');
  });

  it('serves a generation only once the leader has judged that generation served', function () {
    const registry = replica();
    registry.see(policy(1));
    expect(decide(registry).allowed, 'never judged').to.equal(true);
    registry.see(policy(1, { generation: 1, ready: SERVED }));
    expect(decide(registry).allowed, 'judged served').to.equal(false);
    // A new generation, its status still the last one's: not served until the leader judges it.
    registry.see(policy(2, { generation: 1, ready: SERVED }));
    expect(decide(registry).allowed, 'generation 2 not judged').to.equal(true);
    registry.see(policy(2, { generation: 2, ready: { status: 'False', reason: 'WaitingForEndpoint', message: 'the endpoint does not answer yet' } }));
    expect(decide(registry).allowed, 'judged served, its configuration on its way').to.equal(false);
    // Judged withheld later (a status-only change: the same generation), then deleted.
    registry.see(policy(2, { generation: 2, ready: AUTHOR_FORBIDDEN }));
    expect(decide(registry).allowed, 'withheld').to.equal(true);
  });

  it('reads any Ready it does not know as withheld, and a condition of another generation as no verdict', function () {
    expect(leaderVerdict(policy(3, { generation: 3, ready: { status: 'False', reason: 'Quarantined' } }))).to.include({ generation: 3, served: false });
    expect(leaderVerdict(policy(3, { generation: 3, ready: { status: 'True', reason: 'SomethingNew' } }))).to.include({ generation: 3, served: false });
    const stale = policy(3, { generation: 3, ready: SERVED });
    stale.status!.conditions![0]!.observedGeneration = 2;
    expect(leaderVerdict(stale)).to.include({ generation: 3, served: false });
    expect(leaderVerdict(policy(3))).to.equal(undefined);
  });

  it('serves as it compiles where no leader judges (the portcullis command)', function () {
    const registry = new PolicyRegistry({ limits: { mutations: true, costBudget: 1_000_000 }, protectedNamespaces: [], operatorNamespace: 'portcullis-system' });
    registry.follow(policy(1, { generation: 1, ready: AUTHOR_FORBIDDEN }));
    registry.sync(policy(1));
    expect(decide(registry).allowed).to.equal(false);
  });

  describe('the tenant workers', function () {
    this.timeout(30_000);
    let pool: TenantPool | undefined;
    afterEach(async () => {
      await pool?.close();
      pool = undefined;
    });

    it("withhold what the replica's registry withholds by the leader's verdict, a worker started later too", async function () {
      const registry = replica();
      registry.see(policy(1, { generation: 1, ready: SERVED }));
      pool = new TenantPool(registry, quiet);
      expect((await pool.admit('Validating', configMap())).message).to.equal('AdmissionPolicy deny-all: nothing here');
      registry.see(policy(1, { generation: 1, ready: AUTHOR_FORBIDDEN }));
      expect((await pool.admit('Validating', configMap())).allowed, 'withheld by the leader').to.equal(true);
      await pool.close();
      // A new pool's workers are told what is withheld from the start.
      pool = new TenantPool(registry, quiet);
      expect((await pool.admit('Validating', configMap())).allowed, 'withheld in a new worker').to.equal(true);
      registry.see(policy(2, { generation: 1, ready: SERVED }));
      expect((await pool.admit('Validating', configMap())).allowed, 'generation 2 not judged').to.equal(true);
      registry.see(policy(2, { generation: 2, ready: SERVED }));
      expect((await pool.admit('Validating', configMap())).message).to.equal('AdmissionPolicy deny-all: nothing here');
    });
  });
});
