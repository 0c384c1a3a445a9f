/**
 * The rows of the plugin differential (test/e2e/plugins-differential.test.ts): for each in-tree
 * plugin a built-in handler re-creates, the cases of its upstream admission_test.go (named as
 * there; `upstream: true`) and a few of ours, each as the objects to create first (the
 * looked-up classes, an earlier state) and the one request whose answer is compared. Objects
 * carry the label that scopes the Portcullis suite's webhooks; every name is unique in the table.
 */

export const NS = 'plugins-diff';
export const LABEL = { 'plugins-diff': 'yes' };

export interface Request {
  method: 'POST' | 'PATCH';
  path: string;
  body: Record<string, any>;
  contentType?: string;
  /** What a create makes, removed after the row. */
  made?: { kind: string; name: string; namespace?: string };
}
export type Step = Request | { pauseMs: number };

export interface Row {
  plugin: string;
  name: string;
  upstream: boolean;
  setup: Step[];
  request: Request;
  /** An object read back after the request (a Pod after its Binding), compared as well. */
  readBack?: string;
  /** Text the reference's answer must hold (the row is not vacuous: the in-tree plugin acted). */
  shows?: string;
  /**
   * A deliberate difference in the status code, documented in the README: the row is counted as
   * differing with this reason; it fails unless the codes are these and all else agrees.
   */
  knownDifference?: { reason: string; reference: number; portcullis: number };
}

const labelled = (metadata: Record<string, any>) => ({ ...metadata, labels: { ...LABEL, ...(metadata.labels ?? {}) } });

const PATHS: Record<string, { base: string; plural: string; namespaced: boolean }> = {
  Pod: { base: '/api/v1', plural: 'pods', namespaced: true },
  PersistentVolumeClaim: { base: '/api/v1', plural: 'persistentvolumeclaims', namespaced: true },
  PersistentVolume: { base: '/api/v1', plural: 'persistentvolumes', namespaced: false },
  StorageClass: { base: '/apis/storage.k8s.io/v1', plural: 'storageclasses', namespaced: false },
  VolumeAttributesClass: { base: '/apis/storage.k8s.io/v1', plural: 'volumeattributesclasses', namespaced: false },
  IngressClass: { base: '/apis/networking.k8s.io/v1', plural: 'ingressclasses', namespaced: false },
  Ingress: { base: '/apis/networking.k8s.io/v1', plural: 'ingresses', namespaced: true },
  PriorityClass: { base: '/apis/scheduling.k8s.io/v1', plural: 'priorityclasses', namespaced: false },
  RuntimeClass: { base: '/apis/node.k8s.io/v1', plural: 'runtimeclasses', namespaced: false },
  Namespace: { base: '/api/v1', plural: 'namespaces', namespaced: false },
  Node: { base: '/api/v1', plural: 'nodes', namespaced: false },
};

export function collectionPath(kind: string, namespace = NS): string {
  const p = PATHS[kind];
  if (!p) throw new Error(`no path for kind ${kind}`);
  return `${p.base}${p.namespaced ? `/namespaces/${namespace}` : ''}/${p.plural}`;
}

export function objectPath(kind: string, name: string, subresource?: string, namespace = NS): string {
  return `${collectionPath(kind, namespace)}/${name}${subresource ? `/${subresource}` : ''}`;
}

const API_VERSIONS: Record<string, string> = {
  Pod: 'v1',
  PersistentVolumeClaim: 'v1',
  PersistentVolume: 'v1',
  StorageClass: 'storage.k8s.io/v1',
  VolumeAttributesClass: 'storage.k8s.io/v1',
  IngressClass: 'networking.k8s.io/v1',
  Ingress: 'networking.k8s.io/v1',
  PriorityClass: 'scheduling.k8s.io/v1',
  RuntimeClass: 'node.k8s.io/v1',
  Namespace: 'v1',
  Node: 'v1',
};

/** A create of `kind` (in `metadata.namespace`, else plugins-diff, when namespaced), labelled. */
export function create(kind: string, metadata: Record<string, any>, rest: Record<string, any> = {}): Request {
  const namespace = PATHS[kind]?.namespaced ? (metadata.namespace ?? NS) : undefined;
  return {
    method: 'POST',
    path: collectionPath(kind, namespace),
    body: { apiVersion: API_VERSIONS[kind], kind, metadata: labelled(metadata), ...rest },
    made: { kind, name: metadata.name, ...(namespace ? { namespace } : {}) },
  };
}

/** A JSON merge patch (an UPDATE to admission) of an object, or of its subresource. */
export function patch(kind: string, name: string, body: Record<string, any>, subresource?: string, namespace = NS): Request {
  return { method: 'PATCH', path: objectPath(kind, name, subresource, namespace), body, contentType: 'application/merge-patch+json' };
}

const IMAGE = 'registry.k8s.io/pause:3.10';
const pod = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) =>
  create('Pod', { name, ...metadata }, { spec: { containers: [{ name: 'container', image: IMAGE }], ...spec } });

// DefaultStorageClass ----------------------------------------------------------------------------
const DEFAULT_SC = 'storageclass.kubernetes.io/is-default-class';
const storageClass = (name: string, annotations?: Record<string, string>, rest: Record<string, any> = {}) =>
  create('StorageClass', { name, ...(annotations ? { annotations } : {}) }, { provisioner: name, ...rest });
