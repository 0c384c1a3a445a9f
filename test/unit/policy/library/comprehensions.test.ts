/**
 * Two-variable comprehensions (cel-go ext.TwoVarComprehensions, Kubernetes 1.32+): all, exists,
 * existsOne / exists_one, transformList, transformMap, transformMapEntry over lists (index,
 * value) and maps (key, value). Results, errors and costs as cel-go v0.29 gives them.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { COST_LIMIT_MESSAGE, meter } from '../../../../src/policy/cost/meter.ts';
import { toCel } from '../../../../src/policy/values/convert.ts';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

/** The cost of one evaluation of `expression` with `object` bound. */
function costOf(expression: string, object: unknown): number {
  compile(expression, 'f')({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: null, variables: {} });
  return meter.cost;
}

const ten = { l: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] };

describe('policy library: two-variable comprehensions', function () {
  it('all and exists see the index and value of a list, the key and value of a map', function () {
    expect(evaluate('[1, 2, 3].all(i, v, i < v)')).to.equal(true);
    expect(evaluate('[1, 2, 3].all(i, v, i == 1 && v == 2)')).to.equal(false);
    expect(evaluate('[1, 2, 3].exists(i, v, i == 1 && v == 2)')).to.equal(true);
    expect(evaluate("{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)")).to.equal(false);
    expect(evaluate("{'greeting': 'hello', 'farewell': 'goodbye'}.exists(k, v, k.startsWith('good') || v.endsWith('bye'))")).to.equal(true);
    expect(evaluate("{'h': ['hello', 'hi'], 'j': ['joke', 'jog']}.all(k, vals, vals.all(v, v.startsWith(k)))")).to.equal(true);
    expect(evaluate('object.metadata.labels.all(k, v, k.startsWith("app") && v != "")', { metadata: { labels: { app: 'web', 'app.tier': 'front' } } })).to.equal(true);
    expect(evaluate('object.spec.containers.exists(i, c, i > 0 && c.name == "sidecar")', { spec: { containers: [{ name: 'sidecar' }, { name: 'main' }] } })).to.equal(false);
    expect(evaluate('[].all(i, v, false) && ![].exists(i, v, true)')).to.equal(true);
  });

  it('existsOne (and exists_one) counts the entries that hold, without stopping early', function () {
    expect(evaluate('[1, 2, 1, 3, 1, 4].existsOne(i, v, i == 1 || v == 1)')).to.equal(false);
    expect(evaluate('[1, 1, 2, 2, 3, 3].existsOne(i, v, i == 2 && v == 2)')).to.equal(true);
    expect(evaluate("{'i': 0, 'j': 1, 'k': 2}.exists_one(k, v, k == 'l' || v == 1)")).to.equal(true);
    expect(evaluate('{6: "six", 7: "seven", 8: "eight"}.existsOne(k, v, k % 5 == 2 && v == "seven")')).to.equal(true);
  });

  it('transformList builds a list, optionally filtered', function () {
    expect(evaluate('[1, 2, 3].transformList(i, v, i * v + v)')).to.deep.equal([1n, 4n, 9n]);
    expect(evaluate('[1, 2, 3].transformList(i, v, i % 2 == 0, i * v + v)')).to.deep.equal([1n, 9n]);
    expect(evaluate("{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(k, _, k)")).to.deep.equal(['greeting', 'farewell']);
    expect(evaluate('object.transformList(k, v, v > 1, k + "=" + string(v))', { a: 1, b: 2 })).to.deep.equal(['b=2']);
    expect(evaluate('[].transformList(i, v, v).size()')).to.equal(0n);
  });

  it('transformMap keeps the keys (list indices) and transforms the values', function () {
    const indexed = evaluate('[1, 2, 3].transformMap(i, v, i * v + v)') as Map<bigint, bigint>;
    expect([...indexed]).to.deep.equal([
      [0n, 1n],
      [1n, 4n],
      [2n, 9n],
    ]);
    expect(evaluate('[1, 2, 3].transformMap(i, v, v > 1, v)[2]')).to.equal(3n);
    expect(evaluate('[1, 2].transformMap(i, v, v * 2) == {0: 2, 1: 4}')).to.equal(true);
    expect(evaluate("{'greeting': 'hello'}.transformMap(k, v, v + '!')")).to.deep.equal({ greeting: 'hello!' });
    expect(evaluate('object.transformMap(k, v, k.startsWith("x"), v * 10)', { xa: 1, b: 2, xc: 3 })).to.deep.equal({ xa: 10n, xc: 30n });
    expect(evaluate("{'a': 1}.transformMap(k, v, v * 2) == {'a': 2}")).to.equal(true);
  });

  it('transformMapEntry builds a map from map literals, and refuses a key twice', function () {
    expect(evaluate("{'greeting': 'hello'}.transformMapEntry(k, v, {v: k})")).to.deep.equal({ hello: 'greeting' });
    expect([...(evaluate('[1, 2, 3].transformMapEntry(i, v, {v: i})') as Map<bigint, bigint>)]).to.deep.equal([
      [1n, 0n],
      [2n, 1n],
      [3n, 2n],
    ]);
    expect(evaluate('[1, 2, 3].transformMapEntry(i, v, {v: i})[2]')).to.equal(1n);
    expect(evaluate("{'a': 1, 'b': 2}.transformMapEntry(k, v, v > 1, {k + 'x': v, k: v})")).to.deep.equal({ bx: 2n, b: 2n });
    expect(evaluationError("{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(k, v, {v: k})")).to.equal('insert failed: key aloha already exists');
    expect(evaluationError('object.transformMapEntry(i, v, {v: i})', [1, 1.0])).to.equal('insert failed: key 1 already exists');
    expect(evaluationError('object.transformMapEntry(i, v, v)', [1])).to.equal('no such overload: cel.@mapInsert(map, int)');
  });

  it('errors as cel-go: all/exists decide past an error, existsOne and filters report the last one', function () {
    expect(evaluate('[0, -1].all(i, v, 1 / v > 0)')).to.equal(false);
    expect(evaluationError('[0, 1].all(i, v, 1 / v > 0)')).to.equal('division by zero');
    expect(evaluate('[0, 1].exists(i, v, 1 / v > 0)')).to.equal(true);
    expect(evaluationError('[0, -1].exists(i, v, 1 / v > 0)')).to.equal('division by zero');
    expect(evaluate('[1, 2, 3].exists(i, v, v / (v - 1) == 1)')).to.equal(true);
    expect(evaluationError('[1, 2, 3].existsOne(i, v, v / (v - 1) == 1)')).to.equal('division by zero');
    expect(evaluationError('object.all(i, v, v)', [true, 1])).to.equal('no such overload');
    expect(evaluate('object.all(i, v, v)', [1, false])).to.equal(false);
    expect(evaluationError('object.transformList(i, v, 1 / v)', [0, 'a'])).to.equal('division by zero');
    expect(evaluationError('object.all(k, v, true)', 1)).to.equal('unsupported comprehension range type: types.Int');
    expect(evaluationError('object.transformMap(k, v, v)', 'abc')).to.equal('unsupported comprehension range type: types.String');
  });

  it('refuses at compile time what cel-go refuses', function () {
    expect(compileError('[1, 2, 3].all(i, i, i < 3)')).to.equal('duplicate variable name: i');
    expect(compileError('[1, 2, 3].all(__result__, v, v < 3)')).to.equal('iteration variable overwrites accumulator variable');
    expect(compileError('[1, 2, 3].exists(i.j, v, v < 3)')).to.equal('argument must be a simple name');
    expect(compileError('[1].all(i, 1, true)')).to.equal('argument must be a simple name');
    expect(compileError('[1, 2, 3].all(i, v, v)')).to.equal("expected type 'bool' but found 'int'");
    expect(compileError('[1, 2, 3].existsOne(i, v, v)')).to.equal("found no matching overload for '_?_:_' applied to '(int, int, int)'");
    expect(compileError('[1, 2, 3].transformList(i, v, v, v)')).to.equal("found no matching overload for '_?_:_' applied to '(int, list(int), list(int))'");
    expect(compileError('[1, 2, 3].transformMap(i, v, v, v)')).to.equal("found no matching overload for '_?_:_' applied to '(int, map(int, int), map(int, int))'");
    expect(compileError("[1, 2, 3].transformMapEntry(i, v, 'a')")).to.equal("found no matching overload for 'cel.@mapInsert' applied to '(map(dyn, dyn), string)'");
    expect(compileError('1.all(i, v, true)')).to.equal("expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)");
    // the variables are typed from the range: a list's index is an int
    expect(compileError('["a"].all(i, v, i == v)')).to.contain('no matching overload');
  });

  it('charges every iteration as cel-go does', function () {
    expect(costOf('object.l.all(i, x, x >= 0)', ten)).to.equal(53);
    expect(costOf('object.l.all(i, x, x >= 3)', ten)).to.equal(10);
    expect(costOf('object.l.exists(i, x, x >= 100)', ten)).to.equal(63);
    expect(costOf('object.l.exists(i, x, x >= 3)', ten)).to.equal(24);
    expect(costOf('object.l.existsOne(i, x, x >= 5)', ten)).to.equal(36);
    expect(costOf('object.l.transformList(i, x, x)', ten)).to.equal(133);
    expect(costOf('object.l.transformList(i, x, x > 5, x)', ten)).to.equal(88);
    expect(costOf('object.l.transformMap(i, x, x)', ten)).to.equal(43);
    expect(costOf('object.l.transformMapEntry(i, x, {x: i})', ten)).to.equal(343);
    expect(costOf('object.l.transformMapEntry(i, x, x > 5, {x: i})', ten)).to.equal(193);
  });

  it('stops a runaway nested comprehension at the cost limit', function () {
    const l = Array.from({ length: 2000 }, (_, i) => i);
    expect(evaluationError('object.l.all(i, x, object.l.transformList(j, y, x + y).size() > 0)', { l })).to.equal(COST_LIMIT_MESSAGE);
    expect(evaluationError('object.l.exists(i, x, object.l.exists(j, y, x + y < 0))', { l })).to.equal(COST_LIMIT_MESSAGE);
  });
});
