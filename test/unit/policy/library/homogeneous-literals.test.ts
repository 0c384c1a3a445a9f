/**
 * Homogeneous aggregate literals: the API server's CEL environments refuse list and map literals
 * whose elements (or keys, or values) are of different static types. Expected messages were taken
 * from apiserver v0.37.2's environment (MustBaseEnvSet(1.37)).
 */
import { expect } from 'chai';
import { compileError, evaluate } from './evaluate.ts';

describe('policy library: homogeneous aggregate literals', function () {
  it('refuses list literals of mixed static types, dyn against a typed value included', function () {
    expect(compileError("[1, 'a'].size() > 0")).to.equal("expected type 'int' but found 'string'");
    expect(compileError('[1, 2.0].size() > 0')).to.equal("expected type 'int' but found 'double'");
    expect(compileError('[1, 1u].size() > 0')).to.equal("expected type 'int' but found 'uint'");
    expect(compileError('[object.a, 1].size() > 0')).to.equal("expected type 'dyn' but found 'int'");
    expect(compileError('[1, object.a].size() > 0')).to.equal("expected type 'int' but found 'dyn'");
    expect(compileError('[null, 1].size() > 0')).to.equal("expected type 'null' but found 'int'");
    expect(compileError("[[1], ['a']].size() > 0")).to.equal("expected type 'list(int)' but found 'list(string)'");
    expect(compileError('[[object.a], [1]].size() > 0')).to.equal("expected type 'list(dyn)' but found 'list(int)'");
    expect(compileError("[duration('1s'), timestamp('2020-01-01T00:00:00Z')].size() > 0")).to.equal("expected type 'duration' but found 'timestamp'");
    expect(compileError('[object.?a, optional.of(1)].size() > 0')).to.equal("expected type 'optional_type(dyn)' but found 'optional_type(int)'");
    expect(compileError("[{'a': 1}, {'a': 'x'}].size() > 0")).to.equal("expected type 'map(string, int)' but found 'map(string, string)'");
    expect(compileError("[[], ['a'], [1]].size() > 0")).to.equal("expected type 'list(string)' but found 'list(int)'");
    expect(compileError('object.map(x, [x, 1]).size() > 0')).to.equal("expected type 'dyn' but found 'int'");
  });

  it('refuses map literals with mixed key or value types', function () {
    expect(compileError("{'a': 1, 'b': 'x'}.size() > 0")).to.equal("expected type 'int' but found 'string'");
    expect(compileError("{1: 'a', 'b': 'c'}.size() > 0")).to.equal("expected type 'int' but found 'string'");
    expect(compileError("{'a': 1, 'b': object.c}.size() > 0")).to.equal("expected type 'int' but found 'dyn'");
  });

  it('accepts literals of one type, empty literals joining any, and anything inside format', function () {
    expect(evaluate('[object.a, object.b].size()', { a: 1, b: 'x' })).to.equal(2n);
    expect(evaluate('[[], [1]].size() + [[1], []].size() + [{}, {"a": 1}].size()')).to.equal(6n);
    expect(evaluate("{'a': [1], 'b': []}.size()")).to.equal(2n);
    expect(evaluate('[optional.of(1), optional.none()].size()')).to.equal(2n);
    expect(evaluate('[null, null].size()')).to.equal(2n);
    expect(evaluate('[object.a == 1, true].size()', { a: 1 })).to.equal(2n);
    expect(evaluate('[object.a.size(), 1].size()', { a: 'x' })).to.equal(2n);
    expect(evaluate('[[1].map(x, x), [2]].size()')).to.equal(2n);
    expect(evaluate("'%s %d'.format(['a', 1])")).to.equal('a 1');
    expect(evaluate("['a', '%s'.format([[1, 'b']])].size()")).to.equal(2n);
  });
});
