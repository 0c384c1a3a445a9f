/**
 * The handlers of the in-tree plugins that look things up, on what their config and a view
 * decide (their answers against the in-tree plugins themselves are the plugin differential's,
 * test/e2e/plugins-differential.test.ts): config refused on apply naming the field, the default
 * class picked as upstream picks it, patches that apply to the objects the API server sends.
 */
import { expect } from 'chai';
import { LookupNotReady } from '../../../src/handlers/handler.ts';
import { defaultStorageClass } from '../../../src/handlers/default-storage-class.ts';
import { defaultIngressClass } from '../../../src/handlers/default-ingress-class.ts';
import { priority } from '../../../src/handlers/priority.ts';
import { runtimeClass } from '../../../src/handlers/runtime-class.ts';
import { podTolerationRestriction, isBestEffort } from '../../../src/handlers/pod-toleration-restriction.ts';
import { isExtendedResourceName } from '../../../src/handlers/extended-resource-toleration.ts';
import { findHandler } from '../../../src/handlers/registry.ts';
import { podTopologyLabels } from '../../../src/handlers/pod-topology-labels.ts';
import { namespace, viewOf } from '../../fixtures/views.ts';
import { pod, requestFor } from '../../fixtures/reviews.ts';
import { applied, suiteErrors } from '../../fixtures/patch.ts';

const podRule = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const sc = (name: string, created: string, isDefault = true) => ({ metadata: { name, creationTimestamp: created, annotations: isDefault ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : {} } });

