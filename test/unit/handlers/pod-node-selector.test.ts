/** PodNodeSelector, with the cases of upstream's TestPodAdmission and TestHandles. */
import { expect } from 'chai';
import { podNodeSelector, selectorError, NODE_SELECTOR_ANNOTATION } from '../../../src/handlers/pod-node-selector.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { pod, requestFor } from '../../fixtures/reviews.ts';
import { applied, suiteErrors } from '../../fixtures/patch.ts';
import { namespace, viewOf } from '../../fixtures/views.ts';

const NS = 'testnamespace';
const podIn = (nodeSelector?: Record<string, string>) => pod({ containers: [{ name: 'a', image: 'nginx' }], ...(nodeSelector ? { nodeSelector } : {}) }, { name: 'testpod', namespace: NS });
const create = (object: Record<string, unknown>) => requestFor('pods', 'CREATE', { object });

interface Case {
  testName: string;
  defaultNodeSelector: string;
  /** undefined: the namespace has no annotation (upstream's ignoreTestNamespaceNodeSelector) */
  namespaceNodeSelector?: string;
  whitelist?: string;
  podNodeSelector: Record<string, string>;
  mergedNodeSelector?: Record<string, string>;
  admit: boolean;
}

// upstream TestPodAdmission
const cases: Case[] = [
  { testName: 'No node selectors', defaultNodeSelector: '', podNodeSelector: {}, mergedNodeSelector: {}, admit: true },
  { testName: 'Default node selector and no conflicts', defaultNodeSelector: 'infra = false', podNodeSelector: {}, mergedNodeSelector: { infra: 'false' }, admit: true },
  { testName: 'TestNamespace node selector with whitespaces and no conflicts', defaultNodeSelector: '', namespaceNodeSelector: ' infra = false ', podNodeSelector: {}, mergedNodeSelector: { infra: 'false' }, admit: true },
  { testName: 'Default and namespace node selector, no conflicts', defaultNodeSelector: 'infra = false', namespaceNodeSelector: 'infra=true', podNodeSelector: {}, mergedNodeSelector: { infra: 'true' }, admit: true },
  { testName: 'Empty namespace node selector and no conflicts', defaultNodeSelector: 'infra = false', namespaceNodeSelector: '', podNodeSelector: {}, mergedNodeSelector: {}, admit: true },
  {
    testName: 'TestNamespace and pod node selector, no conflicts',
    defaultNodeSelector: 'infra = false',
    namespaceNodeSelector: 'infra=true',
    podNodeSelector: { env: 'test' },
    mergedNodeSelector: { infra: 'true', env: 'test' },
    admit: true,
  },
  { testName: 'Conflicting pod and namespace node selector, one label', defaultNodeSelector: 'env = test', namespaceNodeSelector: 'infra=true', podNodeSelector: { infra: 'false' }, admit: false },
  { testName: 'Conflicting pod and namespace node selector, multiple labels', defaultNodeSelector: 'env=dev', namespaceNodeSelector: 'infra=false, env = test', podNodeSelector: { env: 'dev', color: 'blue' }, admit: false },
  {
    testName: 'Merged pod node selectors satisfy the whitelist',
    defaultNodeSelector: 'env=dev',
    namespaceNodeSelector: 'infra=false, env = dev',
    whitelist: 'env=dev, infra=false, color=blue',
    podNodeSelector: { env: 'dev', color: 'blue' },
    mergedNodeSelector: { infra: 'false', env: 'dev', color: 'blue' },
    admit: true,
  },
  {
    testName: 'Merged pod node selectors conflict with the whitelist',
    defaultNodeSelector: 'env=dev',
    namespaceNodeSelector: 'infra=false, env = dev',
    whitelist: 'env=dev, infra=true, color=blue',
    podNodeSelector: { env: 'dev', color: 'blue' },
    admit: false,
  },
  { testName: 'Default node selector conflict with the whitelist', defaultNodeSelector: 'env=dev', whitelist: 'env=prd', podNodeSelector: {}, admit: false },
];

