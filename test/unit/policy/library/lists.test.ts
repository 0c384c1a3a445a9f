/**
 * Kubernetes' list library (isSorted, sum, min, max, indexOf, lastIndexOf, includes). Expected
 * values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

describe('policy library: lists', function () {
  it('isSorted orders numbers across types, strings by code point, and accepts empty lists', function () {
    expect(evaluate('[1, 2, 3].isSorted()')).to.equal(true);
    expect(evaluate("['a', 'b', 'b', 'c'].isSorted()")).to.equal(true);
    expect(evaluate('[2.0, 1.0].isSorted()')).to.equal(false);
    expect(evaluate('[].isSorted()')).to.equal(true);
    expect(evaluate('object.isSorted()', [1, 1.5, 2])).to.equal(true);
  });

  it('sum adds ints, doubles, uints and durations, and gives int 0 for an empty list', function () {
    expect(evaluate('[1, 3].sum()')).to.equal(4n);
    expect(evaluate('[1.0, 3.0].sum()')).to.equal(4);
    expect(evaluate('[uint(1), uint(2)].sum() == uint(3)')).to.equal(true);
    expect(evaluate("[duration('1m'), duration('1s')].sum() == duration('61s')")).to.equal(true);
    expect(evaluate('[].sum()')).to.equal(0n);
    expect(evaluate('object.spec.containers.map(c, c.replicas).sum() > 2.5', { spec: { containers: [{ replicas: 1.5 }, { replicas: 2.5 }] } })).to.equal(true);
  });

  it('sum fails on overflow and on values it cannot add', function () {
    expect(evaluationError('[9223372036854775807, 1].sum()')).to.equal('integer overflow');
    expect(evaluationError('object.sum()', [1, 2.5])).to.equal('no such overload');
    expect(evaluationError('object.sum()', ['a'])).to.equal('no such overload: sum(list)');
  });

  it('min and max take the extreme of comparable values and fail on an empty list', function () {
    expect(evaluate('[1, 3].min()')).to.equal(1n);
    expect(evaluate('[1, 3].max()')).to.equal(3n);
    expect(evaluate("['b', 'a', 'c'].max()")).to.equal('c');
    expect(evaluate('[true, false].min()')).to.equal(false);
    expect(evaluate("[timestamp('2020-01-01T00:00:00Z'), timestamp('2019-01-01T00:00:00Z')].min() == timestamp('2019-01-01T00:00:00Z')")).to.equal(true);
    expect(evaluate('object.max()', [1, 2.5, 2])).to.equal(2.5);
    expect(evaluate('object.items.min() + 1', { items: [3, 2] })).to.equal(3n);
    expect(evaluationError('[].min()')).to.equal('min called on empty list');
    expect(evaluationError('object.max()', [])).to.equal('max called on empty list');
    expect(evaluationError('object.min()', [[1]])).to.equal('no such overload: min(list)');
  });

  it('refuses element types without an order or a sum at compile time', function () {
    expect(compileError('[[1]].isSorted()')).to.equal("found no matching overload for 'isSorted' applied to 'list(list(int)).()'");
    expect(compileError('[[1]].max()')).to.equal("found no matching overload for 'max' applied to 'list(list(int)).()'");
    expect(compileError("['a'].sum()")).to.equal("found no matching overload for 'sum' applied to 'list(string).()'");
  });

  it('indexOf and lastIndexOf find elements by CEL equality', function () {
    expect(evaluate('[1, 2, 2, 3].indexOf(2)')).to.equal(1n);
    expect(evaluate("['a', 'b', 'b', 'c'].lastIndexOf('b')")).to.equal(2n);
    expect(evaluate('[1.0].indexOf(1.1)')).to.equal(-1n);
    expect(evaluate("[].indexOf('string')")).to.equal(-1n);
    expect(evaluate('object.indexOf({"a": 1})', [{ a: 1.5 }, { a: 1 }])).to.equal(1n);
    expect(compileError('[1, 2].indexOf(2.0)')).to.equal("found no matching overload for 'indexOf' applied to 'list(int).(double)'");
  });

  it('includes tests membership in a list, or equality with anything else', function () {
    expect(evaluate('[1, 2, 3].includes(2)')).to.equal(true);
    expect(evaluate('[1, 2, 3].includes(4)')).to.equal(false);
    expect(evaluate("'model-a'.includes('model-a')")).to.equal(true);
    expect(evaluate("'model-a'.includes('model-b')")).to.equal(false);
    expect(evaluate('object.includes("a")', ['a'])).to.equal(true);
  });

  it('finds an int equal to a double as cel-go does, by converting the int (beyond 2^53 too), as sets.contains does', function () {
    // cel-go's compareIntDouble; figures from the API server's environment (test/support/celgo-cost)
    expect(evaluate('dyn([9007199254740993]).indexOf(9007199254740992.0)')).to.equal(0n);
    expect(evaluate('dyn([9007199254740993]).lastIndexOf(9007199254740992.0)')).to.equal(0n);
    expect(evaluate('dyn([9223372036854775807]).indexOf(9223372036854775808.0)')).to.equal(0n);
    expect(evaluate('sets.contains(dyn([9007199254740993]), dyn([9007199254740992.0]))')).to.equal(true);
  });
});
