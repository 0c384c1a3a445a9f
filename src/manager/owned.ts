/**
 * manager: the watch caches of what the reconcilers are for and what they own (controller-runtime's
 * For and Owns), one table: the suites and AdmissionPolicies, and, labelled as ours, the Secrets,
 * Services, webhook configurations and native policies the operator makes; every name of the made
 * kinds, anyone's (a name no one has is written without a read); and the CacheLookup the
 * reconcilers read them through. Made before what their events wake, started with it
 * (`start(watches)`, controller/watches.ts declares what each wakes). Makes no reconciler.
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { MANAGED_BY_LABELS, SUITE_LABEL } from '../api/names.ts';
import { GROUP, PLURAL, POLICY_PLURAL, VERSION, type AdmissionPolicy, type AdmissionSuite } from '../api/types.ts';
import type { CacheLookup, Kube, KubeObject } from '../apiserver/client.ts';
import { watchTakenNames } from '../apiserver/names.ts';
import { makeCache, type UnstartedCache, type WatchedCache } from '../apiserver/watch.ts';
import type { OperatorConfig } from '../config.ts';
import type { ConfigurationObject } from '../controller/ca.ts';
import type { SecretObject, Watches } from '../controller/watches.ts';
import type { Logger } from '../log.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS } from '../desired/native.ts';

/** The Watches callback a kind's events go to. */
type Wakes = 'suite' | 'policy' | 'secret' | 'service' | 'configuration' | 'native';

/** A kind the reconcilers are for or own: where it lives, how it is listed, and what its events wake. */
interface OwnedKind {
  apiVersion: string;
  kind: string;
  /**
   * `for`: what the reconcilers are for (every object, anyone's); `owns`: what the operator makes
   * for them (labelled as ours; swept when orphaned); `reads`: made by the native process, only
   * read here (it sweeps their orphans).
   */
  relation: 'for' | 'owns' | 'reads';
  /** The collection's path, where the operator watches (and, but for `for`, makes) this kind. */
  path: string;
  /** Its namespace, for a namespaced kind the operator makes. */
  namespace?: string;
  list: () => Promise<KubernetesListObject<KubernetesObject>>;
  /** Only ours: what the operator makes carries these labels. */
  labelSelector?: string;
  wakes: Wakes;
}

const managedSelector = Object.entries(MANAGED_BY_LABELS)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

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
  /** Starts every cache, each kind's events going to what it wakes. */
  start(watches: Watches): void;
  /** Once the suites and our Secrets are listed: what the leader elector waits for. */
  synced: Promise<unknown>;
  /** Whether the suites, our Secrets and the AdmissionPolicies are listed: a replica that answered the policies' webhook before would admit what they deny. */
  listed(): boolean;
  stop(): Promise<void>;
}

/**
 * The table: what the reconcilers are for, and what the operator makes, one row a kind. What it
 * makes is watched (labelled as ours) so that one deleted or edited by hand is put back, read from
 * these caches before the API server, and swept when orphaned; and every name of the kind where the
 * operator makes it is indexed, anyone's. The native policies and bindings (desired/native.ts) only
 * where native enforcement is on (--native-enforcement), and only read: the native process writes
 * them (src/manager/native.ts), and sweeps their orphans; the serving operator's grant on them is
 * get, list and watch.
 */
