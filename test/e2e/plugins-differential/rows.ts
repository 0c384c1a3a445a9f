/**
 * The rows of the plugin differential (test/e2e/plugins-differential.test.ts): for each in-tree
 * plugin a built-in handler re-creates, the cases of its upstream admission_test.go (named as
 * there; `upstream: true`) and a few of ours, each as the objects to create first (the
 * looked-up classes, an earlier state) and the one request whose answer is compared. Objects
 * carry the label that scopes the Portcullis suite's webhooks (UNSCOPED_LABEL for the rows of the
 * unscoped reference's plugins, whose suite is another); every name is unique in the table.
 */
import { certificateRequestPem } from '../../../src/certs/csr.ts';
import { EARLIER_CA } from '../../fixtures/earlier-ca.ts';

export const NS = 'plugins-diff';
export const LABEL = { 'plugins-diff': 'yes' };
/** The label of the unscoped reference's rows (`reference: 'unscoped'`): the suite standing in for those plugins selects it. */
export const UNSCOPED_LABEL = { 'plugins-diff-unscoped': 'yes' };

export interface Request {
  method: 'POST' | 'PATCH';
  path: string;
  body: Record<string, any>;
  contentType?: string;
  /** What a create makes, removed after the row. */
  made?: { kind: string; name: string; namespace?: string };
  /** The user the request is sent as (impersonation, as `kubectl --as`); the admin when unset. */
  as?: string;
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
   * A deliberate difference in the status code, documented in docs/handlers.md: the row is counted as
   * differing with this reason; it fails unless the codes are these and all else agrees.
   */
  knownDifference?: { reason: string; reference: number; portcullis: number };
  /**
   * Which reference answers: the one with the scoped plugins (the default), or the unscoped one
   * (test/support/reference.ts), whose plugins act on every Pod; its rows carry UNSCOPED_LABEL.
   */
  reference?: 'unscoped';
}

const labelled = (metadata: Record<string, any>, label: Record<string, string> = LABEL) => ({ ...metadata, labels: { ...label, ...(metadata.labels ?? {}) } });

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
  LimitRange: { base: '/api/v1', plural: 'limitranges', namespaced: true },
  Service: { base: '/api/v1', plural: 'services', namespaced: true },
  CertificateSigningRequest: { base: '/apis/certificates.k8s.io/v1', plural: 'certificatesigningrequests', namespaced: false },
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
  LimitRange: 'v1',
  Service: 'v1',
  CertificateSigningRequest: 'certificates.k8s.io/v1',
};

/** A create of `kind` (in `metadata.namespace`, else plugins-diff, when namespaced), labelled. */
export function create(kind: string, metadata: Record<string, any>, rest: Record<string, any> = {}, label: Record<string, string> = LABEL): Request {
  const namespace = PATHS[kind]?.namespaced ? (metadata.namespace ?? NS) : undefined;
  return {
    method: 'POST',
    path: collectionPath(kind, namespace),
    body: { apiVersion: API_VERSIONS[kind], kind, metadata: labelled(metadata, label), ...rest },
    made: { kind, name: metadata.name, ...(namespace ? { namespace } : {}) },
  };
}

/** A JSON merge patch (an UPDATE to admission) of an object, or of its subresource. */
export function patch(kind: string, name: string, body: Record<string, any>, subresource?: string, namespace = NS): Request {
  return { method: 'PATCH', path: objectPath(kind, name, subresource, namespace), body, contentType: 'application/merge-patch+json' };
}

const IMAGE = 'registry.k8s.io/pause:3.10';
const pod = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) => create('Pod', { name, ...metadata }, { spec: { containers: [{ name: 'container', image: IMAGE }], ...spec } });

// DefaultStorageClass ----------------------------------------------------------------------------
const DEFAULT_SC = 'storageclass.kubernetes.io/is-default-class';
const storageClass = (name: string, annotations?: Record<string, string>, rest: Record<string, any> = {}) => create('StorageClass', { name, ...(annotations ? { annotations } : {}) }, { provisioner: name, ...rest });
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
const ingress = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) => create('Ingress', { name, ...metadata }, { spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } }, ...spec } });
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
const pv = (name: string, metadata: Record<string, any> = {}) => create('PersistentVolume', { name, ...metadata }, { spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } });
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
const resizeNode = (name: string, os = 'linux') => create('Node', { name, labels: { 'kubernetes.io/os': os } }, { status: { capacity: { cpu: '4', memory: '8Gi', pods: '110' }, allocatable: { cpu: '4', memory: '8Gi', pods: '110' } } });
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

