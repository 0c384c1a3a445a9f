/**
 * Timestamps below the millisecond as cel-go holds them (library/timestamps.ts' nanoseconds kept
 * beside cel-js's Dates, read by arithmetic.ts and string()): the digits of `timestamp('...')`,
 * sums and differences with nanosecond durations, the range's last nanosecond. Conformance
 * timestamps/*_nanos*. Owns these checks only.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';

const run = (expression: string) => compile(expression, 'f', [])({} as never);

describe('library: timestamps keep their nanoseconds', function () {
  it('prints the digits below the millisecond a timestamp was given or computed, as Go’s RFC3339Nano', function () {
    expect(run("string(timestamp('9999-12-31T23:59:59.999999999Z'))")).to.equal('9999-12-31T23:59:59.999999999Z');
    expect(run("string(timestamp('2024-01-01T00:00:00.000001Z'))")).to.equal('2024-01-01T00:00:00.000001Z');
    expect(run("string(timestamp('2024-01-01T00:00:00.5Z'))")).to.equal('2024-01-01T00:00:00.5Z');
    expect(run("string(timestamp('2024-01-01T00:00:00Z') + duration('1ns'))")).to.equal('2024-01-01T00:00:00.000000001Z');
  });
  it('adds and takes nanoseconds, and finds the range’s end at its last nanosecond', function () {
    expect(run("timestamp('0001-01-01T00:00:01.999999999Z') + duration('999999999ns') == timestamp('0001-01-01T00:00:02.999999998Z')")).to.equal(true);
    expect(run("string(timestamp('2024-01-01T00:00:00.000000002Z') - timestamp('2024-01-01T00:00:00Z'))")).to.equal('0.000000002s');
    expect(() => run("timestamp('9999-12-31T23:59:59.999999999Z') + duration('1ns')")).to.throw('timestamp overflow');
  });
});
