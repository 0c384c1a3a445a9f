/**
 * CEL bounded as the API server bounds it: what it takes at its depth and size limits compiles and
 * evaluates on the main thread and on a 1 MiB worker stack; one step past them is refused in its
 * words, naming the field; and what cel-js would nest deeper than any stack is refused, not run.
 */
import { expect } from 'chai';
import { Worker } from 'node:worker_threads';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { CompileError } from '../../../../src/policy/celjs/program.ts';
import { LIMIT_SHAPES, SIZE_REFUSAL, SIZE_SHAPES } from '../../../fixtures/cel-limits.ts';
import { atLimitAnswers, atLimitExpressions, webhookOf } from './limit-cases.ts';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(CompileError);
    return (err as Error).message;
  }
  throw new Error('compiled');
}

describe('policy: CEL at the API server limits', function () {
  it('compiles and evaluates every expression at the limits on the main thread', function () {
    const answers = atLimitAnswers();
    for (const [name] of atLimitExpressions()) expect(answers[name], name).to.deep.equal({ allowed: true });
  });

  it('compiles and evaluates every expression at the limits on a 1 MiB worker stack', async function () {
    const worker = new Worker(new URL('./limit-worker.ts', import.meta.url), { resourceLimits: { stackSizeMb: 1 } });
    const answers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) without answering`)));
    });
    await worker.terminate();
    for (const [name] of atLimitExpressions()) expect(answers[name], name).to.deep.equal({ allowed: true });
  });

  it('refuses one step past each depth limit in the API server words, naming the field', function () {
    for (const shape of LIMIT_SHAPES) {
      const past = shape.expression(shape.limit + 1);
      expect(
        refusal(() => compile(past, 'spec.validations[0].expression', ['bool'])),
        shape.name,
      ).to.equal(`spec.validations[0].expression: compilation failed: ${shape.refusal}`);
      // the first expression of the webhook compiled is its first matchCondition
      expect(
        refusal(() => compileRules('s', webhookOf(past), 'spec.webhooks[0]', 'Fail')),
        shape.name,
      ).to.equal(`spec.webhooks[0].matchConditions[0].expression: compilation failed: ${shape.refusal}`);
    }
  });

  it('refuses an expression of more than 100,000 code points in the API server words', function () {
    for (const shape of SIZE_SHAPES) {
      expect(
        refusal(() => compile(shape.expression(1), 'm', ['string'])),
        shape.name,
      ).to.equal(`m: compilation failed: ${SIZE_REFUSAL}`);
    }
    // code points, not UTF-16 units: 50,000 characters outside the BMP are 100,000 units
    expect(() => compile(`'${'😀'.repeat(49_990)}' != ''`, 'e', ['bool'])).not.to.throw();
  });

  it('refuses what cel-js takes but nests deeper than the bound, where cel-go grammar is not followed', function () {
    // a conditional inside a conditional's first branch: cel-go refuses its syntax, cel-js nests the chain after it
    const deep = `true ? true ? true : true : 1${' + 1'.repeat(5000)} > 0`;
    expect(refusal(() => compile(deep, 'e', ['bool']))).to.equal('e: compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded');
  });

  it('folds runs of ! and - as cel-go does', function () {
    const admit = (expression: string) => compileRules('s', { ...webhookOf('true'), validations: [{ expression }] }, 'p', 'Fail')({ ...atRequest(), object: { spec: { replicas: 3 } } });
    expect(admit('!!!(object.spec.replicas > 5)')).to.deep.equal({ allowed: true });
    expect(admit('---object.spec.replicas == -3')).to.deep.equal({ allowed: true });
    expect(admit('!!(object.spec.replicas > 5)').allowed).to.equal(false);
  });
});

function atRequest() {
  return { uid: 'u', kind: { group: 'apps', version: 'v1', kind: 'Deployment' }, resource: { group: 'apps', version: 'v1', resource: 'deployments' }, operation: 'CREATE', userInfo: { username: 'u' } } as never as Parameters<
    ReturnType<typeof compileRules>
  >[0];
}
