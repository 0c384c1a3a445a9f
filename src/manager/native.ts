/**
 * The native-enforcement process (--role=native, deploy/optional/native-enforcement.yaml, its own
 * ServiceAccount): the only writer of admission policies, a grant no admission guard can narrow, so held
 * by pods with no admission port or Service, never the serving pods. It watches suites, policies, bindings
 * and our webhook configurations (the hand-over); its leader (own Lease) writes the
 * native objects (controller/native-writer.ts), restores the token guard (token-guard.ts), keeps the
 * unbound dry-run policy (NATIVE_DRY_RUN) and sweeps orphans. Composes only; /healthz, /readyz on the metrics port.
 */
import os from 'node:os';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { MANAGED_BY_LABELS, NATIVE_DRY_RUN, NATIVE_NAME, SUITE_LABEL, SUITE_VALIDATION } from '../api/names.ts';
import { GROUP, PLURAL, VERSION, type AdmissionSuite } from '../api/types.ts';
import { apply, connect, describeError, getObject, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import { shareConnections } from '../apiserver/connections.ts';
import { watchCache, type WatchedCache } from '../apiserver/watch.ts';
import type { OperatorConfig } from '../config.ts';
import { EventRecorder } from '../controller/events.ts';
import { LeaderElector } from '../controller/leader.ts';
import { NativeWriter } from '../controller/native-writer.ts';
import { ORPHANS_KEY, OrphanSweeper } from '../controller/orphans.ts';
import { WorkQueue } from '../controller/queue.ts';
import { TOKEN_GUARD_KEY, TokenGuardKeeper } from '../controller/token-guard.ts';
import { createHealthServer } from '../health/server.ts';
import { componentLogger } from '../log.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS } from '../desired/native.ts';

/** The work-queue key of the dry-run policy; not a DNS label, so no suite can have it. */
const DRY_RUN_KEY = '#native-dry-run';

export interface NativeProcess {
  isLeader(): boolean;
  stop(): Promise<void>;
}

const ours = (object: KubernetesObject) => object.metadata?.labels?.['app.kubernetes.io/managed-by'] === MANAGED_BY_LABELS['app.kubernetes.io/managed-by'];
const managedSelector = Object.entries(MANAGED_BY_LABELS)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/**
 * The policy the serving operator's dry runs patch: never bound, so it enforces nothing. Owned by
 * the AdmissionSuite CRD, so that uninstalling (which removes the CRDs) removes it too.
 */
async function dryRunPolicy(kube: Kube): Promise<KubeObject> {
  const crd = await getObject<KubeObject & { metadata: { uid: string } }>(kube, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: SUITE_VALIDATION.crd } });
  if (!crd) throw new Error(`the CustomResourceDefinition ${SUITE_VALIDATION.crd} is not installed`);
  const owner = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: SUITE_VALIDATION.crd, uid: crd.metadata.uid };
  return { ...DRY_RUN_POLICY, metadata: { ...DRY_RUN_POLICY.metadata, ownerReferences: [owner] } };
}

const DRY_RUN_POLICY = {
  apiVersion: NATIVE_API_VERSION,
  kind: NATIVE_KINDS.policy,
  metadata: { name: NATIVE_DRY_RUN, labels: { 'app.kubernetes.io/name': NATIVE_NAME } },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['native-dry-run.portcullis.dev'], apiVersions: ['v1'], resources: ['never'] }] },
    validations: [{ expression: 'true' }],
  },
};

