/**
 * A one-variable macro (all, exists, exists_one, map, filter) over a map literal whose keys are
 * not strings sees the keys as cel-go does (celjs/parse.ts keepMapLiteralKeys; conformance
 * macros/exists_one/map_one). Owns these checks only.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';

const run = (expression: string) => compile(expression, 'f', [], { mixedLiterals: true })({} as never);

describe('celjs: one-variable macros over map literals keep the keys’ types', function () {
  it('iterates int, uint and bool keys as ints, uints and bools, as cel-go does', function () {
    expect(run("{6: 'six', 7: 'seven', 8: 'eight'}.exists_one(k, k % 5 == 2)")).to.equal(true);
    expect(run("{1: 'a', 2: 'b'}.all(k, k > 0)")).to.equal(true);
    expect(run("{1: 'a', 2: 'b'}.map(k, k * 2)")).to.deep.equal([2n, 4n]);
    expect(String(run("{1u: 'a', 3u: 'b'}.filter(k, k > 2u)"))).to.equal('3');
    expect(run('{true: 1, false: 2}.exists(k, k)')).to.equal(true);
  });
  it('leaves string keys, and a map literal that is not a macro’s range, as they were', function () {
    expect(run("{'a': 1, 'b': 2}.filter(k, k != 'a')")).to.deep.equal(['b']);
    expect(run("{1: 'one'}[1]")).to.equal('one');
  });
});
