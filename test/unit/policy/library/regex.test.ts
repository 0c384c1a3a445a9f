/**
 * matches, find and findAll with RE2 semantics (Go's regexp, as the API server runs them).
 * Expected values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';
import { regexCacheSize } from '../../../../src/policy/library/regex.ts';

describe('policy library: regex', function () {
  it('matches searches anywhere in the string unless anchored, as a method and as a function', function () {
    expect(evaluate('"abc".matches("b")')).to.equal(true);
    expect(evaluate('"abc".matches("^b")')).to.equal(false);
    expect(evaluate('matches("abc", "b")')).to.equal(true);
    expect(evaluate('"a\\nb".matches("^b$")')).to.equal(false);
    expect(evaluate('"a\\nb".matches("(?m)^b$")')).to.equal(true);
    expect(evaluate('"Ab".matches("\\\\pL\\\\p{Ll}")')).to.equal(true);
    expect(evaluate('object.metadata.name.matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")', { metadata: { name: 'web-1' } })).to.equal(true);
  });

  it('refuses what RE2 refuses (lookaround, backreferences) at run time, with Go regexp messages', function () {
    expect(evaluationError('"abc".matches(object)', '(?=a)')).to.equal('error parsing regexp: invalid or unsupported Perl syntax: `(?=`');
    expect(evaluationError('matches("abc", object)', '(a)\\1')).to.equal('error parsing regexp: invalid escape sequence: `\\1`');
    expect(evaluationError('"abc".find(object)', '(a')).to.equal('Illegal regex: error parsing regexp: missing closing ): `(a`');
    expect(evaluationError('"abc".findAll(object)', '(?<=a)b')).to.equal('Illegal regex: error parsing regexp: invalid named capture: `(?<=a)b`');
  });

  it('refuses an invalid literal pattern at compile time, as the API server does', function () {
    expect(compileError('"abc".matches("(?=a)")')).to.equal('invalid matches argument');
    expect(compileError('object.find("(a")')).to.equal('error parsing regexp: missing closing ): `(a`');
    expect(compileError('object.all(s, s.findAll("a{2,1001}").size() > 0)')).to.equal('error parsing regexp: invalid repeat count: `{2,1001}`');
  });

  it('find returns the first match or the empty string', function () {
    expect(evaluate('"abc123def456".find("[0-9]+")')).to.equal('123');
    expect(evaluate('"abc".find("x")')).to.equal('');
    expect(evaluate('"abc".find(object)', '(?i)B')).to.equal('b');
  });

  it('findAll returns successive non-overlapping matches, at most n when n is not negative', function () {
    expect(evaluate('"abc123def456".findAll("[0-9]+")')).to.deep.equal(['123', '456']);
    expect(evaluate('"abcb".findAll("b", 1)')).to.deep.equal(['b']);
    expect(evaluate('"abc".findAll("b", -5)')).to.deep.equal(['b']);
    expect(evaluate('"abc".findAll("x", 0)')).to.deep.equal([]);
    expect(evaluate('"abc".findAll("x")')).to.deep.equal([]);
    // Go's rule: an empty match right after a match is skipped
    expect(evaluate('"baaab".findAll("a*")')).to.deep.equal(['', 'aaa', '']);
    expect(evaluate('"héllo wörld 😀".findAll("[^a-z ]")')).to.deep.equal(['é', 'ö', '😀']);
  });

  it('compiles each pattern once, however often it is used', function () {
    const before = regexCacheSize();
    const names = Array.from({ length: 50 }, (_, i) => `name-${i}`);
    expect(evaluate('object.all(n, n.matches("^name-[0-9]+$") && n.find("[0-9]+") != "")', names)).to.equal(true);
    expect(regexCacheSize() - before).to.be.at.most(2);
  });
});
