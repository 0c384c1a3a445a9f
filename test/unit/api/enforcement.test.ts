/** Where a suite's webhook is enforced (api/enforcement.ts): as asked where it can be, and why not where it cannot. */
import { expect } from 'chai';
import { changedNativeWebhooks, nativeEnforcementOff, nativeObstacles, plannedEnforcement, NATIVE_ENFORCEMENT_OFF } from '../../../src/api/enforcement.ts';
import { validateSpec } from '../../../src/api/validate.ts';
import type { SuiteSpec, WebhookSpec } from '../../../src/api/types.ts';

const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const cel = (extra: Partial<WebhookSpec> = {}): WebhookSpec => ({ name: 'cel', type: 'Validating', rules, validations: [{ expression: 'true' }], ...extra });
const handled: WebhookSpec = { name: 'labels', type: 'Validating', rules, handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } } };
const mutating: WebhookSpec = { name: 'stamp', type: 'Mutating', rules, mutations: [{ patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] }] };
const suite = (spec: Partial<SuiteSpec>) => ({ spec: { webhooks: [], ...spec } as SuiteSpec });

describe('api/enforcement: where a webhook is enforced', function () {
  it('defaults to the webhook; the webhook’s own field wins over the suite’s', function () {
    expect(plannedEnforcement(suite({}), cel())).to.deep.equal({ enforcement: 'Webhook' });
    expect(plannedEnforcement(suite({ enforcement: 'Native' }), cel())).to.deep.equal({ enforcement: 'Native' });
    expect(plannedEnforcement(suite({ enforcement: 'Native' }), cel({ enforcement: 'Webhook' }))).to.deep.equal({ enforcement: 'Webhook' });
  });

  it('names what keeps a webhook from being native: a handler, a Mutating type, a reason VAP does not take', function () {
    expect(nativeObstacles(cel())).to.deep.equal([]);
    expect(nativeObstacles(handled).map((o) => o.field)).to.deep.equal(['handler']);
    expect(nativeObstacles(mutating).map((o) => o.field)).to.deep.equal(['type']);
    expect(nativeObstacles(cel({ validations: [{ expression: 'true' }, { expression: 'false', reason: 'Unauthorized' }] })).map((o) => o.field)).to.deep.equal(['validations[1].reason']);
  });

  it('Auto goes native where it can, and says why where it cannot', function () {
    expect(plannedEnforcement(suite({ enforcement: 'Auto' }), cel())).to.deep.equal({ enforcement: 'Native' });
    const plan = plannedEnforcement(suite({ enforcement: 'Auto' }), handled);
    expect(plan.enforcement).to.equal('Webhook');
    expect(plan.reason).to.match(/^handler: the built-in handler RequiredLabels runs in the operator/);
  });

  it('where the operator does not enforce natively, everything is a webhook, and Native is refused on apply', function () {
    expect(plannedEnforcement(suite({ enforcement: 'Native' }), cel(), false)).to.deep.equal({ enforcement: 'Webhook', reason: NATIVE_ENFORCEMENT_OFF });
    expect(nativeEnforcementOff(suite({ webhooks: [cel(), cel({ name: 'n', enforcement: 'Native' })] }))).to.deep.equal([{ field: 'spec.webhooks[1].enforcement', message: `Invalid value: "Native": ${NATIVE_ENFORCEMENT_OFF}` }]);
    expect(nativeEnforcementOff(suite({ enforcement: 'Native', webhooks: [cel()] })).map((e) => e.field)).to.deep.equal(['spec.enforcement']);
    expect(nativeEnforcementOff(suite({ enforcement: 'Auto', webhooks: [cel()] }))).to.deep.equal([]);
  });

  it('validateSpec refuses a Native webhook that cannot be, at the field that asked, and an unknown value', function () {
    const errors = validateSpec({ enforcement: 'Native', webhooks: [cel(), handled] });
    expect(errors.map((e) => e.field)).to.deep.equal(['spec.enforcement']);
    expect(errors[0]!.message).to.contain('webhook labels cannot be enforced natively (handler:');
    expect(validateSpec({ webhooks: [{ ...handled, enforcement: 'Native' }] }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].enforcement']);
    expect(validateSpec({ webhooks: [{ ...cel(), enforcement: 'Sometimes' as never }] }).map((e) => e.message)).to.deep.equal(['Unsupported value: "Sometimes": supported values: "Webhook", "Native", "Auto"']);
    expect(validateSpec({ enforcement: 'Auto', webhooks: [cel(), handled] })).to.deep.equal([]);
  });

  it('asks the API server again only for the Native webhooks a write adds or changes (their inherited suite fields included)', function () {
    const native = cel({ enforcement: 'Native' });
    const before = suite({ webhooks: [native, cel({ name: 'other' })] });
    expect(changedNativeWebhooks(before).map((c) => c.index)).to.deep.equal([0]);
    expect(changedNativeWebhooks(before, before)).to.deep.equal([]);
    expect(changedNativeWebhooks(suite({ webhooks: [native, cel({ name: 'other', validations: [{ expression: 'false' }] })] }), before)).to.deep.equal([]);
    expect(changedNativeWebhooks(suite({ webhooks: [{ ...native, validations: [{ expression: 'false' }] }] }), before).map((c) => c.index)).to.deep.equal([0]);
    expect(changedNativeWebhooks(suite({ failurePolicy: 'Ignore', webhooks: [native] }), before).map((c) => c.index)).to.deep.equal([0]);
    // Asked Native by the suite's default now, by its own field before: the same policy.
    expect(changedNativeWebhooks(suite({ enforcement: 'Native', webhooks: [cel()] }), suite({ webhooks: [native] }))).to.deep.equal([]);
  });
});
