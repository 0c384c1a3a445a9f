/**
 * Kubernetes' semver library (version 1, with normalize). Expected values and messages were
 * taken from apiserver v0.37.2's environment (MustBaseEnvSet(1.37)).
 */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

describe('policy library: semver', function () {
  it('parses semantic versions and reads their parts', function () {
    expect(evaluate("semver('1.2.3').major()")).to.equal(1n);
    expect(evaluate("semver('1.2.3').minor()")).to.equal(2n);
    expect(evaluate("semver('1.2.3-alpha.1+build.5').patch()")).to.equal(3n);
    expect(evaluate('semver(object.v).major()', { v: '2.0.0' })).to.equal(2n);
    // Go's int64(uint64) conversion wraps
    expect(evaluate("semver('18446744073709551615.2.3').major()")).to.equal(-1n);
  });

  it('isSemver tells strict versions, and normalizable ones when asked', function () {
    expect(evaluate("isSemver('1.2.3')")).to.equal(true);
    expect(evaluate("isSemver('1.2')")).to.equal(false);
    expect(evaluate("isSemver('v1.2.3')")).to.equal(false);
    expect(evaluate("isSemver('v1.2.3', true)")).to.equal(true);
    expect(evaluate("isSemver('1.2', true)")).to.equal(true);
    expect(evaluate("isSemver('01.002.0003', true)")).to.equal(true);
    expect(evaluate("isSemver('1.2-alpha', true)")).to.equal(false);
    expect(evaluate("isSemver('', true)")).to.equal(false);
    expect(evaluate("isSemver('1.0a.0', true)")).to.equal(false);
  });

  it('normalizes a leading v, leading zeros and missing parts', function () {
    expect(evaluate("semver('v01.02', true) == semver('1.2.0')")).to.equal(true);
    expect(evaluate("semver('00.0.0', true).major()")).to.equal(0n);
    expect(evaluationError("semver('1.0a.0', true)")).to.equal('Invalid character(s) found in minor number "0a"');
    expect(evaluationError("semver('1-alpha', true)")).to.equal('short version cannot contain PreRelease/Build meta data');
    expect(evaluationError("semver('1.2.003-alpha.01', true)")).to.equal('Numeric PreRelease version must not contain leading zeroes "01"');
  });

  it('refuses invalid versions with blang/semver messages', function () {
    const cases: [string, string][] = [
      ['', 'Version string empty'],
      ['1.2', 'No Major.Minor.Patch elements found'],
      ['a.2.3', 'Invalid character(s) found in major number "a"'],
      ['01.2.3', 'Major number must not contain leading zeroes "01"'],
      ['1.02.3', 'Minor number must not contain leading zeroes "02"'],
      ['1.2.x', 'Invalid character(s) found in patch number "x"'],
      ['1.2.03', 'Patch number must not contain leading zeroes "03"'],
      ['1.2.3.4', 'Invalid character(s) found in patch number "3.4"'],
      ['1.2.3-', 'Prerelease is empty'],
      ['1.2.3-01', 'Numeric PreRelease version must not contain leading zeroes "01"'],
      ['1.2.3-a_b', 'Invalid character(s) found in prerelease "a_b"'],
      ['1.2.3+a..b', 'Build meta data is empty'],
      ['1.2.3+a_b', 'Invalid character(s) found in build meta data "a_b"'],
      ['1..3', 'strconv.ParseUint: parsing "": invalid syntax'],
      ['99999999999999999999.2.3', 'strconv.ParseUint: parsing "99999999999999999999": value out of range'],
    ];
    for (const [version, message] of cases) expect(evaluationError(`semver('${version}')`), version).to.equal(message);
    expect(evaluationError("semver('1.2.3-a\\tb')")).to.equal('Invalid character(s) found in prerelease "a\\tb"');
  });

  it('compares by precedence, build metadata ignored', function () {
    expect(evaluate("semver('1.2.3') == semver('1.2.3+build')")).to.equal(true);
    expect(evaluate("semver('1.2.3') != semver('1.2.4')")).to.equal(true);
    expect(evaluate("semver('1.2.3').isLessThan(semver('1.2.4'))")).to.equal(true);
    expect(evaluate("semver('1.2.3').isGreaterThan(semver('1.2.3-rc.1'))")).to.equal(true);
    expect(evaluate("semver('1.2.3-rc.1').compareTo(semver('1.2.3-rc.1.1'))")).to.equal(-1n);
    expect(evaluate("semver('1.2.3-rc.2').compareTo(semver('1.2.3-rc.10'))")).to.equal(-1n);
    expect(evaluate("semver('1.2.3-rc.a').compareTo(semver('1.2.3-rc.1'))")).to.equal(1n);
    expect(evaluate("semver('1.2.3-B').compareTo(semver('1.2.3-a'))")).to.equal(-1n);
    expect(evaluate("semver('1.2.3').compareTo(semver('1.2.3'))")).to.equal(0n);
  });

  it('has no ordering operators, as in the API server', function () {
    expect(compileError("semver('1.2.3') < semver('1.2.4')")).to.equal("found no matching overload for '_<_' applied to '(kubernetes.Semver, kubernetes.Semver)'");
    expect(evaluate("type(semver('1.2.3')) == type(semver('2.0.0'))")).to.equal(true);
  });
});
