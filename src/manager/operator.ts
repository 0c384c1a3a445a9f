/**
 * The composition root: one operator process, composed in order from the parts beside it in
 * src/manager, and only composed here. Every replica watches the cluster state and what the
 * reconcilers are for and own (cluster-state.ts, owned.ts), compiles every suite and
 * AdmissionPolicy (registries.ts) and serves admission (serving.ts); the elected leader alone
 * drives the reconcilers (reconcilers.ts, leading.ts), the only writers. Adding a reconciler
 * touches reconcilers.ts and controller/dispatch.ts; what it watches, controller/watches.ts.
 * The caches sync before the elector starts; on stop the writers stop first and the servers
 * close last, since they may still be answering.
 */
import os from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Authorizer } from '../api/authorization.ts';
import { connect, type Kube } from '../apiserver/client.ts';
import { shareConnections } from '../apiserver/connections.ts';
import { CertificateStore } from '../certs/store.ts';
import type { OperatorConfig } from '../config.ts';
import { EventRecorder } from '../controller/events.ts';
import { ExceptionStatusWriter } from '../controller/exception-status.ts';
import { NAMESPACED_KEY } from '../controller/namespaced.ts';
import { SELF_CERTIFICATE } from '../controller/self.ts';
import type { Watches } from '../controller/watches.ts';
import { Metrics } from '../health/metrics.ts';
import { createHealthServer } from '../health/server.ts';
import { componentLogger } from '../log.ts';
import { watchClusterState } from './cluster-state.ts';
import { driveReconcilers, lead } from './leading.ts';
import { watchOwned } from './owned.ts';
import { makeReconcilers } from './reconcilers.ts';
import { makeRegistries } from './registries.ts';
import { startServing } from './serving.ts';
import type { SuiteRegistry } from '../registry/registry.ts';

export interface Operator {
  registry: SuiteRegistry;
  certificates: CertificateStore;
  kube: Kube;
  servingPort: number;
  isLeader(): boolean;
  /** Starts the admission endpoint when it was held back (`serve: false`). */
  serve(): Promise<void>;
  /**
   * The first step of a graceful stop: unready (so the endpoints drop this replica), leadership
   * handed over, and every answer from now on closes its connection; requests are still answered.
   */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Hold the admission endpoint back until serve() (tests of "register only when serving"). */
  serve?: boolean;
  /**
   * What answers CEL's `authorizer` checks. By default SubjectAccessReviews made with the
   * operator's own credentials (`kubeConfig`), behind a 10-second cache shared by all requests.
   */
  authorizer?: Authorizer;
}

export async function startOperator(config: OperatorConfig, kubeConfig: KubeConfig, options: StartOptions = {}): Promise<Operator> {
  const log = componentLogger('operator');
  shareConnections(kubeConfig);
  const kube = connect(kubeConfig);
  const identity = `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
  const certificates = new CertificateStore();
  const metrics = new Metrics({
    writes: () => kube.writes.count,
    servingCertificates: () => [...certificates.expiries()].map(({ key, notAfter }) => ({ suite: key === SELF_CERTIFICATE ? undefined : key, notAfter })),
  });
  const events = new EventRecorder(kube, componentLogger('events'), identity);

  // What every replica reads, compiles and serves.
  const state = await watchClusterState(kubeConfig, kube, config, metrics, log, options.authorizer);
  // The audit's status changes are keys of the queue made below (it reports only while leading, once the queue runs).
  let queue: { add(key: string): void } | undefined;
  const registries = makeRegistries(config, kube, state, metrics, (target) => queue?.add('suite' in target ? target.suite : NAMESPACED_KEY));
  // The exceptions' uses and Expired condition: uses written by every replica that counted them (its own client: not behind the leader gate), Expired by the leader.
  const exceptionStatus = new ExceptionStatusWriter({ kube: connect(kubeConfig), exceptions: state.exceptions, log: componentLogger('exception-status') });
  metrics.onExceptionUsed((namespace, name) => exceptionStatus.used(namespace, name));
  const serving = await startServing(config, kubeConfig, kube, { state, registries, certificates, metrics }, options.serve === false);
  const effective: OperatorConfig = { ...config, servingPort: serving.port };

  // What the leader writes with: the caches' events reach the Watches made right after them.
  let watches: Watches | undefined;
  const owned = watchOwned(kubeConfig, kube, config, log, () => watches!);
  const reconcilers = makeReconcilers({ kube, config: effective, state, registries, serving, owned, certificates, metrics, events });
  const driven = driveReconcilers(config, reconcilers, { owned, registries, serving, certificates, metrics, events, log });
  ({ watches, queue } = driven);
  const leading = lead(config, kube, identity, driven, { owned, registries, serving, metrics, log, exceptionStatus });

  let synced = false;
  // Ready only once the AdmissionPolicies are listed too: a replica that answered their webhook before would admit what they deny.
  void Promise.all([owned.suites.synced, owned.secrets.synced, owned.policies.synced]).then(() => (synced = true));
  // A suite or policy quarantined for stopping a worker is reconciled at once, so its status says so; deaths and quarantines are counted by worker kind.
  serving.thread?.onQuarantined((name) => {
    metrics.workerQuarantined('admission-thread');
    queue?.add(name);
  });
  serving.admission.offload.watch({ died: (kind) => metrics.workerDied(kind), quarantined: (kind, suite) => (metrics.workerQuarantined(kind), queue?.add(suite)) });
  serving.admission.tenants?.watch({ died: (kind) => metrics.workerDied(kind), quarantined: (kind) => (metrics.workerQuarantined(kind), queue?.add(NAMESPACED_KEY)) });
  // Said before any connection is refused: a Warning Event on the operator's endpoint, beside the log line and the alert.
  serving.onConnectionsNear((kind, cause) => void events.endpointWarning(`connections-${kind}`, 'ConnectionsNearLimit', `the admission endpoint nears its connection limits (${kind}): ${cause}`));
  state.handlerModules?.onQuarantined((handler) => {
    metrics.workerQuarantined('handler-module');
    for (const suite of owned.suites.list()) if (suite.spec.webhooks.some((w) => w.handler?.name === handler)) queue?.add(suite.metadata.name);
  });
  const health = createHealthServer({
    ready: () => synced && !serving.draining() && serving.listening(),
    // While the admission thread that served is down, nothing serves admission: the kubelet restarts a replica that stays so.
    live: () => !serving.thread?.cannotServe,
    metrics: () => metrics.render(),
    metricsContentType: metrics.contentType,
  });
  await new Promise<void>((resolve) => health.listen(config.metricsPort, config.mode === 'local' ? '127.0.0.1' : '::', resolve));

  log.info('operator started', { namespace: config.namespace, mode: config.mode, servingPort: serving.port, metricsPort: config.metricsPort, identity });
  return {
    registry: registries.registry,
    certificates,
    kube,
    servingPort: serving.port,
    isLeader: () => leading.elector.isLeader(),
    serve: () => serving.listen(),
    drain: async () => {
      serving.drain();
      leading.queue.stop();
      await leading.elector.stop();
    },
    stop: async () => {
      exceptionStatus.stop();
      await leading.stop();
      await owned.stop();
      await new Promise((resolve) => health.close(resolve));
      await serving.close();
      await state.stop();
    },
  };
}
