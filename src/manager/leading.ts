/**
 * manager: what drives the reconcilers: the work queue (made first; the CA's key alone and first),
 * the Watches that turn the caches' events into its keys (controller/watches.ts declares which), the
 * leader elector, and the schema poll; the metrics that read them. Makes no cache and no reconciler
 * (owned.ts, reconcilers.ts); when each starts and stops is lifecycle.ts's.
 */
import { CA_SECRET, NAMESPACED, OPERATOR_NAME } from '../api/names.ts';
import { NAMESPACED_KEY } from '../controller/admission-policies.ts';
import { describeError, type Kube } from '../apiserver/client.ts';
import type { AuditScanner } from '../audit/scanner.ts';
import { caFromSecret } from '../certs/authority.ts';
import type { CertificateStore } from '../certs/store.ts';
import { readCertificate } from '../certs/x509.ts';
import { CA_KEY } from '../controller/ca.ts';
import { Dispatch } from '../controller/dispatch.ts';
import type { EventRecorder } from '../controller/events.ts';
import { LeaderElector } from '../controller/leader.ts';
import { WorkQueue } from '../controller/queue.ts';
import { Watches, type SecretObject } from '../controller/watches.ts';
import type { OperatorConfig } from '../config.ts';
import type { AuditReading, Metrics } from '../health/metrics.ts';
import { componentLogger, type Logger } from '../log.ts';
import type { Runnable } from './lifecycle.ts';
import type { Owned } from './owned.ts';
import type { Reconcilers } from './reconcilers.ts';
import type { Registries } from './registries.ts';
import type { Serving } from './serving.ts';

/** How often the OpenAPI discovery document is compared with the last one (a CRD changed: type-check again). */
const SCHEMA_POLL_MS = 5_000;

/** The work queue, made before what it runs (inactive until this replica leads): `dispatch.register` gives it the reconcilers. */
export function makeQueue(config: OperatorConfig, parts: { owned: Owned; metrics: Metrics; events: EventRecorder; log: Logger }): { queue: WorkQueue; dispatch: Dispatch } {
  const { owned, metrics, events, log } = parts;
  const dispatch = new Dispatch(
    (kind, result, seconds) => metrics.reconciled(kind, result, seconds),
    () => queue.add(CA_KEY),
  );
  const queue = new WorkQueue(
    dispatch.reconcile,
    {
      onError: (name, err, retryInMs, failures) => {
        metrics.retried(dispatch.kindOf(name));
        log.warn('reconcile failed; will retry', { key: name, error: describeError(err), retryInMs, failures });
      },
      onRecovered: (name, failures, lastError) => {
        const suite = owned.suites.get(name);
        const message = `reconciled after ${failures} failed attempt(s), retried with capped exponential backoff; last error: ${describeError(lastError)}`;
        if (suite) void events.record(suite, 'Normal', 'Recovered', message);
      },
    },
    { concurrency: config.maxConcurrentReconciles, exclusive: dispatch.alone },
  );
  queue.setActive(false);
  return { queue, dispatch };
}

/**
 * The Watches that turn the caches' events into the queue's keys (and keep what every replica
 * serves), and the queue of a replica that does not lead: it withholds the AdmissionPolicies the
 * leader withholds (controller/admission-policies.ts `follow`), judged alike.
 */
export function makeWatches(
  queue: WorkQueue,
  reconcilers: Pick<Reconcilers, 'ca' | 'namespaced'>,
  parts: { owned: Owned; serving: Pick<Serving, 'suiteAuthors' | 'policyAuthors'>; certificates: CertificateStore; metrics: Metrics; log: Logger },
): { watches: Watches; following: WorkQueue } {
  const { owned, serving, certificates, metrics, log } = parts;
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
  return { watches, following };
}

/** The leader elector (the lifecycle starts it), telling `leading` of each change; the API clients write only while it leads. */
export function makeElector(config: OperatorConfig, kube: Kube, identity: string, log: Logger, leading: (leading: boolean) => void): LeaderElector {
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
    (isLeader) => {
      log.info(isLeader ? 'leading: this replica writes' : 'not leading: this replica serves only', { identity });
      leading(isLeader);
    },
  );
  kube.mayWrite = () => elector.isLeader();
  return elector;
}

/** A CRD's schema changed: suites are type-checked again (status.typeChecking). Polled on every replica; the queue runs the keys only on the leader. */
export function schemaPoll(serving: Pick<Serving, 'schemas'>, watches: Watches): Runnable {
  let poll: { stop(): void } | undefined;
  return {
    name: 'schema poll',
    start: () => void (poll = serving.schemas.watchChanges(() => watches.schemas(), SCHEMA_POLL_MS)),
    stop: () => poll?.stop(),
  };
}

/** The metrics that read the elector, the queue, the caches and the audit. */
export function attachMetrics(config: OperatorConfig, elector: Pick<LeaderElector, 'isLeader'>, queue: WorkQueue, parts: { owned: Owned; registries: Registries; serving: Serving; metrics: Metrics }): void {
  const { owned, serving, metrics } = parts;
  const { auditor } = parts.registries;
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
