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
import { NATIVE_API_VERSION, NATIVE_KINDS } from '../native/compile.ts';

const managedSelector = Object.entries(MANAGED_BY_LABELS).map(([k, v]) => `${k}=${v}`).join(',');

export interface Owned {
  suites: WatchedCache<AdmissionSuite>;
  policies: WatchedCache<AdmissionPolicy>;
  /** Whether the AdmissionPolicies have been listed. */
  policiesSynced(): boolean;
  secrets: WatchedCache<SecretObject>;
  configurations: WatchedCache<ConfigurationObject>[];
  /** What the operator makes for suites, by kind: swept when orphaned. */
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
  const secrets = watchCache<SecretObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/secrets`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedSecret({ namespace: config.namespace, labelSelector: managedSelector }) as Promise<KubernetesListObject<SecretObject>>,
    log,
    onChange: (secret, deleted) => on().secret(secret, deleted),
  });
  // The Services we made, so one deleted or edited by hand is put back (the API server would
  // otherwise fail every call to its suite while the suite still said Ready).
  const services = watchCache<KubernetesObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/services`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedService({ namespace: config.namespace, labelSelector: managedSelector }),
    log,
    onChange: (service) => on().service(service),
  });
  // What we registered, so a configuration deleted or edited by hand is put back.
  const [mutatingConfigurations, validatingConfigurations] = (['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'] as const).map((resource) =>
    watchCache<ConfigurationObject>(kubeConfig, {
      path: `/apis/admissionregistration.k8s.io/v1/${resource}`,
      labelSelector: managedSelector,
      list: () =>
        (resource === 'mutatingwebhookconfigurations'
          ? kube.admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managedSelector })
          : kube.admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managedSelector })) as Promise<KubernetesListObject<ConfigurationObject>>,
      log,
      onChange: (configuration) => on().configuration(configuration),
    }),
  ) as [WatchedCache<ConfigurationObject>, WatchedCache<ConfigurationObject>];
  const configurations = [mutatingConfigurations, validatingConfigurations];
  // The native policies and bindings of webhooks the API server enforces itself (native/compile.ts), so one deleted or edited by hand is put back.
  // Watched only where native enforcement is on (--native-enforcement): elsewhere the operator has no rights on these kinds.
  const [nativePolicies, nativeBindings] = (config.nativeEnforcement ? (['validatingadmissionpolicies', 'validatingadmissionpolicybindings'] as const) : []).map((resource) =>
    watchCache<KubernetesObject>(kubeConfig, {
      path: `/apis/admissionregistration.k8s.io/v1/${resource}`,
      labelSelector: managedSelector,
      list: () =>
        (resource === 'validatingadmissionpolicies'
          ? kube.admissionregistration.listValidatingAdmissionPolicy({ labelSelector: managedSelector })
          : kube.admissionregistration.listValidatingAdmissionPolicyBinding({ labelSelector: managedSelector })) as Promise<KubernetesListObject<KubernetesObject>>,
      log,
      onChange: (object) => on().native(object),
    }),
  ) as [WatchedCache<KubernetesObject>, WatchedCache<KubernetesObject>] | [];
  const nativeCaches = nativePolicies && nativeBindings ? [nativePolicies, nativeBindings] : [];
  // What the operator makes, by kind: read from these caches before the API server, and swept when orphaned.
  const made = [
    { apiVersion: 'v1', kind: 'Secret', cache: secrets },
    { apiVersion: 'v1', kind: 'Service', cache: services },
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', cache: mutatingConfigurations },
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', cache: validatingConfigurations },
    ...(nativePolicies && nativeBindings
      ? [
          { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.policy, cache: nativePolicies },
          { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.binding, cache: nativeBindings },
        ]
      : []),
  ] as { apiVersion: string; kind: string; cache: WatchedCache<KubernetesObject> }[];
  const byKind = new Map(made.map(({ kind, cache }) => [kind, cache]));
  // Every name of those kinds where the operator makes them, anyone's: a name no one has is written without a read first.
  const namesPaths: [string, string, string | undefined][] = [
    ['Secret', `/api/v1/namespaces/${config.namespace}/secrets`, config.namespace],
    ['Service', `/api/v1/namespaces/${config.namespace}/services`, config.namespace],
    ['MutatingWebhookConfiguration', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', undefined],
    ['ValidatingWebhookConfiguration', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', undefined],
    ...(config.nativeEnforcement
      ? ([
          [NATIVE_KINDS.policy, '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', undefined],
          [NATIVE_KINDS.binding, '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings', undefined],
        ] as [string, string, undefined][])
      : []),
  ];
  const takenNames = new Map(namesPaths.map(([kind, path, namespace]) => [kind, { namespace, names: watchTakenNames(kubeConfig, path, log) }]));
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
      await Promise.all([suites, policies, secrets, services, ...configurations, ...nativeCaches, ...[...takenNames.values()].map((t) => t.names)].map((w) => w.stop()));
    },
  };
}
