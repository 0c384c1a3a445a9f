/**
 * The named formats (format.dns1123Label(), ..., format.named()) and validate(). Expected messages
 * were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { Optional } from '@marcbachmann/cel-js';
import { compileError, evaluate } from './evaluate.ts';

const problems = (expression: string, object?: unknown): string[] | undefined => {
  const result = evaluate(expression, object) as Optional<string[]>;
  expect(result).to.be.instanceOf(Optional);
  return result.hasValue() ? result.value() : undefined;
};

const LABEL =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

describe('policy library: format', function () {
  it('gives none for a valid string and the problems for an invalid one', function () {
    expect(problems("format.dns1123Label().validate('my-name')")).to.equal(undefined);
    expect(problems("format.dns1123Label().validate('My-Name')")).to.deep.equal([LABEL]);
    expect(problems("format.dns1123Label().validate('a.b')")).to.deep.equal(['must not contain dots']);
    expect(problems(`format.dns1123Label().validate('${'a'.repeat(64)}')`)).to.deep.equal(['must be no more than 63 characters']);
    expect(problems("format.dns1123Subdomain().validate('example.com')")).to.equal(undefined);
    expect(problems("format.dns1035Label().validate('1abc')")).to.have.length(1);
  });

  it('validates qualified names and label values as apimachinery does', function () {
    expect(problems("format.qualifiedName().validate('example.com/MyName')")).to.equal(undefined);
    expect(problems("format.qualifiedName().validate('/x')")).to.deep.equal(['prefix part must be non-empty']);
    expect(problems("format.qualifiedName().validate('example.com/')")![0]).to.equal('name part must be non-empty');
    expect(problems(`format.qualifiedName().validate('x/${'a'.repeat(64)}')`)).to.deep.equal(['name part must be no more than 63 bytes']);
    expect(problems("format.labelValue().validate('')")).to.equal(undefined);
    expect(problems("format.labelValue().validate('-x')")![0]).to.match(/^a valid label must be an empty string/);
  });

  it('allows a trailing dash for the prefix formats', function () {
    expect(problems("format.dns1123LabelPrefix().validate('my-name-')")).to.equal(undefined);
    expect(problems("format.dns1123SubdomainPrefix().validate('example.com-')")).to.equal(undefined);
    expect(problems("format.dns1035LabelPrefix().validate('abc-')")).to.equal(undefined);
  });

  it('validates uri, uuid, byte, date and datetime', function () {
    expect(problems("format.uri().validate('https://example.com')")).to.equal(undefined);
    expect(problems("format.uri().validate('example.com')")).to.deep.equal(['parse "example.com": invalid URI for request']);
    expect(problems("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')")).to.equal(undefined);
    expect(problems("format.uuid().validate('not-a-uuid')")).to.deep.equal(['does not match the UUID format']);
    expect(problems("format.byte().validate('aGVsbG8=')")).to.equal(undefined);
    expect(problems("format.byte().validate('aGVsbG8')")).to.deep.equal(['invalid base64']);
    expect(problems("format.date().validate('2020-02-29')")).to.equal(undefined);
    expect(problems("format.date().validate('2021-02-29')")).to.deep.equal(['invalid date']);
    expect(problems("format.datetime().validate('2020-02-29T10:00:00.123+01:00')")).to.equal(undefined);
    expect(problems("format.datetime().validate('2020-02-29T24:00:00Z')")).to.deep.equal(['invalid datetime']);
  });

  it('looks formats up by name, and composes with optionals in a validation', function () {
    expect(evaluate("format.named('dns1123Label').hasValue()")).to.equal(true);
    expect(evaluate("format.named('nope').hasValue()")).to.equal(false);
    expect(evaluate("format.dns1123Label() == format.named('dns1123Label').value()")).to.equal(true);
    expect(evaluate('!format.dns1123Label().validate(object.metadata.name).hasValue()', { metadata: { name: 'Bad_Name' } })).to.equal(false);
    expect(evaluate('format.dns1123Label().validate(object.metadata.name).orValue([]).size()', { metadata: { name: 'ok' } })).to.equal(0n);
  });

  it('refuses an unknown format at compile time', function () {
    expect(compileError('format.nope()')).to.contain('no matching overload');
  });
});
