/**
 * A list indexed by a uint found at run time (`[7, 8, 9][dyn(0u)]`) answers as cel-go does
 * (celjs/parse.ts indexListsByUint; conformance lists/index/zero_based_uint). Owns these checks only.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';

const run = (expression: string) => compile(expression, 'f', [], { mixedLiterals: true })({ object: { items: ['a', 'b'] } } as never);

describe('celjs: a list indexed by a run-time uint', function () {
  it('takes the element at the uint, as cel-go does', function () {
    expect(run('[7, 8, 9][dyn(0u)]')).to.equal(7n);
    expect(run('object.items[dyn(uint(1))]')).to.equal('b');
  });
  it('refuses an index past the end in the words of an int index', function () {
    expect(() => run('[7, 8, 9][dyn(3u)]')).to.throw('index out of bounds');
  });
});
