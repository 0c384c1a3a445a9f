/**
 * Wires the pieces of one operator process, and only wires them: it makes the watch caches, the
 * reconcilers, the work queue, the leader elector and the servers, and connects them. Every
 * replica watches suites and Secrets, compiles every suite into the registry, fills the
 * certificate store and serves admission; the elected leader alone runs the work queue that
 * drives the reconcilers (the only writers). What each event wakes, and the store filled from
 * Secrets, are controller/watches.ts's; which reconciler a key runs, controller/dispatch.ts's.
 * The caches sync before the elector starts; on stop the writers stop first and the servers
 * close last, since they may still be answering.
 */
import os from 'node:os';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { GROUP, PLURAL, POLICY_PLURAL, VERSION, type AdmissionPolicy, type AdmissionSuite } from './api/types.ts';
import { CA_SECRET, MANAGED_BY_LABELS, NAMESPACED, OPERATOR_NAME, SUITE_LABEL } from './api/names.ts';
import { AdmissionServer } from './admission/server.ts';
import { AdmissionThread } from './admission/threads/thread.ts';
import { Metrics, type AuditReading } from './health/metrics.ts';
import { readCertificate } from './certs/x509.ts';
import { caFromSecret } from './certs/authority.ts';
import { CertificateStore } from './certs/store.ts';
import type { OperatorConfig } from './config.ts';
import { CA_KEY, CaReconciler, cachedRotationFacts, type CaSecret, type ConfigurationObject } from './controller/ca.ts';
import { dispatcher, kindOf, type Reconcilers } from './controller/dispatch.ts';
import { SELF_CERTIFICATE, SelfReconciler } from './controller/self.ts';
import { Watches, type SecretObject } from './controller/watches.ts';
import { EventRecorder } from './controller/events.ts';
import { LeaderElector } from './controller/leader.ts';
import { WorkQueue } from './controller/queue.ts';
import { SuiteReconciler } from './controller/reconciler.ts';
import type { ServeCertificate } from './controller/serving.ts';
import { OrphanSweeper } from './controller/orphans.ts';
import { NativeHandover } from './controller/native.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS } from './native/compile.ts';
import { nativeRefusals } from './native/dry-run.ts';
import { createHealthServer } from './health/server.ts';
import { LookupNotReady, type ClusterView } from './handlers/handler.ts';
import { connect, describeError, type CacheLookup, type Kube, type KubeObject } from './apiserver/client.ts';
import { watchTakenNames } from './apiserver/names.ts';
import { watchCache, type WatchedCache } from './apiserver/watch.ts';
import { shareConnections } from './apiserver/connections.ts';
import { ObjectWatches } from './apiserver/params-watches.ts';
import { LookupCaches } from './apiserver/lookups.ts';
import { ParamsAccess } from './apiserver/params-access.ts';
import { PolicyAuthorRights } from './apiserver/policy-author.ts';
import type { ParamsAccessCheck } from './admission/suite-validation.ts';
import { OpenApiSchemas } from './apiserver/openapi.ts';
import { componentLogger } from './log.ts';
import { SuiteRegistry } from './registry/registry.ts';
import { PolicyRegistry } from './registry/policies.ts';
import { Auditor } from './audit/auditor.ts';
import { startHandlerModules } from './custom/serve.ts';
import { liveResults } from './audit/live.ts';
import type { WebhookObserver } from './registry/compile.ts';
import type { AuditScanner } from './audit/scanner.ts';
import { NAMESPACED_KEY, NamespacedReconciler } from './controller/namespaced.ts';
import { protectedNamespaces } from './controller/desired.ts';
import { CachingAuthorizer, SubjectAccessReviewer } from './apiserver/authorizer.ts';
import { DiscoveryMapper } from './apiserver/discovery.ts';
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

