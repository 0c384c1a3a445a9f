/**
 * What limits.test.ts runs on each thread: every expression at the API server's limits
 * (test/fixtures/cel-limits.ts) compiled as a validation, a matchCondition and a variable of one
 * webhook, and evaluated on the fixtures' Deployment; its decision, or what it threw.
 */
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { WebhookSpec } from '../../../../src/api/types.ts';
import { fixtures, requestOf } from '../../../fixtures/reviews.ts';
import { LIMIT_SHAPES, SIZE_SHAPES } from '../../../fixtures/cel-limits.ts';

export function atLimitExpressions(): [string, string][] {
  return [...LIMIT_SHAPES.map((s): [string, string] => [s.name, s.expression(s.limit)]), ...SIZE_SHAPES.map((s): [string, string] => [s.name, s.expression(0)])];
}

export function webhookOf(expression: string): WebhookSpec {
  return {
    name: 'w',
    type: 'Validating',
    rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
    matchConditions: [{ name: 'deep', expression }],
    variables: [{ name: 'deep', expression }],
    validations: [{ expression }, { expression: 'variables.deep == true' }],
  };
}

export function atLimitAnswers(): Record<string, unknown> {
  const answers: Record<string, unknown> = {};
  for (const [name, expression] of atLimitExpressions()) {
    try {
      answers[name] = compileRules('s', webhookOf(expression), 'spec.webhooks[0]', 'Fail')(requestOf(fixtures.deploymentCreate()));
    } catch (err) {
      answers[name] = `threw: ${err instanceof Error ? err.message.slice(0, 300) : String(err)}`;
    }
  }
  return answers;
}
