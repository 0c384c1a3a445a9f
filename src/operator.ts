/**
 * Wires the pieces of one operator process. Every replica watches suites and Secrets, compiles
 * every suite into the registry, fills the certificate store and serves admission; the elected
 * leader alone runs the work queue that drives the reconcilers (the only writers). On stop the
 * writers stop first and the servers close last, since they may still be answering.
 */
import os from 'node:os';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { FastifyInstance, FastifyListenOptions } from 'fastify';
import { GROUP, PLURAL, VERSION, type AdmissionSuite } from './api/types.ts';
import { CA_SECRET, MANAGED_BY_LABELS, OPERATOR_NAME, SUITE_LABEL, SUITE_VALIDATION, tlsSecretName } from './api/names.ts';
import { createAdmissionServer } from './admission/server.ts';
import { Metrics, type ReconcileKind, type ReconcileResultLabel } from './health/metrics.ts';
import { isSignedBy, readCertificate } from './certs/x509.ts';
import { caFromSecret } from './certs/authority.ts';
import { CertificateStore } from './certs/store.ts';
import type { OperatorConfig } from './config.ts';
import { CA_KEY, CaNotIssuedError, CaReconciler, type CaSecret } from './controller/ca.ts';
import { SELF_CERTIFICATE, SELF_KEY, SelfReconciler } from './controller/self.ts';
import { EventRecorder } from './controller/events.ts';
import { LeaderElector } from './controller/leader.ts';
import { WorkQueue } from './controller/queue.ts';
import { SuiteReconciler } from './controller/reconciler.ts';
import { ORPHANS_KEY, OrphanSweeper } from './controller/orphans.ts';
import { createHealthServer } from './health/server.ts';
import type { ClusterView } from './handlers/handler.ts';
import { connect, describeError, NotLeaderError, type CacheLookup, type Kube, type KubeObject } from './kube/client.ts';
import { watchCache, type WatchedCache } from './kube/watch.ts';
import { shareConnections } from './kube/connections.ts';
import { ObjectWatches } from './kube/objects.ts';
import { ParamsAccess } from './kube/params-access.ts';
import { componentLogger } from './log.ts';
import { SuiteRegistry } from './registry/registry.ts';
import { CachingAuthorizer, SubjectAccessReviewer } from './kube/authorizer.ts';
import type { Authorizer } from './api/authorization.ts';

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

type SecretObject = KubernetesObject & { data?: Record<string, string> };
type ConfigurationObject = KubernetesObject & { webhooks?: { clientConfig?: { caBundle?: string } }[] };

/** Past the garbage collector's discovery period: by then it has removed what it can. */
const ORPHAN_SWEEP_AFTER_DELETE_MS = 45_000;

