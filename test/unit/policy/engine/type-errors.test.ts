/**
 * Type errors found without a schema (no matching overload, a macro's predicate that is not bool,
 * an undefined field of `request`, an undeclared name, the wrong result type) refused in the API
 * server's words, with its line, column and caret: each row of test/fixtures/cel-type-errors.ts.
 * Owns that comparison only; must not change the table (recorded from kube-apiserver 1.37).
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { TYPE_ERRORS } from '../../../fixtures/cel-type-errors.ts';

const FIELD = 'spec.webhooks[0].validations[0].expression';

describe("type errors in the API server's words and place", function () {
  for (const row of TYPE_ERRORS) {
    it(`${row.name}: ${JSON.stringify(row.expression)}`, function () {
      expect(() => compile(row.expression, FIELD, ['bool']))
        .to.throw()
        .with.property('message', `${FIELD}: ${row.apiServer}`);
    });
  }
});
