/** sets.contains, sets.equivalent and sets.intersects (cel-go's sets extension). */
import { expect } from 'chai';
import { compileError, evaluate } from './evaluate.ts';

describe('policy library: sets', function () {
  it('tests containment, equivalence and intersection with CEL equality', function () {
    expect(evaluate('sets.contains([], [])')).to.equal(true);
    expect(evaluate('sets.contains([1], [])')).to.equal(true);
    expect(evaluate('sets.contains([], [1])')).to.equal(false);
    expect(evaluate("sets.contains([{'a': 1}], [{'a': 1}])")).to.equal(true);
    expect(evaluate('sets.equivalent([1, 2, 2], [2, 1])')).to.equal(true);
    expect(evaluate('sets.equivalent([1], [1, 3])')).to.equal(false);
    expect(evaluate('sets.intersects([1, 2], [3, 2])')).to.equal(true);
    expect(evaluate('sets.intersects([], [])')).to.equal(false);
  });

  it('compares untyped values across numeric types', function () {
    expect(evaluate('sets.contains(object, [1.0])', ['a', 1])).to.equal(true);
    expect(evaluate('sets.intersects(object.a, object.b)', { a: [1, 2], b: [2.0] })).to.equal(true);
    expect(evaluate("sets.contains(object.metadata.finalizers, ['kubernetes'])", { metadata: { finalizers: ['kubernetes', 'x'] } })).to.equal(true);
  });

  it('refuses lists of different element types at compile time', function () {
    expect(compileError('sets.contains([1, 2], [1.0])')).to.equal("found no matching overload for 'sets.contains' applied to '(list(int), list(double))'");
    expect(compileError("sets.intersects([1], ['a'])")).to.equal("found no matching overload for 'sets.intersects' applied to '(list(int), list(string))'");
  });
});
