/**
 * The common answer of a webhook's validations found in one pass (src/policy/fast/all-hold.ts):
 * it says "all hold" only where each program, run on its own, would say true at the same cost,
 * and otherwise leaves the meter as it found it, so that the webhook's answer (message, error,
 * cost) is the one the validations give one by one.
 */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { compileRules, evaluationTotals } from '../../../../src/policy/engine/rules.ts';
import { allHoldCheck } from '../../../../src/policy/fast/all-hold.ts';
import { closeBudget, meter, openBudget } from '../../../../src/policy/cost/meter.ts';
import type { WebhookSpec } from '../../../../src/api/types.ts';
import { fixtures, requestOf } from '../../../fixtures/reviews.ts';

const object = () => requestOf(fixtures.deploymentCreate()).object as Record<string, unknown>;
const programs = (...expressions: string[]) => expressions.map((e, i) => compile(e, `v${i}`, ['bool']));
const HOLDING = ["object.metadata.name.startsWith('we')", 'object.spec.template.spec.containers.all(c, c.image.size() > 3)', 'object.spec.replicas <= 5'];

/** What the meter holds after `run`, in a budget of `budget`. */
function metered<T>(budget: number, run: () => T): { result: T; cost: number; limit: number; overrunAt: number } {
  const saved = openBudget(budget);
  try {
    const result = run();
    return { result, cost: meter.cost, limit: meter.limit, overrunAt: meter.overrunAt };
  } finally {
    closeBudget(saved);
  }
}

describe('policy: every validation holds, found in one pass', function () {
  it('says so at the cost the programs charge when each runs on its own', function () {
    const compiled = programs(...HOLDING);
    const check = allHoldCheck(compiled)!;
    const fused = metered(10_000, () => check({ object: object() }));
    const oneByOne = metered(10_000, () => compiled.map((p) => p({ object: object() })));
    expect(fused.result).to.equal(true);
    expect(oneByOne.result).to.deep.equal([true, true, true]);
    expect(fused.cost).to.be.greaterThan(0);
    expect(fused).to.deep.include({ cost: oneByOne.cost, limit: Infinity });
  });

  it('is unsure, and leaves the meter as it was, when one is false, bails to cel-js, or passes the budget', function () {
    for (const [expressions, budget] of [
      [[...HOLDING, 'object.spec.replicas > 5'], 10_000],
      [['object.spec.selector == object.spec.selector', ...HOLDING], 10_000], // maps: the compiled code hands over to cel-js
      [['object.spec.missing == 1'], 10_000], // an error: cel-js words it
      [HOLDING, 3], // a comprehension past the budget
      [['object.spec.replicas <= 5', 'object.spec.replicas >= 1'], 5], // each within it, the two not
    ] as const) {
      const check = allHoldCheck(programs(...expressions))!;
      expect(metered(budget, () => check({ object: object() })), expressions.join(' && ')).to.deep.equal({ result: false, cost: 0, limit: Infinity, overrunAt: -1 });
    }
  });

  it('is not made for validations of which one has no compiled shortcut', function () {
    expect(allHoldCheck(programs(...HOLDING, 'object.spec.template.spec.containers.map(c, c.name).size() == 1'))).to.equal(undefined);
    expect(allHoldCheck([])).to.equal(undefined);
  });

  describe('in a webhook', function () {
    const webhook = (validations: string[]): WebhookSpec => ({
      name: 'w',
      type: 'Validating',
      rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
      variables: [{ name: 'replicas', expression: 'object.spec.template.spec.containers.all(c, c.name.size() > 0) ? object.spec.replicas : 0' }],
      validations: validations.map((expression) => ({ expression })),
    });
    const answer = (validations: string[]) => {
      const admit = compileRules('s', webhook(validations), 'spec.webhooks[0]', 'Fail');
      const before = evaluationTotals.cost;
      const decision = admit(requestOf(fixtures.deploymentCreate()));
      return { decision, cost: evaluationTotals.cost - before };
    };

    it('denies with the message of the validation that fails, after those that hold', function () {
      const { decision } = answer(['variables.replicas == 3', 'variables.replicas >= 3', 'variables.replicas != 3']);
      expect(decision).to.include({ allowed: false, message: 'failed expression: variables.replicas != 3' });
    });

    it('charges a variable once, whether every validation holds or one fails and they are evaluated again one by one', function () {
      const holding = answer(['variables.replicas == 3', 'variables.replicas >= 3']);
      const failing = answer(['variables.replicas == 3', 'variables.replicas != 3']);
      expect(holding.decision.allowed).to.equal(true);
      expect(failing.decision.allowed).to.equal(false);
      expect(failing.cost).to.equal(holding.cost);
    });
  });
});