const noDefaults = () => [storageClass('nondefault1', { [DEFAULT_SC]: 'false' }), storageClass('nondefault2'), storageClass('nondefault3', { [DEFAULT_SC]: '' })];
const claim = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) =>
  create('PersistentVolumeClaim', { name, ...metadata }, { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec } });
const WAIT_A_SECOND = { pauseMs: 1100 };

const defaultStorageClassRows: Row[] = [
  { name: 'no default, no modification of PVCs', upstream: true, setup: noDefaults(), request: claim('dsc-1') },
  { name: 'one default, modify PVC with class=nil', upstream: true, setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), ...noDefaults()], request: claim('dsc-2') },
  { name: "one default, no modification of PVC with class=''", upstream: true, setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), ...noDefaults()], request: claim('dsc-3', { storageClassName: '' }) },
  { name: "one default, no modification of PVC with class='foo'", upstream: true, setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), ...noDefaults()], request: claim('dsc-4', { storageClassName: 'foo' }) },
  {
    name: "two defaults, no modification of PVC with class=''",
    upstream: true,
    setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), storageClass('default2', { [DEFAULT_SC]: 'true' }), ...noDefaults()],
    request: claim('dsc-5', { storageClassName: '' }),
  },
  {
    name: "two defaults, no modification of PVC with class='foo'",
    upstream: true,
    setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), storageClass('default2', { [DEFAULT_SC]: 'true' }), ...noDefaults()],
    request: claim('dsc-6', { storageClassName: 'foo' }),
  },
  {
    // Created in one request burst: the same second, as upstream's equal timestamps (a later second would still pick the newer).
    name: 'two defaults with same creation time, choose the one with smaller name',
    upstream: true,
    setup: [storageClass('default2', { [DEFAULT_SC]: 'true' }), storageClass('default1', { [DEFAULT_SC]: 'true' })],
    request: claim('dsc-7'),
  },
  {
    name: 'two defaults, choose the one with newer creation time',
    upstream: true,
    setup: [storageClass('default1', { [DEFAULT_SC]: 'true' }), WAIT_A_SECOND, storageClass('default2', { [DEFAULT_SC]: 'true' })],
    request: claim('dsc-8'),
  },
  {
    name: 'the beta default annotation counts; a claim with the beta class annotation is left alone',
    upstream: false,
    setup: [storageClass('default-beta', { 'storageclass.beta.kubernetes.io/is-default-class': 'true' })],
    request: claim('dsc-9', {}, { annotations: { 'volume.beta.kubernetes.io/storage-class': 'slow' } }),
  },
  { name: 'the beta default annotation counts', upstream: false, setup: [storageClass('default-beta', { 'storageclass.beta.kubernetes.io/is-default-class': 'true' })], request: claim('dsc-10') },
].map((row) => ({ plugin: 'DefaultStorageClass', ...row }));

// DefaultIngressClass ----------------------------------------------------------------------------
const DEFAULT_IC = 'ingressclass.kubernetes.io/is-default-class';
const ingressClass = (name: string, annotations?: Record<string, string>) => create('IngressClass', { name, ...(annotations ? { annotations } : {}) }, { spec: { controller: 'example.com/ingress' } });
const ingress = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) =>
  create('Ingress', { name, ...metadata }, { spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } }, ...spec } });
const icNoDefaults = () => [ingressClass('ic-nondefault1', { [DEFAULT_IC]: 'false' }), ingressClass('ic-nondefault2')];

const defaultIngressClassRows: Row[] = [
  { name: 'no default, no modification of Ingress', upstream: true, setup: icNoDefaults(), request: ingress('dic-1') },
  { name: 'one default, modify Ingress with class=nil', upstream: true, setup: [ingressClass('ic-default1', { [DEFAULT_IC]: 'true' }), ...icNoDefaults()], request: ingress('dic-2') },
  { name: "one default, no modification of Ingress with class field=''", upstream: true, setup: [ingressClass('ic-default1', { [DEFAULT_IC]: 'true' })], request: ingress('dic-3', { ingressClassName: '' }) },
  { name: "one default, no modification of Ingress with class field='foo'", upstream: true, setup: [ingressClass('ic-default1', { [DEFAULT_IC]: 'true' })], request: ingress('dic-4', { ingressClassName: 'foo' }) },
  {
    name: "one default, no modification of Ingress with class annotation='foo'",
    upstream: true,
    setup: [ingressClass('ic-default1', { [DEFAULT_IC]: 'true' })],
    request: ingress('dic-5', {}, { annotations: { 'kubernetes.io/ingress.class': 'foo' } }),
  },
  {
    name: 'two defaults with the same creation time, choose the one with the lower name',
    upstream: true,
    setup: [ingressClass('ic-default2', { [DEFAULT_IC]: 'true' }), ingressClass('ic-default1', { [DEFAULT_IC]: 'true' })],
    request: ingress('dic-6'),
  },
  {
    name: "two defaults, no modification with Ingress with class field=''",
    upstream: true,
    setup: [ingressClass('ic-default1', { [DEFAULT_IC]: 'true' }), ingressClass('ic-default2', { [DEFAULT_IC]: 'true' })],
    request: ingress('dic-7', { ingressClassName: '' }),
  },
  {
    name: 'two defaults, choose the one with the newer creation time',
    upstream: true,
    setup: [ingressClass('ic-default2', { [DEFAULT_IC]: 'true' }), WAIT_A_SECOND, ingressClass('ic-default1', { [DEFAULT_IC]: 'true' })],
    request: ingress('dic-8'),
  },
].map((row) => ({ plugin: 'DefaultIngressClass', ...row }));

