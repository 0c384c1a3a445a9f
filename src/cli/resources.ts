/**
 * What the API server would put in a request that a test case or `eval` leaves out: the resource
 * an object's kind is served as (the built-in kinds' real plurals, a CustomResourceDefinition's
 * `spec.names.plural` when one is among the objects given), whether objects of a kind live in a
 * namespace (the built-in kinds' scopes, a CRD's `spec.scope`), and `request.options` as the API
 * server fills it for each operation. No I/O.
 */
import { GROUP, KIND, PLURAL, POLICY_KIND, POLICY_PLURAL } from '../api/types.ts';

type KubeObject = Record<string, any>;

/** The built-in kinds by API group (`` for core): kind -> resource, as `kubectl api-resources` lists them. */
const BUILT_IN: Record<string, Record<string, string>> = {
  '': {
    Binding: 'bindings',
    ComponentStatus: 'componentstatuses',
    ConfigMap: 'configmaps',
    Endpoints: 'endpoints',
    Event: 'events',
    LimitRange: 'limitranges',
    Namespace: 'namespaces',
    Node: 'nodes',
    PersistentVolumeClaim: 'persistentvolumeclaims',
    PersistentVolume: 'persistentvolumes',
    Pod: 'pods',
    PodTemplate: 'podtemplates',
    ReplicationController: 'replicationcontrollers',
    ResourceQuota: 'resourcequotas',
    Secret: 'secrets',
    ServiceAccount: 'serviceaccounts',
    Service: 'services',
  },
  'admissionregistration.k8s.io': {
    MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
    ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
    ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
    ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
    MutatingAdmissionPolicy: 'mutatingadmissionpolicies',
    MutatingAdmissionPolicyBinding: 'mutatingadmissionpolicybindings',
  },
  'apiextensions.k8s.io': { CustomResourceDefinition: 'customresourcedefinitions' },
  'apiregistration.k8s.io': { APIService: 'apiservices' },
  apps: { ControllerRevision: 'controllerrevisions', DaemonSet: 'daemonsets', Deployment: 'deployments', ReplicaSet: 'replicasets', StatefulSet: 'statefulsets' },
  'authentication.k8s.io': { SelfSubjectReview: 'selfsubjectreviews', TokenReview: 'tokenreviews' },
  'authorization.k8s.io': {
    LocalSubjectAccessReview: 'localsubjectaccessreviews',
    SelfSubjectAccessReview: 'selfsubjectaccessreviews',
    SelfSubjectRulesReview: 'selfsubjectrulesreviews',
    SubjectAccessReview: 'subjectaccessreviews',
  },
  autoscaling: { HorizontalPodAutoscaler: 'horizontalpodautoscalers' },
  batch: { CronJob: 'cronjobs', Job: 'jobs' },
  'certificates.k8s.io': { CertificateSigningRequest: 'certificatesigningrequests', ClusterTrustBundle: 'clustertrustbundles', PodCertificateRequest: 'podcertificaterequests' },
  'coordination.k8s.io': { Lease: 'leases', LeaseCandidate: 'leasecandidates' },
  'discovery.k8s.io': { EndpointSlice: 'endpointslices' },
  'events.k8s.io': { Event: 'events' },
  'flowcontrol.apiserver.k8s.io': { FlowSchema: 'flowschemas', PriorityLevelConfiguration: 'prioritylevelconfigurations' },
  'internal.apiserver.k8s.io': { StorageVersion: 'storageversions' },
  'networking.k8s.io': { IngressClass: 'ingressclasses', Ingress: 'ingresses', IPAddress: 'ipaddresses', NetworkPolicy: 'networkpolicies', ServiceCIDR: 'servicecidrs' },
  'node.k8s.io': { RuntimeClass: 'runtimeclasses' },
  policy: { PodDisruptionBudget: 'poddisruptionbudgets' },
  'rbac.authorization.k8s.io': { ClusterRoleBinding: 'clusterrolebindings', ClusterRole: 'clusterroles', RoleBinding: 'rolebindings', Role: 'roles' },
  'resource.k8s.io': {
    DeviceClass: 'deviceclasses',
    DeviceTaintRule: 'devicetaintrules',
    ResourceClaim: 'resourceclaims',
    ResourceClaimTemplate: 'resourceclaimtemplates',
    ResourceSlice: 'resourceslices',
  },
  'scheduling.k8s.io': { PriorityClass: 'priorityclasses' },
  'storage.k8s.io': {
    CSIDriver: 'csidrivers',
    CSINode: 'csinodes',
    CSIStorageCapacity: 'csistoragecapacities',
    StorageClass: 'storageclasses',
    VolumeAttachment: 'volumeattachments',
    VolumeAttributesClass: 'volumeattributesclasses',
  },
  'storagemigration.k8s.io': { StorageVersionMigration: 'storageversionmigrations' },
  [GROUP]: { [KIND]: PLURAL, [POLICY_KIND]: POLICY_PLURAL },
};

