/** DefaultTolerationSeconds, with the cases of upstream's TestForgivenessAdmission and TestHandles. */
import { expect } from 'chai';
import { defaultTolerationSeconds, type DefaultTolerationSecondsConfig } from '../../../src/handlers/default-toleration-seconds.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { pod, requestFor } from '../../fixtures/reviews.ts';
import { applied, suiteErrors } from '../../fixtures/patch.ts';

const DEFAULTS = defaultTolerationSeconds.parseConfig({}).config;
const notReady = (seconds: number, effect = 'NoExecute') => ({ key: 'node.kubernetes.io/not-ready', operator: 'Exists', ...(effect ? { effect } : {}), tolerationSeconds: seconds });
const unreachable = (seconds: number, effect = 'NoExecute') => ({ key: 'node.kubernetes.io/unreachable', operator: 'Exists', ...(effect ? { effect } : {}), tolerationSeconds: seconds });

function admit(tolerations: unknown[] | undefined, config: DefaultTolerationSecondsConfig = DEFAULTS, operation: 'CREATE' | 'UPDATE' = 'CREATE') {
  const object = pod({ containers: [{ name: 'a', image: 'nginx' }], ...(tolerations ? { tolerations } : {}) });
  const decision = defaultTolerationSeconds.mutate!(requestFor('pods', operation, { object, oldObject: operation === 'UPDATE' ? object : null }), config, EMPTY_VIEW);
  return { decision, stored: applied(object, decision) as { spec: { tolerations?: unknown[] } } };
}

describe('handlers: DefaultTolerationSeconds', function () {
  // upstream TestForgivenessAdmission
  const cases: { description: string; requested?: unknown[]; expected: unknown[] }[] = [
    {
      description: 'pod has no tolerations, expect add tolerations for not-ready:NoExecute and unreachable:NoExecute',
      requested: undefined,
      expected: [notReady(300), unreachable(300)],
    },
    {
      description: 'pod has tolerations, but none is for not-ready or unreachable: both are added',
      requested: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule', tolerationSeconds: 700 }],
      expected: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule', tolerationSeconds: 700 }, notReady(300), unreachable(300)],
    },
    {
      description: 'pod specified a toleration for not-ready:NoExecute, expect add toleration for unreachable:NoExecute',
      requested: [notReady(700)],
      expected: [notReady(700), unreachable(300)],
    },
    {
      description: 'pod specified a toleration for unreachable:NoExecute, expect add toleration for not-ready:NoExecute',
      requested: [unreachable(700)],
      expected: [unreachable(700), notReady(300)],
    },
    {
      description: 'pod specified tolerations for both not-ready:NoExecute and unreachable:NoExecute, expect no change',
      requested: [notReady(700), unreachable(700)],
      expected: [notReady(700), unreachable(700)],
    },
    {
      description: 'pod specified a toleration for taint unreachable with no effect, expect add toleration for not-ready:NoExecute',
      requested: [unreachable(700, '')],
      expected: [unreachable(700, ''), notReady(300)],
    },
    {
      description: 'pod has wildcard toleration for all kind of taints, expect no change',
      requested: [{ operator: 'Exists', tolerationSeconds: 700 }],
      expected: [{ operator: 'Exists', tolerationSeconds: 700 }],
    },
  ];
  for (const c of cases) {
    it(c.description, function () {
      const { decision, stored } = admit(c.requested);
      expect(stored.spec.tolerations).to.deep.equal(c.expected);
      if (JSON.stringify(c.requested) === JSON.stringify(c.expected)) expect(decision).to.deep.equal({ allowed: true });
    });
  }

  it('a NoSchedule toleration for not-ready does not count: NoExecute is still added', function () {
    const { stored } = admit([notReady(10, 'NoSchedule')]);
    expect(stored.spec.tolerations).to.deep.equal([notReady(10, 'NoSchedule'), notReady(300), unreachable(300)]);
  });

  it('answers with a minimal patch: appends to an existing list, adds the list when there is none', function () {
    expect(admit([notReady(700)]).decision.patch).to.deep.equal([{ op: 'add', path: '/spec/tolerations/-', value: unreachable(300) }]);
    expect(admit(undefined).decision.patch).to.deep.equal([{ op: 'add', path: '/spec/tolerations', value: [notReady(300), unreachable(300)] }]);
  });

  it('uses the configured seconds for each taint', function () {
    const config = defaultTolerationSeconds.parseConfig({ notReadyTolerationSeconds: 60, unreachableTolerationSeconds: 0 }).config;
    expect(admit(undefined, config).stored.spec.tolerations).to.deep.equal([notReady(60), unreachable(0)]);
  });

  // upstream TestHandles: CREATE and UPDATE, not DELETE or CONNECT
  it('handles CREATE and UPDATE; an UPDATE of a Pod that already tolerates both changes nothing', function () {
    expect(admit(undefined, DEFAULTS, 'UPDATE').stored.spec.tolerations).to.deep.equal([notReady(300), unreachable(300)]);
    expect(admit([notReady(300), unreachable(300)], DEFAULTS, 'UPDATE').decision).to.deep.equal({ allowed: true });
  });

  it('leaves DELETE with no object, CONNECT, subresources and other resources alone', function () {
    const object = pod({ containers: [{ name: 'a', image: 'nginx' }] });
    expect(defaultTolerationSeconds.mutate!(requestFor('pods', 'DELETE', { oldObject: object }), DEFAULTS, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(defaultTolerationSeconds.mutate!(requestFor('pods', 'CONNECT', { object }), DEFAULTS, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(defaultTolerationSeconds.mutate!(requestFor('pods', 'UPDATE', { object, oldObject: object, subResource: 'status' }), DEFAULTS, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(defaultTolerationSeconds.mutate!(requestFor('services', 'CREATE', { object: { metadata: { name: 's' }, spec: {} } }), DEFAULTS, EMPTY_VIEW)).to.deep.equal({ allowed: true });
  });

  it('a suite with a bad config is refused, naming the field', function () {
    const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    expect(suiteErrors({ type: 'Mutating', rules, handler: { name: 'DefaultTolerationSeconds', config: { notReadyTolerationSeconds: -1, seconds: 5 } } }).map((e) => e.field)).to.have.members([
      'spec.webhooks[0].handler.config.notReadyTolerationSeconds',
      'spec.webhooks[0].handler.config.seconds',
    ]);
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'DefaultTolerationSeconds' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].type']);
    expect(suiteErrors({ type: 'Mutating', rules, handler: { name: 'DefaultTolerationSeconds', config: { unreachableTolerationSeconds: 120 } } })).to.deep.equal([]);
  });
});