// PersistentVolumeClaimResize --------------------------------------------------------------------
const gold = () => storageClass('gold', undefined, { allowVolumeExpansion: true });
const silver = () => storageClass('silver', undefined, { allowVolumeExpansion: false });
const bound = (name: string) => patch('PersistentVolumeClaim', name, { status: { phase: 'Bound', capacity: { storage: '1Gi' } } }, 'status');
const grow = (name: string, storage = '2Gi') => patch('PersistentVolumeClaim', name, { spec: { resources: { requests: { storage } } } });

const resizeRows: Row[] = [
  { name: 'pvc-resize, update, no error', upstream: true, setup: [gold(), silver(), claim('rsz-1', { storageClassName: 'gold', volumeName: 'volume1' }), bound('rsz-1')], request: grow('rsz-1') },
  { name: 'pvc-resize, update, dynamically provisioned error (no class)', upstream: true, setup: [gold(), silver(), claim('rsz-2', { storageClassName: '', volumeName: 'volume3' }), bound('rsz-2')], request: grow('rsz-2') },
  { name: 'pvc-resize, update, dynamically provisioned error (silver)', upstream: true, setup: [gold(), silver(), claim('rsz-3', { storageClassName: 'silver', volumeName: 'volume4' }), bound('rsz-3')], request: grow('rsz-3') },
  { name: 'PVC update with no change in size', upstream: true, setup: [gold(), silver(), claim('rsz-4', { storageClassName: 'silver' })], request: grow('rsz-4', '1Gi') },
  { name: 'expand pvc in pending state', upstream: true, setup: [gold(), silver(), claim('rsz-5', { storageClassName: 'silver' })], request: grow('rsz-5') },
  { name: 'a class that does not exist', upstream: false, setup: [claim('rsz-6', { storageClassName: 'bronze', volumeName: 'volume6' }), bound('rsz-6')], request: grow('rsz-6') },
  { name: 'shrinking a bound claim is left to validation', upstream: false, setup: [silver(), claim('rsz-7', { storageClassName: 'silver', volumeName: 'volume7' }), bound('rsz-7')], request: grow('rsz-7', '500Mi') },
].map((row) => ({ plugin: 'PersistentVolumeClaimResize', ...row }));

// StorageObjectInUseProtection -------------------------------------------------------------------
const pv = (name: string, metadata: Record<string, any> = {}) =>
  create('PersistentVolume', { name, ...metadata }, { spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } });
const vac = (name: string, metadata: Record<string, any> = {}) => create('VolumeAttributesClass', { name, ...metadata }, { driverName: 'example.com/csi', parameters: { iops: '100' } });

const protectionRows: Row[] = [
  { name: 'create -> add finalizer (PVC)', upstream: true, setup: [], request: claim('soiup-1', { storageClassName: '' }) },
  { name: 'finalizer already exists -> no new finalizer (PVC)', upstream: true, setup: [], request: claim('soiup-2', { storageClassName: '' }, { finalizers: ['kubernetes.io/pvc-protection'] }) },
  { name: 'create -> add finalizer (PV)', upstream: true, setup: [], request: pv('soiup-pv-3') },
  { name: 'finalizer already exists -> no new finalizer (PV)', upstream: true, setup: [], request: pv('soiup-pv-4', { finalizers: ['kubernetes.io/pv-protection'] }) },
  { name: 'create -> add finalizer (VAC)', upstream: true, setup: [], request: vac('soiup-vac-5') },
  { name: 'finalizer already exists -> no new finalizer (VAC)', upstream: true, setup: [], request: vac('soiup-vac-6', { finalizers: ['kubernetes.io/vac-protection'] }) },
  { name: 'another finalizer is kept, ours added after it', upstream: false, setup: [], request: claim('soiup-7', { storageClassName: '' }, { finalizers: ['example.com/keep'] }) },
].map((row) => ({ plugin: 'StorageObjectInUseProtection', ...row }));

// LimitPodHardAntiAffinityTopology ---------------------------------------------------------------
const term = (topologyKey: string) => ({ labelSelector: { matchExpressions: [{ key: 'security', operator: 'In', values: ['S2'] }] }, topologyKey });
const antiAffinity = (podAntiAffinity: Record<string, any>) => ({ affinity: { podAntiAffinity } });
const preferred = (topologyKey: string) => [{ weight: 10, podAffinityTerm: term(topologyKey) }];

