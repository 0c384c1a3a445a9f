/**
 * Wires the pieces of one operator process: watches fill the suite registry and the certificate
 * store; the work queue drives the reconciler; the admission server reads the two stores.
 * On stop the writers stop first and the servers close last, since they may still be answering.
 */
import os from 'node:os';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { GROUP, PLURAL, VERSION, type AdmissionSuite } from './api/types.ts';
import { CA_SECRET, MANAGED_BY_LABELS, SUITE_LABEL, tlsSecretName } from './api/names.ts';
import { createAdmissionServer } from './admission/server.ts';
import { Metrics } from './admission/metrics.ts';
import { CertificateStore } from './certs/store.ts';
import type { OperatorConfig } from './config.ts';
import { EventRecorder } from './controller/events.ts';
import { WorkQueue } from './controller/queue.ts';
import { SuiteReconciler } from './controller/reconciler.ts';
import { createHealthServer } from './health/server.ts';
import { connect, describeError } from './kube/client.ts';
import { watchCache, type WatchedCache } from './kube/watch.ts';
import { componentLogger } from './log.ts';
import { SuiteRegistry } from './registry/registry.ts';
import type { ClusterView } from './handlers/handler.ts';

export interface Operator {
  registry: SuiteRegistry;
  certificates: CertificateStore;
  servingPort: number;
  stop(): Promise<void>;
}

type SecretObject = KubernetesObject & { data?: Record<string, string> };

const managedSelector = Object.entries(MANAGED_BY_LABELS).map(([k, v]) => `${k}=${v}`).join(',');

export async function startOperator(config: OperatorConfig, kubeConfig: KubeConfig): Promise<Operator> {
  const log = componentLogger('operator');
  const kube = connect(kubeConfig);
  const namespaces = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/namespaces',
    list: () => kube.core.listNamespace(),
    log,
    onChange: () => undefined,
  });
  const limitRanges = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/limitranges',
    list: () => kube.core.listLimitRangeForAllNamespaces(),
    log,
    onChange: () => undefined,
  });
  const view: ClusterView = {
    namespace: (name) => namespaces.get(name) as Record<string, any> | undefined,
    limitRanges: (namespace) => limitRanges.list().filter((lr) => lr.metadata?.namespace === namespace) as Record<string, any>[],
  };
  const registry = new SuiteRegistry(view);
  const certificates = new CertificateStore();
  const metrics = new Metrics();
  const events = new EventRecorder(kube, componentLogger('events'), os.hostname());

  const admission: FastifyInstance = createAdmissionServer({ registry, certificates, metrics, log: componentLogger('admission') });
  await admission.listen({ port: config.servingPort, host: config.mode === 'local' ? 'localhost' : '::' });
  const servingPort = (admission.server.address() as { port: number }).port;
  const effective: OperatorConfig = { ...config, servingPort };

  const suites: WatchedCache<AdmissionSuite> = watchCache<AdmissionSuite>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }) as Promise<KubernetesListObject<AdmissionSuite>>,
    log,
    onChange: (suite, deleted) => {
      const name = suite.metadata!.name!;
      if (deleted) {
        registry.remove(name);
        certificates.remove(name);
        return;
      }
      // Every replica compiles every suite, once per generation, so every replica can serve it.
      registry.sync(suite);
      queue.add(name);
    },
  });

  // The watches' callbacks first run after the first list, by which time the queue exists.
  const reconciler = new SuiteReconciler({ kube, config: effective, registry, suites, events, log: componentLogger('reconciler') });
  const queue = new WorkQueue(
    (name) => reconciler.reconcile(name),
    (name, err, retryInMs) => log.warn('reconcile failed; will retry', { suite: name, error: describeError(err), retryInMs }),
  );

  const secrets = watchCache<SecretObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/secrets`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedSecret({ namespace: config.namespace, labelSelector: managedSelector }) as Promise<KubernetesListObject<SecretObject>>,
    log,
    onChange: (secret, deleted) => {
      const name = secret.metadata!.name!;
      if (name === CA_SECRET) {
        for (const suite of suites.list()) queue.add(suite.metadata!.name!);
        return;
      }
      const suite = secret.metadata?.labels?.[SUITE_LABEL];
      if (!suite || name !== tlsSecretName(suite)) return;
      const crt = secret.data?.['tls.crt'];
      const key = secret.data?.['tls.key'];
      if (deleted || !crt || !key) certificates.remove(suite);
      else certificates.set(suite, Buffer.from(crt, 'base64').toString(), Buffer.from(key, 'base64').toString());
      queue.add(suite);
    },
  });

  // What we registered, so a configuration deleted or edited by hand is put back.
  const ownedWatches = ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'].map((resource) =>
    watchCache<KubernetesObject>(kubeConfig, {
      path: `/apis/admissionregistration.k8s.io/v1/${resource}`,
      labelSelector: managedSelector,
      list: () =>
        resource === 'mutatingwebhookconfigurations'
          ? kube.admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managedSelector })
          : kube.admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managedSelector }),
      log,
      onChange: (object) => {
        const suite = object.metadata?.labels?.[SUITE_LABEL];
        if (suite && suites.get(suite)) queue.add(suite);
      },
    }),
  );

  let synced = false;
  void Promise.all([suites.synced, secrets.synced]).then(() => (synced = true));
  const health = createHealthServer({ ready: () => synced, metrics: () => metrics.render() });
  await new Promise<void>((resolve) => health.listen(config.metricsPort, config.mode === 'local' ? '127.0.0.1' : '::', resolve));

  log.info('operator started', { namespace: config.namespace, mode: config.mode, servingPort, metricsPort: config.metricsPort });
  return {
    registry,
    certificates,
    servingPort,
    stop: async () => {
      queue.stop();
      await Promise.all([suites.stop(), secrets.stop(), namespaces.stop(), limitRanges.stop(), ...ownedWatches.map((w) => w.stop())]);
      await new Promise((resolve) => health.close(resolve));
      await admission.close();
    },
  };
}