function ownedKinds(kube: Kube, config: OperatorConfig): OwnedKind[] {
  const ns = config.namespace;
  const registration = '/apis/admissionregistration.k8s.io/v1';
  const ours = { labelSelector: managedSelector };
  const listed = (list: Promise<unknown>) => list as Promise<KubernetesListObject<KubernetesObject>>;
  const custom = (plural: string) => listed(kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural }));
  const apiVersion = `${GROUP}/${VERSION}`;
  return [
    { apiVersion, kind: 'AdmissionSuite', relation: 'for', path: `/apis/${apiVersion}/${PLURAL}`, list: () => custom(PLURAL), wakes: 'suite' },
    { apiVersion, kind: 'AdmissionPolicy', relation: 'for', path: `/apis/${apiVersion}/${POLICY_PLURAL}`, list: () => custom(POLICY_PLURAL), wakes: 'policy' },
    { apiVersion: 'v1', kind: 'Secret', relation: 'owns', path: `/api/v1/namespaces/${ns}/secrets`, namespace: ns, list: () => listed(kube.core.listNamespacedSecret({ namespace: ns, ...ours })), ...ours, wakes: 'secret' },
    { apiVersion: 'v1', kind: 'Service', relation: 'owns', path: `/api/v1/namespaces/${ns}/services`, namespace: ns, list: () => listed(kube.core.listNamespacedService({ namespace: ns, ...ours })), ...ours, wakes: 'service' },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      relation: 'owns',
      path: `${registration}/mutatingwebhookconfigurations`,
      list: () => listed(kube.admissionregistration.listMutatingWebhookConfiguration(ours)),
      ...ours,
      wakes: 'configuration',
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      relation: 'owns',
      path: `${registration}/validatingwebhookconfigurations`,
      list: () => listed(kube.admissionregistration.listValidatingWebhookConfiguration(ours)),
      ...ours,
      wakes: 'configuration',
    },
    ...(config.nativeEnforcement
      ? ([
          {
            apiVersion: NATIVE_API_VERSION,
            kind: NATIVE_KINDS.policy,
            relation: 'reads',
            path: `${registration}/validatingadmissionpolicies`,
            list: () => listed(kube.admissionregistration.listValidatingAdmissionPolicy(ours)),
            ...ours,
            wakes: 'native',
          },
          {
            apiVersion: NATIVE_API_VERSION,
            kind: NATIVE_KINDS.binding,
            relation: 'reads',
            path: `${registration}/validatingadmissionpolicybindings`,
            list: () => listed(kube.admissionregistration.listValidatingAdmissionPolicyBinding(ours)),
            ...ours,
            wakes: 'native',
          },
        ] satisfies OwnedKind[])
      : []),
  ];
}

/** The caches of the table, made (readable, empty) but not started: `start` gives them what their events wake. */
export function ownedCaches(kubeConfig: KubeConfig, kube: Kube, config: OperatorConfig, log: Logger): Owned {
  const kinds = ownedKinds(kube, config);
  const caches = kinds.map((row) => ({ row, cache: makeCache<KubernetesObject>(kubeConfig, { path: row.path, labelSelector: row.labelSelector, list: row.list, log }) }));
  const byKind = new Map<string, UnstartedCache<KubernetesObject>>(caches.map(({ row, cache }) => [row.kind, cache]));
  const suites = byKind.get('AdmissionSuite') as unknown as WatchedCache<AdmissionSuite>;
  const policies = byKind.get('AdmissionPolicy') as unknown as WatchedCache<AdmissionPolicy>;
  const secrets = byKind.get('Secret') as WatchedCache<SecretObject>;
  let policiesSynced = false;
  void policies.synced.then(() => (policiesSynced = true));
  let listed = false;
  void Promise.all([suites.synced, secrets.synced, policies.synced]).then(() => (listed = true));
  const made = caches.filter(({ row }) => row.relation === 'owns').map(({ row: { apiVersion, kind }, cache }) => ({ apiVersion, kind, cache }));
  const configurations = [byKind.get('MutatingWebhookConfiguration'), byKind.get('ValidatingWebhookConfiguration')] as WatchedCache<ConfigurationObject>[];
  const nativeCaches = caches.filter(({ row }) => row.wakes === 'native').map(({ cache }) => cache);
  // What the reconcilers write is read from its cache before the API server; its names, anyone's, from their index.
  const written = kinds.filter(({ relation }) => relation !== 'for');
  const takenNames = new Map(written.map(({ kind, path, namespace }) => [kind, { namespace, names: watchTakenNames(kubeConfig, path, log) }]));
  const cached: CacheLookup = Object.assign(
    (header: Parameters<CacheLookup>[0]) => (takenNames.has(header.kind ?? '') ? (byKind.get(header.kind ?? '')?.get(header.metadata?.name ?? '', header.metadata?.namespace) as KubeObject | undefined) : undefined),
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
    start: (watches) => {
      for (const { row, cache } of caches) {
        const wake = watches[row.wakes] as (object: KubernetesObject, deleted: boolean) => void;
        cache.start(wake);
      }
    },
    synced: Promise.all([suites.synced, secrets.synced]),
    listed: () => listed,
    stop: async () => {
      await Promise.all([...caches.map(({ cache }) => cache.stop()), ...[...takenNames.values()].map((t) => t.names.stop())]);
    },
  };
}