describe('handlers: PodNodeSelector', function () {
  for (const c of cases) {
    it(c.testName, function () {
      const parsed = podNodeSelector.parseConfig({ clusterDefaultNodeSelector: c.defaultNodeSelector, namespaceAllowlists: { [NS]: c.whitelist ?? '' } });
      expect(parsed.errors).to.deep.equal([]);
      const view = viewOf({ namespaces: [namespace(NS, c.namespaceNodeSelector === undefined ? undefined : { [NODE_SELECTOR_ANNOTATION]: c.namespaceNodeSelector })] });
      const object = podIn(c.podNodeSelector);
      const mutated = podNodeSelector.mutate!(create(object), parsed.config, view);
      expect(mutated.allowed, mutated.message).to.equal(c.admit);
      if (c.admit) {
        const stored = applied(object, mutated) as { spec: { nodeSelector?: Record<string, string> } };
        expect(stored.spec.nodeSelector ?? {}).to.deep.equal(c.mergedNodeSelector);
        // upstream then validates the admitted Pod
        expect(podNodeSelector.validate!(create(stored as Record<string, unknown>), parsed.config, view)).to.deep.equal({ allowed: true });
      } else {
        expect(mutated).to.include({ code: 403, reason: 'Forbidden' });
        expect(mutated.message).to.match(/^pods "[^"]*" is forbidden: pod node label selector (conflicts with its namespace node label selector|labels conflict with its namespace whitelist)$/);
      }
    });
  }

  it("answers a conflict in the in-tree plugin's words, on both sides", function () {
    const config = podNodeSelector.parseConfig({}).config;
    const view = viewOf({ namespaces: [namespace(NS, { [NODE_SELECTOR_ANNOTATION]: 'env=test' })] });
    const decision = podNodeSelector.mutate!(create(podIn({ env: 'dev' })), config, view);
    const name = (podIn({ env: 'dev' }) as { metadata?: { name?: string } }).metadata?.name;
    expect(decision.message).to.equal(`pods "${name}" is forbidden: pod node label selector conflicts with its namespace node label selector`);
    expect(podNodeSelector.validate!(create(podIn({ env: 'dev' })), config, view).message).to.equal(decision.message);
  });

  it('adds only the missing keys to an existing nodeSelector, escaping keys with a slash', function () {
    const config = podNodeSelector.parseConfig({}).config;
    const view = viewOf({ namespaces: [namespace(NS, { [NODE_SELECTOR_ANNOTATION]: 'kubernetes.io/os=linux,env=test' })] });
    const decision = podNodeSelector.mutate!(create(podIn({ env: 'test' })), config, view);
    expect(decision.patch).to.deep.equal([{ op: 'add', path: '/spec/nodeSelector/kubernetes.io~1os', value: 'linux' }]);
    expect(podNodeSelector.mutate!(create(podIn()), config, view).patch).to.deep.equal([{ op: 'add', path: '/spec/nodeSelector', value: { 'kubernetes.io/os': 'linux', env: 'test' } }]);
  });

  it("denies when the namespace annotation is not a selector, in the selector parser's words", function () {
    const view = viewOf({ namespaces: [namespace(NS, { [NODE_SELECTOR_ANNOTATION]: 'env!=test' })] });
    const decision = podNodeSelector.mutate!(create(podIn()), podNodeSelector.parseConfig({}).config, view);
    expect(decision).to.include({ allowed: false, code: 403 });
    expect(decision.message).to.match(/^<nil>: Invalid value: "env!": name part must consist of alphanumeric characters/);
    expect(selectorError('env')).to.equal('invalid selector: [env]');
    expect(selectorError('a=b=c, d=e')).to.equal('invalid selector: [a b c]');
    expect(selectorError('env=bad value')).to.match(/^\[env\]: Invalid value: "bad value": a valid label must be an empty string/);
    expect(selectorError(' infra = false , env=dev')).to.equal(undefined);
  });

  it('a namespace without the annotation and no cluster default leaves the Pod as it is', function () {
    const view = viewOf({ namespaces: [namespace(NS, { other: 'x' })] });
    expect(podNodeSelector.mutate!(create(podIn({ disk: 'ssd' })), podNodeSelector.parseConfig({}).config, view)).to.deep.equal({ allowed: true });
  });

  // upstream TestHandles: CREATE only
  it('handles CREATE only: UPDATE, DELETE with no object, CONNECT and subresources are left alone', function () {
    const config = podNodeSelector.parseConfig({ clusterDefaultNodeSelector: 'env=test' }).config;
    const view = viewOf({ namespaces: [namespace(NS)] });
    const object = podIn({ env: 'dev' });
    for (const request of [
      requestFor('pods', 'UPDATE', { object, oldObject: object }),
      requestFor('pods', 'DELETE', { name: 'testpod', namespace: NS }),
      requestFor('pods', 'CONNECT', { object, subResource: 'exec' }),
      requestFor('pods', 'CREATE', { object, subResource: 'binding' }),
    ]) {
      expect(podNodeSelector.mutate!(request, config, view)).to.deep.equal({ allowed: true });
      expect(podNodeSelector.validate!(request, config, view)).to.deep.equal({ allowed: true });
    }
  });

  it('a namespace the cache has not seen is an error, answered by the failurePolicy', async function () {
    const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    const compiled = (failurePolicy: 'Fail' | 'Ignore') =>
      compileSuite(
        { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 's', uid: 'u' }, spec: { webhooks: [{ name: 'w', type: 'Mutating', failurePolicy, rules, handler: { name: 'PodNodeSelector' } }] } },
        { view: viewOf() },
      ).webhooks.get('w')!;
    const failed = await compiled('Fail').admit(create(podIn()));
    expect(failed).to.include({ allowed: false, code: 403 });
    expect(failed.message).to.contain(`PodNodeSelector: namespace "${NS}" is not in the operator's cache yet`);
    expect(await compiled('Ignore').admit(create(podIn()))).to.deep.equal({ allowed: true });
  });

  it('a suite with a bad config is refused, naming the field', function () {
    const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    const fields = suiteErrors({ type: 'Mutating', rules, handler: { name: 'PodNodeSelector', config: { clusterDefaultNodeSelector: 'infra', namespaceAllowlists: { team: 'env==dev', ok: 'env=dev' } } } }).map((e) => e.field);
    expect(fields).to.deep.equal(['spec.webhooks[0].handler.config.clusterDefaultNodeSelector', 'spec.webhooks[0].handler.config.namespaceAllowlists.team']);
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'PodNodeSelector', config: { whitelist: {} } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].handler.config.whitelist']);
  });
});
