/** Numeric conversions out of range raise cel-go's errors, and conversion errors read as cel-go's (the differential test holds them to the API server). */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';
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

  it('words string conversion errors as String.ConvertToType does', function () {
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

  it('converts uint to int, timestamps to int and string, durations to string, as cel-go', function () {
    expect(evaluate('int(42u)')).to.equal(42n);
    expect(evaluate('int(9223372036854775807u)')).to.equal(9223372036854775807n);
    expect(evaluationError('int(9223372036854775808u)')).to.equal('integer overflow');
    expect(evaluate("int(timestamp('2009-02-13T23:31:30Z'))")).to.equal(1234567890n);
    // Go's t.Unix(): rounded down
    expect(evaluate("int(timestamp('1969-12-31T23:59:59.5Z'))")).to.equal(-1n);
    expect(evaluate("string(timestamp('2009-02-13T23:31:30Z'))")).to.equal('2009-02-13T23:31:30Z');
    expect(evaluate("string(timestamp('2009-02-13T23:31:30.120Z'))")).to.equal('2009-02-13T23:31:30.12Z');
    expect(evaluate("string(duration('1000000s'))")).to.equal('1000000s');
    expect(evaluate("string(duration('-1.5s'))")).to.equal('-1.5s');
    expect(evaluate("duration(duration('100s')) == duration('100s')")).to.equal(true);
    expect(evaluate('timestamp(timestamp(1000000000)) == timestamp(1000000000)')).to.equal(true);
  });

  it('converts bytes to string only from valid UTF-8', function () {
    expect(evaluate("string(b'caf\\303\\251')")).to.equal('café');
    expect(evaluationError("string(b'\\000\\xff')")).to.equal('invalid UTF-8 in bytes, cannot convert to string');
  });

  it('refuses a duration or timestamp literal that does not convert at compile time, as cel.ValidateDurationLiterals and ValidateTimestampLiterals', function () {
    expect(compileError("duration('1x') > duration('1s')")).to.equal('invalid duration argument');
    // beyond Go's time.Duration (int64 nanoseconds)
    expect(compileError("duration('320000000000s') > duration('1s')")).to.equal('invalid duration argument');
    expect(compileError("timestamp('yesterday') > timestamp(0)")).to.equal('invalid timestamp argument');
    expect(evaluate("duration('9000000000s') > duration('1s')")).to.equal(true);
    expect(shownError("duration(object.s) > duration('1s')", { s: '320000000000s' })).to.equal("type conversion error from 'string' to 'google.protobuf.Duration'");
  });
});
