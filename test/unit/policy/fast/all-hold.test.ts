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
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';
import { buildActivation } from '../../../../src/policy/engine/activation.ts';
import { ActivationReads } from '../../../../src/policy/values/reads.ts';
import { IntsInPlace } from '../../../../src/policy/values/convert.ts';
import { fixtures, requestOf } from '../../../fixtures/reviews.ts';
import { seededRandom } from '../../../support/random.ts';

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
      expect(
        metered(budget, () => check({ object: object() })),
        expressions.join(' && '),
      ).to.deep.equal({ result: false, cost: 0, limit: Infinity, overrunAt: -1 });
    }
  });

  it('on generated cases: says "all hold" only where each program answers true, at their cost; otherwise leaves the meter as it was', function () {
    const random = seededRandom(20261126);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const POOL = [
      'object.spec.replicas <= 5',
      'object.spec.replicas >= 1',
      'has(object.metadata.labels.team)',
      'object.metadata.labels.all(k, k.size() < 8)',
      "object.spec.containers.all(c, c.image.startsWith('r/'))",
      "object.spec.containers.exists(c, c.name == 'a')",
      'object.metadata.name.size() > 0',
      'object.spec.containers.size() <= 3',
      '!has(object.spec.hostNetwork) || object.spec.hostNetwork == false',
      'object.spec.containers.all(c, has(c.resources.limits) && has(c.resources.limits.memory))',
    ];
    const compiled = new Map(POOL.map((e) => [e, compile(e, 'v', ['bool'])]));
    const pod = () => {
      const some = <T>(value: T) => (random() < 0.85 ? value : undefined);
      const container = () => ({ name: pick(['a', 'b', 'ab']), image: pick(['r/x', 'r/', 'q/x', 7]), resources: some({ limits: some({ memory: some('1Gi') }) }) });
      return JSON.parse(
        JSON.stringify({
          metadata: { name: some(pick(['', 'web'])), labels: some(Object.fromEntries(['team', 'app', 'a-much-longer-key'].filter(() => random() < 0.5).map((k) => [k, 'v']))) },
          spec: { replicas: some(pick([1, 3, 7, 2.5, '3'])), hostNetwork: some(pick([false, true, 'x'])), containers: some(Array.from({ length: Math.floor(random() * 5) }, container)) },
        }),
      ) as Record<string, unknown>;
    };
    let held = 0;
    let unsure = 0;
    for (let i = 0; i < 3000; i++) {
      const programs = Array.from({ length: 1 + Math.floor(random() * 5) }, () => compiled.get(pick(POOL))!);
      const check = allHoldCheck(programs)!;
      const object = pod();
      const request = { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', userInfo: { username: 'u' }, object } as unknown as AdmissionRequest;
      const budget = random() < 0.2 ? Math.floor(random() * 40) : 10_000;
      const run = <T>(evaluate: (activation: unknown) => T) => {
        const ints = new IntsInPlace();
        try {
          return metered(budget, () => evaluate(buildActivation(request, object, [], {}, ints, new ActivationReads(programs), true)));
        } finally {
          ints.restore();
        }
      };
      const fused = run((activation) => check(activation));
      const oneByOne = run((activation) =>
        programs.map((p) => {
          try {
            return p(activation as never);
          } catch (err) {
            return err;
          }
        }),
      );
      const label = `${programs.map((p) => POOL.find((e) => compiled.get(e) === p)).join(' && ')} over ${JSON.stringify(object)} in ${budget}`;
      if (fused.result) {
        held++;
        expect(oneByOne.result, label).to.deep.equal(programs.map(() => true));
        expect(fused.cost, label).to.equal(oneByOne.cost);
      } else {
        unsure++;
        expect({ cost: fused.cost, limit: fused.limit, overrunAt: fused.overrunAt }, label).to.deep.equal({ cost: 0, limit: Infinity, overrunAt: -1 });
      }
    }
    expect(held, 'cases where all held').to.be.greaterThan(300);
    expect(unsure, 'cases where the check was unsure').to.be.greaterThan(300);
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
