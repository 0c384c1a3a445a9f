/**
 * The teams' AdmissionPolicies are evaluated in tenant workers, away from the operator's main
 * thread, and fairly: each namespace has one request in a worker at a time and the namespaces
 * waiting take turns, so another namespace's request is answered before a flooding namespace's
 * next one; what waits is bounded, per namespace; a worker whose evaluation escaped every limit is
 * stopped and its request answered by failurePolicy, and the next request is served by a new one.
 * The answers are the policies' own, with the params and Namespace the main thread reads for them
 * and `authorizer` checks asked by the main thread.
 */
import { expect } from 'chai';
import { PolicyRegistry } from '../../src/registry/policies.ts';
import { PolicyWorkerPool } from '../../src/admission/threads/policy-workers.ts';
import { followedFailurePolicy, type Decision } from '../../src/api/admission-review.ts';
import type { AdmissionPolicy, PolicySpec } from '../../src/api/types.ts';
import type { ParamsSource } from '../../src/registry/compile.ts';
import type { Authorizer } from '../../src/api/authorization.ts';
import { requestFor } from '../fixtures/reviews.ts';

const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

function policy(namespace: string, name: string, spec: PolicySpec): AdmissionPolicy {
  return { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionPolicy', metadata: { name, namespace, uid: `${namespace}/${name}`, generation: 1 }, spec };
}
const configMap = (namespace: string, name = 'c') => requestFor('configmaps', 'CREATE', { namespace, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { k: 'v' } } });

/** About a million comprehension steps in sixteen expressions (each within the API server's limit per expression): a few hundred milliseconds, within a generous budget. */
const FORTY = `[${Array.from({ length: 40 }, (_, i) => i).join(',')}]`;
const SLOW = Array.from({ length: 16 }, () => ({ expression: `${FORTY}.all(i, ${FORTY}.all(j, ${FORTY}.all(k, i + j + k >= 0)))`, message: 'never' }));

