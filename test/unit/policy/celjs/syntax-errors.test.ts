/**
 * CEL syntax errors as the API server words them: the line and column, the offending token as
 * cel-go names it, the source line and the caret under the place, compared with kube-apiserver
 * 1.37's recorded answers (test/fixtures/cel-syntax-errors.ts; test/e2e/cel-syntax-errors.test.ts
 * checks them live), every error of an expression with several (ANTLR's recovery followed) as well
 * as the first. No recorded row differs today; a row that comes to differ is a known difference to
 * be listed here with why, not skipped. Owns only these checks; must not touch the table's answers.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { CompileError } from '../../../../src/policy/celjs/program.ts';
import { MULTIPLE_SYNTAX_ERRORS, SYNTAX_ERRORS } from '../../../fixtures/cel-syntax-errors.ts';

/** The first error of a caret display: its line, column, message, source line and caret line. */
function firstError(display: string) {
  const [head, source, caret] = display.split('\n');
  const match = /^ERROR: <input>:(\d+):(\d+): (.*)$/.exec(head ?? '');
  return { line: match?.[1], column: match?.[2], message: match?.[3], source, caret };
}

function compileError(expression: string): string {
  try {
    compile(expression, 'spec.validations[0].expression', ['bool']);
  } catch (err) {
    expect(err).to.be.instanceOf(CompileError);
    return (err as Error).message;
  }
  throw new Error(`compiled: ${expression}`);
}

describe('policy: CEL syntax errors in cel-go’s words, at its line and column, with its caret', function () {
  it('has at least 10 rows, and 10 with several errors, each named once', function () {
    expect(SYNTAX_ERRORS.length).to.be.at.least(10);
    expect(MULTIPLE_SYNTAX_ERRORS.length).to.be.at.least(10);
    for (const row of MULTIPLE_SYNTAX_ERRORS) expect(row.apiServer.split('\nERROR: ').length, row.name).to.be.at.least(2);
    const all = [...SYNTAX_ERRORS, ...MULTIPLE_SYNTAX_ERRORS];
    expect(new Set(all.map((r) => r.name)).size).to.equal(all.length);
  });

  for (const row of [...SYNTAX_ERRORS, ...MULTIPLE_SYNTAX_ERRORS]) {
    it(`${row.name} (${row.what}): as kube-apiserver 1.37 says it`, function () {
      const message = compileError(row.expression);
      const prefix = 'spec.validations[0].expression: compilation failed: ';
      expect(message.startsWith(prefix), message).to.equal(true);
      const ours = message.slice(prefix.length);
      const want = firstError(row.apiServer);
      const got = firstError(ours);
      // the place and the caret first, so a failure names what a person would be misled by
      expect({ line: got.line, column: got.column }, 'line and column').to.deep.equal({ line: want.line, column: want.column });
      expect(got.source, 'the source line shown').to.equal(want.source);
      expect(got.caret, 'the caret line').to.equal(want.caret);
      const token = /input '((?:[^']|'(?! expecting| at$))*)'/.exec(want.message ?? '')?.[1] ?? /at: '(.*)'$/s.exec(want.message ?? '')?.[1];
      if (token !== undefined) expect(got.message, 'the offending token as cel-go names it').to.include(`'${token}'`);
      expect(ours, 'every error, in the same words').to.equal(row.apiServer);
    });
  }

  it('leaves an expression cel-go parses to the type checker (no syntax error invented)', function () {
    const message = compileError("object.spec.replicas > 1 && 1 + 'a' > 0");
    expect(message).to.match(/compilation failed: /);
    expect(message).to.not.include('Syntax error');
  });
});