describe('handlers: the lookup handlers', function () {
  it('refuse any config where they take none, and PodTolerationRestriction a bad toleration, naming the field', function () {
    for (const name of [
      'Priority',
      'RuntimeClass',
      'DefaultStorageClass',
      'DefaultIngressClass',
      'PersistentVolumeClaimResize',
      'StorageObjectInUseProtection',
      'ExtendedResourceToleration',
      'LimitPodHardAntiAffinityTopology',
      'PodResizeValidator',
    ]) {
      expect(findHandler(name)!.parseConfig({ extra: 1 }).errors, name).to.deep.equal([{ field: 'extra', message: `${name} takes no configuration` }]);
    }
    const errors = suiteErrors({
      type: 'Mutating',
      rules: podRule,
      handler: { name: 'PodTolerationRestriction', config: { default: [{ key: 'a', operator: 'Exists', value: 'x' }], whitelist: [{ operator: 'Equal', effect: 'Sometimes' }] } },
    });
    expect(errors).to.deep.equal([
      { field: 'spec.webhooks[0].handler.config.default[0].value', message: "value must be empty when `operator` is 'Exists'" },
      { field: 'spec.webhooks[0].handler.config.whitelist[0].operator', message: 'operator must be Exists when `key` is empty, which means "match all values and all keys"' },
      { field: 'spec.webhooks[0].handler.config.whitelist[0].effect', message: 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"' },
    ]);
  });

  it('DefaultStorageClass: the newest default, then the first by name; a claim with any class is left alone', function () {
    const object = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'team-a' }, spec: { resources: { requests: { storage: '1Gi' } } } };
    const view = viewOf({ lookups: { StorageClass: [sc('old', '2026-01-01T00:00:00Z'), sc('b-new', '2026-02-01T00:00:00Z'), sc('a-new', '2026-02-01T00:00:00Z'), sc('newest-not-default', '2026-03-01T00:00:00Z', false)] } });
    const decision = defaultStorageClass.mutate!(requestFor('persistentvolumeclaims', 'CREATE', { object }), {}, view);
    expect((applied(object, decision) as { spec: { storageClassName?: string } }).spec.storageClassName).to.equal('a-new');
    const empty = { ...object, spec: { ...object.spec, storageClassName: '' } };
    expect(defaultStorageClass.mutate!(requestFor('persistentvolumeclaims', 'CREATE', { object: empty }), {}, view)).to.deep.equal({ allowed: true });
  });

  it('DefaultIngressClass: the default IngressClass, unless the Ingress names one by field or annotation', function () {
    const object = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'web', namespace: 'team-a' }, spec: {} };
    const request = (o: Record<string, unknown>) => ({ ...requestFor('pods', 'CREATE', { object: o }), resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' } });
    const view = viewOf({ lookups: { IngressClass: [{ metadata: { name: 'nginx', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } } }] } });
    expect(defaultIngressClass.mutate!(request(object), {}, view).patch).to.deep.equal([{ op: 'add', path: '/spec/ingressClassName', value: 'nginx' }]);
    const annotated = { ...object, metadata: { ...object.metadata, annotations: { 'kubernetes.io/ingress.class': 'other' } } };
    expect(defaultIngressClass.mutate!(request(annotated), {}, view)).to.deep.equal({ allowed: true });
  });

  it('Priority: the lowest-valued global default, the class preemptionPolicy, an unknown class refused in upstream words', function () {
    const view = viewOf({
      lookups: {
        PriorityClass: [
          { metadata: { name: 'high-default' }, value: 2000, globalDefault: true, preemptionPolicy: 'PreemptLowerPriority' },
          { metadata: { name: 'low-default' }, value: 10, globalDefault: true, preemptionPolicy: 'Never' },
        ],
      },
    });
    const object = pod({ containers: [{ name: 'a', image: 'nginx' }] });
    const stored = applied(object, priority.mutate!(requestFor('pods', 'CREATE', { object }), {}, view)) as { spec: Record<string, unknown> };
    expect(stored.spec).to.include({ priorityClassName: 'low-default', priority: 10, preemptionPolicy: 'Never' });
    const unknown = pod({ containers: [{ name: 'a', image: 'nginx' }], priorityClassName: 'gold' });
    expect(priority.mutate!(requestFor('pods', 'CREATE', { object: unknown }), {}, view)).to.deep.equal({
      allowed: false,
      code: 403,
      reason: 'Forbidden',
      message: 'pods "app" is forbidden: no PriorityClass with name gold was found',
    });
  });

  it('RuntimeClass: overhead and scheduling merged into the Pod; a differing preset overhead refused', function () {
    const view = viewOf({
      lookups: { RuntimeClass: [{ metadata: { name: 'kata' }, handler: 'kata', overhead: { podFixed: { cpu: '250m' } }, scheduling: { nodeSelector: { sandbox: 'yes' }, tolerations: [{ key: 'sandbox', operator: 'Exists' }] } }] },
    });
    const object = pod({ runtimeClassName: 'kata', containers: [{ name: 'a', image: 'nginx' }], nodeSelector: { zone: 'a' } });
    const stored = applied(object, runtimeClass.mutate!(requestFor('pods', 'CREATE', { object }), {}, view)) as { spec: Record<string, unknown> };
    expect(stored.spec.overhead).to.deep.equal({ cpu: '250m' });
    expect(stored.spec.nodeSelector).to.deep.equal({ zone: 'a', sandbox: 'yes' });
    expect(stored.spec.tolerations).to.deep.equal([{ key: 'sandbox', operator: 'Exists' }]);
    const same = pod({ runtimeClassName: 'kata', containers: [{ name: 'a', image: 'nginx' }], overhead: { cpu: '0.25' } });
    expect(runtimeClass.validate!(requestFor('pods', 'CREATE', { object: same }), {}, view)).to.deep.equal({ allowed: true });
    const differs = pod({ runtimeClassName: 'kata', containers: [{ name: 'a', image: 'nginx' }], overhead: { cpu: '1' } });
    expect(runtimeClass.mutate!(requestFor('pods', 'CREATE', { object: differs }), {}, view).message).to.equal("pods \"app\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead");
  });

  it('PodTolerationRestriction: the cluster whitelist where the namespace has none; a namespace not yet cached is not ready', function () {
    const config = podTolerationRestriction.parseConfig({ whitelist: [{ key: 'allowed', operator: 'Exists' }] }).config;
    const view = viewOf({ namespaces: [namespace('team-a')] });
    const object = pod({ containers: [{ name: 'a', image: 'nginx' }], tolerations: [{ key: 'other', operator: 'Exists' }] });
    expect(podTolerationRestriction.validate!(requestFor('pods', 'CREATE', { object }), config, view).message).to.equal('pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist');
    expect(() => podTolerationRestriction.validate!(requestFor('pods', 'CREATE', { object, namespace: 'new' }), config, view)).to.throw(LookupNotReady);
  });

  it('Pod QoS as upstream computes BestEffort, and extended resource names', function () {
    expect(isBestEffort(pod({ containers: [{ name: 'a' }] }))).to.equal(true);
    expect(isBestEffort(pod({ containers: [{ name: 'a', resources: { requests: { 'example.com/gpu': '1' }, limits: { 'example.com/gpu': '1' } } }] }))).to.equal(true);
    expect(isBestEffort(pod({ containers: [{ name: 'a', resources: { requests: { cpu: '100m' } } }] }))).to.equal(false);
    expect(isBestEffort({ ...pod({ containers: [{ name: 'a', resources: { requests: { cpu: '100m' } } }] }), status: { qosClass: 'BestEffort' } })).to.equal(true);
    expect(['example.com/gpu', 'cpu', 'kubernetes.io/foo', 'requests.example.com/gpu'].map(isExtendedResourceName)).to.deep.equal([true, false, false, false]);
  });

  it('PodTopologyLabels: the Node’s labels of the configured keys onto a Binding or a bound Pod, overwriting; a bad key refused naming the field', function () {
    expect(podTopologyLabels.parseConfig({ labels: ['example.com/rack', 'bad key'] }).errors).to.deep.equal([
      { field: 'labels[1]', message: `must be a label key: "bad key": the name must be 63 characters or less, alphanumeric at both ends, with '-', '_' or '.' between` },
    ]);
    const { config } = podTopologyLabels.parseConfig({ labels: ['topology.kubernetes.io/zone', 'example.com/rack'] });
    const view = viewOf({ lookups: { Node: [{ metadata: { name: 'n1', labels: { 'topology.kubernetes.io/zone': 'z1', 'topology.kubernetes.io/region': 'r1', 'example.com/rack': '7' } } }] } });
    const binding = { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: 'team-a', labels: { 'topology.kubernetes.io/zone': 'old' } }, target: { kind: 'Node', name: 'n1' } };
    const request = { ...requestFor('pods', 'CREATE', { object: binding, subResource: 'binding' }) };
    expect((applied(binding, podTopologyLabels.mutate!(request, config, view)) as { metadata: { labels: Record<string, string> } }).metadata.labels).to.deep.equal({
      'topology.kubernetes.io/zone': 'z1',
      'example.com/rack': '7',
    });
    const bound = pod({ nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] });
    expect((applied(bound, podTopologyLabels.mutate!(requestFor('pods', 'CREATE', { object: bound }), config, view)) as { metadata: { labels: Record<string, string> } }).metadata.labels).to.deep.equal({
      'topology.kubernetes.io/zone': 'z1',
      'example.com/rack': '7',
    });
    const elsewhere = pod({ nodeName: 'n2', containers: [{ name: 'c', image: 'i' }] });
    expect(podTopologyLabels.mutate!(requestFor('pods', 'CREATE', { object: elsewhere }), config, view)).to.deep.equal({ allowed: true });
  });
});