// The unscoped reference's plugins ---------------------------------------------------------------
// AlwaysPullImages, DefaultTolerationSeconds, PodNodeSelector, LimitRanger and
// DenyServiceExternalIPs act on every Pod (or Service) there: each of these rows meets all five,
// on both sides. Every Pod there gets the cluster default node selector (infra=false,
// REFERENCE_NODE_SELECTORS) unless its namespace says otherwise, the two NoExecute tolerations,
// and imagePullPolicy Always; a row shows what its own plugin does on top.
const unscoped = (kind: string, metadata: Record<string, any>, rest: Record<string, any> = {}) => create(kind, metadata, rest, UNSCOPED_LABEL);
const upod = (name: string, spec: Record<string, any> = {}, metadata: Record<string, any> = {}) => unscoped('Pod', { name, ...metadata }, { spec: { containers: [{ name: 'container', image: IMAGE }], ...spec } });
const unscopedNamespace = (name: string, annotations: Record<string, string> = {}) => unscoped('Namespace', { name, annotations });

// AlwaysPullImages: upstream's TestAdmission, TestOtherResources and TestUpdatePod. TestValidate
// (the validating side refusing a policy other than Always) cannot be reached through an API
// server: the plugin's own mutation runs before its validation, and no later mutation is in play.
const pullPolicies = (prefix: string) => [undefined, 'Never', 'IfNotPresent', 'Always'].map((imagePullPolicy, i) => ({ name: `${prefix}${i + 1}`, image: 'image', ...(imagePullPolicy ? { imagePullPolicy } : {}) }));
const alwaysPullImagesRows: Row[] = (
  [
    {
      name: "every create request for a pod sets every container's image pull policy to Always",
      upstream: true,
      setup: [],
      request: upod('api-1', { initContainers: pullPolicies('init'), containers: pullPolicies('ctr') }),
      shows: '"imagePullPolicy":"Always"',
    },
    {
      // Upstream's case is the exec subresource; ephemeralcontainers is the one that carries containers
      // (with an image the Pod does not have: an UPDATE bringing no new image is skipped anyway).
      name: 'pod subresource',
      upstream: true,
      setup: [upod('api-2')],
      request: {
        method: 'PATCH',
        path: objectPath('Pod', 'api-2', 'ephemeralcontainers'),
        body: { spec: { ephemeralContainers: [{ name: 'debugger', image: 'registry.k8s.io/pause:3.9', imagePullPolicy: 'Never' }] } },
        contentType: 'application/strategic-merge-patch+json',
      },
      shows: '"imagePullPolicy":"Never"',
    },
    { name: 'update pod annotations (no new image)', upstream: true, setup: [upod('api-3')], request: patch('Pod', 'api-3', { metadata: { annotations: { test: 'test' } } }) },
    {
      name: 'update image',
      upstream: true,
      setup: [upod('api-4')],
      request: {
        method: 'PATCH',
        path: objectPath('Pod', 'api-4'),
        body: { spec: { containers: [{ name: 'container', image: 'registry.k8s.io/pause:3.9' }] } },
        contentType: 'application/strategic-merge-patch+json',
      },
    },
  ] as Omit<Row, 'plugin'>[]
).map((row) => ({ ...row, plugin: 'AlwaysPullImages', reference: 'unscoped' as const }));

