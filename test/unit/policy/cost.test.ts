/**
 * Cost limits, as the API server sets them: 1,000,000 units per expression, 10,000,000 per
 * evaluation of a webhook's validations (messageExpressions get what is left). A runaway
 * expression is stopped and answered by failurePolicy, and the server keeps answering.
 */
import { expect } from 'chai';
import { startTestEndpoint, type TestEndpoint } from '../../support/endpoint.ts';
import { compileRules, evaluationTotals } from '../../../src/policy/engine/rules.ts';
import { compile } from '../../../src/policy/engine/environment.ts';
import { COST_BUDGET_MESSAGE, COST_LIMIT_MESSAGE, meter, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET } from '../../../src/policy/cost/meter.ts';
import { toCel } from '../../../src/policy/values/convert.ts';
import { requestAttributes } from '../../../src/policy/engine/activation.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';
import { SuiteRegistry } from '../../../src/registry/registry.ts';
import { benchSuite, podReview } from '../../../bench/fixtures.ts';
import { fixtures, requestOf } from '../../fixtures/reviews.ts';

const rule = [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];
const validating = (spec: Partial<WebhookSpec>): WebhookSpec => ({ name: 'w', type: 'Validating', rules: rule, ...spec });

/** A Deployment CREATE whose spec carries `extra` (large lists, long strings). */
function requestWith(extra: Record<string, unknown>): AdmissionRequest {
  const request = requestOf(fixtures.deploymentCreate());
  const object = request.object as { spec: Record<string, unknown> };
  return { ...request, object: { ...object, spec: { ...object.spec, ...extra } } };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The cost of one free-standing evaluation of `expression` with `object` bound. */
function costOf(expression: string, object: unknown, request: AdmissionRequest | null = null): { value: unknown; cost: number } {
  const activation = { object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: request && toCel(requestAttributes(request)), variables: {} };
  const value = compile(expression, 'f')(activation);
  return { value, cost: meter.cost };
}

// `all` over n ints costs 5n + 3 in cel-go (and here): 180,000 elements make 900,003, under the per-call limit
const NEAR_LIMIT = range(180_000);
const COSTLY = 'object.spec.items.all(x, x >= 0)';

describe('policy: cost limits', function () {
  this.timeout(20_000);

  // Each figure is cel-go's (v0.29.2 with the apiserver v0.37.2 environment and CostEstimator) for the same
  // input, as test/support/celgo-cost prints it. Where the two still differ (a short-circuited `||`, the last
  // `exists` check), it is by a few units.
  const input = { l: range(2000), n: range(1000).map(String), s: 'a'.repeat(10_000), m: { a: 'x', b: 'y' } };
  const celGo: [string, number][] = [
    ['object.l.all(x, x >= 0)', 10_003],
    ["object.n.filter(x, x.startsWith('1')).size() > 0", 3448],
    ['object.n.map(x, x).size() > 0', 13_005],
    ["object.n.map(x, x.startsWith('1'), x).size() > 0", 3448],
    ["object.n.all(x, x == '5' ? true : x.size() > 0)", 8000],
    ["object.l.map(x, string(x)).join(',').size() > 0", 29_783],
    ["object.n.map(x, x + '-').join(',').split(',').size() > 0", 15_961],
    ['object.m.all(k, k.size() < 64)', 15],
    ["has(object.l) && object.s.startsWith('a')", 4],
    ["object.s.matches('a+b')", 1003],
    ['object.s + object.s == object.s', 1007],
    ["object.s + 'x' == 'y'", 1004],
    ['5 in object.l', 3],
    ["object.s.lowerAscii().contains('b')", 2002],
    ["object.s.replace('a', 'b').size() > 0", 2004],
    ["object.s.indexOf('b') >= 0", 1003],
    ['strings.quote(object.s).size() > 0', 1004],
    ["sets.contains(object.n, ['1', '2'])", 2003],
    ["cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", 6],
    ['object.n.map(x, x.size()).sum() > 0', 15_004],
    ["[1,2,3].map(x, {'a': x}).size() == 3", 132],
    ['[object.s, object.s] + [object.s] == []', 27],
  ];
  it('counts as cel-go does: iterations, their steps, and size-scaled string, list and regex functions', function () {
    for (const [expression, cost] of celGo) expect(costOf(expression, input).cost, expression).to.equal(cost);
    expect(costOf(COSTLY.replace('spec.items', 'l'), { l: NEAR_LIMIT }).cost).to.equal(900_003);
  });

  it('stops nested comprehensions over a large list after 1,000,000 units and follows failurePolicy', function () {
    const expression = 'object.spec.items.all(x, object.spec.items.all(y, x + y >= 0))';
    const spec = validating({ validations: [{ expression }] });
    const request = requestWith({ items: range(2000) });
    // stopped by the cost limit (the message says so), not after the 4,000,000 steps of the whole
    const denied = compileRules('s', spec, 'p', 'Fail')(request);
    expect(denied).to.include({ allowed: false, code: 422, reason: 'Invalid', message: `expression '${expression}' resulted in error: ${COST_LIMIT_MESSAGE}` });
    expect(COST_LIMIT_MESSAGE).to.equal('operation cancelled: actual cost limit exceeded');
    expect(compileRules('s', spec, 'p', 'Ignore')(request)).to.deep.equal({ allowed: true });
  });

  it('stops a huge string built by join or by concatenation in a loop', function () {
    const request = requestWith({ items: range(2000), text: 'x'.repeat(10_000) });
    for (const expression of ["object.spec.items.map(i, object.spec.text).join('').size() > 0", "object.spec.items.map(i, 'item-' + object.spec.text).size() > 0"]) {
      const decision = compileRules('s', validating({ validations: [{ expression }] }), 'p', 'Fail')(request);
      expect(decision.message, expression).to.equal(`expression '${expression}' resulted in error: ${COST_LIMIT_MESSAGE}`);
    }
  });

  it('lets an ordinary suite over a 50-container Pod run far under its limits', function () {
    const guards = benchSuite().spec.webhooks[0]!;
    const request = podReview(50).request!;
    for (const validation of guards.validations!) {
      const { value, cost } = costOf(validation.expression, request.object, request);
      expect(value, validation.expression).to.equal(true);
      expect(cost, validation.expression).to.be.below(1000);
    }
    expect(compileRules('bench', guards, 'p', 'Fail')(request)).to.deep.equal({ allowed: true });
  });

  it('spends one budget per evaluation of a webhook: once it is spent no further validation runs', function () {
    // 11 x 900,003 fits in 10,000,000; the 12th runs out, and what came before no longer counts
    const validations = [{ expression: 'false', message: 'first' }, ...Array.from({ length: 12 }, () => ({ expression: COSTLY })), { expression: 'false', message: 'never' }];
    const request = requestWith({ items: NEAR_LIMIT });
    expect(11 * 900_003).to.be.below(RUNTIME_CEL_COST_BUDGET);
    expect(12 * 900_003).to.be.above(RUNTIME_CEL_COST_BUDGET);

    const before = evaluationTotals.cost;
    const denied = compileRules('s', validating({ validations }), 'p', 'Fail')(request);
    // stopped at the 12th: what was charged is the budget and one step past it, not the 13th validation's work too
    expect(evaluationTotals.cost - before).to.be.within(RUNTIME_CEL_COST_BUDGET, 12 * 900_003);
    expect(denied).to.deep.equal({ allowed: false, code: 422, reason: 'Invalid', message: COST_BUDGET_MESSAGE });
    expect(COST_BUDGET_MESSAGE).to.equal('validation failed due to running out of cost budget, no further validation rules will be run');

    expect(compileRules('s', validating({ validations }), 'p', 'Ignore')(request)).to.deep.equal({ allowed: true });
    // the error goes to the validationActions like any other failure
    expect(compileRules('s', validating({ validations, validationActions: ['Warn'] }), 'p', 'Fail')(request)).to.deep.equal({ allowed: true, warnings: [COST_BUDGET_MESSAGE] });
    // with one costly validation fewer the budget holds, and every validation answers
    const fewer = [validations[0]!, ...validations.slice(2)];
    expect(compileRules('s', validating({ validations: fewer }), 'p', 'Fail')(request)).to.include({ allowed: false, message: 'first' });
    // and each evaluation starts with a fresh budget
    expect(compileRules('s', validating({ validations: fewer }), 'p', 'Fail')(request)).to.include({ message: 'first' });
  });

  it('gives messageExpressions what the validations left', function () {
    const validations = [...Array.from({ length: 11 }, () => ({ expression: COSTLY })), { expression: 'false', message: 'static', messageExpression: `${COSTLY} ? 'costly' : 'cheap'` }];
    const request = requestWith({ items: NEAR_LIMIT });
    const decision = compileRules('s', validating({ validations }), 'p', 'Fail')(request);
    expect(decision).to.include({ allowed: false, message: `failed messageExpression: ${COST_BUDGET_MESSAGE}` });
    expect(compileRules('s', validating({ validations }), 'p', 'Ignore')(request)).to.deep.equal({ allowed: true });
    // alone, the same messageExpression is well within budget
    expect(compileRules('s', validating({ validations: validations.slice(-1) }), 'p', 'Fail')(request).message).to.equal('costly');
  });

  it('spends the budget on the messageExpressions of holding validations too, as the API server does', function () {
    // The API server's validator evaluates every messageExpression before it looks at which
    // validations failed, and running out of budget there turns every decision into an error.
    const holding = (n: number) => Array.from({ length: n }, () => ({ expression: 'true', messageExpression: `${COSTLY} ? 'costly' : 'cheap'` }));
    const request = requestWith({ items: NEAR_LIMIT });
    expect(12 * 900_003).to.be.above(RUNTIME_CEL_COST_BUDGET);
    expect(compileRules('s', validating({ validations: holding(12) }), 'p', 'Fail')(request)).to.include({ allowed: false, message: `failed messageExpression: ${COST_BUDGET_MESSAGE}` });
    expect(compileRules('s', validating({ validations: holding(12) }), 'p', 'Ignore')(request)).to.deep.equal({ allowed: true });
    expect(compileRules('s', validating({ validations: holding(11) }), 'p', 'Fail')(request)).to.deep.equal({ allowed: true });
  });

  it('gives each composited variable its own per-expression limit, charged to the same budget', function () {
    const request = requestWith({ items: NEAR_LIMIT });
    // 900,003 for the variable and 900,003 for the expression reading it: neither passes 1,000,000
    const both = compileRules('s', validating({ variables: [{ name: 'ok', expression: COSTLY }], validations: [{ expression: `variables.ok && ${COSTLY}` }] }), 'p', 'Fail');
    expect(both(request)).to.deep.equal({ allowed: true });
    const runaway = compileRules('s', validating({ variables: [{ name: 'big', expression: 'object.spec.items.map(x, x).size()' }], validations: [{ expression: 'variables.big > 0' }] }), 'p', 'Fail');
    expect(runaway(request).message).to.equal(`expression 'variables.big > 0' resulted in error: composited variable "big" fails to evaluate: ${COST_LIMIT_MESSAGE}`);
  });

  it('stops a runaway in a mutation too, by failurePolicy', function () {
    const spec: WebhookSpec = {
      name: 'm',
      type: 'Mutating',
      rules: rule,
      mutations: [{ condition: 'object.spec.items.all(x, object.spec.items.all(y, x + y >= 0))', patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] }],
    };
    const request = requestWith({ items: range(2000) });
    expect(compileRules('s', spec, 'p', 'Fail')(request)).to.include({ allowed: false, message: COST_LIMIT_MESSAGE });
    expect(compileRules('s', spec, 'p', 'Ignore')(request)).to.deep.equal({ allowed: true });
  });

  describe('over HTTPS, while one request runs away', function () {
    const suite: AdmissionSuite = {
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'costly', uid: 'u1', generation: 1 },
      spec: {
        webhooks: [
          { name: 'runaway', type: 'Validating', rules: rule, validations: [{ expression: 'object.spec.items.all(x, object.spec.items.all(y, object.spec.items.all(z, x + y + z >= 0)))' }] },
          { name: 'quick', type: 'Validating', rules: rule, validations: [{ expression: 'object.spec.replicas <= 5' }] },
        ],
      },
    };
    let endpoint: TestEndpoint;
    const post = (path: string, body: string) => endpoint.post(path, body);

    before(async function () {
      const registry = new SuiteRegistry();
      registry.sync(suite);
      endpoint = await startTestEndpoint(registry, 'costly');
    });

    after(() => endpoint.close());

    it('stops it at the cost limit and answers the requests that came meanwhile', async function () {
      const review = fixtures.deploymentCreate();
      const runawayReview = { ...review, request: requestWith({ items: range(5000) }) };
      const [runaway, ...quick] = await Promise.all([
        post('/admit/costly/runaway', JSON.stringify(runawayReview)),
        ...Array.from({ length: 5 }, () => post('/admit/costly/quick', JSON.stringify({ ...review, request: { ...review.request, object: { spec: { replicas: 1 } } } }))),
      ]);
      expect(runaway.body.response).to.include({ uid: review.request!.uid, allowed: false });
      expect(runaway.body.response.status.message).to.contain(COST_LIMIT_MESSAGE);
      // (cut by cost, so the thread was given back: no time is asserted, it depends on the machine)
      for (const reply of quick) expect(reply.body.response.allowed).to.equal(true);
      // and the server serves on
      const next = await post('/admit/costly/quick', JSON.stringify({ ...review, request: { ...review.request, object: { spec: { replicas: 1 } } } }));
      expect(next.body.response.allowed).to.equal(true);
      expect(PER_CALL_LIMIT).to.equal(1_000_000);
    });
  });
});
