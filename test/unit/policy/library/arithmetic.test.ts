/** Integer, duration and timestamp arithmetic within cel-go's ranges, with its errors; ordering bytes. */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

describe('policy library: arithmetic within cel-go ranges', function () {
  it('raises integer overflow negating or dividing the smallest int by -1', function () {
    expect(evaluationError('-(-9223372036854775807 - 1) > 0')).to.equal('integer overflow');
    expect(evaluationError('(-9223372036854775807 - 1) / -1 > 0')).to.equal('integer overflow');
    expect(evaluationError('(-9223372036854775807 - 1) % -1 > 0')).to.equal('integer overflow');
    expect(evaluate('-(-9223372036854775807) == 9223372036854775807')).to.equal(true);
    expect(evaluate('-7 / 2 == -3 && -7 % 3 == -1')).to.equal(true);
  });

  it('words division and modulus by zero as cel-go', function () {
    expect(evaluationError('object.n / 0 > 0', { n: 1 })).to.equal('division by zero');
    expect(evaluationError('object.n % 0 > 0', { n: 1 })).to.equal('modulus by zero');
  });

  it('keeps durations within int64 nanoseconds and timestamps within years 1 to 9999', function () {
    expect(evaluationError("duration('9000000000s') + duration('9000000000s') > duration('0s')")).to.equal('integer overflow');
    expect(evaluationError("duration('-9000000000s') - duration('9000000000s') > duration('0s')")).to.equal('integer overflow');
    expect(evaluationError("timestamp('9999-12-31T23:59:59Z') + duration('1s') > timestamp(0)")).to.equal('timestamp overflow');
    expect(evaluationError("timestamp('0001-01-01T00:00:00Z') - duration('1s') > timestamp(0)")).to.equal('timestamp overflow');
    expect(evaluationError("timestamp('9999-12-31T23:59:59Z') - timestamp('0001-01-01T00:00:00Z') > duration('0s')")).to.equal('integer overflow');
    expect(evaluate("timestamp('2009-02-13T23:31:30Z') - timestamp('2009-02-13T23:31:29.5Z') == duration('500ms')")).to.equal(true);
    expect(evaluate("duration('1.5s') - duration('2s') == duration('-500ms')")).to.equal(true);
    expect(evaluate("timestamp('2009-02-13T23:31:30Z') - duration('1.5s') == timestamp('2009-02-13T23:31:28.5Z')")).to.equal(true);
  });

  it('types duration + timestamp as a timestamp', function () {
    expect(evaluate("duration('120s') + timestamp('2009-02-13T23:01:00Z') == timestamp('2009-02-13T23:03:00Z')")).to.equal(true);
    expect(evaluate("(duration('1h') + timestamp('2009-02-13T23:01:00Z')).getHours() == 0")).to.equal(true);
  });

  it('orders bytes byte by byte, then by length', function () {
    expect(evaluate("b'a' < b'b' && b'abc' <= b'abc' && !(b'abc' < b'abc')")).to.equal(true);
    expect(evaluate("b'\\x01' > b'\\x00' && b'\\x00' > b'' && !(b'\\x00\\x01' > b'\\x01')")).to.equal(true);
    expect(evaluate("b'\\x01\\x00' >= b'\\x01' && !(b'' >= b'\\x00')")).to.equal(true);
    expect(evaluate("b'\\303\\241' > b'b'")).to.equal(true);
  });
});