export async function startNativeEnforcement(config: OperatorConfig, kubeConfig: KubeConfig): Promise<NativeProcess> {
  const log = componentLogger('native');
  shareConnections(kubeConfig);
  const kube = connect(kubeConfig);
  const identity = `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
  const events = new EventRecorder(kube, componentLogger('events'), identity);
  let queue: WorkQueue | undefined;
  const wake = (key: string) => queue?.add(key);
  const suiteOf = (object: KubernetesObject) => object.metadata?.labels?.[SUITE_LABEL];
  let guard: TokenGuardKeeper | undefined;

  const suites = watchCache<AdmissionSuite>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }) as Promise<KubernetesListObject<AdmissionSuite>>,
    log,
    onChange: (suite) => wake(suite.metadata.name),
  });
  const registration = '/apis/admissionregistration.k8s.io/v1';
  // Every policy and binding, not only ours: the token guard's and the dry-run policy are among them.
  const policyEvent = (which: 'policy' | 'binding') => (object: KubernetesObject, deleted: boolean) => {
    if (guard?.observe(which, object, deleted)) return wake(TOKEN_GUARD_KEY);
    if (object.metadata?.name === NATIVE_DRY_RUN) return wake(DRY_RUN_KEY);
    const suite = ours(object) ? suiteOf(object) : undefined;
    if (suite) wake(suite);
  };
  const natives = {
    policy: watchCache<KubernetesObject>(kubeConfig, {
      path: `${registration}/validatingadmissionpolicies`,
      list: () => kube.admissionregistration.listValidatingAdmissionPolicy() as Promise<KubernetesListObject<KubernetesObject>>,
      log,
      onChange: policyEvent('policy'),
    }),
    binding: watchCache<KubernetesObject>(kubeConfig, {
      path: `${registration}/validatingadmissionpolicybindings`,
      list: () => kube.admissionregistration.listValidatingAdmissionPolicyBinding() as Promise<KubernetesListObject<KubernetesObject>>,
      log,
      onChange: policyEvent('binding'),
    }),
  };
  guard = new TokenGuardKeeper({ kube, caches: natives, events, log: componentLogger('token-guard') });
  // Our webhook configurations, read only: a policy goes once its webhook has been registered a while.
  const configurationEvent = (object: KubernetesObject) => {
    const suite = suiteOf(object);
    if (suite) wake(suite);
  };
  const configurations = {
    MutatingWebhookConfiguration: watchCache<KubernetesObject>(kubeConfig, {
      path: `${registration}/mutatingwebhookconfigurations`,
      labelSelector: managedSelector,
      list: () => kube.admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managedSelector }) as Promise<KubernetesListObject<KubernetesObject>>,
      log,
      onChange: configurationEvent,
    }),
    ValidatingWebhookConfiguration: watchCache<KubernetesObject>(kubeConfig, {
      path: `${registration}/validatingwebhookconfigurations`,
      labelSelector: managedSelector,
      list: () => kube.admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managedSelector }) as Promise<KubernetesListObject<KubernetesObject>>,
      log,
      onChange: configurationEvent,
    }),
  };
  const byKind = new Map<string, WatchedCache<KubernetesObject>>([[NATIVE_KINDS.policy, natives.policy], [NATIVE_KINDS.binding, natives.binding], ...Object.entries(configurations)]);
  const cached: CacheLookup = (header) => {
    const object = byKind.get(header.kind ?? '')?.get(header.metadata?.name ?? '');
    // Only ours: applyOwned never takes over an object someone else made under a name we need.
    return object && ours(object) ? (object as KubeObject) : undefined;
  };
  const ownedOnly = (cache: WatchedCache<KubernetesObject>): WatchedCache<KubernetesObject> => ({
    list: () => cache.list().filter(ours),
    get: (name) => {
      const object = cache.get(name);
      return object && ours(object) ? object : undefined;
    },
    synced: cache.synced,
    failure: () => cache.failure(),
    stop: () => cache.stop(),
  });

  const writer = new NativeWriter({
    kube,
    config,
    suites,
    cached,
    nativeOwned: (suite) => [natives.policy, natives.binding].flatMap((cache) => cache.list().filter((o) => ours(o) && suiteOf(o) === suite)) as KubeObject[],
    events,
    log,
    now: () => Date.now(),
  });
  const sweeper = new OrphanSweeper({
    kube,
    suites,
    made: [
      { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.policy, cache: ownedOnly(natives.policy) },
      { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.binding, cache: ownedOnly(natives.binding) },
    ],
    log,
  });
  const work = (queue = new WorkQueue(
    async (key) => {
      if (key === TOKEN_GUARD_KEY) return guard!.reconcile();
      if (key === ORPHANS_KEY) return sweeper.reconcile();
      if (key === DRY_RUN_KEY) {
        if (!natives.policy.get(NATIVE_DRY_RUN)) await apply(kube, await dryRunPolicy(kube));
        return;
      }
      return writer.reconcile(key);
    },
    {
      onError: (key, err, retryInMs, failures) => log.warn('reconcile failed; will retry', { key, error: describeError(err), retryInMs, failures }),
      onRecovered: () => undefined,
    },
    { concurrency: config.maxConcurrentReconciles },
  ));
  work.setActive(false);
  const elector = new LeaderElector(
    kube,
    { namespace: config.namespace, name: NATIVE_NAME, identity, leaseDurationMs: config.leaseDurationMs, renewDeadlineMs: config.renewDeadlineMs, retryPeriodMs: config.retryPeriodMs },
    componentLogger('leader'),
    (leading) => {
      log.info(leading ? 'leading: this replica writes the native policies' : 'not leading', { identity });
      // Level-based: a new leader looks at everything.
      if (leading) for (const key of [TOKEN_GUARD_KEY, DRY_RUN_KEY, ORPHANS_KEY, ...suites.list().map((s) => s.metadata.name)]) work.add(key);
      work.setActive(leading);
    },
  );
  kube.mayWrite = () => elector.isLeader();
  const caches = [suites, natives.policy, natives.binding, ...Object.values(configurations)];
  let synced = false;
  void Promise.all(caches.map((c) => c.synced)).then(() => {
    synced = true;
    elector.start();
  });
  const health = createHealthServer({ ready: () => synced, metrics: async () => '', metricsContentType: 'text/plain' });
  await new Promise<void>((resolve) => health.listen(config.metricsPort, config.mode === 'local' ? '127.0.0.1' : '::', resolve));
  log.info('native enforcement started', { namespace: config.namespace, identity });
  return {
    isLeader: () => elector.isLeader(),
    stop: async () => {
      work.stop();
      await elector.stop();
      await new Promise((resolve) => health.close(resolve));
      await Promise.all(caches.map((c) => c.stop()));
    },
  };
}
