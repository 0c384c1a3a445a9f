/**
 * A team's AdmissionPolicy is charged by the real size of what its expressions work on, whatever
 * the static type (cost/calls.ts's STRICT_CALL_COSTS and strictOperatorCost, instrumented with
 * `strictCost`): the API server charges a call on a `dyn` value by size only when its checker
 * resolved the overload, and some of its figures leave out work that grows with the input. Each
 * case is an escape: the same expression costs a suite next to nothing (the API server's figure,
 * kept), and a team's policy what it does. And a call past the limit is stopped before its work.
 */
import { expect } from 'chai';
import { compile } from '../../../src/policy/engine/environment.ts';
import { COST_LIMIT_MESSAGE, meter } from '../../../src/policy/cost/meter.ts';
import { toCel } from '../../../src/policy/values/convert.ts';
import { firstLine } from '../../../src/policy/celjs/program.ts';

const activation = (object: unknown) => ({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: null, variables: {} });

/** The cost of one free-standing evaluation (the cost at the first step past the limit when it is stopped), and its error. */
function run(expression: string, object: unknown, strictCost: boolean): { cost: number; error?: string; value?: unknown } {
  const program = compile(expression, 'f', [], { strictCost });
  try {
    const value = program(activation(object) as never);
    return { cost: meter.cost, value };
  } catch (err) {
    return { cost: meter.cost, error: firstLine(err) };
  }
}

const ints = (n: number) => Array.from({ length: n }, (_, i) => (i * 7919) % n);
const shortStrings = (n: number) => Array.from({ length: n }, (_, i) => `s${i % 1000}`);
const bigMap = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));

describe("policy: a team's policy is charged by real sizes (strict cost)", function () {
  this.timeout(20_000);

  it('charges sort() of a dyn list as the API server charges a typed one, where the API server charges it 1', function () {
    // the API server: 1 for the call on `object` (untyped), whatever the list holds
    expect(run('object.sort()', [3, 2, 1], false).cost).to.equal(2);
    // a typed list: 2 n^2 + 11 (cel-go's tracker); `object` costs 1 more than a literal
    const typed = run('[3, 2, 1].sort()', null, false).cost;
    expect(typed).to.equal(29);
    expect(run('object.sort()', [3, 2, 1], true).cost).to.equal(typed + 1);
    // 3,000 elements: 18,000,011 units, stopped at once, before the sort runs
    const big = run('object.sort()[0] == 0', ints(3000), true);
    expect(big.error).to.equal(COST_LIMIT_MESSAGE);
    expect(big.cost).to.be.above(18_000_000);
    expect(run('object.sort()[0] == 0', ints(3000), false)).to.deep.include({ value: true });
  });

  it('charges sortBy with a dyn key by size, before it sorts', function () {
    const suite = run('object.sortBy(x, x)', [3, 1, 2], false).cost;
    // the untracked 1 replaced by 2 n^2 + 11
    expect(run('object.sortBy(x, x)', [3, 1, 2], true).cost).to.equal(suite - 1 + 29);
    expect(run('object.sortBy(x, x)[0] == 0', ints(3000), true).error).to.equal(COST_LIMIT_MESSAGE);
  });

  it('stops a call past the limit before it runs: its own error never comes', function () {
    // mixed elements: sort fails on them, but a team's policy is stopped by the cost first
    const mixed = [...ints(2000), 'a'];
    expect(run('object.sort().size() > 0', mixed, false).error).to.equal('list elements must have the same type');
    expect(run('object.sort().size() > 0', mixed, true).error).to.equal(COST_LIMIT_MESSAGE);
  });

  // [what, expression, data, the least a team's policy is charged, the most a suite is]
  const escapes: [string, string, unknown, number, number][] = [
    ['`in` on a dyn list', "!('zz' in object.l)", { l: shortStrings(50_000) }, 50_000, 10],
    ['indexOf over short strings (free in traversalCost)', "object.l.indexOf('zz') < 0", { l: shortStrings(50_000) }, 50_000, 10],
    ['`+` of dyn strings', 'size(object.s + object.s) > 0', { s: 'a'.repeat(100_000) }, 20_000, 10],
    ['`<` of dyn strings', 'object.s < object.t', { s: 'a'.repeat(100_000), t: 'a'.repeat(100_000) }, 10_000, 10],
    ['`==` of maps (by their keys only, for the API server)', 'object.m == object.n', { m: bigMap(500), n: bigMap(500) }, 1_000, 200],
    ['charAt (splits the string into runes)', "object.s.charAt(5) != ''", { s: 'a'.repeat(100_000) }, 20_000, 10],
    ['size() of a map', 'size(object.m) > 0', { m: bigMap(5_000) }, 15_000, 10],
    ['slice(0, 0) (copies the list first)', 'object.l.slice(0, 0).size() == 0', { l: shortStrings(50_000) }, 50_000, 20],
    ['first() (copies the list)', 'object.l.first().hasValue()', { l: shortStrings(50_000) }, 5_000, 10],
    // n^2 comparisons, each of a long string: the API server's 2 n^2 counts the pairs only
    ['distinct() of maps holding long strings', 'object.l.distinct().size() > 0', { l: Array.from({ length: 300 }, (_, i) => ({ a: 'x'.repeat(10_000), i })) }, 10_000_000, 300 * 300 * 2 + 20],
    ["format('%s') of a list", "'%s'.format([object.l]).size() > 0", { l: shortStrings(10_000) }, 80_000, 20],
    ["replace('', s): the result grows with both", "object.s.replace('', object.s).size() > 0", { s: 'a'.repeat(2_000) }, 400_000, 1_000],
    ['a quantity with a large exponent (its exact value)', "quantity('1e6000000').isGreaterThan(quantity('1'))", null, 600_000, 10],
    ['string(bytes) (a copy)', 'size(string(bytes(object.s))) > 0', { s: 'a'.repeat(100_000) }, 20_000, 10],
    ['url().getQuery() (a map of every parameter)', 'url(object.u).getQuery().size() >= 0', { u: `https://x/?${'a=b&'.repeat(5_000)}` }, 40_000, 5_000],
  ];
  for (const [what, expression, data, least, most] of escapes) {
    it(`charges ${what} by its real size`, function () {
      const suite = run(expression, data, false);
      expect(suite.cost, 'as the API server charges it').to.be.at.most(most);
      const team = run(expression, data, true);
      expect(team.cost, 'a team').to.be.at.least(least);
      if (team.cost > 1_000_000) expect(team.error).to.equal(COST_LIMIT_MESSAGE);
      else expect(team.value, 'the same answer').to.deep.equal(suite.value);
    });
  }

  it("keeps the API server's figures where they already bound the work (typed strings and lists)", function () {
    const input = { l: ints(2000), n: ints(1000).map(String), s: 'a'.repeat(10_000) };
    for (const expression of ["object.s.matches('a+b') || true", "object.n.all(x, x.startsWith('1') || true)", "object.s.lowerAscii().contains('b') || true", 'object.l.all(x, x >= 0)']) {
      const suite = run(expression, input, false).cost;
      const team = run(expression, input, true).cost;
      // a regex runs five times the string traversal (re2js); the rest alike
      if (expression.includes('matches')) expect(team).to.be.within(suite, 5 * suite + 10);
      else expect(team, expression).to.equal(suite);
    }
  });
});