const antiAffinityRows: Row[] = [
  { name: 'no affinity', upstream: true, setup: [], request: pod('aa-1') },
  { name: 'preferred anti-affinity with topologyKey az', upstream: true, setup: [], request: pod('aa-2', antiAffinity({ preferredDuringSchedulingIgnoredDuringExecution: preferred('az') })) },
  {
    name: 'preferred az and required hostname',
    upstream: true,
    setup: [],
    request: pod('aa-3', antiAffinity({ preferredDuringSchedulingIgnoredDuringExecution: preferred('az'), requiredDuringSchedulingIgnoredDuringExecution: [term('kubernetes.io/hostname')] })),
  },
  { name: 'required hostname', upstream: true, setup: [], request: pod('aa-4', antiAffinity({ requiredDuringSchedulingIgnoredDuringExecution: [term('kubernetes.io/hostname')] })) },
  { name: "required ' zone ' (also invalid)", upstream: true, setup: [], request: pod('aa-5', antiAffinity({ requiredDuringSchedulingIgnoredDuringExecution: [term(' zone ')] })) },
  { name: 'required zone', upstream: false, setup: [], request: pod('aa-6', antiAffinity({ requiredDuringSchedulingIgnoredDuringExecution: [term('topology.kubernetes.io/zone')] })) },
  {
    name: 'required hostname then zone',
    upstream: true,
    setup: [],
    request: pod('aa-7', antiAffinity({ requiredDuringSchedulingIgnoredDuringExecution: [term('kubernetes.io/hostname'), term('topology.kubernetes.io/zone')] })),
  },
  { name: 'pod affinity (not anti) with zone', upstream: false, setup: [], request: pod('aa-8', { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term('topology.kubernetes.io/zone')] } } }) },
].map((row) => ({ plugin: 'LimitPodHardAntiAffinityTopology', ...row }));

