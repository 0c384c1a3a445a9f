/** Numeric conversions out of range raise cel-go's errors, and conversion errors read as cel-go's (the differential test holds them to the API server). */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';
import { celErrorText } from '../../../../src/policy/engine/errors.ts';
import { compile } from '../../../../src/policy/engine/environment.ts';

/** The error text of `expression` as a suite's message shows it (celErrorText). */
function shownError(expression: string, object: unknown = null): string {
  try {
    compile(expression, 'f')({ object, oldObject: null, params: null, namespaceObject: null, request: null, variables: {} } as never);
  } catch (err) {
    return celErrorText(err);
  }
  throw new Error(`'${expression}' evaluated without error`);
}

describe('policy library: conversions as cel-go', function () {
  it('converts in range, truncating doubles toward zero', function () {
    expect(evaluate('int(2.9)')).to.equal(2n);
    expect(evaluate('int(-2.9)')).to.equal(-2n);
    expect(String(evaluate('uint(2.9)'))).to.equal('2');
    expect(String(evaluate('uint(7)'))).to.equal('7');
  });

  it('refuses out of range with integer overflow / unsigned integer overflow', function () {
    expect(evaluationError('int(1e30)')).to.equal('integer overflow');
    expect(evaluationError('int(-9223372036854775808.0)')).to.equal('integer overflow');
    expect(evaluationError('int(double("NaN"))')).to.equal('integer overflow');
    expect(evaluationError('uint(-1.0)')).to.equal('unsigned integer overflow');
    expect(evaluationError('uint(1e20)')).to.equal('unsigned integer overflow');
    expect(evaluationError('uint(-1)')).to.equal('unsigned integer overflow');
  });

  it("words string conversion errors as String.ConvertToType does", function () {
    const object = { s: 'nope' };
    expect(shownError('int(object.s) > 0', object)).to.equal("type conversion error from 'string' to 'int'");
    expect(shownError('uint(object.s) > 0u', object)).to.equal("type conversion error from 'string' to 'uint'");
    expect(shownError('double(object.s) > 0.0', object)).to.equal("type conversion error from 'string' to 'double'");
    expect(shownError('bool(object.s)', object)).to.equal("type conversion error from 'string' to 'bool'");
    expect(shownError("duration(object.s) > duration('1s')", object)).to.equal("type conversion error from 'string' to 'google.protobuf.Duration'");
  });

  it('words a non-bool predicate and optional methods on a plain value as no such overload', function () {
    const object = { l: ['a'], s: 'x' };
    for (const e of ['object.l.all(x, x)', 'object.l.exists(x, x)', 'object.l.exists_one(x, x)', 'object.l.filter(x, x).size() == 0', "object.s.orValue('y') == 'x'"]) {
      expect(shownError(e, object), e).to.equal('no such overload');
    }
    expect(shownError("object.s.value() == 'x'", object)).to.equal('no such overload: value(string)');
  });
});
