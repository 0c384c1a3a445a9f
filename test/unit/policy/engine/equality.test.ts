/**
 * `==` across kinds as the API server evaluates it: a map or list of the request's object on the
 * left raises `no such overload`; literals, computed values and `!=` do not (the differential test
 * holds each to the native policy).
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { celErrorText } from '../../../../src/policy/engine/errors.ts';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { AdmissionRequest, Decision } from '../../../../src/api/admission-review.ts';

const object = { data: { a: 'x' }, list: [{ n: 'a' }] };
function outcome(expression: string): unknown {
  try {
    return compile(expression, 'f')({ object, oldObject: null, params: null, namespaceObject: null, request: null, variables: {} } as never);
  } catch (err) {
    return `error: ${celErrorText(err)}`;
  }
}

describe('policy engine: equality across kinds as cel-go', function () {
  const cases: [string, unknown][] = [
    ["object.data == 'x'", 'error: no such overload'],
    ['object.list == 1', 'error: no such overload'],
    ["object.list == {'a': 'b'}", 'error: no such overload'],
    ["object.list.exists(c, c == 'x')", 'error: no such overload'],
    ["object.list.filter(c, true).exists(c, c == 'x')", 'error: no such overload'],
    ["object.list.all(i, c, c == 'x')", 'error: no such overload'],
    ["object.data != 'x'", true],
    ["'x' == object.data", false],
    ['object.data == null', false],
    ["object.data == {'a': 'x'}", true],
    ["dyn({'a': 'x'}) == 'x'", false],
    ["dyn(object.data.map(k, k)) == 'x'", false],
    ["object.data.exists(k, k == 'x')", false],
    ["object.list.map(c, c.n).exists(n, n == 'x')", false],
    // Reached through optional steps, as the public policies reach them (sysctls, securityContext...).
    ["object.?list.orValue([]).all(c, c == '' || c.n == 'b')", 'error: no such overload'],
    ["object.?list.orValue([]).all(c, c == '' || true)", true],
    ["object.?data.orValue({}) == 'x'", 'error: no such overload'],
    ["object.?list[?0].value() == 'x'", 'error: no such overload'],
    ["object.?missing.orValue([]).all(c, c == '')", true],
    ["object.?list.orValue([]).all(c, c.n == 'a')", true],
  ];
  for (const [expression, want] of cases) {
    it(`${expression}: ${String(want)}`, function () {
      expect(outcome(expression)).to.equal(want);
    });
  }

  it('follows a variable that is a part of the object', function () {
    const admit = compileRules(
      's',
      {
        name: 'w',
        type: 'Validating',
        rules: [],
        variables: [
          { name: 'd', expression: 'object.data' },
          { name: 'e', expression: 'variables.d' },
        ],
        validations: [{ expression: "!(variables.e == 'x')" }],
      },
      'spec.webhooks[0]',
      'Fail',
    );
    const request = { uid: 'u', kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' }, operation: 'CREATE', userInfo: {}, object } as unknown as AdmissionRequest;
    const decision = admit(request) as Decision;
    expect(decision.allowed).to.equal(false);
    expect(decision.code).to.equal(422);
    expect(decision.message).to.equal("expression '!(variables.e == 'x')' resulted in error: no such overload");
  });
});