const managedSelector = Object.entries(MANAGED_BY_LABELS).map(([k, v]) => `${k}=${v}`).join(',');

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
  /** Installs a served certificate; a different one replacing it is a rotation. */
  const serveCertificate = (key: string, data: Record<string, string>) => {
    const certPem = Buffer.from(data['tls.crt']!, 'base64').toString();
    const before = certificates.served(key);
    certificates.set(key, certPem, Buffer.from(data['tls.key']!, 'base64').toString());
    if (before !== undefined && before !== certPem) metrics.rotated('serving');
  };
  const events = new EventRecorder(kube, componentLogger('events'), identity);
  const noop = () => undefined;

  const namespaces = watchCache<KubernetesObject>(kubeConfig, { path: '/api/v1/namespaces', list: () => kube.core.listNamespace(), log, onChange: noop });
  const limitRanges = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/limitranges',
    list: () => kube.core.listLimitRangeForAllNamespaces(),
    log,
    onChange: noop,
  });
  const view: ClusterView = {
    namespace: (name) => namespaces.get(name) as Record<string, any> | undefined,
    limitRanges: (namespace) => limitRanges.list().filter((lr) => lr.metadata?.namespace === namespace) as Record<string, any>[],
  };
  const params = new ObjectWatches(kube, log, config.namespace);
  const authorizer = options.authorizer ?? new CachingAuthorizer(new SubjectAccessReviewer(kubeConfig));
  const registry = new SuiteRegistry({ view, params, authorizer, operatorNamespace: config.namespace, observers: metrics });
  // A webhook's series go with it (a suite deleted, or a webhook removed from one).
  registry.subscribe((change) =>
    'removed' in change ? metrics.forget(change.removed) : metrics.forget(change.suite.metadata.name, new Set(change.suite.spec.webhooks.map((w) => w.name))),
  );

  // Asked with the operator's own credentials (never the test's stand-in for CEL's authorizer).
  const paramsAccess = new ParamsAccess(kubeConfig, new SubjectAccessReviewer(kubeConfig));
  let draining = false;
  const admission: FastifyInstance = createAdmissionServer({ registry, certificates, metrics, log: componentLogger('admission'), paramsAccess, draining: () => draining });
  const listen = async () => {
    // reusePort: replicas on one host share the port (Node 24).
    await admission.listen({ port: config.servingPort, host: config.mode === 'local' ? 'localhost' : '::', reusePort: true } as FastifyListenOptions);
  };
  let servingPort = config.servingPort;
  if (options.serve !== false) {
    await listen();
    servingPort = (admission.server.address() as { port: number }).port;
  }
  const effective: OperatorConfig = { ...config, servingPort };

  // The watches' callbacks first run after their first list, by which time the queue exists.
  const suites: WatchedCache<AdmissionSuite> = watchCache<AdmissionSuite>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }) as Promise<KubernetesListObject<AdmissionSuite>>,
    log,
    onChange: (suite, deleted) => {
      const name = suite.metadata!.name!;
      if (deleted) {
        log.info('suite deleted; no longer served', { suite: name });
        registry.remove(name);
        certificates.remove(name);
        // A rotation step may have waited on this suite's bundle or leaf.
        if (caReconciler.rotating()) queue.add(CA_KEY);
        // Garbage collection removes its objects; if it cannot (its CRD just removed), the sweep does.
        queue.addAfter(ORPHANS_KEY, ORPHAN_SWEEP_AFTER_DELETE_MS);
        return;
      }
      // Every replica compiles every suite, once per generation, so every replica can serve it.
      registry.sync(suite);
      queue.add(name);
    },
  });

  let lastSigningCa: string | undefined;
  const secrets = watchCache<SecretObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/secrets`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedSecret({ namespace: config.namespace, labelSelector: managedSelector }) as Promise<KubernetesListObject<SecretObject>>,
    log,
    onChange: (secret, deleted) => {
      const name = secret.metadata!.name!;
      // A leaf re-signed by the new CA is what a rotation's last step waits for.
      if (caReconciler.rotating()) queue.add(CA_KEY);
      if (name === CA_SECRET) {
        queue.add(CA_KEY);
        const signing = deleted ? undefined : caFromSecret(secret.data, secret.metadata?.annotations)?.current.certPem;
        if (signing && lastSigningCa && signing !== lastSigningCa) metrics.rotated('ca');
        lastSigningCa = signing ?? lastSigningCa;
        queue.add(SELF_KEY);
        for (const suite of suites.list()) queue.add(suite.metadata!.name!);
        return;
      }
      if (name === SUITE_VALIDATION.secret) {
        const crt = secret.data?.['tls.crt'];
        const key = secret.data?.['tls.key'];
        if (deleted || !crt || !key) certificates.remove(SELF_CERTIFICATE);
        else serveCertificate(SELF_CERTIFICATE, secret.data!);
        queue.add(SELF_KEY);
        return;
      }
      const suite = secret.metadata?.labels?.[SUITE_LABEL];
      if (!suite || name !== tlsSecretName(suite)) return;
      const crt = secret.data?.['tls.crt'];
      const key = secret.data?.['tls.key'];
      if (deleted || !crt || !key) certificates.remove(suite);
      else serveCertificate(suite, secret.data!);
      queue.add(suite);
    },
  });

  // The Services we made, so one deleted or edited by hand is put back (the API server would
  // otherwise fail every call to its suite while the suite still said Ready).
  const services = watchCache<KubernetesObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/services`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedService({ namespace: config.namespace, labelSelector: managedSelector }),
    log,
    onChange: (object) => {
      if (object.metadata?.name === SUITE_VALIDATION.service) queue.add(SELF_KEY);
      const suite = object.metadata?.labels?.[SUITE_LABEL];
      if (suite && suites.get(suite)) queue.add(suite);
    },
  });

  // What we registered, so a configuration deleted or edited by hand is put back.
  const configurations = (['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'] as const).map((resource) =>
    watchCache<ConfigurationObject>(kubeConfig, {
      path: `/apis/admissionregistration.k8s.io/v1/${resource}`,
      labelSelector: managedSelector,
      list: () =>
        (resource === 'mutatingwebhookconfigurations'
          ? kube.admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managedSelector })
          : kube.admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managedSelector })) as Promise<KubernetesListObject<ConfigurationObject>>,
      log,
      onChange: (object) => {
        // A bundle carrying the successor is what a rotation's promotion waits for.
        if (caReconciler.rotating()) queue.add(CA_KEY);
        if (object.metadata?.name === SUITE_VALIDATION.configuration) queue.add(SELF_KEY);
        const suite = object.metadata?.labels?.[SUITE_LABEL];
        if (suite && suites.get(suite)) queue.add(suite);
      },
    }),
  );

  const caReconciler = new CaReconciler({
    kube,
    cached: () => secrets.get(CA_SECRET, config.namespace) as CaSecret | undefined,
    namespace: config.namespace,
    settings: { durationMs: config.caDurationMs, renewBeforeMs: config.caRenewBeforeMs, overlapMs: config.caOverlapMs },
    log: componentLogger('ca'),
    facts: {
      // Only configurations the API server may still call: one whose suite is gone waits only for
      // garbage collection, and no reconcile will ever update its bundle.
      allBundlesCarry: (certPem) =>
        configurations.every((cache) =>
          cache
            .list()
            .filter((c) => c.metadata?.name === SUITE_VALIDATION.configuration || suites.get(c.metadata?.labels?.[SUITE_LABEL] ?? '') !== undefined)
            .every((c) => (c.webhooks ?? []).every((w) => Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString().includes(certPem.trim()))),
        ),
      anyLeafSignedBy: (certPem) =>
        secrets.list().some((s) => s.metadata?.name !== CA_SECRET && s.data?.['tls.crt'] && isSignedBy(Buffer.from(s.data['tls.crt'], 'base64').toString(), certPem)) ||
        suites.list().some((s) => {
          const served = certificates.served(s.metadata!.name!);
          return served !== undefined && isSignedBy(served, certPem);
        }),
    },
  });
  const [mutatingConfigurations, validatingConfigurations] = configurations;
  const byKind: Record<string, WatchedCache<KubernetesObject>> = {
    Secret: secrets,
    Service: services,
    MutatingWebhookConfiguration: mutatingConfigurations!,
    ValidatingWebhookConfiguration: validatingConfigurations!,
  };
  const cached: CacheLookup = (header) => byKind[header.kind ?? '']?.get(header.metadata?.name ?? '', header.metadata?.namespace) as KubeObject | undefined;
  const selfReconciler = new SelfReconciler({ kube, config: effective, ca: caReconciler, cached, log: componentLogger('suite-validation') });
  const reconciler = new SuiteReconciler({ kube, config: effective, registry, ca: caReconciler, suites, cached, events, params, log: componentLogger('reconciler') });
  const sweeper = new OrphanSweeper({
    kube,
    suites,
    made: [
      { apiVersion: 'v1', kind: 'Secret', cache: secrets },
      { apiVersion: 'v1', kind: 'Service', cache: services },
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', cache: mutatingConfigurations! },
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', cache: validatingConfigurations! },
    ],
    log: componentLogger('orphans'),
  });
  const kindOf = (key: string): ReconcileKind => (key === CA_KEY ? 'ca' : key === SELF_KEY ? 'suite-validation' : key === ORPHANS_KEY ? 'orphans' : 'suite');
  const queue = new WorkQueue(
    async (name) => {
      const started = performance.now();
      const done = (result: ReconcileResultLabel) => metrics.reconciled(kindOf(name), result, (performance.now() - started) / 1e3);
      try {
        const result =
          name === CA_KEY
            ? await caReconciler.reconcile()
            : name === SELF_KEY
              ? await selfReconciler.reconcile()
              : name === ORPHANS_KEY
                ? await sweeper.reconcile()
                : await reconciler.reconcile(name);
        done(result?.requeueAfterMs !== undefined ? 'requeue' : 'success');
        return result;
      } catch (err) {
        // Leadership moved mid-reconcile: the new leader takes it from here.
        if (err instanceof NotLeaderError) return done('not-leader');
        // The CA is issued first (its key runs before any other); once it is, its Secret's event requeues everyone.
        if (err instanceof CaNotIssuedError) {
          done('requeue');
          queue.add(CA_KEY);
          return { requeueAfterMs: 1000 };
        }
        done('error');
        throw err;
      }
    },
    {
      onError: (name, err, retryInMs, failures) => {
        metrics.retried(kindOf(name));
        log.warn('reconcile failed; will retry', { key: name, error: describeError(err), retryInMs, failures });
      },
      onRecovered: (name, failures, lastError) => {
        const suite = suites.get(name);
        const message = `reconciled after ${failures} failed attempt(s), retried with capped exponential backoff; last error: ${describeError(lastError)}`;
        if (suite) void events.record(suite, 'Normal', 'Recovered', message);
      },
    },
    // The CA runs alone, and before anything queued after it: every other reconcile signs with it.
    { concurrency: config.maxConcurrentReconciles, exclusive: (key) => key === CA_KEY },
  );
  queue.setActive(false);

  const elector = new LeaderElector(
    kube,
    {
      namespace: config.namespace,
      name: OPERATOR_NAME,
      identity,
      leaseDurationMs: config.leaseDurationMs,
      renewDeadlineMs: config.renewDeadlineMs,
      retryPeriodMs: config.retryPeriodMs,
    },
    componentLogger('leader'),
    (leading) => {
      log.info(leading ? 'leading: this replica writes' : 'not leading: this replica serves only', { identity });
      if (leading) {
        // Level-based: a new leader looks at everything, adopting what exists.
        queue.add(CA_KEY);
        queue.add(SELF_KEY);
        queue.add(ORPHANS_KEY);
        for (const suite of suites.list()) queue.add(suite.metadata!.name!);
      }
      queue.setActive(leading);
    },
  );
  kube.mayWrite = () => elector.isLeader();
  metrics.attach({
    leader: () => elector.isLeader(),
    queueDepth: () => queue.depth,
    caCertificates: () => caExpiries(secrets.get(CA_SECRET, config.namespace)),
    suiteConditions: () => suites.list().map((suite) => suite.status?.conditions ?? []),
  });
  void Promise.all([suites.synced, secrets.synced]).then(() => elector.start());

  let synced = false;
  void Promise.all([suites.synced, secrets.synced]).then(() => (synced = true));
  const health = createHealthServer({
    ready: () => synced && !draining && admission.server.listening,
    metrics: () => metrics.render(),
    metricsContentType: metrics.contentType,
  });
  await new Promise<void>((resolve) => health.listen(config.metricsPort, config.mode === 'local' ? '127.0.0.1' : '::', resolve));

  log.info('operator started', { namespace: config.namespace, mode: config.mode, servingPort, metricsPort: config.metricsPort, identity });
  return {
    registry,
    certificates,
    kube,
    servingPort,
    isLeader: () => elector.isLeader(),
    serve: async () => {
      if (!admission.server.listening) await listen();
    },
    drain: async () => {
      draining = true;
      queue.stop();
      await elector.stop();
    },
    stop: async () => {
      queue.stop();
      await elector.stop();
      await Promise.all([suites, secrets, services, namespaces, limitRanges, params, ...configurations].map((w) => w.stop()));
      await new Promise((resolve) => health.close(resolve));
      await admission.close();
    },
  };
}

/** The notAfter of each CA the CA Secret holds (each PEM parsed once). */
const notAfters = new Map<string, Date>();
function caExpiries(secret: SecretObject | undefined): { ca: 'current' | 'next' | 'previous'; notAfter: Date }[] {
  const state = secret && caFromSecret(secret.data, secret.metadata?.annotations);
  if (!state) return [];
  const notAfter = (pem: string) => {
    let date = notAfters.get(pem);
    if (!date) notAfters.set(pem, (date = readCertificate(pem).notAfter));
    return date;
  };
  const cas: { ca: 'current' | 'next' | 'previous'; notAfter: Date }[] = [{ ca: 'current', notAfter: notAfter(state.current.certPem) }];
  if (state.next) cas.push({ ca: 'next', notAfter: notAfter(state.next.certPem) });
  if (state.previousCertPem) cas.push({ ca: 'previous', notAfter: notAfter(state.previousCertPem) });
  return cas;
}
