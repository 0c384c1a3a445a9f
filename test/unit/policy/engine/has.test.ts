/**
 * `has()` as cel-go takes it: a field selection whose operand is any expression (an index, a map
 * literal, a call), not only a chain from an identifier. The API server accepts these; refusing
 * them on apply would refuse public policies (the differential test holds the answers to VAP's).
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { celErrorText } from '../../../../src/policy/engine/errors.ts';

const withContext = { spec: { containers: [{ name: 'a', securityContext: { runAsNonRoot: true } }] } };
const without = { spec: { containers: [{ name: 'a' }] } };

function outcome(expression: string, object: unknown): unknown {
  let program;
  try {
    program = compile(expression, 'f', ['bool']);
  } catch (err) {
    return `refused: ${(err as Error).message}`;
  }
  try {
    return program({ object, oldObject: null, params: null, namespaceObject: null, request: null, variables: {} } as never);
  } catch (err) {
    return `error: ${celErrorText(err)}`;
  }
}

describe('policy engine: has() of any operand', function () {
  const cases: [string, unknown, unknown][] = [
    ['has(object.spec.containers[0].securityContext)', withContext, true],
    ['has(object.spec.containers[0].securityContext)', without, false],
    ['has(object.spec.containers[0].securityContext.runAsNonRoot)', withContext, true],
    ["has({'a': 1}.a)", without, true],
    ["has({'a': 1}.b)", without, false],
    ['object.spec.containers.all(c, has(c.securityContext))', withContext, true],
    ['has(object.spec.containers.filter(c, true)[0].name)', without, true],
    // a missing step before the tested field is an error, as it is from an identifier
    ['has(object.spec.containers[0].securityContext.runAsNonRoot)', without, 'error: no such key: securityContext'],
  ];
  for (const [expression, object, expected] of cases) {
    it(`${expression} on ${object === withContext ? 'a container with a securityContext' : 'one without'} is ${String(expected)}`, function () {
      expect(outcome(expression, object)).to.deep.equal(expected);
    });
  }

  it('still refuses an argument that is not a field selection, as cel-go does', function () {
    expect(outcome('has(object)', without)).to.match(/^refused: f: compilation failed: has\(\) invalid argument/);
    expect(outcome('has(1)', without)).to.match(/invalid argument/);
    expect(outcome('has(object.spec.containers[0])', without)).to.match(/invalid argument/);
  });

  it('tests a selection on an optional value on its value, as cel-go does (none has no field)', function () {
    expect(outcome("has(optional.of({'c': 1}).c)", without)).to.equal(true);
    expect(outcome("has({'foo': optional.none()}.foo.bar)", without)).to.equal(false);
  });
});