// ExtendedResourceToleration ---------------------------------------------------------------------
const requesting = (requests: Record<string, string>) => ({ name: 'container', image: IMAGE, resources: { requests, limits: requests } });
const ertRows: Row[] = [
  { name: 'empty pod without any extended resources, expect no change in tolerations', upstream: true, setup: [], request: pod('ert-1') },
  { name: 'pod with container without any extended resources, expect no change in tolerations', upstream: true, setup: [], request: pod('ert-2', { containers: [requesting({ cpu: '1' })] }) },
  {
    name: 'pod with init container without any extended resources, expect no change in tolerations',
    upstream: true,
    setup: [],
    request: pod('ert-3', { initContainers: [{ ...requesting({ memory: '1Gi' }), name: 'init' }] }),
  },
  { name: 'pod with container with extended resource, expect toleration to be added', upstream: true, setup: [], request: pod('ert-4', { containers: [requesting({ 'example.com/device-ek': '1' })] }) },
  {
    name: 'pod with init container with extended resource, expect toleration to be added',
    upstream: true,
    setup: [],
    request: pod('ert-5', { initContainers: [{ ...requesting({ 'example.com/device-ek': '1' }), name: 'init' }] }),
  },
  {
    name: 'pod with existing tolerations and container with extended resource, expect existing tolerations to be preserved and new toleration to be added',
    upstream: true,
    setup: [],
    request: pod('ert-6', { containers: [requesting({ 'example.com/device-ek': '1' })], tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' }] }),
  },
  {
    name: 'pod with multiple extended resources, expect multiple tolerations to be added',
    upstream: true,
    setup: [],
    request: pod('ert-7', {
      containers: [requesting({ 'example.com/device-ek': '1', 'example.com/device-do': '1' })],
      initContainers: [{ ...requesting({ 'example.com/device-ek': '1', 'example.com/device-do': '1' }), name: 'init' }],
    }),
  },
  {
    name: 'pod with container requesting extended resource and existing correct toleration, expect no change in tolerations',
    upstream: true,
    setup: [],
    request: pod('ert-8', { containers: [requesting({ 'example.com/device-ek': '1' })], tolerations: [{ key: 'example.com/device-ek', operator: 'Exists', effect: 'NoSchedule' }] }),
  },
  {
    name: 'pod with container requesting extended resource and existing toleration with the same key but different effect and value, expect existing tolerations to be preserved and new toleration to be added',
    upstream: true,
    setup: [],
    request: pod('ert-9', { containers: [requesting({ 'example.com/device-ek': '1' })], tolerations: [{ key: 'example.com/device-ek', operator: 'Equal', value: 'foo', effect: 'NoExecute' }] }),
  },
  {
    name: 'pod with wildcard toleration and container requesting extended resource, expect existing tolerations to be preserved and new toleration to be added',
    upstream: true,
    setup: [],
    request: pod('ert-10', { containers: [requesting({ 'example.com/device-ek': '1' })], tolerations: [{ operator: 'Exists' }] }),
  },
  {
    name: 'a matching toleration with tolerationSeconds is replaced by the plain one',
    upstream: false,
    setup: [],
    request: pod('ert-11', { containers: [requesting({ 'example.com/device-ek': '1' })], tolerations: [{ key: 'example.com/device-ek', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 }] }),
  },
].map((row) => ({ plugin: 'ExtendedResourceToleration', ...row }));

// Priority -------------------------------------------------------------------------------------
const priorityClass = (name: string, value: number, globalDefault = false, rest: Record<string, any> = {}) => create('PriorityClass', { name }, { value, globalDefault, ...rest });
const defaultClass1 = () => priorityClass('default1', 1000, true);
const defaultClass2 = () => priorityClass('default2', 2000, true);
const nondefaultClass1 = () => priorityClass('nondefault1', 2000);
const neverPreempt = () => priorityClass('nopreemptionpolicy', 2000, false, { preemptionPolicy: 'Never' });

const priorityRows: Row[] = [
  { name: 'create operator with default class', upstream: true, setup: [], request: defaultClass1() },
  { name: 'create operator with one existing default class', upstream: true, setup: [defaultClass1()], request: defaultClass2() },
  {
    name: 'create operator with system name and value allowed by admission controller',
    upstream: true,
    setup: [],
    request: priorityClass('system-test', 1000, false, { description: 'Name has system critical prefix' }),
  },
  { name: 'update operator with default class', upstream: true, setup: [defaultClass1()], request: patch('PriorityClass', 'default1', { description: 'updated' }) },
  { name: 'update operator with one existing default class', upstream: true, setup: [defaultClass1(), nondefaultClass1()], request: patch('PriorityClass', 'nondefault1', { globalDefault: true }) },
  { name: 'Pod with priority class', upstream: true, setup: [defaultClass1(), nondefaultClass1()], request: pod('prio-1', { priorityClassName: 'default1' }) },
  { name: 'Pod without priority class', upstream: true, setup: [defaultClass1(), nondefaultClass1()], request: pod('prio-2') },
  { name: 'pod without priority class and no existing priority class', upstream: true, setup: [], request: pod('prio-3') },
  { name: 'pod without priority class and no default class', upstream: true, setup: [nondefaultClass1()], request: pod('prio-4') },
  { name: 'pod with a system priority class', upstream: true, setup: [], request: pod('prio-5', { priorityClassName: 'system-cluster-critical' }) },
  { name: 'Pod with non-existing priority class', upstream: true, setup: [], request: pod('prio-6', { priorityClassName: 'foo' }) },
  { name: 'pod with integer priority', upstream: true, setup: [], request: pod('prio-7', { priority: 1000 }) },
  { name: 'mirror pod with system priority class', upstream: true, setup: [], request: pod('prio-8', { priorityClassName: 'system-node-critical' }, { annotations: { 'kubernetes.io/config.mirror': '' } }) },
  { name: 'mirror pod with integer priority', upstream: true, setup: [], request: pod('prio-9', { priority: 1000 }, { annotations: { 'kubernetes.io/config.mirror': '' } }) },
  { name: 'pod with system critical priority in non-system namespace', upstream: true, setup: [], request: pod('prio-10', { priorityClassName: 'system-cluster-critical' }) },
  { name: 'pod with priority that matches computed priority', upstream: true, setup: [nondefaultClass1()], request: pod('prio-11', { priorityClassName: 'nondefault1', priority: 2000 }) },
  { name: 'pod with priority that matches default priority', upstream: true, setup: [defaultClass2()], request: pod('prio-12', { priority: 2000 }) },
  { name: 'pod with priority that matches resolved priority', upstream: true, setup: [nondefaultClass1()], request: pod('prio-13', { priorityClassName: 'nondefault1', priority: 2000 }) },
  { name: 'pod with nil preemtpion policy', upstream: true, setup: [priorityClass('nil-pp', 2000)], request: pod('prio-14', { priorityClassName: 'nil-pp' }) },
  { name: 'pod with preemtpion policy that matches resolved preemtpion policy', upstream: true, setup: [neverPreempt()], request: pod('prio-15', { priorityClassName: 'nopreemptionpolicy', preemptionPolicy: 'Never' }) },
  {
    name: "pod with preemtpion policy that does't matches resolved preemtpion policy",
    upstream: true,
    setup: [neverPreempt()],
    request: pod('prio-16', { priorityClassName: 'nopreemptionpolicy', preemptionPolicy: 'PreemptLowerPriority' }),
  },
  { name: 'pod with priority that differs from the computed one', upstream: false, setup: [nondefaultClass1()], request: pod('prio-18', { priorityClassName: 'nondefault1', priority: 5 }) },
  { name: 'an update keeps the priority the create set', upstream: false, setup: [nondefaultClass1(), pod('prio-19', { priorityClassName: 'nondefault1' })], request: patch('Pod', 'prio-19', { metadata: { labels: { touched: 'yes' } } }) },
].map((row) => ({ plugin: 'Priority', ...row }));

// PodTolerationRestriction ---------------------------------------------------------------------
// The reference's cluster default (test/support/reference.ts) is upstream's testKey=testValue:NoSchedule.
const testKey = (value = 'testValue') => ({ key: 'testKey', operator: 'Equal', value, effect: 'NoSchedule' });
const namespaceWith = (name: string, defaults?: unknown[], whitelist?: unknown[]) =>
  create('Namespace', {
    name,
    annotations: {
      ...(defaults ? { 'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify(defaults) } : {}),
      ...(whitelist ? { 'scheduler.alpha.kubernetes.io/tolerationsWhitelist': JSON.stringify(whitelist) } : {}),
    },
  });
const bestEffort = (name: string, namespace: string, tolerations: unknown[]) => pod(name, { tolerations }, { namespace });
const withCpu = (name: string, namespace: string, request: string, limit: string, tolerations: unknown[] = []) =>
  pod(name, { containers: [{ name: 'test', image: IMAGE, resources: { requests: { cpu: request }, limits: { cpu: limit } } }], tolerations }, { namespace });

const WHITELIST_CODE = {
  reason: 'the in-tree plugin answers a whitelist conflict with a plain error, 500 (Internal Server Error); the handler refuses it with 403 (Forbidden), in the same words',
  reference: 500,
  portcullis: 403,
};

const ptrRows: Row[] = [
  { name: 'default cluster tolerations with empty pod tolerations and nil namespace tolerations', upstream: true, setup: [namespaceWith('ptr-1')], request: bestEffort('ptr-1', 'ptr-1', []) },
  { name: 'default cluster tolerations with pod tolerations specified', upstream: true, setup: [namespaceWith('ptr-2', [])], request: bestEffort('ptr-2', 'ptr-2', [testKey()]) },
  { name: 'namespace tolerations', upstream: true, setup: [namespaceWith('ptr-3', [testKey()])], request: bestEffort('ptr-3', 'ptr-3', [testKey()]) },
  { name: 'no pod tolerations', upstream: true, setup: [namespaceWith('ptr-4', [testKey()])], request: bestEffort('ptr-4', 'ptr-4', []) },
  { name: 'duplicate key pod and namespace tolerations', upstream: true, setup: [namespaceWith('ptr-5', [testKey()])], request: bestEffort('ptr-5', 'ptr-5', [testKey('testValue1')]) },
  {
    name: 'conflicting pod and default cluster tolerations but overridden by empty namespace tolerations',
    upstream: true,
    setup: [namespaceWith('ptr-6', [])],
    request: bestEffort('ptr-6', 'ptr-6', [testKey('testValue1')]),
  },
  { name: 'merged pod tolerations satisfy whitelist', upstream: true, setup: [namespaceWith('ptr-7', [testKey()], [testKey()])], request: bestEffort('ptr-7', 'ptr-7', []) },
  { name: 'Override default cluster toleration by empty namespace level toleration', upstream: true, setup: [namespaceWith('ptr-8', [])], request: bestEffort('ptr-8', 'ptr-8', []) },
  {
    name: 'merged pod tolerations conflict with the whitelist',
    upstream: true,
    setup: [namespaceWith('ptr-10', [testKey()], [testKey('testValue1')])],
    request: bestEffort('ptr-10', 'ptr-10', []),
    knownDifference: WHITELIST_CODE,
  },
  { name: 'added memoryPressure/DiskPressure for Burstable pod', upstream: true, setup: [namespaceWith('ptr-11', [testKey()], [])], request: withCpu('ptr-11', 'ptr-11', '500m', '1000m') },
  {
    name: 'Pod with duplicate key tolerations should not be modified',
    upstream: true,
    setup: [namespaceWith('ptr-12', [], [])],
    request: bestEffort('ptr-12', 'ptr-12', [testKey(), testKey('testValue1')]),
  },
  { name: 'added memoryPressure/DiskPressure for Guaranteed pod', upstream: true, setup: [namespaceWith('ptr-13', [testKey()], [])], request: withCpu('ptr-13', 'ptr-13', '1000m', '1000m') },
  {
    name: 'a toleration the namespace whitelist does not cover',
    upstream: false,
    setup: [namespaceWith('ptr-14', [], [{ key: 'allowed', operator: 'Exists' }])],
    request: bestEffort('ptr-14', 'ptr-14', [{ key: 'other', operator: 'Exists', effect: 'NoSchedule' }]),
    knownDifference: WHITELIST_CODE,
  },
  {
    name: 'an Exists whitelist entry covers the memory-pressure toleration',
    upstream: false,
    setup: [namespaceWith('ptr-15', [], [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' }])],
    request: withCpu('ptr-15', 'ptr-15', '100m', '200m'),
  },
  {
    name: 'an update adds only the memory-pressure toleration (not the namespace defaults)',
    upstream: false,
    setup: [namespaceWith('ptr-16', [testKey()]), bestEffort('ptr-16', 'ptr-16', [])],
    request: patch('Pod', 'ptr-16', { metadata: { labels: { touched: 'yes' } } }, undefined, 'ptr-16'),
  },
].map((row) => ({ plugin: 'PodTolerationRestriction', ...row }));

// RuntimeClass ---------------------------------------------------------------------------------
const runtimeClassNamed = (name: string, rest: Record<string, any> = {}) => create('RuntimeClass', { name }, { handler: 'bar', ...rest });
const OVERHEAD = { cpu: '100m', memory: '10Mi' };
const runs = (name: string, runtimeClassName: string, spec: Record<string, any> = {}) => pod(name, { runtimeClassName, ...spec });
const guaranteed = { containers: [{ name: 'container', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } } }] };
const fooBar = { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' };
const fizzBuzz = { key: 'fizz', operator: 'Equal', value: 'buzz', effect: 'NoSchedule' };

const runtimeClassRows: Row[] = [
  { name: 'overhead, no container requirements', upstream: true, setup: [runtimeClassNamed('rc-1', { overhead: { podFixed: OVERHEAD } })], request: runs('rtc-1', 'rc-1') },
  { name: 'overhead, guaranteed pod', upstream: true, setup: [runtimeClassNamed('rc-2', { overhead: { podFixed: OVERHEAD } })], request: runs('rtc-2', 'rc-2', guaranteed) },
  {
    name: 'overhead, pod with differing overhead already set',
    upstream: true,
    setup: [runtimeClassNamed('rc-3', { overhead: { podFixed: OVERHEAD } })],
    request: runs('rtc-3', 'rc-3', { overhead: { cpu: '200m', memory: '10Mi' } }),
  },
  { name: 'overhead, pod with same overhead already set', upstream: true, setup: [runtimeClassNamed('rc-4', { overhead: { podFixed: OVERHEAD } })], request: runs('rtc-4', 'rc-4', { overhead: OVERHEAD }) },
  { name: 'scheduling, nil scheduling', upstream: true, setup: [runtimeClassNamed('rc-5')], request: runs('rtc-5', 'rc-5', { nodeSelector: { foo: 'bar' } }) },
  { name: 'scheduling, conflict node selector', upstream: true, setup: [runtimeClassNamed('rc-6', { scheduling: { nodeSelector: { foo: 'conflict' } } })], request: runs('rtc-6', 'rc-6', { nodeSelector: { foo: 'bar' } }) },
  { name: 'scheduling, nil node selector', upstream: true, setup: [runtimeClassNamed('rc-7', { scheduling: { nodeSelector: { foo: 'bar' } } })], request: runs('rtc-7', 'rc-7') },
  {
    name: 'scheduling, node selector with the same key value',
    upstream: true,
    setup: [runtimeClassNamed('rc-8', { scheduling: { nodeSelector: { foo: 'bar' } } })],
    request: runs('rtc-8', 'rc-8', { nodeSelector: { foo: 'bar' } }),
  },
  {
    name: 'scheduling, node selector with different key value',
    upstream: true,
    setup: [runtimeClassNamed('rc-9', { scheduling: { nodeSelector: { foo: 'bar', fizz: 'buzz' } } })],
    request: runs('rtc-9', 'rc-9', { nodeSelector: { foo: 'bar' } }),
  },
  {
    name: 'scheduling, multiple tolerations',
    upstream: true,
    setup: [runtimeClassNamed('rc-10', { scheduling: { tolerations: [fooBar, fizzBuzz] } })],
    request: runs('rtc-10', 'rc-10', { nodeSelector: { foo: 'bar' }, tolerations: [fooBar] }),
  },
  { name: 'runtimeClass not found by lister nor client', upstream: true, setup: [], request: runs('rtc-11', 'rc-missing') },
  { name: 'No Overhead in RunntimeClass, Overhead set in pod', upstream: true, setup: [runtimeClassNamed('rc-12')], request: runs('rtc-12', 'rc-12', { overhead: OVERHEAD }) },
  { name: 'No RunntimeClass, Overhead set in pod', upstream: true, setup: [], request: pod('rtc-13', { overhead: OVERHEAD }) },
  { name: 'a Pod without a runtimeClassName is left alone', upstream: false, setup: [runtimeClassNamed('rc-14', { overhead: { podFixed: OVERHEAD } })], request: pod('rtc-14') },
].map((row) => ({ plugin: 'RuntimeClass', ...row }));

// PodTopologyLabels --------------------------------------------------------------------------------
// Upstream's cases, each as the scheduler binds (a Binding with its own labels, the Pod read back)
// and as a Pod created with spec.nodeName.
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const topologyCases: { name: string; nodeLabels: Record<string, string>; existing?: Record<string, string>; shows?: string }[] = [
  {
    name: 'copies topology.kubernetes.io/zone and region labels to binding labels',
    shows: '"topology.kubernetes.io/zone":"zone1"',
    nodeLabels: { [ZONE]: 'zone1', [REGION]: 'region1', 'topology.kubernetes.io/arbitrary': 'something', 'non-topology.kubernetes.io/label': 'something' },
  },
  { name: 'does not copy arbitrary topology labels', nodeLabels: { [ZONE]: 'zone1', 'topology.kubernetes.io/arbitrary': 'something' } },
  { name: 'does not copy topology labels that use a subdomain', nodeLabels: { [REGION]: 'region1', 'sub.topology.kubernetes.io/zone': 'value' } },
  { name: "does not copy label keys that don't contain a / character", nodeLabels: { 'topology.kubernetes.io': 'value' }, existing: {} },
  { name: 'overwrites existing topology labels', nodeLabels: { [ZONE]: 'newValue' }, existing: { [ZONE]: 'oldValue' }, shows: '"topology.kubernetes.io/zone":"newValue"' },
];
const node = (name: string, labels: Record<string, string>) => create('Node', { name, labels });
const topologyRows: Row[] = [
  ...topologyCases.flatMap((c, i): Omit<Row, 'plugin'>[] => [
    {
      name: `${c.name} (a Binding)`,
      upstream: true,
      setup: [node(`ptl-node-b${i}`, c.nodeLabels), pod(`ptl-b${i}`)],
      request: {
        method: 'POST',
        path: `${objectPath('Pod', `ptl-b${i}`)}/binding`,
        body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: `ptl-b${i}`, labels: { ...LABEL, ...c.existing } }, target: { apiVersion: 'v1', kind: 'Node', name: `ptl-node-b${i}` } },
      },
      readBack: objectPath('Pod', `ptl-b${i}`),
      ...(c.shows ? { shows: c.shows } : {}),
    },
    {
      name: `${c.name} (a Pod with nodeName)`,
      upstream: true,
      setup: [node(`ptl-node-p${i}`, c.nodeLabels)],
      request: pod(`ptl-p${i}`, { nodeName: `ptl-node-p${i}` }, { labels: c.existing }),
      ...(c.shows ? { shows: c.shows } : {}),
    },
  ]),
  { name: 'a Pod bound to a Node that does not exist gets nothing', upstream: false, setup: [], request: pod('ptl-missing', { nodeName: 'ptl-no-such-node' }) },
  { name: 'a Pod not yet scheduled gets nothing', upstream: false, setup: [node('ptl-node-u', { [ZONE]: 'zone1' })], request: pod('ptl-unscheduled') },
].map((row) => ({ ...row, plugin: 'PodTopologyLabels' }));

// PodResizeValidator --------------------------------------------------------------------------------
// Upstream's cases: a Pod bound to a Node (allocatable cpu 4, memory 8Gi), resized in place.
const resizeNode = (name: string, os = 'linux') =>
  create('Node', { name, labels: { 'kubernetes.io/os': os } }, { status: { capacity: { cpu: '4', memory: '8Gi', pods: '110' }, allocatable: { cpu: '4', memory: '8Gi', pods: '110' } } });
const boundPod = (name: string, nodeName: string | undefined, extra: Record<string, any> = {}) =>
  pod(name, { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'container', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } }], ...extra });
const resize = (name: string, requests: Record<string, string>): Request => ({
  method: 'PATCH',
  path: objectPath('Pod', name, 'resize'),
  body: { spec: { containers: [{ name: 'container', resources: { requests } }] } },
  contentType: 'application/strategic-merge-patch+json',
});
const podResizeRows: Row[] = [
  { name: 'Successful cpu resize on Linux node', upstream: true, setup: [resizeNode('prv-linux-1'), boundPod('prv-1', 'prv-linux-1')], request: resize('prv-1', { cpu: '2' }) },
  { name: 'Successful memory resize on Linux node', upstream: true, setup: [resizeNode('prv-linux-2'), boundPod('prv-2', 'prv-linux-2')], request: resize('prv-2', { memory: '2Gi' }) },
  {
    name: 'Skip validation if not resize subresource',
    upstream: true,
    setup: [resizeNode('prv-linux-3'), boundPod('prv-3', 'prv-linux-3')],
    request: patch('Pod', 'prv-3', { metadata: { labels: { changed: 'yes' } } }),
  },
  { name: 'Skip validation if generation is unchanged', upstream: true, setup: [resizeNode('prv-linux-4', 'windows'), boundPod('prv-4', 'prv-linux-4')], request: resize('prv-4', { cpu: '1' }) },
  { name: 'Skip validation if pod not bound to a node', upstream: true, setup: [boundPod('prv-5', undefined)], request: resize('prv-5', { cpu: '10' }) },
  { name: 'Reject resize exceeding CPU allocatable', upstream: true, setup: [resizeNode('prv-linux-6'), boundPod('prv-6', 'prv-linux-6')], request: resize('prv-6', { cpu: '10' }), shows: 'cpu, requested: 10000, allocatable: 4000' },
  { name: 'Reject resize exceeding memory allocatable', upstream: true, setup: [resizeNode('prv-linux-7'), boundPod('prv-7', 'prv-linux-7')], request: resize('prv-7', { memory: '10Gi' }) },
  { name: 'Reject resize exceeding both CPU and memory allocatable', upstream: true, setup: [resizeNode('prv-linux-8'), boundPod('prv-8', 'prv-linux-8')], request: resize('prv-8', { cpu: '10', memory: '10Gi' }) },
  { name: 'Reject resize on non-Linux node', upstream: true, setup: [resizeNode('prv-windows-9', 'windows'), boundPod('prv-9', 'prv-windows-9')], request: resize('prv-9', { cpu: '2' }) },
  { name: 'Reject if node not found', upstream: true, setup: [boundPod('prv-10', 'prv-missing-node')], request: resize('prv-10', { cpu: '2' }) },
  {
    name: 'a sidecar counts with the containers, a plain init container as its own step',
    upstream: false,
    setup: [
      resizeNode('prv-linux-11'),
      boundPod('prv-11', 'prv-linux-11', {
        initContainers: [
          { name: 'sidecar', image: IMAGE, restartPolicy: 'Always', resources: { requests: { cpu: '1500m' } } },
          { name: 'setup', image: IMAGE, resources: { requests: { cpu: '3' } } },
        ],
      }),
    ],
    request: resize('prv-11', { cpu: '2600m' }),
  },
].map((row) => ({ ...row, plugin: 'PodResizeValidator' }));

export const ROWS: Row[] = [
  ...runtimeClassRows,
  ...ptrRows,
  ...defaultStorageClassRows,
  ...defaultIngressClassRows,
  ...resizeRows,
  ...protectionRows,
  ...antiAffinityRows,
  ...ertRows,
  ...priorityRows,
  ...topologyRows,
  ...podResizeRows,
];
