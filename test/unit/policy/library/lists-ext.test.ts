/**
 * cel-go's lists extension (version 3, as Kubernetes 1.37 enables it) and the list functions of
 * its optional library. Expected values, errors and costs were taken from cel-go v0.29.2 with
 * apiserver v0.37.2's environment and cost estimator (MustBaseEnvSet(1.37)).
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { meter } from '../../../../src/policy/cost/meter.ts';
import { toCel } from '../../../../src/policy/values/convert.ts';
import { Optional } from '../../../../src/policy/celjs/values.ts';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

/** The runtime cost of one evaluation of `expression` with `object` bound. */
function costOf(expression: string, object: unknown = null): number {
  compile(expression, 'f')({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: null, variables: {} } as never);
  return meter.cost;
}

describe('policy library: lists extension', function () {
  it('slice takes a sub-list and refuses bad indices with cel-go messages', function () {
    expect(evaluate('[1, 2, 3, 4].slice(1, 3)')).to.deep.equal([2n, 3n]);
    expect(evaluate('[1, 2, 3, 4].slice(0, 0)')).to.deep.equal([]);
    expect(evaluate('object.slice(1, 2)', ['a', 'b'])).to.deep.equal(['b']);
    expect(evaluationError('[1, 2, 3, 4].slice(-1, 3)')).to.equal('cannot slice(-1, 3), negative indexes not supported');
    expect(evaluationError('[1, 2, 3, 4].slice(3, 1)')).to.equal('cannot slice(3, 1), start index must be less than or equal to end index');
    expect(evaluationError('[1, 2, 3, 4].slice(1, 5)')).to.equal('cannot slice(1, 5), list is length 4');
    expect(compileError("'abc'.slice(0, 1)")).to.equal("found no matching overload for 'slice' applied to 'string.(int, int)'");
    expect(compileError('[1, 2].slice(0, 1u)')).to.equal("found no matching overload for 'slice' applied to 'list(int).(int, uint)'");
  });

  it('flatten flattens one level, or as many as asked, and keeps what is not a list', function () {
    expect(evaluate('[[1], [2, 3]].flatten()')).to.deep.equal([1n, 2n, 3n]);
    expect(evaluate('object.flatten()', [1, [2, [3]], []])).to.deep.equal([1n, 2n, [3n]]);
    expect(evaluate('object.flatten(2)', [1, [2, [3, [4]]]])).to.deep.equal([1n, 2n, 3n, [4n]]);
    expect(evaluate('object.flatten(0)', [1, [2]])).to.deep.equal([1n, [2n]]);
    expect(evaluate('[1, 2].flatten(1)')).to.deep.equal([1n, 2n]);
    expect(evaluate('[].flatten()')).to.deep.equal([]);
    expect(evaluationError('object.flatten(-1)', [1, [2]])).to.equal('level must be non-negative');
    expect(compileError('[1, 2].flatten()')).to.equal("found no matching overload for 'flatten' applied to 'list(int).()'");
  });

  it('lists.range counts from 0 up to a limit of a million', function () {
    expect(evaluate('lists.range(5)')).to.deep.equal([0n, 1n, 2n, 3n, 4n]);
    expect(evaluate('lists.range(0)')).to.deep.equal([]);
    expect(evaluate('lists.range(3).map(x, x * 2)')).to.deep.equal([0n, 2n, 4n]);
    expect(evaluationError('lists.range(-1)')).to.equal('lists.range: size must be non-negative, got -1');
    expect(evaluationError('lists.range(1000001)')).to.equal('lists.range: size 1000001 exceeds maximum allowed (1000000)');
    expect(compileError("lists.range('a')")).to.equal("found no matching overload for 'lists.range' applied to '(string)'");
  });

  it('reverse and distinct (by CEL equality, first occurrence kept)', function () {
    expect(evaluate('[5, 3, 1, 2].reverse()')).to.deep.equal([2n, 1n, 3n, 5n]);
    expect(evaluate('[].reverse()')).to.deep.equal([]);
    expect(evaluate('[1, 2, 2, 3, 3, 3].distinct()')).to.deep.equal([1n, 2n, 3n]);
    expect(evaluate("['b', 'b', 'c', 'a', 'c'].distinct()")).to.deep.equal(['b', 'c', 'a']);
    expect(evaluate('object.distinct()', [1, 'b', 2, 'b', 1.0])).to.deep.equal([1n, 'b', 2n]);
  });

  it('sort orders comparable elements of one type', function () {
    expect(evaluate('[3, 2, 1].sort()')).to.deep.equal([1n, 2n, 3n]);
    expect(evaluate("['b', 'c', 'a'].sort()")).to.deep.equal(['a', 'b', 'c']);
    expect(evaluate('[true, false].sort()')).to.deep.equal([false, true]);
    expect(evaluate('[2.0, 1.0, -1.5].sort()')).to.deep.equal([-1.5, 1, 2]);
    expect(evaluate("[duration('2s'), duration('1s')].sort() == [duration('1s'), duration('2s')]")).to.equal(true);
    expect(evaluate('[].sort()')).to.deep.equal([]);
    expect(evaluationError('object.sort()', [1, 'b'])).to.equal('list elements must have the same type');
    expect(evaluationError('object.sort()', [2, 1.5])).to.equal('list elements must have the same type');
    expect(evaluationError('object.sort()', [[1], [2]])).to.equal('list elements must be comparable');
    expect(evaluationError('object.sort()', [null, 1])).to.equal('list elements must be comparable');
    expect(compileError('[[1, 2, 3]].sort()')).to.equal("found no matching overload for 'sort' applied to 'list(list(int)).()'");
    expect(compileError("[{'a': 1}].sort()")).to.equal("found no matching overload for 'sort' applied to 'list(map(string, int)).()'");
  });

  it('sortBy orders by a key expression, equal keys in the order Go sort.Slice leaves them', function () {
    expect(evaluate('[1, 2].sortBy(x, -x)')).to.deep.equal([2n, 1n]);
    expect(
      evaluate('object.sortBy(e, e.s).map(e, e.n)', [
        { n: 'a', s: 2 },
        { n: 'b', s: 1 },
      ]),
    ).to.deep.equal(['b', 'a']);
    expect(evaluate('(true ? [2, 1] : [1]).sortBy(x, x)')).to.deep.equal([1n, 2n]);
    expect(evaluate('[].sortBy(x, x)')).to.deep.equal([]);
    // pdqsort is not stable: 20 elements with 4 distinct keys, as cel-go orders them
    const items = [3, 0, 3, 2, 1, 2, 1, 3, 0, 3, 3, 2, 0, 1, 1, 0, 1, 2, 1, 0].map((k, i) => ({ k, i }));
    expect((evaluate('object.sortBy(x, x.k).map(x, x.i)', items) as bigint[]).map(Number)).to.deep.equal([12, 1, 19, 15, 8, 18, 4, 16, 6, 14, 13, 5, 11, 17, 3, 10, 9, 7, 0, 2]);
    expect(evaluationError('object.sortBy(e, e.s)', [{ s: 2 }, { s: 'x' }])).to.equal('list elements must have the same type');
    expect(evaluationError('object.sortBy(e, e)', [[1], [2]])).to.equal('list elements must be comparable');
    expect(evaluationError('object.sortBy(x, x)', 'abc')).to.equal("got 'types.String', expected iterable type");
  });

  it('sortBy refuses what cel-go refuses at compile time', function () {
    expect(compileError('[1, 2].sortBy(x, [x])')).to.equal("found no matching overload for '@sortByAssociatedKeys' applied to 'list(int).(list(list(int)))'");
    expect(compileError('object.sortBy(x, [x])')).to.equal("found no matching overload for '@sortByAssociatedKeys' applied to 'dyn.(list(list(dyn)))'");
    expect(compileError('[1].sortBy(x, optional.of(x))')).to.equal("found no matching overload for '@sortByAssociatedKeys' applied to 'list(int).(list(optional_type(int)))'");
    expect(compileError("{'a': 1}.sortBy(x, x)")).to.match(/^sortBy can only be applied to a list, identifier, comprehension, call or select expression/);
    expect(compileError('[2, 1].sortBy(x.y, x)')).to.match(/^argument is not an identifier/);
    expect(compileError('object.sortBy(__result__, 1)')).to.match(/^iteration variable overwrites accumulator variable/);
    expect(compileError('(1 + 1).sortBy(x, x)')).to.equal("expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)");
  });

  it('first, last, optional.unwrap and unwrapOpt (cel-go optional library)', function () {
    expect((evaluate('[1, 2].first()') as Optional).value()).to.equal(1n);
    expect((evaluate('[1, 2].last()') as Optional).value()).to.equal(2n);
    expect((evaluate('[].first()') as Optional).hasValue()).to.equal(false);
    expect(evaluate('[true].first().value()')).to.equal(true);
    expect(evaluate('optional.unwrap([optional.of(1), optional.none()])')).to.deep.equal([1n]);
    expect(evaluate('[optional.of(1), optional.none()].unwrapOpt()')).to.deep.equal([1n]);
    expect(evaluationError('object.unwrapOpt()', [1])).to.equal('no such overload: unwrapOpt(list)');
    expect(compileError('[1].unwrapOpt()')).to.equal("found no matching overload for 'unwrapOpt' applied to 'list(int).()'");
    expect(compileError('optional.unwrap([1])')).to.equal("found no matching overload for 'optional.unwrap' applied to '(list(int))'");
  });

  it('keeps element types, so typed results compile where cel-go compiles them', function () {
    expect(evaluate('[true].reverse()[0]')).to.equal(true);
    expect(evaluate('[[true]].flatten()[0]')).to.equal(true);
    expect(evaluate('[true, false].sortBy(x, x)[0]')).to.equal(false);
  });

  it('charges what cel-go charges', function () {
    const cases: [string, unknown, number][] = [
      ['[1, 2, 3, 4].slice(1, 3)', null, 13],
      ['object.flatten()', [1, [2, [3]], []], 15],
      ['object.flatten(100)', [1, [2, [3, [4]]]], 212],
      ['lists.range(5)', null, 16],
      ['[5, 3, 1, 2].reverse()', null, 15],
      ['[1, 2, 2, 3, 3, 3].distinct()', null, 83],
      ['[3, 2, 1].sort()', null, 29],
      ['[2.0, 1.0, -1.5].sort()', null, 29],
      // an untyped receiver: cel-go resolves no single sort overload, and charges the call 1
      ['object.sort()', [2, 1], 2],
      ['[[1], [2, 3]].flatten()', null, 13],
      ['[1, 2].sortBy(x, -x)', null, 50],
      ['object.sortBy(x, x)', [3, 1, 2], 44],
      ['object.sortBy(x, 1)', [3, 1, 2], 39],
      ["['b', 'a'].sortBy(x, x + '')", null, 50],
      ['[object.a].sortBy(x, x)', { a: 1 }, 29],
      ['[].sortBy(x, x)', null, 14],
    ];
    for (const [expression, object, cost] of cases) expect(costOf(expression, object), expression).to.equal(cost);
    expect(evaluationError('lists.range(1000000).size()')).to.equal('operation cancelled: actual cost limit exceeded');
  });
});
