/**
 * manager: the watch caches of what the reconcilers are for and what they own (controller-runtime's
 * For and Owns): the suites and AdmissionPolicies, and, labelled as ours, the Secrets, Services,
 * webhook configurations and native policies the operator makes; every name of those kinds,
 * anyone's (a name no one has is written without a read); and the CacheLookup the reconcilers read
 * them through. Each event goes to `on()` (controller/watches.ts declares what it wakes). Makes no
 * reconciler.
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { MANAGED_BY_LABELS, SUITE_LABEL } from '../api/names.ts';
import { GROUP, PLURAL, POLICY_PLURAL, VERSION, type AdmissionPolicy, type AdmissionSuite } from '../api/types.ts';
import type { CacheLookup, Kube, KubeObject } from '../apiserver/client.ts';
import { watchTakenNames } from '../apiserver/names.ts';
import { watchCache, type WatchedCache } from '../apiserver/watch.ts';
import type { OperatorConfig } from '../config.ts';
import type { ConfigurationObject } from '../controller/ca.ts';
import type { SecretObject, Watches } from '../controller/watches.ts';
import type { Logger } from '../log.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS } from '../desired/native.ts';

/** A kind the operator makes: where it lives, how it is listed, and what its events wake. */
interface MadeKind {
  apiVersion: string;
  kind: string;
  /** The collection's path, where the operator makes this kind. */
  path: string;
  /** Its namespace, for a namespaced kind. */
  namespace?: string;
  list: () => Promise<KubernetesListObject<KubernetesObject>>;
  onChange: (object: KubernetesObject, deleted: boolean) => void;
}

const managedSelector = Object.entries(MANAGED_BY_LABELS).map(([k, v]) => `${k}=${v}`).join(',');

export interface Owned {
  suites: WatchedCache<AdmissionSuite>;
  policies: WatchedCache<AdmissionPolicy>;
  /** Whether the AdmissionPolicies have been listed. */
  policiesSynced(): boolean;
  secrets: WatchedCache<SecretObject>;
  configurations: WatchedCache<ConfigurationObject>[];
  /** What the operator makes for suites, by kind: swept when orphaned (not the native policies, which the native process writes). */
  made: { apiVersion: string; kind: string; cache: WatchedCache<KubernetesObject> }[];
  cached: CacheLookup;
  /** The native policies and bindings our caches hold for a suite. */
  nativeOwned(suite: string): KubeObject[];
  stop(): Promise<void>;
}

/**
 * `on`: the Watches every event goes to. The callbacks first run after their first list, by which
 * time the caller has made it (synchronously after this returns).
 */
