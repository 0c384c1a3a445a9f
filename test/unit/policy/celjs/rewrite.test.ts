/**
 * The CEL front end's rewrite (src/policy/celjs/rewrite.ts): what cel-go parses and cel-js does not
 * (backtick-quoted field names, optional list and map entries, raw and non-ASCII bytes literals, a
 * double without a leading digit) compiles and answers as cel-go does, through a suite's compile;
 * and what cel-js parses that Kubernetes does not declare (cel.bind) is refused in cel-go's words.
 * Owns these unit checks only; the cel-spec cases are cel-conformance.test.ts', the limits limits.test.ts'.
 */
import { expect } from 'chai';
import { compileError, evaluate, evaluationError } from '../library/evaluate.ts';

describe('policy: the CEL front end (what cel-js does not parse)', function () {
  it('selects backtick-quoted field names, with .? and has(), as cel-go 0.28+ does', function () {
    const data = { 'content-type': 'json', 'foo.txt': 'x', 'a/b': 1 };
    expect(evaluate("object.data.`content-type` == 'json'", { data })).to.equal(true);
    expect(evaluate('has(object.data.`foo.txt`) && !has(object.data.`bar.txt`)', { data })).to.equal(true);
    expect(evaluate('object.data.?`a/b`.orValue(0) == 1 && object.data.?`b-c`.orValue(0) == 0', { data })).to.equal(true);
    // the missing key is named by its own name, never by what stood in for it
    expect(evaluationError('object.data.`x-y` == 1', { data })).to.contain('x-y');
  });

  it('refuses a quoted name anywhere but a field selection, and the names the rewrite introduces', function () {
    expect(compileError('`content-type` == 1')).to.match(/^Syntax error: a quoted name \(`content-type`\) may only name a field/);
    expect(compileError('object.`size`() == 1')).to.match(/^Syntax error: /);
    expect(compileError('__portcullis_optional_list_entry__(optional.none()) == []')).to.equal("undeclared reference to '__portcullis_optional_list_entry__' (in container '')");
  });

  it('refuses cel.bind as the API server does (Kubernetes enables no ext.Bindings), though cel-js has it', function () {
    expect(compileError('cel.bind(x, object.spec, x.replicas > 1)')).to.equal("undeclared reference to 'cel' (in container '')");
    expect(compileError('[1].exists(e, cel.bind(y, e, y > 0))')).to.equal("undeclared reference to 'cel' (in container '')");
    // a variable of that name is only a name
    expect(evaluate('[1].all(cel, cel > 0)')).to.equal(true);
  });

  it('refuses an index by the literal null as the API server does (cel-go plans no such qualifier)', function () {
    expect(compileError('{null: false}[null] == false')).to.equal('program instantiation failed: invalid qualifier type: types.Null');
    expect(evaluate("{'a': 1, 'a': 2}['a'] == 2")).to.equal(true); // a repeated key: the last entry, as in kube-apiserver 1.37
  });

  it('keeps only the present optional entries of list and map literals', function () {
    expect(evaluate('[?object.?a, dyn(1), ?object.?b, ?optional.of(dyn(3))] == [2, 1, 3]', { a: 2 })).to.equal(true);
    expect(evaluate('[?object.?b].size() == 0', { a: 2 })).to.equal(true);
    expect(evaluate("{?'a': object.?a, 'k': dyn(0), ?'b': object.?b} == {'a': 2, 'k': 0}", { a: 2 })).to.equal(true);
    expect(evaluate("has({?'b': object.?b}.b)", { a: 2 })).to.equal(false);
    // nested, and a ternary in a key
    expect(evaluate('[[?object.?a], [?object.?c]] == [[2], []]', { a: 2 })).to.equal(true);
    expect(evaluate("{?(true ? 'x' : 'y'): optional.of([?optional.none()])} == {'x': []}")).to.equal(true);
    // still literals to cel-go's homogeneous check, an optional entry counted by its value's type
    expect(compileError('[?object.?a, 1] == [1]')).to.equal("expected type 'dyn' but found 'int'");
    expect(compileError("{?'a': optional.of('y'), ?1: optional.of('z')} == {}")).to.equal("expected type 'string' but found 'int'");
    expect(evaluate('[?optional.of(2), 1] == [2, 1]')).to.equal(true);
    // an entry that is not an optional, in cel-go's words (tried on kube-apiserver 1.37)
    expect(compileError('[?optional.of(1), ?1] == []')).to.equal("expected type 'optional_type(int)' but found 'int'");
    expect(compileError("{?'a': 'x'} == {}")).to.equal("expected type 'optional_type(string)' but found 'string'");
    // `a[?i]` stays an optional index
    expect(evaluate('[1, 2][?5].orValue(0) == 0')).to.equal(true);
  });

  it('reads raw bytes literals and non-ASCII characters in bytes as cel-go does', function () {
    expect(evaluate("br'\\x00' == b'\\\\x00' && BR\"\\n\" == b'\\\\n' && bR'''a\\''' == b'a\\\\'")).to.equal(true);
    // the prefix is b then r: `rb'...'` is an identifier and a string to cel-go too
    expect(compileError("rb'x' == b'x'")).to.not.equal('');
    expect(evaluate("b'ÿ' == b'\\303\\277' && b'ÿ'.size() == 2 && string(b'ÿ') == 'ÿ'")).to.equal(true);
  });

  it('ranges a quantifier over the empty list literal as cel-go does', function () {
    expect(evaluate('[].all(e, e > 0) && ![].exists(e, e > 0) && ![].exists_one(e, e < 0)')).to.equal(true);
  });

  it('selects of an optional whose value type is unbound (optional.none(), the empty map) as cel-go does', function () {
    expect(evaluate('!optional.none().?spec.hasValue() && !optional.none()[?0].hasValue() && !{}.?k.missing.hasValue()')).to.equal(true);
    expect(evaluate("{}.?k.optFlatMap(k, k.?sub).orValue('none') == 'none'")).to.equal(true);
  });

  it('answers none selecting of an optional whose value is there but no map, as kube-apiserver 1.37 does', function () {
    // not the error the cel-spec suite expects: the API server admits on it (test/e2e/cel-front-end.test.ts)
    expect(evaluate('object.?spec.x.y.hasValue()', { spec: { x: null } })).to.equal(false);
    expect(evaluate('object.?data.a.b.hasValue()', { data: { a: '1' } })).to.equal(false);
  });

  it('tests has() on the value of an optional no .? step made, as cel-go does', function () {
    // tried on kube-apiserver 1.37: true, true (refused on apply here before)
    expect(evaluate("has(optional.of({'c': 1}).c) && !has(optional.of({'c': {}}).c.missing)")).to.equal(true);
    expect(evaluate("has({'foo': optional.none()}.foo.bar)")).to.equal(false);
  });

  it('reads a double without digits before its point', function () {
    expect(evaluate('.99 < 1.0 && -.5 == -0.5 && [.25][0] == 0.25')).to.equal(true);
  });
});