/** The built-in kinds that are cluster-scoped, by `group/kind`, as `kubectl api-resources --namespaced=false` lists them. */
const CLUSTER_SCOPED = new Set([
  ...['ComponentStatus', 'Namespace', 'Node', 'PersistentVolume'].map((k) => `/${k}`),
  ...['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'].map(
    (k) => `admissionregistration.k8s.io/${k}`,
  ),
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  'authentication.k8s.io/SelfSubjectReview',
  'authentication.k8s.io/TokenReview',
  'authorization.k8s.io/SelfSubjectAccessReview',
  'authorization.k8s.io/SelfSubjectRulesReview',
  'authorization.k8s.io/SubjectAccessReview',
  'certificates.k8s.io/CertificateSigningRequest',
  'certificates.k8s.io/ClusterTrustBundle',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
  'internal.apiserver.k8s.io/StorageVersion',
  'networking.k8s.io/IngressClass',
  'networking.k8s.io/IPAddress',
  'networking.k8s.io/ServiceCIDR',
  'node.k8s.io/RuntimeClass',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'resource.k8s.io/DeviceClass',
  'resource.k8s.io/DeviceTaintRule',
  'resource.k8s.io/ResourceSlice',
  'scheduling.k8s.io/PriorityClass',
  ...['CSIDriver', 'CSINode', 'StorageClass', 'VolumeAttachment', 'VolumeAttributesClass'].map((k) => `storage.k8s.io/${k}`),
  'storagemigration.k8s.io/StorageVersionMigration',
  `${GROUP}/${KIND}`,
]);

/** The resources of kinds, by `group/kind`: the built-in ones and those the CRDs among `objects` define (a CRD's name wins). */
export class Resources {
  private readonly crds = new Map<string, string>();
  /** By `group/kind`, whether a CRD among the objects makes the kind namespaced (spec.scope). */
  private readonly scopes = new Map<string, boolean>();

  constructor(objects: KubeObject[] = []) {
    for (const crd of objects) {
      if (crd.kind !== 'CustomResourceDefinition' || !String(crd.apiVersion ?? '').startsWith('apiextensions.k8s.io/')) continue;
      const { group, names, scope } = (crd.spec ?? {}) as { group?: string; names?: { kind?: string; plural?: string }; scope?: string };
      if (typeof group === 'string' && names?.kind && names.plural) this.crds.set(`${group}/${names.kind}`, names.plural);
      if (typeof group === 'string' && names?.kind) this.scopes.set(`${group}/${names.kind}`, scope !== 'Cluster');
    }
  }

  /** Whether objects of `kind` live in a namespace: a CRD's scope, a built-in kind's, else namespaced (as most custom kinds are). */
  namespaced(group: string, kind: string): boolean {
    return this.scopes.get(`${group}/${kind}`) ?? !CLUSTER_SCOPED.has(`${group}/${kind}`);
  }

  /** The plural resource of `kind` in `group`: a CRD's, a built-in kind's, else guessed as the API server names most (lower case, plural). */
  of(group: string, kind: string): string {
    return this.crds.get(`${group}/${kind}`) ?? BUILT_IN[group]?.[kind] ?? guessed(kind);
  }
}

/** Policy -> policies, Ingress -> ingresses, Widget -> widgets: what a kind nobody described most likely is. */
function guessed(kind: string): string {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}

/**
 * `request.options` as the API server sends it: the options of the operation's verb (meta.k8s.io/v1
 * CreateOptions, UpdateOptions, DeleteOptions), with `dryRun: [All]` for a dry run; null for CONNECT
 * (its options are the subresource's own, such as PodExecOptions).
 */
export function optionsOf(operation: string, dryRun: boolean): Record<string, unknown> | null {
  const kind = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' }[operation];
  if (!kind) return null;
  return { kind, apiVersion: 'meta.k8s.io/v1', ...(dryRun ? { dryRun: ['All'] } : {}) };
}
