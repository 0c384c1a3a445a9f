/**
 * The compiled shortcut against cel-js on generated cases: random expressions of the shapes it
 * covers, over random JSON (odd keys, unicode, big and negative ints, doubles, nulls, lists where
 * maps are expected), each evaluated on the request's JSON as parsed, as a webhook does. Every
 * answer the shortcut gives is checked against cel-js's, value and cost
 * (test/support/verify-compiled.ts); the seed is fixed, so a failure can be replayed.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { CompileError } from '../../../../src/policy/celjs/program.ts';
import { verification } from '../../../support/compiled-differential.ts';
import { buildActivation } from '../../../../src/policy/engine/activation.ts';
import { ActivationReads } from '../../../../src/policy/values/reads.ts';
import { IntsInPlace } from '../../../../src/policy/values/convert.ts';
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';
import { seededRandom } from '../../../support/random.ts';

const KEYS = ['a', 'b', 'name', 'x-y', 'constructor', '__proto__', 'é'];
const STRINGS = ['', 'a', 'ab', 'registry.example.com/app', 'é', '😀x', 'A', '1'];
const NUMBERS = ['0', '1', '-1', '42', '9007199254740993', '0.5', '-2.5', '1e300', '3.0'];

describe('policy: the compiled shortcut on generated cases', function () {
  this.timeout(60_000);

  it('answers as cel-js does, value and cost, on every case it answers', () => {
    const random = seededRandom(20261123);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

    /** JSON text (so "__proto__" is an own key, as in a real request body). */
    const json = (depth: number, top = false): string => {
      const r = top ? 0 : random();
      // mostly maps with the keys the paths use, so that most paths lead somewhere
      if (depth > 0 && r < 0.5) {
        const keys = [...new Set([...['a', 'b'].filter(() => random() < 0.9), ...Array.from({ length: Math.floor(random() * 2) }, () => pick(KEYS))])];
        return `{${keys.map((k) => `${JSON.stringify(k)}: ${json(depth - 1)}`).join(', ')}}`;
      }
      if (depth > 0 && r < 0.65) return `[${Array.from({ length: Math.floor(random() * 4) }, () => json(depth - 1)).join(', ')}]`;
      if (r < 0.7) return JSON.stringify(pick(STRINGS));
      if (r < 0.85) return pick(NUMBERS);
      return pick(['true', 'false', 'null']);
    };

    const path = (base: string, depth: number): string => {
      let p = base;
      for (let i = 0; i < depth; i++) {
        const r = random();
        p += r < 0.75 ? `.${pick(['a', 'b', 'a', 'b', 'name'])}` : r < 0.9 ? `[${JSON.stringify(pick(['a', 'b', ...KEYS]))}]` : `[${Math.floor(random() * 3)}]`;
      }
      return p;
    };
    const literal = () => pick([JSON.stringify(pick(STRINGS)), '0', '1', '-1', '42', '0.5', 'true', 'false', 'null']);
    const value = (scope: string[], depth: number): string => {
      const r = random();
      if (r < 0.5) return scope.length && random() < 0.5 ? path(pick(scope), Math.floor(random() * 2)) : path('object', 1 + Math.floor(random() * 2));
      if (r < 0.7) return literal();
      if (r < 0.85) return `${path('object', 1 + Math.floor(random() * 2))}.size()`;
      return depth > 0 ? `${value(scope, depth - 1)} + ${value(scope, depth - 1)}` : literal();
    };
    const bool = (scope: string[], depth: number): string => {
      const r = random();
      if (depth <= 0 || r < 0.3) return `${value(scope, 1)} ${pick(['==', '!=', '<', '<=', '>', '>='])} ${value(scope, 1)}`;
      if (r < 0.4) return `has(${path(scope.length && random() < 0.5 ? pick(scope) : 'object', 1 + Math.floor(random() * 2)).replace(/\[.*?\]/g, '.a')})`;
      if (r < 0.5) return `${value(scope, 0)}.${pick(['startsWith', 'endsWith', 'contains', 'matches'])}(${JSON.stringify(pick(['a', '', 'é', '^r', '[', 'x$']))})`;
      if (r < 0.6) return `${value(scope, 0)} in ${random() < 0.5 ? path('object', 1) : '["a", "ab", "é"]'}`;
      if (r < 0.7) return `(${bool(scope, depth - 1)}) ${pick(['&&', '||'])} (${bool(scope, depth - 1)})`;
      if (r < 0.75) return `!(${bool(scope, depth - 1)})`;
      if (r < 0.85) return `(${bool(scope, depth - 1)}) ? (${bool(scope, depth - 1)}) : (${bool(scope, depth - 1)})`;
      const v = pick(['x', 'y', 'object']);
      return `${path('object', 1 + Math.floor(random() * 2))}.${pick(['all', 'exists'])}(${v}, ${bool([...scope, v], depth - 1)})`;
    };

    let compiled = 0;
    let cases = 0;
    const answers = verification.answers;
    const failures: string[] = [];
    for (let i = 0; i < 6000; i++) {
      const expression = bool([], 1 + Math.floor(random() * 3));
      const text = json(2 + Math.floor(random() * 2), true);
      const object = JSON.parse(text) as unknown;
      let program;
      try {
        program = compile(expression, 'f', ['bool'], { params: false });
      } catch (err) {
        if (err instanceof CompileError) continue; // a type error the checker finds
        throw err;
      }
      cases++;
      if (program.compiled) compiled++;
      const request = { uid: 'u', kind: { group: '', version: 'v1', kind: 'X' }, resource: { group: '', version: 'v1', resource: 'xs' }, operation: 'CREATE', userInfo: { username: 'u' }, object } as unknown as AdmissionRequest;
      const ints = new IntsInPlace();
      try {
        program(buildActivation(request, object, [], {}, ints, new ActivationReads([program]), true) as never);
      } catch {
        // an evaluation error: cel-js's, whoever started
      } finally {
        ints.restore();
      }
      const differences = verification.differences.splice(0);
      if (differences.length) failures.push(`${expression}\n  over ${text}\n  ${differences[0]!.split('\n')[0]}`);
    }
    const answered = verification.answers - answers;
    console.log(`      generated: ${cases} expressions that type-check, ${compiled} compiled, ${answered} answered by the shortcut (the rest by cel-js)`);
    expect(verification.on, 'test/support/verify-compiled.ts is loaded').to.equal(true);
    expect(failures.slice(0, 5)).to.deep.equal([]);
    expect(compiled).to.be.greaterThan(cases / 2);
    expect(answered).to.be.greaterThan(cases / 10);
  });
});
