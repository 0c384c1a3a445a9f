/**
 * manager: what drives the reconcilers: the work queue (the CA's key alone and first), the
 * Watches that turn the caches' events into its keys (controller/watches.ts declares which), and
 * the leader elector that runs the queue, and the audit, on one replica only; the metrics that read
 * them. The elector starts once the suites and Secrets are listed; schema changes (a CRD edited)
 * wake the type checks. Makes no cache and no reconciler (owned.ts, reconcilers.ts).
 */
import { CA_SECRET, NAMESPACED, OPERATOR_NAME } from '../api/names.ts';
import { NAMESPACED_KEY } from '../controller/namespaced.ts';
import { describeError, type Kube } from '../apiserver/client.ts';
import type { AuditScanner } from '../audit/scanner.ts';
import { caFromSecret } from '../certs/authority.ts';
import type { CertificateStore } from '../certs/store.ts';
import { readCertificate } from '../certs/x509.ts';
import { CA_KEY } from '../controller/ca.ts';
import { dispatcher, kindOf, type Reconcilers } from '../controller/dispatch.ts';
import type { EventRecorder } from '../controller/events.ts';
import { LeaderElector } from '../controller/leader.ts';
import { WorkQueue, type ReconcileResult } from '../controller/queue.ts';
import { Watches, type SecretObject } from '../controller/watches.ts';
import type { OperatorConfig } from '../config.ts';
import type { AuditReading, Metrics } from '../health/metrics.ts';
import { componentLogger, type Logger } from '../log.ts';
import type { Owned } from './owned.ts';
import type { Registries } from './registries.ts';
import type { Serving } from './serving.ts';

/** How often the OpenAPI discovery document is compared with the last one (a CRD changed: type-check again). */
const SCHEMA_POLL_MS = 5_000;

export interface Leading {
  queue: WorkQueue;
  /** The queue of a replica that does not lead: it withholds the AdmissionPolicies the leader withholds (controller/namespaced.ts `follow`). */
  following: WorkQueue;
  watches: Watches;
  elector: LeaderElector;
  stop(): Promise<void>;
}

/** The queue and the Watches feeding it; made synchronously right after the caches (owned.ts), whose callbacks reach them. */
export function driveReconcilers(
  config: OperatorConfig,
  reconcilers: Reconcilers & { ca: { rotating(): boolean }; namespaced: { follow(): Promise<ReconcileResult> } },
  parts: { owned: Owned; registries: Registries; serving: Pick<Serving, 'suiteAuthors' | 'policyAuthors'>; certificates: CertificateStore; metrics: Metrics; events: EventRecorder; log: Logger },
): Pick<Leading, 'queue' | 'watches' | 'following'> {
  const { owned, serving, certificates, metrics, events, log } = parts;
  const queue = new WorkQueue(
    dispatcher(reconcilers, (kind, result, seconds) => metrics.reconciled(kind, result, seconds), () => queue.add(CA_KEY)),
    {
      onError: (name, err, retryInMs, failures) => {
        metrics.retried(kindOf(name));
        log.warn('reconcile failed; will retry', { key: name, error: describeError(err), retryInMs, failures });
      },
      onRecovered: (name, failures, lastError) => {
        const suite = owned.suites.get(name);
        const message = `reconciled after ${failures} failed attempt(s), retried with capped exponential backoff; last error: ${describeError(lastError)}`;
        if (suite) void events.record(suite, 'Normal', 'Recovered', message);
      },
    },
    // The CA runs alone, and before anything queued after it: every other reconcile signs with it.
    { concurrency: config.maxConcurrentReconciles, exclusive: (key) => key === CA_KEY },
  );
  queue.setActive(false);
  // Active while the other is not: every replica withholds what the leader withholds, judged alike.
  const following = new WorkQueue(() => reconcilers.namespaced.follow(), {
    onError: (name, err, retryInMs) => log.warn('could not judge the AdmissionPolicies; will retry', { key: name, error: describeError(err), retryInMs }),
    onRecovered: () => undefined,
  });
  const followPolicies = () => following.add(NAMESPACED_KEY);
  const watches = new Watches({
    queue,
    state: { rotating: () => reconcilers.ca.rotating(), hasSuite: (name) => owned.suites.get(name) !== undefined, suiteNames: () => owned.suites.list().map((s) => s.metadata!.name!) },
    // Every replica serves a suite with params only once its author may read them.
    registry: serving.suiteAuthors,
    // And an AdmissionPolicy with params only once its author may read them.
    // Each change judged again on a replica that does not lead (the leader's reconcile does it there).
    policies: {
      sync: (policy) => {
        serving.policyAuthors.sync(policy);
        followPolicies();
      },
      remove: (namespace, name) => {
        serving.policyAuthors.removePolicy(namespace, name);
        followPolicies();
      },
    },
    certificates,
    rotated: (kind) => metrics.rotated(kind),
    log,
  });
  return { queue, watches, following };
}

/** The elector (started once suites and Secrets are listed), the metrics that read it, and the schema poll. */
export function lead(
  config: OperatorConfig,
  kube: Kube,
  identity: string,
  driven: Pick<Leading, 'queue' | 'watches' | 'following'>,
  parts: { owned: Owned; registries: Registries; serving: Serving; metrics: Metrics; log: Logger; exceptionStatus?: { leading(leading: boolean): void } },
): Leading {
  const { queue, watches, following } = driven;
  const { owned, serving, metrics, log } = parts;
  const { auditor } = parts.registries;
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
      following.setActive(!leading);
      auditor?.leading(leading);
      parts.exceptionStatus?.leading(leading);
    },
  );
  kube.mayWrite = () => elector.isLeader();
  const thread = serving.thread;
  metrics.attach({
    leader: () => elector.isLeader(),
    queueDepth: () => queue.depth,
    caCertificates: () => caExpiries(owned.secrets.get(CA_SECRET, config.namespace)),
    suiteConditions: () => owned.suites.list().map((suite) => suite.status?.conditions ?? []),
    collect: thread && (() => thread.flushMetrics()),
    // The audit's gauges are the leader's (another replica's results are stale, or none); its scans and writes, each replica's own.
    ...(auditor && {
      audit: () => (elector.isLeader() ? auditReading(auditor.scanner) : undefined),
      auditReportWrites: () => auditor.scanner.reportWrites(),
      auditIntervalSeconds: () => config.auditIntervalMs / 1e3,
    }),
  });
  if (auditor) auditor.scanner.onScan = (seconds) => metrics.auditScanned(seconds);
  void Promise.all([owned.suites.synced, owned.secrets.synced]).then(() => elector.start());
  // A CRD's schema changed: suites are type-checked again (status.typeChecking).
  const schemaChanges = serving.schemas.watchChanges(() => watches.schemas(), SCHEMA_POLL_MS);
  return {
    queue,
    watches,
    following,
    elector,
    stop: async () => {
      schemaChanges.stop();
      queue.stop();
      following.stop();
      await elector.stop();
      await auditor?.stop();
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