export function watchOwned(kubeConfig: KubeConfig, kube: Kube, config: OperatorConfig, log: Logger, on: () => Watches): Owned {
  const suites: WatchedCache<AdmissionSuite> = watchCache<AdmissionSuite>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }) as Promise<KubernetesListObject<AdmissionSuite>>,
    log,
    onChange: (suite, deleted) => on().suite(suite, deleted),
  });
  const policies: WatchedCache<AdmissionPolicy> = watchCache<AdmissionPolicy>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${POLICY_PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL }) as Promise<KubernetesListObject<AdmissionPolicy>>,
    log,
    onChange: (policy, deleted) => on().policy(policy, deleted),
  });
  let policiesSynced = false;
  void policies.synced.then(() => (policiesSynced = true));
  // What the operator makes, one row a kind: watched (labelled as ours) so that one deleted or
  // edited by hand is put back, read from these caches before the API server, and swept when
  // orphaned; and every name of the kind where the operator makes it, anyone's. The native
  // policies and bindings (desired/native.ts) only where native enforcement is on
  // (--native-enforcement), and only read: the native process writes them (src/manager/native.ts),
  // and sweeps their orphans; the serving operator's grant on them is get, list and watch.
  const ns = config.namespace;
  const registration = '/apis/admissionregistration.k8s.io/v1';
  const listed = <T extends KubernetesObject>(list: Promise<unknown>) => list as Promise<KubernetesListObject<T>>;
  const kinds: MadeKind[] = [
    { apiVersion: 'v1', kind: 'Secret', path: `/api/v1/namespaces/${ns}/secrets`, namespace: ns, list: () => listed(kube.core.listNamespacedSecret({ namespace: ns, labelSelector: managedSelector })), onChange: (o, deleted) => on().secret(o as SecretObject, deleted) },
    { apiVersion: 'v1', kind: 'Service', path: `/api/v1/namespaces/${ns}/services`, namespace: ns, list: () => listed(kube.core.listNamespacedService({ namespace: ns, labelSelector: managedSelector })), onChange: (o) => on().service(o) },
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', path: `${registration}/mutatingwebhookconfigurations`, list: () => listed(kube.admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managedSelector })), onChange: (o) => on().configuration(o as ConfigurationObject) },
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', path: `${registration}/validatingwebhookconfigurations`, list: () => listed(kube.admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managedSelector })), onChange: (o) => on().configuration(o as ConfigurationObject) },
    ...(config.nativeEnforcement
      ? [
          { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.policy, path: `${registration}/validatingadmissionpolicies`, list: () => listed(kube.admissionregistration.listValidatingAdmissionPolicy({ labelSelector: managedSelector })), onChange: (o: KubernetesObject) => on().native(o) },
          { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.binding, path: `${registration}/validatingadmissionpolicybindings`, list: () => listed(kube.admissionregistration.listValidatingAdmissionPolicyBinding({ labelSelector: managedSelector })), onChange: (o: KubernetesObject) => on().native(o) },
        ]
      : []),
  ];
  const watched = kinds.map(({ apiVersion, kind, path, list, onChange }) => ({ apiVersion, kind, cache: watchCache<KubernetesObject>(kubeConfig, { path, labelSelector: managedSelector, list, log, onChange }) }));
  const nativeKinds: readonly string[] = Object.values(NATIVE_KINDS);
  const made = watched.filter(({ kind }) => !nativeKinds.includes(kind));
  const byKind = new Map(watched.map(({ kind, cache }) => [kind, cache]));
  const secrets = byKind.get('Secret') as WatchedCache<SecretObject>;
  const configurations = [byKind.get('MutatingWebhookConfiguration'), byKind.get('ValidatingWebhookConfiguration')] as WatchedCache<ConfigurationObject>[];
  const nativeCaches = [NATIVE_KINDS.policy, NATIVE_KINDS.binding].flatMap((kind) => byKind.get(kind) ?? []);
  const takenNames = new Map(kinds.map(({ kind, path, namespace }) => [kind, { namespace, names: watchTakenNames(kubeConfig, path, log) }]));
  const cached: CacheLookup = Object.assign(
    (header: Parameters<CacheLookup>[0]) => byKind.get(header.kind ?? '')?.get(header.metadata?.name ?? '', header.metadata?.namespace) as KubeObject | undefined,
    {
      free: (header: Parameters<CacheLookup>[0]) => {
        const index = takenNames.get(header.kind ?? '');
        if (!index || index.namespace !== header.metadata?.namespace) return false;
        return index.names.taken(header.metadata?.name ?? '', header.metadata?.namespace) === false;
      },
    },
  );

  return {
    suites,
    policies,
    policiesSynced: () => policiesSynced,
    secrets,
    configurations,
    made,
    cached,
    nativeOwned: (suite) => nativeCaches.flatMap((cache) => cache.list().filter((o) => o.metadata?.labels?.[SUITE_LABEL] === suite)).map((o) => o as KubeObject),
    stop: async () => {
      await Promise.all([suites, policies, ...watched.map((m) => m.cache), ...[...takenNames.values()].map((t) => t.names)].map((w) => w.stop()));
    },
  };
}
