/**
 * The composition root: the parts beside it in src/manager, each made once what it needs exists
 * (the queue before the reconcilers it runs), then the list of runnables by group that lifecycle.ts
 * starts and stops. Adding a reconciler is one entry in reconcilers.ts; what wakes it, controller/watches.ts.
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
import { NAMESPACED_KEY } from '../controller/admission-policies.ts';
import { SELF_CERTIFICATE } from '../controller/suite-validation-webhook.ts';
import { Metrics } from '../health/metrics.ts';
import { createHealthServer } from '../health/server.ts';
import { componentLogger } from '../log.ts';
import { watchClusterState } from './cluster-state.ts';
import { attachMetrics, makeElector, makeQueue, makeWatches, schemaPoll } from './leading.ts';
import { Lifecycle } from './lifecycle.ts';
import { ownedCaches } from './owned.ts';
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

  // What every replica reads, compiles and serves; the caches of what the reconcilers are for and own, made but not started.
  const state = await watchClusterState(kubeConfig, kube, config, metrics, log, options.authorizer);
  const owned = ownedCaches(kubeConfig, kube, config, log);
  // The queue first, inactive until this replica leads: the audit's status changes and the workers' quarantines are its keys.
  const { queue, dispatch } = makeQueue(config, { owned, metrics, events, log });
  const registries = makeRegistries(config, kube, state, metrics, (target) => queue.add('suite' in target ? target.suite : NAMESPACED_KEY));
  // The exceptions' uses and Expired condition: uses written by every replica that counted them (its own client: not behind the leader gate), Expired by the leader.
  const exceptionStatus = new ExceptionStatusWriter({ kube: connect(kubeConfig), exceptions: state.exceptions, log: componentLogger('exception-status') });
  metrics.onExceptionUsed((namespace, name) => exceptionStatus.used(namespace, name));
  // Listening as it is made (unless held back): the reconcilers register the port it was given.
  const serving = await startServing(config, kubeConfig, kube, { state, registries, certificates, metrics }, options.serve === false);
  const effective: OperatorConfig = { ...config, servingPort: serving.port };

  // What the leader writes with, registered with the queue; what wakes it, from the caches' events.
  const reconcilers = makeReconcilers({ kube, config: effective, state, registries, serving, owned, certificates, metrics, events });
  dispatch.register(reconcilers.registrations);
  const { watches, following } = makeWatches(queue, reconcilers, { owned, serving, certificates, metrics, log });

  // A suite or policy quarantined for stopping a worker is reconciled at once, so its status says so; deaths and quarantines are counted by worker kind.
  serving.thread?.onQuarantined((name) => {
    metrics.workerQuarantined('admission-thread');
    queue.add(name);
  });
  serving.admission.offload.watch({ died: (kind) => metrics.workerDied(kind), quarantined: (kind, suite) => (metrics.workerQuarantined(kind), queue.add(suite)) });
  serving.admission.tenants?.watch({ died: (kind) => metrics.workerDied(kind), quarantined: (kind) => (metrics.workerQuarantined(kind), queue.add(NAMESPACED_KEY)) });
  // Said before any connection is refused: a Warning Event on the operator's endpoint, beside the log line and the alert.
  serving.onConnectionsNear((kind, cause) => void events.endpointWarning(`connections-${kind}`, 'ConnectionsNearLimit', `the admission endpoint nears its connection limits (${kind}): ${cause}`));
  // A handler module's worker that died blames nothing (handler-modules/runner.ts): counted only.
  state.handlerModules?.onDied(() => metrics.workerDied('handler-module'));
  const health = createHealthServer({
    ready: () => owned.listed() && !serving.draining() && serving.listening(),
    // While the admission thread that served is down, nothing serves admission: the kubelet restarts a replica that stays so.
    live: () => !serving.thread?.cannotServe,
    metrics: () => metrics.render(),
    metricsContentType: metrics.contentType,
  });

  // The parts with a life, by group: started in this order, stopped in the reverse (lifecycle.ts).
  const { auditor } = registries;
  const lifecycle = new Lifecycle(
    {
      caches: [
        { name: 'cluster state', stop: () => state.stop() },
        { name: 'owned', start: () => owned.start(watches), synced: owned.synced, stop: () => owned.stop() },
      ],
      everyReplica: [
        { name: 'admission endpoint', stop: () => serving.close() },
        {
          name: 'health',
          start: () => new Promise<void>((resolve) => health.listen(config.metricsPort, config.mode === 'local' ? '127.0.0.1' : '::', resolve)),
          stop: () => new Promise<void>((resolve) => health.close(() => resolve())),
        },
        { name: 'following queue', leading: (leading) => following.setActive(!leading), stop: () => following.stop() },
        schemaPoll(serving, watches),
        { name: 'exception status', leading: (leading) => exceptionStatus.leading(leading), stop: () => exceptionStatus.stop() },
      ],
      leaderOnly: [
        {
          name: 'work queue',
          leading: (leading) => {
            // Level-based: a new leader looks at everything, the CA first.
            if (leading) watches.leading();
            queue.setActive(leading);
          },
          stop: () => queue.stop(),
        },
        ...(auditor ? [{ name: 'audit', leading: (leading: boolean) => auditor.leading(leading), stop: () => auditor.stop() }] : []),
      ],
    },
    (leading) => makeElector(config, kube, identity, log, leading),
  );
  attachMetrics(config, lifecycle.elector, queue, { owned, registries, serving, metrics });
  await lifecycle.start();

  log.info('operator started', { namespace: config.namespace, mode: config.mode, servingPort: serving.port, metricsPort: config.metricsPort, identity });
  return {
    registry: registries.registry,
    certificates,
    kube,
    servingPort: serving.port,
    isLeader: () => lifecycle.elector.isLeader(),
    serve: () => serving.listen(),
    drain: async () => {
      serving.drain();
      await lifecycle.handOver();
    },
    stop: () => lifecycle.stop(),
  };
}