describe("admission/threads/tenants: the teams' policies in workers of their own, namespaces in turn", function () {
  this.timeout(30_000);
  let pool: PolicyWorkerPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  function registryWith(policies: AdmissionPolicy[], extra: Partial<ConstructorParameters<typeof PolicyRegistry>[0]> = {}): PolicyRegistry {
    const registry = new PolicyRegistry({
      limits: { mutations: true, costBudget: 100_000_000, deadlineMs: 60_000, namespaceCostBudget: 1_000_000_000 },
      protectedNamespaces: ['kube-system'],
      operatorNamespace: 'portcullis-system',
      ...extra,
    });
    for (const p of policies) registry.sync(p);
    return registry;
  }

  it("answers a namespace's policies in a worker with their own words, reading params, the Namespace and authorizer through the main thread", async function () {
    const params: ParamsSource = {
      watch: () => undefined,
      select: (ref, namespace) => ({ state: 'selected', objects: ref.namespace === namespace ? [{ metadata: { name: 'limits' }, data: { forbidden: 'k' } }] : [] }),
    };
    const asked: string[] = [];
    const authorizer: Authorizer = { check: async (a) => (asked.push(`${a.resource?.verb} ${a.resource?.resource} in ${a.resource?.namespace}`), { allowed: false, reason: '', evaluationError: '' }) };
    const view = { namespace: (name: string) => ({ metadata: { name, labels: { team: `team-of-${name}` } } }), limitRanges: () => [], list: () => [] };
    const registry = new PolicyRegistry({ limits: { mutations: true, costBudget: 1_000_000 }, protectedNamespaces: [], params, authorizer, view });
    // The pool takes the policies the registry compiles from the moment it subscribes, as the operator makes it first.
    pool = new PolicyWorkerPool(registry, quiet);
    registry.sync(
      policy('shop', 'keys', {
        type: 'Validating',
        rules: configMaps,
        params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'limits' },
        validations: [{ expression: '!(params.data.forbidden in object.data)', messageExpression: "'no key ' + params.data.forbidden + ' in ' + namespaceObject.metadata.labels.team" }],
      }),
    );
    registry.sync(policy('shop', 'scale', { type: 'Validating', rules: configMaps, validations: [{ expression: "authorizer.group('').resource('configmaps').namespace('shop').check('delete').allowed()", message: 'may not delete' }] }));
    const denied = await pool.admit('Validating', configMap('shop'));
    expect(denied.allowed).to.equal(false);
    expect(denied.message).to.equal('AdmissionPolicy keys: no key k in team-of-shop');
    registry.remove('shop', 'keys');
    const second = await pool.admit('Validating', configMap('shop'));
    expect(second.message).to.equal('AdmissionPolicy scale: may not delete');
    expect(asked).to.deep.equal(['delete configmaps in shop']);
    expect((await pool.admit('Validating', configMap('elsewhere'))).allowed, 'a namespace without policies').to.equal(true);
  });

  it("answers another namespace's request before a flooding namespace's next one (one worker: turns)", async function () {
    const registry = registryWith([
      policy('shop', 'slow', { type: 'Validating', rules: configMaps, validations: SLOW }),
      policy('other', 'fast', { type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'x'", message: 'not x' }] }),
    ]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1 });
    // Synced before the pool existed: the pool takes them from the registry.
    const order: string[] = [];
    const track = (what: string, answer: Promise<Decision>) => answer.then((d) => (order.push(what), d));
    const flood = [0, 1, 2, 3].map((i) => track(`shop-${i}`, pool!.admit('Validating', configMap('shop', `c${i}`))));
    const other = track('other', pool.admit('Validating', configMap('other', 'x')));
    const answers = await Promise.all([...flood, other]);
    expect(order).to.deep.equal(['shop-0', 'other', 'shop-1', 'shop-2', 'shop-3']);
    expect(answers[4]!.message).to.equal('AdmissionPolicy fast: not x');
    expect(answers.slice(0, 4).every((d) => d.allowed)).to.equal(true);
  });

  it("with two workers, another namespace's request does not wait for the flooding namespace at all", async function () {
    const registry = registryWith([policy('shop', 'slow', { type: 'Validating', rules: configMaps, validations: SLOW })]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 2 });
    // Both workers started and idle first: what is measured is whose turn it is, not how long a
    // worker takes to start (seconds on a loaded machine, longer than the flood's first evaluation).
    await Promise.all([pool.admit('Validating', configMap('warm-a')), pool.admit('Validating', configMap('warm-b'))]);
    const order: string[] = [];
    const flood = [0, 1, 2].map((i) => pool!.admit('Validating', configMap('shop', `c${i}`)).then(() => order.push(`shop-${i}`)));
    const other = pool.admit('Validating', configMap('other')).then(() => order.push('other'));
    await Promise.all([...flood, other]);
    expect(order[0]).to.equal('other');
  });

  it('rests a namespace after an expensive evaluation as long as it ran, so its flood gets at most half a worker and others go first', async function () {
    const registry = registryWith([
      policy('shop', 'slow', { type: 'Validating', rules: configMaps, validations: SLOW }),
      policy('other', 'fast', { type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'x'", message: 'not x' }] }),
    ]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1 });
    const order: string[] = [];
    let other: Promise<unknown> | undefined;
    const first = pool.admit('Validating', configMap('shop', 'c0')).then(() => {
      order.push('shop-0');
      // Asked the moment shop's first answer is in: the worker is free, and shop rests.
      other = pool!.admit('Validating', configMap('other')).then(() => order.push('other'));
    });
    const second = pool.admit('Validating', configMap('shop', 'c1')).then(() => order.push('shop-1'));
    await Promise.all([first, second]);
    await other;
    expect(order).to.deep.equal(['shop-0', 'other', 'shop-1']);
  });

  it("bounds what one namespace may have waiting: beyond, its requests are refused at once (failurePolicy Fail), and others' are not", async function () {
    const registry = registryWith([policy('shop', 'slow', { type: 'Validating', rules: configMaps, validations: SLOW })]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1, maxQueued: 2 });
    const running = pool.admit('Validating', configMap('shop', 'a'));
    const waiting = [pool.admit('Validating', configMap('shop', 'b')), pool.admit('Validating', configMap('shop', 'c'))];
    const refused = await pool.admit('Validating', configMap('shop', 'd'));
    expect(refused.allowed).to.equal(false);
    expect(followedFailurePolicy(refused)).to.equal(true);
    expect(refused.message).to.equal('the AdmissionPolicies of namespace shop could not be evaluated: 2 of its requests are already waiting (the most one namespace may have); retry');
    const other = pool.admit('Validating', configMap('other'));
    expect((await Promise.all([running, ...waiting, other])).every((d) => d.allowed)).to.equal(true);
  });

  it('stops a worker whose evaluation runs past its limit, answers its request by failurePolicy, and serves the next with a new worker', async function () {
    const registry = registryWith([
      policy('shop', 'slow', { type: 'Validating', rules: configMaps, validations: SLOW }),
      policy('other', 'fast', { type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'x'", message: 'not x' }] }),
    ]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1, stuckAfterMs: 40 });
    const stopped = await pool.admit('Validating', configMap('shop'));
    expect(stopped.allowed).to.equal(false);
    expect(followedFailurePolicy(stopped)).to.equal(true);
    expect(stopped.message).to.equal('the AdmissionPolicies of namespace shop could not be evaluated: their evaluation ran more than 40 ms and was stopped');
    const next = await pool.admit('Validating', configMap('other', 'x'));
    expect(next.message).to.equal('AdmissionPolicy fast: not x');
  });

  it("merges a team's ApplyConfiguration mutation by the kind's schema the main thread reads and sends with the request", async function () {
    const read: string[] = [];
    // ConfigMap's finalizers as the API server publishes them: a set, merged item by item (without a schema: replaced whole).
    let schema = {
      ref: 'ConfigMap',
      // as OpenApiSchemas names the document it read: the workers are sent it once, then its name with each request
      source: '/openapi/v3/api/v1?hash=one',
      components: {
        ConfigMap: {
          type: 'object',
          properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { allOf: [{ $ref: '#/components/schemas/Meta' }] }, data: { type: 'object', additionalProperties: { type: 'string' } } },
        },
        Meta: { type: 'object', properties: { name: { type: 'string' }, namespace: { type: 'string' }, finalizers: { type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'set' } } },
      },
    };
    let unreadable = false;
    const mergeSchemas = {
      schema: async (kind: { kind: string }) => {
        read.push(kind.kind);
        if (unreadable) throw new Error('the API server did not answer');
        return schema;
      },
    };
    const registry = registryWith(
      [policy('shop', 'finalize', { type: 'Mutating', rules: configMaps, mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: "Object{metadata: Object.metadata{finalizers: ['shop.example/b']}}" } }] })],
      { mergeSchemas },
    );
    expect(registry.get('shop', 'finalize')?.errors).to.deep.equal([]);
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1 });
    const request = configMap('shop');
    (request.object as { metadata: Record<string, unknown> }).metadata.finalizers = ['shop.example/a'];
    for (let i = 0; i < 2; i++) {
      const decision = await pool.admit('Mutating', request);
      expect(decision.allowed).to.equal(true);
      expect(decision.warnings).to.equal(undefined);
      expect(decision.patch).to.deep.equal([{ op: 'add', path: '/metadata/finalizers/1', value: 'shop.example/b' }]);
    }
    expect(read).to.deep.equal(['ConfigMap', 'ConfigMap']);
    // A newer document of the group version (the kind's finalizers now atomic) replaces the one the workers hold.
    const atomic = structuredClone(schema);
    atomic.components.Meta.properties.finalizers['x-kubernetes-list-type'] = 'atomic';
    schema = { ...atomic, source: '/openapi/v3/api/v1?hash=two' };
    const refusedByNewer = await pool.admit('Mutating', request);
    expect(refusedByNewer.allowed).to.equal(false);
    expect(refusedByNewer.message).to.contain('may not mutate atomic arrays, maps or structs: .metadata.finalizers');
    // A Validating request, or a namespace with no such policy, reads nothing.
    read.length = 0;
    await pool.admit('Validating', configMap('shop'));
    await pool.admit('Mutating', configMap('other'));
    expect(read).to.deep.equal([]);
    // A schema that cannot be read: answered by the policies' failurePolicy (Fail), not merged without it.
    unreadable = true;
    const refused = await pool.admit('Mutating', configMap('shop'));
    expect(refused.allowed).to.equal(false);
    expect(followedFailurePolicy(refused)).to.equal(true);
    expect(refused.message).to.equal('the AdmissionPolicies of namespace shop could not be evaluated: the schema of ConfigMap could not be read: the API server did not answer');
  });

  it("charges a team's apply configuration to the policy's cost budget: out of it, the request is refused", async function () {
    const costly = "Object{metadata: Object.metadata{labels: object.items.map(i, string(i)).filter(s, s.startsWith('9')).exists(s, s == '999') ? {'seen': 'yes'} : {}}}";
    const registry = registryWith([policy('shop', 'costly', { type: 'Mutating', rules: configMaps, mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: costly } }] })], {
      limits: { mutations: true, costBudget: 1000 },
      mergeSchemas: { schema: async () => undefined },
    });
    pool = new PolicyWorkerPool(registry, quiet, { workers: 1 });
    const request = configMap('shop');
    (request.object as Record<string, unknown>).items = Array.from({ length: 1000 }, (_, i) => i);
    const decision = await pool.admit('Mutating', request);
    expect(decision).to.deep.include({ allowed: false, message: 'AdmissionPolicy costly: validation failed due to running out of cost budget, no further validation rules will be run' });
  });
});
