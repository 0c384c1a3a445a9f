/**
 * The strings extension at version 2, as the API server has it (cel-go ext/strings.go with
 * StringsVersion(2)). Expected values were taken from kube-apiserver 1.37's CEL environment.
 */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from './evaluate.ts';

describe('policy library: strings', function () {
  it('charAt counts code points and allows the end of the string', function () {
    expect(evaluate("'hello'.charAt(4)")).to.equal('o');
    expect(evaluate("'hello'.charAt(5)")).to.equal('');
    expect(evaluate("'h😀llo'.charAt(1)")).to.equal('😀');
    expect(evaluate("'h😀llo'.charAt(2)")).to.equal('l');
    expect(evaluationError("'hello'.charAt(-1)")).to.equal('index out of range: -1');
    expect(evaluationError("'hello'.charAt(6)")).to.equal('index out of range: 6');
  });

  it('indexOf and lastIndexOf count code points, with offsets as cel-go checks them', function () {
    expect(evaluate("'hello mellow'.indexOf('ello')")).to.equal(1n);
    expect(evaluate("'hello mellow'.indexOf('jello')")).to.equal(-1n);
    expect(evaluate("'hello mellow'.indexOf('', 2)")).to.equal(2n);
    expect(evaluate("'hello mellow'.indexOf('ello', 2)")).to.equal(7n);
    expect(evaluate("'hello mellow'.indexOf('ello', 20)")).to.equal(-1n);
    expect(evaluate("'hello mellow'.indexOf('', 20)")).to.equal(12n);
    expect(evaluate("'h😀llo😀'.indexOf('llo')")).to.equal(2n);
    expect(evaluate("'h😀llo😀'.indexOf('😀', 2)")).to.equal(5n);
    expect(evaluationError("'hello mellow'.indexOf('ello', -1)")).to.equal('index out of range: -1');

    expect(evaluate("'hello mellow'.lastIndexOf('')")).to.equal(12n);
    expect(evaluate("'hello mellow'.lastIndexOf('ello')")).to.equal(7n);
    expect(evaluate("'hello mellow'.lastIndexOf('ello', 6)")).to.equal(1n);
    expect(evaluate("'hello mellow'.lastIndexOf('ello', 20)")).to.equal(-1n);
    expect(evaluate("''.lastIndexOf('a')")).to.equal(-1n);
    expect(evaluate("'a😀b😀c'.lastIndexOf('😀')")).to.equal(3n);
    expect(evaluate("'a😀b😀c'.lastIndexOf('😀', 2)")).to.equal(1n);
    expect(evaluationError("'hello mellow'.lastIndexOf('ello', -1)")).to.equal('index out of range: -1');
  });

  it('works on untyped fields of the object, as policies use it', function () {
    const object = { metadata: { name: 'team-a-frontend', labels: { tier: 'Web' } } };
    expect(evaluate("object.metadata.name.substring(object.metadata.name.lastIndexOf('-') + 1)", object)).to.equal('frontend');
    expect(evaluate("object.metadata.labels.tier.lowerAscii() == 'web'", object)).to.equal(true);
    expect(evaluate("object.metadata.name.split('-', 2)", object)).to.deep.equal(['team', 'a-frontend']);
  });

  it('lowerAscii and upperAscii map ASCII letters only', function () {
    expect(evaluate("'TacoCÆt Xii'.lowerAscii()")).to.equal('tacocÆt xii');
    expect(evaluate("'TacoCÆt Xii ß'.upperAscii()")).to.equal('TACOCÆT XII ß');
  });

  it('replace replaces all, or the first n, and an empty search matches between code points', function () {
    expect(evaluate("'hello hello'.replace('he', 'we')")).to.equal('wello wello');
    expect(evaluate("'hello hello'.replace('he', 'we', 1)")).to.equal('wello hello');
    expect(evaluate("'hello hello'.replace('he', 'we', 0)")).to.equal('hello hello');
    expect(evaluate("'hello hello'.replace('he', 'we', -1)")).to.equal('wello wello');
    expect(evaluate("'h😀'.replace('', '_')")).to.equal('_h_😀_');
    expect(evaluate("'hello'.replace('', '_', 3)")).to.equal('_h_e_llo');
  });

  it('split follows Go SplitN: 0 gives nothing, a limit keeps the rest whole, an empty separator splits code points', function () {
    expect(evaluate("'a b c'.split(' ')")).to.deep.equal(['a', 'b', 'c']);
    expect(evaluate("'a b c'.split(' ', 0)")).to.deep.equal([]);
    expect(evaluate("'a b c'.split(' ', 1)")).to.deep.equal(['a b c']);
    expect(evaluate("'a b c'.split(' ', -1)")).to.deep.equal(['a', 'b', 'c']);
    expect(evaluate("'h😀llo'.split('')")).to.deep.equal(['h', '😀', 'l', 'l', 'o']);
    expect(evaluate("'h😀llo'.split('', 2)")).to.deep.equal(['h', '😀llo']);
    expect(evaluate("''.split(',')")).to.deep.equal(['']);
  });

  it('substring takes code point ranges and reports bad ones as cel-go does', function () {
    expect(evaluate("'tacocat'.substring(4)")).to.equal('cat');
    expect(evaluate("'tacocat'.substring(0, 4)")).to.equal('taco');
    expect(evaluate("'t😀cocat'.substring(1, 3)")).to.equal('😀c');
    expect(evaluationError("'tacocat'.substring(-1)")).to.equal('index out of range: -1');
    expect(evaluationError("'tacocat'.substring(8)")).to.equal('index out of range: 8');
    expect(evaluationError("'tacocat'.substring(2, 1)")).to.equal('invalid substring range. start: 2, end: 1');
    expect(evaluationError("'tacocat'.substring(2, 9)")).to.equal('index out of range: 9');
  });

  it('trim removes Unicode white space (Go unicode.IsSpace), not zero-width characters', function () {
    expect(evaluate("'  \\ttrim\\n    '.trim()")).to.equal('trim');
    expect(evaluate("'\\u00a0\\u0085x\\u200b\\ufeff \\u3000'.trim()")).to.equal('x\u200b\ufeff');
  });

  it('join joins lists of strings and rejects other elements at run time', function () {
    expect(evaluate("['hello', 'mellow'].join()")).to.equal('hellomellow');
    expect(evaluate("['hello', 'mellow'].join(' ')")).to.equal('hello mellow');
    expect(evaluate('[].join("/")')).to.equal('');
    expect(evaluationError('object.join()', ['a', 1])).to.equal('join: invalid input: 1');
  });

  it('strings.quote escapes control characters, quotes and backslashes', function () {
    expect(evaluate(`strings.quote('single-quote with "double quote"')`)).to.equal('"single-quote with \\"double quote\\""');
    expect(evaluate('strings.quote("two escape sequences \\a\\n")')).to.equal('"two escape sequences \\a\\n"');
    expect(evaluate('strings.quote("\\b\\f\\r\\t\\v\\\\ é 😀")')).to.equal('"\\b\\f\\r\\t\\v\\\\ é 😀"');
  });

  it('format fills %s %d %f %e %b %x %X %o as cel-go does for en_US', function () {
    expect(evaluate('"this is a string: %s\\nand an integer: %d".format(["str", 42])')).to.equal('this is a string: str\nand an integer: 42');
    expect(evaluate('"%%s %s".format([64.2])')).to.equal('%s 64.2');
    expect(evaluate('"%s %s %s".format([1e21, 1234567.0, 0.00001])')).to.equal('1e+21 1.234567e+06 1e-05');
    expect(evaluate('"%f|%.3f|%.0f|%.0f".format([1234567.5, -0.0001, 2.5, 3.5])')).to.equal('1,234,567.500000|-0.000|2|4');
    expect(evaluate('"%e|%e|[%.16e]".format([2.71828, -0.000123, 1.5])')).to.equal('2.718280×10⁰⁰|-1.230000×10⁻⁰⁴|[   1.500000×10⁰⁰]');
    expect(evaluate('"%f %f".format([double("inf"), "NaN"])')).to.equal('∞ NaN');
    expect(evaluate('"%b %o %x %X".format([5, 30, 26, -255])')).to.equal('101 36 1a -FF');
    expect(evaluate('"%x %b".format(["é", true])')).to.equal('c3a9 1');
    expect(evaluate('"%s".format([timestamp("2023-01-01T00:00:00.120Z")])')).to.equal('2023-01-01T00:00:00.12Z');
    expect(evaluate('"%s".format([duration("1h45m47s")])')).to.equal('6347s');
    expect(evaluate('"%s".format([type(1)])')).to.equal('int');
  });

  it('format prints lists and maps as CEL literals, maps sorted by key', function () {
    expect(evaluate('"%s".format([[1, 2.0, "a", null, b"x", true]])')).to.equal('[1, 2.000000, "a", null, b"x", true]');
    expect(evaluate('"%s".format([object])', { b: 1, a: ['q"\n', 2.5] })).to.equal('{"a":["q\\"\\n", 2.500000], "b":1}');
  });

  it('format refuses at compile time what the API server refuses for literal arguments', function () {
    expect(compileError('"%s %s".format([1])')).to.equal('index 1 out of range');
    expect(compileError('"%s %s".format(["a", "b", "c"])')).to.equal('too many arguments supplied to string.format (expected 2, got 3)');
    expect(compileError('"%j".format([1])')).to.equal('could not parse formatting clause: unrecognized formatting clause "j"');
    expect(compileError('"%".format([1])')).to.equal('unexpected end of string');
    expect(compileError('"%d".format(["x"])')).to.equal('error during formatting: decimal clause can only be used on integers, was given string');
    expect(compileError('"%s".format([optional.of(1)])')).to.equal('error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given optional_type');
  });

  it('format reports the same problems at run time for values it cannot see at compile time', function () {
    expect(evaluationError('"%d".format([object])', 'x')).to.equal('error during formatting: decimal clause can only be used on integers, was given string');
    expect(evaluationError('"%f".format([object])', 3)).to.equal('error during formatting: fixed-point clause can only be used on doubles, was given int');
    expect(evaluationError('"%s %s".format(object)', ['a'])).to.equal('index 1 out of range');
    expect(evaluationError('"%s".format([b"\\xff"])')).to.equal('error during formatting: could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string');
  });

  it('refuses reverse and other additions after version 2 at compile time', function () {
    expect(compileError("'gums'.reverse()")).to.contain('no matching overload');
  });
});
