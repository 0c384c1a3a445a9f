/**
 * manager: the cluster state every replica reads to judge requests, and nothing it writes: the
 * Namespaces and LimitRanges (copied into the admission thread as they change), the handlers'
 * shared lookup caches, the params collections, the AdmissionExceptions (a store the suites'
 * webhooks ask per request, copied into the admission thread as the suites are), the handler modules' workers, and the clients that
 * answer CEL's `authorizer` and a kind's resource. The ClusterView handlers read is made of them.
 * Makes no reconciler and serves nothing (serving.ts, reconcilers.ts).
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Authorizer } from '../api/authorization.ts';
import type { Kube } from '../apiserver/client.ts';
import { CachingAuthorizer, SubjectAccessReviewer } from '../apiserver/authorizer.ts';
import { DiscoveryMapper } from '../apiserver/discovery.ts';
import { LookupCaches } from '../apiserver/lookups.ts';
import { ObjectWatches } from '../apiserver/params-watches.ts';
import { watchCache, type WatchedCache } from '../apiserver/watch.ts';
import type { OperatorConfig } from '../config.ts';
import { startHandlerModules, type HandlerModules } from '../handler-modules/serve.ts';
import { LookupNotReady, type ClusterView } from '../handlers/handler.ts';
import type { Metrics } from '../health/metrics.ts';
import { componentLogger, type Logger } from '../log.ts';
import { CLUSTER_EXCEPTION_PLURAL, EXCEPTION_PLURAL, type AdmissionException, type AnyException, type ClusterAdmissionException } from '../api/exceptions.ts';
import { GROUP, VERSION } from '../api/types.ts';
import { ExceptionStore } from '../registry/exceptions.ts';

/** Where the Namespace and LimitRange caches copy their changes (the admission thread, once it is made). */
export interface Mirror {
  mirror(kind: 'Namespace' | 'LimitRange', object: KubernetesObject, deleted: boolean): void;
}

export interface ClusterState {
  namespaces: WatchedCache<KubernetesObject>;
  limitRanges: WatchedCache<KubernetesObject>;
  lookups: LookupCaches;
  params: ObjectWatches;
  /** The AdmissionExceptions of every namespace, as watched. */
  exceptions: ExceptionStore;
  view: ClusterView;
  authorizer: Authorizer;
  mapper: DiscoveryMapper;
  /** The handler modules served (--handler-modules), when there are. */
  handlerModules?: HandlerModules;
  /** Namespaces' and LimitRanges' changes from now on also go to `to`. */
  mirrorTo(to: Mirror | undefined): void;
  stop(): Promise<void>;
}

export async function watchClusterState(kubeConfig: KubeConfig, kube: Kube, config: OperatorConfig, metrics: Metrics, log: Logger, authorizer?: Authorizer): Promise<ClusterState> {
  let mirror: Mirror | undefined;
  const namespaces = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/namespaces',
    list: () => kube.core.listNamespace(),
    log,
    onChange: (namespace, deleted) => mirror?.mirror('Namespace', namespace, deleted),
  });
  const limitRanges = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/limitranges',
    list: () => kube.core.listLimitRangeForAllNamespaces(),
    log,
    onChange: (limitRange, deleted) => mirror?.mirror('LimitRange', limitRange, deleted),
  });
  // The shared lookup caches: watched only while a served suite uses a handler that reads the kind.
  const lookups = new LookupCaches(kube, componentLogger('lookups'));
  // Teams' handler modules (src/handler-modules), served before any suite is compiled; each module runs in a worker of its own, with copies of the lookups it reads.
  const handlerModules = config.handlerModules ? await startHandlerModules(config.handlerModules, { budgetMs: config.handlerBudgetMs, log: componentLogger('handler-modules'), registry: metrics.registry, lookups }) : undefined;
  const view: ClusterView = {
    namespace: (name) => namespaces.get(name) as Record<string, any> | undefined,
    limitRanges: (namespace) => limitRanges.list().filter((lr) => lr.metadata?.namespace === namespace) as Record<string, any>[],
    list: (kind, namespace) => {
      const found = lookups.list(kind, namespace);
      if (!found) throw new LookupNotReady(kind);
      return found as Record<string, any>[];
    },
    whenReady: async (kinds, timeoutMs) => (await Promise.all(kinds.map((kind) => lookups.whenSynced(kind, timeoutMs)))).every(Boolean),
  };
  const params = new ObjectWatches(kube, log, config.namespace);
  const exceptions = new ExceptionStore();
  const exceptionWatch = watchCache<AdmissionException>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${EXCEPTION_PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL }) as Promise<KubernetesListObject<AdmissionException>>,
    log,
    onChange: (exception, deleted) => (deleted ? exceptions.remove(exception.metadata.namespace, exception.metadata.name) : exceptions.set(exception)),
  });
  // The cluster-wide grants, in the same store under the namespace ''.
  const clusterExceptionWatch = watchCache<ClusterAdmissionException>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${CLUSTER_EXCEPTION_PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL }) as Promise<KubernetesListObject<ClusterAdmissionException>>,
    log,
    onChange: (exception, deleted) => (deleted ? exceptions.remove('', exception.metadata.name) : exceptions.set({ ...exception, metadata: { ...exception.metadata, namespace: '' } } as AnyException)),
  });
  return {
    namespaces,
    limitRanges,
    lookups,
    params,
    exceptions,
    view,
    authorizer: authorizer ?? new CachingAuthorizer(new SubjectAccessReviewer(kubeConfig)),
    // What an ownerReference's kind is served as (OwnerReferencesPermissionEnforcement), from API discovery.
    mapper: new DiscoveryMapper(kubeConfig),
    ...(handlerModules ? { handlerModules } : {}),
    mirrorTo: (to) => (mirror = to),
    stop: async () => {
      await Promise.all([namespaces, limitRanges, params, lookups, exceptionWatch, clusterExceptionWatch].map((w) => w.stop()));
      await handlerModules?.close();
    },
  };
}
