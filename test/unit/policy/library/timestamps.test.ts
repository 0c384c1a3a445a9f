/** A timestamp's fields in a time zone as cel-go reads them: IANA names, and offsets signed or not. */
import { expect } from 'chai';
import { evaluate, evaluationError } from './evaluate.ts';

const T = "timestamp('2009-02-13T23:31:30Z')";

describe('policy library: timestamps in time zones as cel-go', function () {
  it('reads an offset with a colon as hours and minutes east, with or without a sign', function () {
    expect(evaluate(`${T}.getHours('02:00')`)).to.equal(1n);
    expect(evaluate(`${T}.getHours('+02:00')`)).to.equal(1n);
    expect(evaluate(`${T}.getHours('-02:30') == 21 && ${T}.getMinutes('-02:30') == 1`)).to.equal(true);
    expect(evaluate(`${T}.getDayOfWeek('+02:00')`)).to.equal(6n);
  });

  it('reads a name as an IANA time zone', function () {
    expect(evaluate(`${T}.getHours('Europe/Berlin')`)).to.equal(0n);
    expect(evaluate(`${T}.getDate('Asia/Tokyo')`)).to.equal(14n);
    expect(evaluate(`${T}.getHours('UTC')`)).to.equal(23n);
    expect(evaluate("timestamp('2009-07-13T23:31:30Z').getDayOfYear('Europe/Berlin')")).to.equal(194n);
    expect(evaluate("timestamp('2009-12-31T23:31:30Z').getDayOfYear()")).to.equal(364n);
  });

  it('words a bad zone as Go does', function () {
    expect(evaluationError(`${T}.getHours('Mars/Olympus') > 0`)).to.equal('unknown time zone Mars/Olympus');
    expect(evaluationError(`${T}.getHours('x:00') > 0`)).to.equal('strconv.Atoi: parsing "x": invalid syntax');
    expect(evaluationError(`${T}.getHours('02:75') > 0`)).to.equal('timezone offset minutes out of range [0, 59]: 02:75');
  });
});