/** How often the OpenAPI discovery document is compared with the last one (a CRD changed: type-check again). */
const SCHEMA_POLL_MS = 5_000;

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
  const events = new EventRecorder(kube, componentLogger('events'), identity);

  // Copied into the admission thread as they change (it is made below, once the caches are).
  let mirrorTo: AdmissionThread | undefined;
  const namespaces = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/namespaces',
    list: () => kube.core.listNamespace(),
    log,
    onChange: (namespace, deleted) => mirrorTo?.mirror('Namespace', namespace, deleted),
  });
  const limitRanges = watchCache<KubernetesObject>(kubeConfig, {
    path: '/api/v1/limitranges',
    list: () => kube.core.listLimitRangeForAllNamespaces(),
    log,
    onChange: (limitRange, deleted) => mirrorTo?.mirror('LimitRange', limitRange, deleted),
  });
  // The shared lookup caches: watched only while a served suite uses a handler that reads the kind.
  const lookups = new LookupCaches(kube, componentLogger('lookups'));
  // Teams' handler modules (src/custom), served before any suite is compiled; each module runs in a worker of its own, with copies of the lookups it reads.
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
  const authorizer = options.authorizer ?? new CachingAuthorizer(new SubjectAccessReviewer(kubeConfig));
  // What an ownerReference's kind is served as (OwnerReferencesPermissionEnforcement), from API discovery.
  const mapper = new DiscoveryMapper(kubeConfig);
  // A webhook's answers are counted; those it allowed with Warn or Audit failures are also the audit's live results.
  const observers = {
    webhook: (suite: string, webhook: string): WebhookObserver => {
      const counted = metrics.webhook(suite, webhook);
      return {
        answered: (operation, outcome, seconds, failurePolicy) => counted.answered(operation, outcome, seconds, failurePolicy),
        evaluated: (seconds, cost) => counted.evaluated(seconds, cost),
        shadowed: (request, decision) => {
          const live = auditor && liveResults(request, decision);
          if (live) auditor!.live(suite, webhook, live.ref, live.results);
        },
      };
    },
  };
  const registry = new SuiteRegistry({ view, params, authorizer, mapper, operatorNamespace: config.namespace, nativeEnforcement: config.nativeEnforcement, observers });
  // A webhook's series go with it (a suite deleted, or a webhook removed from one).
  registry.subscribe((change) =>
    'removed' in change ? metrics.forget(change.removed) : metrics.forget(change.suite.metadata.name, new Set(change.suite.spec.webhooks.map((w) => w.name))),
  );
  registry.subscribe(() => lookups.use(registry.lookups()));

  // The teams' AdmissionPolicies: compiled as a suite's webhooks, within the limits the cluster admin set.
  const policyLimits = { mutations: config.namespacedPolicyMutations, costBudget: config.namespacedPolicyCostBudget, namespaceCostBudget: config.namespacedPolicyNamespaceCostBudget, deadlineMs: config.namespacedPolicyDeadlineMs, maxBytes: config.namespacedPolicyMaxBytes };
  const policyRegistry = new PolicyRegistry({
    view,
    params,
    authorizer,
    mapper,
    operatorNamespace: config.namespace,
    limits: policyLimits,
    protectedNamespaces: protectedNamespaces(config),
  });

  // The background audit (the leader's, off the admission path): targets follow what the registries serve.
  const auditor = config.audit
    ? new Auditor({
        kube,
        log: componentLogger('audit'),
        config,
        context: { view, params, mapper, operatorNamespace: config.namespace },
        limits: policyLimits,
        namespaceLabels: (name) => (namespaces.get(name)?.metadata?.labels ?? undefined) as Record<string, string> | undefined,
        statusChanged: (target) => queue.add('suite' in target ? target.suite : NAMESPACED_KEY),
      })
    : undefined;
  if (auditor) {
    registry.subscribe((change) => {
      const name = 'removed' in change ? change.removed : change.suite.metadata.name;
      const served = 'suite' in change && registry.get(name)?.errors.length === 0;
      auditor.suite(name, served ? change.suite : undefined);
    });
    const auditPolicy = (namespace: string, name: string) => {
      const compiled = policyRegistry.get(namespace, name);
      auditor.policy(namespace, name, compiled && policyRegistry.served(namespace).includes(compiled) ? compiled.source : undefined);
    };
    policyRegistry.subscribe((change) => {
      if ('policy' in change) auditPolicy(change.policy.metadata.namespace, change.policy.metadata.name);
      else if ('removed' in change) auditor.policy(change.removed.namespace, change.removed.name, undefined);
      else for (const p of policyRegistry.all()) auditPolicy(p.namespace, p.name);
    });
  }

  // Asked with the operator's own credentials (never the test's stand-in for CEL's authorizer).
  const reviewer = new SubjectAccessReviewer(kubeConfig);
  const readAccess = new ParamsAccess(kubeConfig, reviewer);
  const authorRights = new PolicyAuthorRights(reviewer);
  const paramsAccess: ParamsAccessCheck = {
    refusals: (user, uses) => readAccess.refusals(user, uses),
    mutationRefusals: (user, namespace, rules) => authorRights.mutationRefusals(user, namespace, rules),
    ...(config.nativeEnforcement ? { nativeRefusals: (suite: AdmissionSuite, old: AdmissionSuite | undefined) => nativeRefusals(kube, config, suite, old) } : {}),
  };
  let draining = false;
  // Read at apply and reconcile time only (type checking), cached by the documents' hashes.
  const schemas = new OpenApiSchemas(kubeConfig);
  // The endpoint's limits the flags set: connections in the server that listens, review workers in the one that judges large reviews (either may be both).
  const limits = { maxConnectionsPerAddress: config.maxConnectionsPerAddress, reviewWorkers: config.reviewWorkers };
  // With the admission thread, this server does not listen: it answers what the thread forwards.
  const admission = new AdmissionServer({ registry, policies: policyRegistry, certificates, metrics, log: componentLogger('admission'), paramsAccess, schemas: { kindsFor: (g, v, r) => schemas.kindsFor(g, v, r), schema: (gvk) => schemas.schema(gvk), byDefault: config.typeCheckErrors }, limits, tenants: { workers: config.namespacedPolicyWorkers }, draining: () => draining });
  const thread = config.admissionThread
    ? new AdmissionThread({
        server: admission,
        registry,
        certificates,
        metrics,
        mirrors: { Namespace: namespaces, LimitRange: limitRanges },
        params,
        lookups,
        log: componentLogger('admission'),
        limits,
        handlerModules: config.handlerModules,
        shadowed: (suite, webhook, ref, results) => auditor?.live(suite, webhook, ref, results),
        // The validation webhooks answered in the thread, as `admission` answers them: an apply is not queued behind reconciles.
        validation: { paramsAccess: true, schemas: { subscribe: (l) => schemas.subscribe(l), refresh: (key) => schemas.refresh(key), byDefault: config.typeCheckErrors }, policies: policyRegistry },
      })
    : undefined;
  mirrorTo = thread;
  const listening = () => (thread ? thread.listening : admission.server.listening);
  const listen = async () => {
    const options = { port: config.servingPort, host: config.mode === 'local' ? 'localhost' : '::', reusePort: true };
    await (thread ? thread.listen(options) : admission.listen(options));
  };
  let servingPort = config.servingPort;
  if (options.serve !== false) {
    await listen();
    servingPort = thread ? thread.port! : (admission.server.address() as { port: number }).port;
  }
  const effective: OperatorConfig = { ...config, servingPort };

  // The watches' callbacks first run after their first list, by which time `watches` (and the
  // queue it adds to) exists. What each event wakes is declared in controller/watches.ts.
  const suites: WatchedCache<AdmissionSuite> = watchCache<AdmissionSuite>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }) as Promise<KubernetesListObject<AdmissionSuite>>,
    log,
    onChange: (suite, deleted) => watches.suite(suite, deleted),
  });
  const policies: WatchedCache<AdmissionPolicy> = watchCache<AdmissionPolicy>(kubeConfig, {
    path: `/apis/${GROUP}/${VERSION}/${POLICY_PLURAL}`,
    list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL }) as Promise<KubernetesListObject<AdmissionPolicy>>,
    log,
    onChange: (policy, deleted) => watches.policy(policy, deleted),
  });
  let policiesSynced = false;
  void policies.synced.then(() => (policiesSynced = true));
  const secrets = watchCache<SecretObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/secrets`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedSecret({ namespace: config.namespace, labelSelector: managedSelector }) as Promise<KubernetesListObject<SecretObject>>,
    log,
    onChange: (secret, deleted) => watches.secret(secret, deleted),
  });
  // The Services we made, so one deleted or edited by hand is put back (the API server would
  // otherwise fail every call to its suite while the suite still said Ready).
  const services = watchCache<KubernetesObject>(kubeConfig, {
    path: `/api/v1/namespaces/${config.namespace}/services`,
    labelSelector: managedSelector,
    list: () => kube.core.listNamespacedService({ namespace: config.namespace, labelSelector: managedSelector }),
    log,
    onChange: (service) => watches.service(service),
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
      onChange: (configuration) => watches.configuration(configuration),
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
      onChange: (object) => watches.native(object),
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

  const caReconciler = new CaReconciler({
    kube,
    cached: () => secrets.get(CA_SECRET, config.namespace) as CaSecret | undefined,
    namespace: config.namespace,
    settings: { durationMs: config.caDurationMs, renewBeforeMs: config.caRenewBeforeMs, overlapMs: config.caOverlapMs },
    log: componentLogger('ca'),
    // What the endpoint serves: with the admission thread, what it acknowledged as well as what the store holds.
    facts: cachedRotationFacts({ secrets, suites, configurations, certificates: thread ?? certificates }),
  });
  // A rotation is counted once, by whichever of the reconcile and the Secret's watch event installs the new certificate first.
  const serve: ServeCertificate = (key, certPem, keyPem) => {
    if (certificates.install(key, certPem, keyPem)) metrics.rotated('serving');
  };
  const reconcilers: Reconcilers = {
    ca: caReconciler,
    self: new SelfReconciler({ kube, config: effective, ca: caReconciler, cached, serve, log: componentLogger('suite-validation') }),
    orphans: new OrphanSweeper({ kube, suites, made, log: componentLogger('orphans') }),
    namespaced: new NamespacedReconciler({
      kube,
      config: effective,
      ca: caReconciler,
      policies,
      synced: () => policiesSynced,
      registry: policyRegistry,
      certificates,
      cached,
      schemas,
      authorRights,
      ...(auditor ? { audit: (namespace: string, name: string) => auditor.policyStatus(namespace, name) } : {}),
      log: componentLogger('namespaced'),
    }),
    suite: new SuiteReconciler({
      kube,
      config: effective,
      registry,
      ca: caReconciler,
      suites,
      cached,
      events,
      params,
      schemas,
      serve,
      native: new NativeHandover({
        kube,
        config: effective,
        cached,
        nativeOwned: (suite) =>
          nativeCaches.flatMap((cache) => cache.list().filter((o) => o.metadata?.labels?.[SUITE_LABEL] === suite)).map((o) => o as KubeObject),
        now: () => Date.now(),
      }),
      servesGeneration: thread && ((name, uid, generation) => thread.whenServing(name, uid, generation)),
      ...(auditor ? { audit: (name: string) => auditor.suiteStatus(name) } : {}),
      log: componentLogger('reconciler'),
    }),
  };
  const queue = new WorkQueue(
    dispatcher(reconcilers, (kind, result, seconds) => metrics.reconciled(kind, result, seconds), () => queue.add(CA_KEY)),
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
  const watches = new Watches({
    queue,
    state: { rotating: () => caReconciler.rotating(), hasSuite: (name) => suites.get(name) !== undefined, suiteNames: () => suites.list().map((s) => s.metadata!.name!) },
    registry,
    policies: policyRegistry,
    certificates,
    rotated: (kind) => metrics.rotated(kind),
    log,
  });

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
      if (leading) watches.leading();
      queue.setActive(leading);
      auditor?.leading(leading);
    },
  );
  kube.mayWrite = () => elector.isLeader();
  metrics.attach({
    leader: () => elector.isLeader(),
    queueDepth: () => queue.depth,
    caCertificates: () => caExpiries(secrets.get(CA_SECRET, config.namespace)),
    suiteConditions: () => suites.list().map((suite) => suite.status?.conditions ?? []),
    collect: thread && (() => thread.flushMetrics()),
    // The audit's gauges are the leader's (another replica's results are stale, or none); its scans and writes, each replica's own.
    ...(auditor && {
      audit: () => (elector.isLeader() ? auditReading(auditor.scanner) : undefined),
      auditReportWrites: () => auditor.scanner.reportWrites(),
      auditIntervalSeconds: () => config.auditIntervalMs / 1e3,
    }),
  });
  if (auditor) auditor.scanner.onScan = (seconds) => metrics.auditScanned(seconds);
  void Promise.all([suites.synced, secrets.synced]).then(() => elector.start());
  // A CRD's schema changed: suites are type-checked again (status.typeChecking).
  const schemaChanges = schemas.watchChanges(() => watches.schemas(), SCHEMA_POLL_MS);

  let synced = false;
  // Ready only once the AdmissionPolicies are listed too: a replica that answered their webhook before would admit what they deny.
  void Promise.all([suites.synced, secrets.synced, policies.synced]).then(() => (synced = true));
  const health = createHealthServer({
    ready: () => synced && !draining && listening(),
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
      if (!listening()) await listen();
    },
    drain: async () => {
      draining = true;
      thread?.drain();
      queue.stop();
      await elector.stop();
    },
    stop: async () => {
      schemaChanges.stop();
      queue.stop();
      await elector.stop();
      await auditor?.stop();
      await Promise.all([suites, policies, secrets, services, namespaces, limitRanges, params, lookups, ...configurations, ...nativeCaches, ...[...takenNames.values()].map((t) => t.names)].map((w) => w.stop()));
      await new Promise((resolve) => health.close(resolve));
      await thread?.close();
      await admission.close();
      await handlerModules?.close();
    },
  };
}

/** The audit's counts by suite and webhook; every AdmissionPolicy together, as the policies' webhook (suite ""). */
function auditReading(scanner: AuditScanner): AuditReading {
  // `<suite>/<webhook>`: a suite's name has no `/`.
  const counts = scanner.countsBy((t) => (t.source.kind === 'AdmissionSuite' ? `${t.source.name}/${t.source.webhook}` : `/${NAMESPACED.webhook}`));
  return {
    objects: [...counts].map(([key, c]) => ({ suite: key.slice(0, key.indexOf('/')), webhook: key.slice(key.indexOf('/') + 1), ...c })),
    lastScanAt: scanner.stats.lastScanAt,
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
