/**
 * Mocha root hooks: every answer of the compiled CEL shortcut (src/policy/fast) is checked
 * against cel-js's own, value and cost, in every test that evaluates an expression
 * (compiled-differential.ts); a difference fails the run, naming the generated code.
 */
import { verification, verifyCompiled } from './compiled-differential.ts';

verifyCompiled(true);

export const mochaHooks = {
  afterEach() {
    const differences = verification.differences.splice(0);
    if (differences.length) throw new Error(`the compiled shortcut differs from cel-js:\n${differences.join('\n\n')}`);
  },
};