// DefaultTolerationSeconds: upstream's TestForgivenessAdmission. The API server refuses
// tolerationSeconds on a toleration whose effect is not NoExecute, so where upstream's cases set
// it there, the rows leave it out (the plugin does not read it).
const NOT_READY = 'node.kubernetes.io/not-ready';
const UNREACHABLE = 'node.kubernetes.io/unreachable';
const noExecute = (key: string, seconds?: number) => ({ key, operator: 'Exists', effect: 'NoExecute', ...(seconds === undefined ? {} : { tolerationSeconds: seconds }) });
const defaultTolerationSecondsRows: Row[] = [
  { name: 'pod has no tolerations, expect add tolerations for `notread:NoExecute` and `unreachable:NoExecute`', upstream: true, setup: [], request: upod('dts-1'), shows: '"tolerationSeconds":300' },
  {
    name: 'pod has tolerations, but none is for taint `notread:NoExecute` or `unreachable:NoExecute`, expect add tolerations for `notread:NoExecute` and `unreachable:NoExecute`',
    upstream: true,
    setup: [],
    request: upod('dts-2', { tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' }] }),
  },
  { name: 'pod specified a toleration for taint `notReady:NoExecute`, expect add toleration for `unreachable:NoExecute`', upstream: true, setup: [], request: upod('dts-3', { tolerations: [noExecute(NOT_READY, 700)] }) },
  { name: 'pod specified a toleration for taint `unreachable:NoExecute`, expect add toleration for `notReady:NoExecute`', upstream: true, setup: [], request: upod('dts-4', { tolerations: [noExecute(UNREACHABLE, 700)] }) },
  {
    name: 'pod specified tolerations for both `notread:NoExecute` and `unreachable:NoExecute`, expect no change',
    upstream: true,
    setup: [],
    request: upod('dts-5', { tolerations: [noExecute(NOT_READY, 700), noExecute(UNREACHABLE, 700)] }),
  },
  { name: 'pod specified toleration for taint `unreachable`, expect add toleration for `notReady:NoExecute`', upstream: true, setup: [], request: upod('dts-6', { tolerations: [{ key: UNREACHABLE, operator: 'Exists' }] }) },
  { name: 'pod has wildcard toleration for all kind of taints, expect no change', upstream: true, setup: [], request: upod('dts-7', { tolerations: [{ operator: 'Exists' }] }) },
  { name: 'a toleration of the key for another effect does not count', upstream: false, setup: [], request: upod('dts-8', { tolerations: [{ key: NOT_READY, operator: 'Exists', effect: 'NoSchedule' }] }) },
  { name: 'an update adds nothing the create did not', upstream: false, setup: [upod('dts-9')], request: patch('Pod', 'dts-9', { metadata: { labels: { touched: 'yes' } } }) },
].map((row) => ({ ...row, plugin: 'DefaultTolerationSeconds', reference: 'unscoped' as const }));

// PodNodeSelector: upstream's TestPodAdmission, each case's namespace its own (pns-N), the cluster
// default and the whitelists of pns-9 and pns-10 those of REFERENCE_NODE_SELECTORS. Upstream's
// "No node selectors" needs another cluster default (none), which one reference cannot have.
const NODE_SELECTOR = 'scheduler.alpha.kubernetes.io/node-selector';
const pnsCase = (n: number, namespaceSelector: string | undefined, nodeSelector: Record<string, string>) => ({
  setup: [unscopedNamespace(`pns-${n}`, namespaceSelector === undefined ? {} : { [NODE_SELECTOR]: namespaceSelector })],
  request: upod(`pns-${n}`, Object.keys(nodeSelector).length ? { nodeSelector } : {}, { namespace: `pns-${n}` }),
});
const PLAIN_ERROR_CODE = {
  reason: "the in-tree plugin returns the selector parser's error as it is, which the API server sends as 500 (Internal Server Error); the handler refuses with 403 (Forbidden), in the same words",
  reference: 500,
  portcullis: 403,
};
const podNodeSelectorRows: Row[] = [
  { name: 'Default node selector and no conflicts', upstream: true, ...pnsCase(2, undefined, {}), shows: '"infra":"false"' },
  { name: 'TestNamespace node selector with whitespaces and no conflicts', upstream: true, ...pnsCase(3, ' infra = false ', {}) },
  { name: 'Default and namespace node selector, no conflicts', upstream: true, ...pnsCase(4, 'infra=true', {}), shows: '"infra":"true"' },
  { name: 'Empty namespace node selector and no conflicts', upstream: true, ...pnsCase(5, '', {}) },
  { name: 'TestNamespace and pod node selector, no conflicts', upstream: true, ...pnsCase(6, 'infra=true', { env: 'test' }) },
  { name: 'Conflicting pod and namespace node selector, one label', upstream: true, ...pnsCase(7, 'infra=true', { infra: 'false' }) },
  { name: 'Conflicting pod and namespace node selector, multiple labels', upstream: true, ...pnsCase(8, 'infra=false, env = test', { env: 'dev', color: 'blue' }) },
  { name: 'Merged pod node selectors satisfy the whitelist', upstream: true, ...pnsCase(9, 'infra=false, env = dev', { env: 'dev', color: 'blue' }) },
  { name: 'Merged pod node selectors conflict with the whitelist', upstream: true, ...pnsCase(10, 'infra=false, env = dev', { env: 'dev', color: 'blue' }) },
  { name: 'a pod selector conflicting with the cluster default', upstream: false, ...pnsCase(11, undefined, { infra: 'true' }) },
  { name: 'a namespace annotation that is not a selector', upstream: false, ...pnsCase(13, 'env!=test', {}), knownDifference: PLAIN_ERROR_CODE },
  { name: 'a namespace annotation item without =', upstream: false, ...pnsCase(14, 'infra', {}), knownDifference: PLAIN_ERROR_CODE },
  {
    name: 'an update is not looked at',
    upstream: false,
    setup: [unscopedNamespace('pns-12', { [NODE_SELECTOR]: 'infra=true' }), upod('pns-12', {}, { namespace: 'pns-12' })],
    request: patch('Pod', 'pns-12', { metadata: { labels: { touched: 'yes' } } }, undefined, 'pns-12'),
  },
].map((row) => ({ ...row, plugin: 'PodNodeSelector', reference: 'unscoped' as const }));

// DenyServiceExternalIPs: upstream's TestAdmission. Its update cases from a Service that already
// has external IPs cannot be set up where the plugin is on (it refuses creating one): those that
// start from a Service without them are here.
const service = (name: string, externalIPs?: string[]) => unscoped('Service', { name }, { spec: { ports: [{ port: 80 }], ...(externalIPs ? { externalIPs } : {}) } });
const denyExternalIPsRows: Row[] = [
  { name: 'create: without externalIPs', upstream: true, setup: [], request: service('dsx-1') },
  { name: 'create: with externalIPs', upstream: true, setup: [], request: service('dsx-2', ['1.1.1.1']) },
  { name: 'update: add externalIPs to a Service that had none', upstream: true, setup: [service('dsx-3')], request: patch('Service', 'dsx-3', { spec: { externalIPs: ['1.1.1.1'] } }) },
  { name: 'update: change nothing relevant (a label)', upstream: false, setup: [service('dsx-4')], request: patch('Service', 'dsx-4', { metadata: { labels: { touched: 'yes' } } }) },
].map((row) => ({ ...row, plugin: 'DenyServiceExternalIPs', reference: 'unscoped' as const }));

// LimitRanger (the DefaultResources handler): upstream's TestPodLimitFunc cases (a LimitRange of
// one item, createLimitRange's, then the Pod validPod makes: n containers of the same resources),
// TestMergePodResourceRequirements' with validLimitRange, and TestPersistentVolumeClaimLimitFunc's.
// Each in a namespace of its own. Unlike upstream's unit cases, the API server defaults a
// LimitRange as it is stored (a Container item's max becomes its default, and min or default its
// defaultRequest) and the plugin's mutation fills those in before it validates: some of upstream's
// error cases are admitted here, on both sides alike.
type Resources = { cpu?: string; memory?: string };
const list = (r: Resources = {}) => Object.fromEntries(Object.entries(r).filter(([, v]) => v));
const limitRange = (namespace: string, limits: Record<string, any>[]) => unscoped('LimitRange', { name: 'abc', namespace }, { spec: { limits } });
const item = (type: string, lists: { min?: Resources; max?: Resources; default?: Resources; defaultRequest?: Resources; maxLimitRequestRatio?: Resources }) => ({
  type,
  ...Object.fromEntries(Object.entries(lists).map(([k, v]) => [k, list(v)])),
});
const validPod = (name: string, namespace: string, n: number, requests: Resources, limits: Resources) =>
  upod(
    name,
    {
      containers: Array.from({ length: n }, (_, i) => {
        const resources = { ...(Object.keys(list(requests)).length ? { requests: list(requests) } : {}), ...(Object.keys(list(limits)).length ? { limits: list(limits) } : {}) };
        return { name: `foo-${i}`, image: `foo:V${i}`, ...(Object.keys(resources).length ? { resources } : {}) };
      }),
    },
    { namespace },
  );
const lrCase = (n: number, limits: Record<string, any>[], pod: (namespace: string) => Request) => ({
  setup: [unscopedNamespace(`lr-${n}`), limitRange(`lr-${n}`, limits)],
  request: pod(`lr-${n}`),
});
const ctr = (lists: Parameters<typeof item>[1]) => [item('Container', lists)];
const podItem = (lists: Parameters<typeof item>[1]) => [item('Pod', lists)];
const VALID_LIMIT_RANGE = [
  item('Pod', { max: { cpu: '200m', memory: '4Gi' }, min: { cpu: '50m', memory: '2Mi' } }),
  item('Container', { max: { cpu: '100m', memory: '2Gi' }, min: { cpu: '25m', memory: '1Mi' }, default: { cpu: '75m', memory: '10Mi' }, defaultRequest: { cpu: '50m', memory: '5Mi' } }),
];
const claimIn = (name: string, namespace: string, storage: string) => unscoped('PersistentVolumeClaim', { name, namespace }, { spec: { storageClassName: '', accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } } });
const limitRangerRows: Row[] = [
  { name: 'success: ctr-min-cpu-request', upstream: true, ...lrCase(1, ctr({ min: { cpu: '50m' } }), (ns) => validPod('ctr-min-cpu-request', ns, 1, { cpu: '100m' }, {})) },
  { name: 'success: ctr-max-cpu-ratio', upstream: true, ...lrCase(2, ctr({ maxLimitRequestRatio: { cpu: '1.5' } }), (ns) => validPod('ctr-max-cpu-ratio', ns, 1, { cpu: '500m' }, { cpu: '750m' })) },
  { name: 'success: pod-min-cpu-request', upstream: true, ...lrCase(3, podItem({ min: { cpu: '100m' } }), (ns) => validPod('pod-min-cpu-request', ns, 2, { cpu: '75m' }, {})) },
  { name: 'success: pod-max-mem-ratio', upstream: true, ...lrCase(4, podItem({ max: { memory: '2Gi' }, maxLimitRequestRatio: { memory: '1.5' } }), (ns) => validPod('pod-max-mem-ratio', ns, 3, { memory: '300Mi' }, { memory: '450Mi' })) },
  { name: 'error: ctr-min-cpu-request', upstream: true, ...lrCase(5, ctr({ min: { cpu: '50m' } }), (ns) => validPod('ctr-min-cpu-request', ns, 1, { cpu: '40m' }, {})) },
  { name: 'error: ctr-min-cpu-request-limit', upstream: true, ...lrCase(6, ctr({ min: { cpu: '50m' } }), (ns) => validPod('ctr-min-cpu-request-limit', ns, 1, { cpu: '40m' }, { cpu: '200m' })) },
  { name: 'error: ctr-min-cpu-no-request-limit (defaulted from min here)', upstream: true, ...lrCase(7, ctr({ min: { cpu: '50m' } }), (ns) => validPod('ctr-min-cpu-no-request-limit', ns, 1, {}, {})) },
  { name: 'error: ctr-max-cpu-limit', upstream: true, ...lrCase(8, ctr({ max: { cpu: '2' } }), (ns) => validPod('ctr-max-cpu-limit', ns, 1, {}, { cpu: '2500m' })) },
  { name: 'error: ctr-max-cpu-ratio', upstream: true, ...lrCase(9, ctr({ maxLimitRequestRatio: { cpu: '1' } }), (ns) => validPod('ctr-max-cpu-ratio', ns, 1, { cpu: '1250m' }, { cpu: '2500m' })) },
  { name: 'error: ctr-max-mem-request-limit', upstream: true, ...lrCase(10, ctr({ max: { memory: '1Gi' } }), (ns) => validPod('ctr-max-mem-request-limit', ns, 1, { memory: '250Mi' }, { memory: '2Gi' })) },
  { name: 'error: pod-min-cpu-request', upstream: true, ...lrCase(11, podItem({ min: { cpu: '100m' } }), (ns) => validPod('pod-min-cpu-request', ns, 1, { cpu: '75m' }, {})) },
  { name: 'error: pod-max-cpu-request-limit', upstream: true, ...lrCase(12, podItem({ max: { cpu: '2' } }), (ns) => validPod('pod-max-cpu-request-limit', ns, 3, { cpu: '500m' }, { cpu: '1' })) },
  { name: 'error: pod-max-mem-ratio', upstream: true, ...lrCase(13, podItem({ max: { memory: '2Gi' }, maxLimitRequestRatio: { memory: '1.5' } }), (ns) => validPod('pod-max-mem-ratio', ns, 3, { memory: '250Mi' }, { memory: '500Mi' })) },
  {
    name: 'pod with no resources enumerated should get each resource from default request',
    upstream: true,
    ...lrCase(14, VALID_LIMIT_RANGE, (ns) => validPod('empty-resources', ns, 1, {}, {})),
    shows: 'cpu, memory request for container foo-0',
  },
  { name: 'pod with some resources enumerated should only merge empty', upstream: true, ...lrCase(15, VALID_LIMIT_RANGE, (ns) => validPod('limit-memory', ns, 1, { memory: '512Mi' }, {})) },
  { name: 'pod with all resources enumerated should not merge anything', upstream: true, ...lrCase(16, VALID_LIMIT_RANGE, (ns) => validPod('limit-all', ns, 1, { cpu: '100m', memory: '512Mi' }, { cpu: '200m', memory: '1G' })) },
  { name: 'pvc-min-storage-request within the range', upstream: true, ...lrCase(17, [{ type: 'PersistentVolumeClaim', min: { storage: '1Gi' }, max: { storage: '2Gi' } }], (ns) => claimIn('pvc-ok', ns, '1Gi')) },
  { name: 'pvc-min-storage-request below the min', upstream: true, ...lrCase(18, [{ type: 'PersistentVolumeClaim', min: { storage: '1Gi' } }], (ns) => claimIn('pvc-min', ns, '500Mi')) },
  { name: 'pvc-max-storage-request above the max', upstream: true, ...lrCase(19, [{ type: 'PersistentVolumeClaim', max: { storage: '2Gi' } }], (ns) => claimIn('pvc-max', ns, '5Gi')) },
  { name: 'an init container is defaulted as well', upstream: false, ...lrCase(20, VALID_LIMIT_RANGE, (ns) => upod('lr-init', { initContainers: [{ name: 'init', image: IMAGE }] }, { namespace: ns })) },
  {
    // Two containers breaking the same two bounds: four violations, two distinct, as one message.
    name: 'several violations in one LimitRange, repeats once',
    upstream: false,
    ...lrCase(21, ctr({ max: { cpu: '100m' }, min: { memory: '10Mi' } }), (ns) => validPod('lr-several', ns, 2, { memory: '5Mi' }, { cpu: '200m' })),
  },
  {
    // Each LimitRange's refusal is a Forbidden error of its own, and the API server answers with the
    // first alone. Which is first is the plugin's informer's order, not fixed: the two refuse alike.
    name: 'two LimitRanges, each refusing: one answer',
    upstream: false,
    setup: [unscopedNamespace('lr-24'), limitRange('lr-24', ctr({ max: { cpu: '100m' } })), unscoped('LimitRange', { name: 'def', namespace: 'lr-24' }, { spec: { limits: ctr({ max: { cpu: '100m' } }) } })],
    request: validPod('lr-two', 'lr-24', 1, {}, { cpu: '200m' }),
  },
  { name: "a Pod item's min with no request", upstream: false, ...lrCase(22, podItem({ min: { cpu: '100m' } }), (ns) => validPod('lr-no-request', ns, 1, {}, {})) },
  { name: "a Pod item's max with no limit", upstream: false, ...lrCase(23, podItem({ max: { memory: '1Gi' } }), (ns) => validPod('lr-no-limit', ns, 1, { memory: '100Mi' }, {})) },
].map((row) => ({ ...row, plugin: 'DefaultResources', reference: 'unscoped' as const }));

// CertificateApproval, CertificateSigning, CertificateSubjectRestriction ------------------------------
/**
 * Upstream's users as real RBAC, the same on both API servers (created before the rows, as the
 * admin; requests are sent as them): each may create CertificateSigningRequests and update their
 * approval and status (the API server's own authorization, before admission), and holds the
 * `approve` or `sign` verb on `signers` named as upstream's fake authorizer's allowedName.
 */
const SIGNER = 'abc.com/xyz';
const CSR_USERS: Record<string, string[]> = {
  'csr-nobody': [],
  'csr-approver': [`approve ${SIGNER}`],
  'csr-approver-domain': ['approve abc.com/*'],
  'csr-approver-other': ['approve notabc.com/xyz'],
  'csr-approver-allowed': ['approve allowed.com/xyz'],
  'csr-signer': [`sign ${SIGNER}`],
  'csr-signer-domain': ['sign abc.com/*'],
  'csr-signer-other': ['sign notabc.com/xyz'],
};
export const CERTIFICATE_USERS_RBAC: Record<string, any>[] = Object.entries(CSR_USERS).flatMap(([user, grants]) => [
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `plugins-diff-${user}` },
    rules: [
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests', 'certificatesigningrequests/approval', 'certificatesigningrequests/status'], verbs: ['get', 'create', 'update', 'patch'] },
      ...grants.map((grant) => {
        const [verb, name] = grant.split(' ');
        return { apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: [name], verbs: [verb] };
      }),
    ],
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `plugins-diff-${user}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `plugins-diff-${user}` },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  },
]);

const csrBody = (signerName: string, organizations: string[] = ['plugins-diff']) => ({
  spec: { signerName, request: Buffer.from(certificateRequestPem('plugins-diff', organizations)).toString('base64'), usages: ['digital signature', 'client auth'] },
});
const csr = (name: string, signerName = SIGNER, organizations?: string[]) => create('CertificateSigningRequest', { name }, csrBody(signerName, organizations));
const APPROVAL = { status: { conditions: [{ type: 'Approved', status: 'True', reason: 'PluginsDiff', message: 'approved by the plugin differential' }] } };
const approval = (name: string, as?: string): Request => ({ ...patch('CertificateSigningRequest', name, APPROVAL, 'approval'), ...(as ? { as } : {}) });
/** A merge patch of the approval that also changes the signerName (refused by validation after admission, or by admission first). */
const approvalRenaming = (name: string, signerName: string, as: string): Request => ({ ...patch('CertificateSigningRequest', name, { ...APPROVAL, spec: { signerName } }, 'approval'), as });
/** A certificate as a signer would write it: any parseable X.509 certificate passes the API server's validation. */
const ISSUED = Buffer.from(EARLIER_CA.certPem).toString('base64');
const issue = (name: string, as: string, status: Record<string, any> = { certificate: ISSUED }): Request => ({ ...patch('CertificateSigningRequest', name, { status }, 'status'), as });

const certificateApprovalRows: Row[] = [
  { name: 'should deny request if user does not have permission for this signerName', upstream: true, setup: [csr('csra-1')], request: approval('csra-1', 'csr-approver-other'), shows: 'user not permitted to approve' },
  { name: 'should deny request if authz lookup fails (a user with no rights)', upstream: true, setup: [csr('csra-2')], request: approval('csra-2', 'csr-nobody'), shows: 'user not permitted to approve' },
  { name: 'should allow request if user is authorized for specific signerName', upstream: true, setup: [csr('csra-3')], request: approval('csra-3', 'csr-approver') },
  { name: 'should allow request if user is authorized with wildcard', upstream: true, setup: [csr('csra-4')], request: approval('csra-4', 'csr-approver-domain') },
  {
    name: 'should deny request if user attempts to update signerName to a new value they *do* have permission to approve for',
    upstream: true,
    setup: [csr('csra-5', 'notallowed.com/xyz')],
    request: approvalRenaming('csra-5', 'allowed.com/xyz', 'csr-approver-allowed'),
    shows: 'user not permitted to approve requests with signerName',
  },
].map((row) => ({ plugin: 'CertificateApproval', ...row }));

const certificateSigningRows: Row[] = [
  {
    name: "allowed if the 'certificate' and conditions field has not changed",
    upstream: true,
    setup: [csr('csrs-1'), approval('csrs-1')],
    request: issue('csrs-1', 'csr-nobody', {}),
  },
  { name: 'deny request if authz lookup fails on certificate change (a user with no rights)', upstream: true, setup: [csr('csrs-2'), approval('csrs-2')], request: issue('csrs-2', 'csr-nobody'), shows: 'user not permitted to sign' },
  {
    name: 'deny request if authz lookup fails on condition change (a user with no rights)',
    upstream: true,
    setup: [csr('csrs-3'), approval('csrs-3')],
    request: issue('csrs-3', 'csr-nobody', { conditions: [...APPROVAL.status.conditions, { type: 'Failed', status: 'True', reason: 'PluginsDiff', message: 'failed' }] }),
    shows: 'user not permitted to sign',
  },
  { name: 'allow request if user is authorized for specific signerName', upstream: true, setup: [csr('csrs-4'), approval('csrs-4')], request: issue('csrs-4', 'csr-signer') },
  { name: 'allow request if user is authorized with wildcard', upstream: true, setup: [csr('csrs-5'), approval('csrs-5')], request: issue('csrs-5', 'csr-signer-domain') },
  { name: 'should deny request if user does not have permission for this signerName', upstream: true, setup: [csr('csrs-6'), approval('csrs-6')], request: issue('csrs-6', 'csr-signer-other'), shows: 'user not permitted to sign' },
  { name: 'an approver is no signer', upstream: false, setup: [csr('csrs-7'), approval('csrs-7')], request: issue('csrs-7', 'csr-approver'), shows: 'user not permitted to sign' },
].map((row) => ({ plugin: 'CertificateSigning', ...row }));

const APISERVER_CLIENT = 'kubernetes.io/kube-apiserver-client';
const HARMLESS = certificateRequestPem('plugins-diff', ['plugins-diff']);
const MASTERS = certificateRequestPem('plugins-diff', ['system:masters']);
/** A CSR for the kube-apiserver-client signer whose request is `text` as it is. */
const csrOfText = (name: string, text: string) =>
  create('CertificateSigningRequest', { name }, { spec: { signerName: APISERVER_CLIENT, request: Buffer.from(text, 'latin1').toString('base64'), usages: ['digital signature', 'client auth'] } });
const certificateSubjectRestrictionRows: Row[] = [
  { name: 'some other signer', upstream: true, setup: [], request: csr('csrr-1', 'kubernetes.io/kube-apiserver-client-kubelet', ['system:masters']) },
  { name: 'some other group', upstream: true, setup: [], request: csr('csrr-2', APISERVER_CLIENT, ['system:admin']) },
  { name: 'request for system:masters', upstream: true, setup: [], request: csr('csrr-3', APISERVER_CLIENT, ['system:masters']), shows: 'system:masters group is not allowed' },
  { name: 'system:masters among other organizations', upstream: false, setup: [], request: csr('csrr-4', APISERVER_CLIENT, ['dev', 'system:masters']), shows: 'system:masters group is not allowed' },
  { name: 'system:masters with a signer of our own', upstream: false, setup: [], request: csr('csrr-5', SIGNER, ['system:masters']) },
  // The request's PEM as Go's pem.Decode reads it (issue 49): the block ParseCSR takes is the plugin's, however the text around it reads.
  {
    name: "issue 49's request: junk before a harmless block's BEGIN, then a system:masters request (Go skips the first)",
    upstream: false,
    setup: [],
    request: csrOfText('csrr-6', 'junk' + HARMLESS + MASTERS),
    shows: 'system:masters group is not allowed',
  },
  { name: 'junk on lines of its own before the harmless block, then a system:masters one: the harmless one is read', upstream: false, setup: [], request: csrOfText('csrr-7', 'junk\n' + HARMLESS + MASTERS) },
  { name: 'two requests, system:masters first: refused', upstream: false, setup: [], request: csrOfText('csrr-8', MASTERS + HARMLESS), shows: 'system:masters group is not allowed' },
  { name: 'a block of another type first: no request (refused by validation)', upstream: false, setup: [], request: csrOfText('csrr-9', HARMLESS.replaceAll('CERTIFICATE REQUEST', 'CERTIFICATE') + MASTERS), shows: 'CERTIFICATE REQUEST' },
  { name: 'junk only: no request (refused by validation)', upstream: false, setup: [], request: csrOfText('csrr-10', 'junk, no PEM block\n'), shows: 'CERTIFICATE REQUEST' },
].map((row) => ({ plugin: 'CertificateSubjectRestriction', ...row }));

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
  ...alwaysPullImagesRows,
  ...defaultTolerationSecondsRows,
  ...podNodeSelectorRows,
  ...denyExternalIPsRows,
  ...limitRangerRows,
  ...certificateApprovalRows,
  ...certificateSigningRows,
  ...certificateSubjectRestrictionRows,
];
