/** Comparing numbers across int, uint and double, as cel-go does with CrossTypeNumericComparisons. */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

describe('policy library: cross-type numeric comparison', function () {
  it('orders int, uint and double against each other', function () {
    expect(evaluate('1 < 1.5 && 1.5 > 1 && 1 < 2u && 2u >= 1.5 && -1 < 0u && 1.0 <= 1u')).to.equal(true);
    expect(evaluate('object.replicas < 2.5 && object.replicas >= 2u', { replicas: 2 })).to.equal(true);
    expect(evaluate('object.ratio > 1', { ratio: 1.5 })).to.equal(true);
  });

  it('compares an int with a double as a double, as cel-go does', function () {
    expect(evaluate('9223372036854775807 < 9223372036854775808.0')).to.equal(false);
    expect(evaluate('dyn(9223372036854775807) == dyn(9223372036854775808.0)')).to.equal(true);
    expect(evaluate('18446744073709551615u > 1.8446744073709552e19')).to.equal(false);
  });

  it('refuses to order NaN', function () {
    expect(evaluationError('0.0 / 0.0 < 1')).to.equal('NaN values cannot be ordered');
    expect(evaluationError('object.x >= double("NaN")', { x: 1.5 })).to.equal('NaN values cannot be ordered');
    expect(evaluate('0.0 / 0.0 == 0.0 / 0.0')).to.equal(false);
  });

  it('equates numbers of any type in dyn values, lists, maps and `in`', function () {
    expect(evaluate('object.n == 1.0 && object.n == 1u && object.d == 1', { n: 1, d: 1.0 })).to.equal(true);
    // (a literal mixing numeric types, `[1, 2.0]`, does not compile in the API server: see homogeneous-literals.test.ts)
    expect(evaluate('dyn([1u]) == dyn([1]) && dyn([1, 2]) == dyn([1.0, 2.0])')).to.equal(true);
    expect(evaluate('object.l == [1.0, 2.0]', { l: [1, 2.0] })).to.equal(true);
    expect(evaluate("dyn({'a': 1}) == {'a': 1u} && dyn({'a': 1}) != {'a': 2.0}")).to.equal(true);
    expect(evaluate('dyn(1u) in [1, 2] && dyn(1.0) in [1u] && 2 in dyn([1.0, 2.0])')).to.equal(true);
    expect(evaluate('object.l == [1, 2]', { l: [1.0, 2.0] })).to.equal(true);
  });

  it('refuses at compile time to compare differently typed numbers for equality, in cel-go words', function () {
    expect(compileError('2u == 2')).to.equal("found no matching overload for '_==_' applied to '(uint, int)'");
    expect(compileError('1.0 != 1')).to.equal("found no matching overload for '_!=_' applied to '(double, int)'");
    expect(compileError('[1] == [1.0]')).to.equal("found no matching overload for '_==_' applied to '(list(int), list(double))'");
    expect(compileError("'a' + 1")).to.equal("found no matching overload for '_+_' applied to '(string, int)'");
    expect(compileError('-"a"')).to.equal("found no matching overload for '-_' applied to '(string)'");
  });
});
