/**
 * The operator's Prometheus metrics (prom-client), named `portcullis_…` with help and bounded labels
 * (suites, webhooks, operations, decisions; never an object's name, namespace or uid). Owns the metric
 * objects and a small recording API; the request path records through WebhookMetrics
 * (webhook-metrics.ts). State (certificate expiry, leadership, queue depth, suites by condition, audit
 * counts) is read from attached sources when scraped. Records nothing by itself; makes no calls.
 */
import client from 'prom-client';
import { VERSION } from '../version.ts';
import { LATENCY_BUCKETS, WebhookMetrics, type AdmissionInstruments } from './webhook-metrics.ts';
import { BucketHistogram, SeriesCounter } from './request-series.ts';
import type { WorkerKind } from '../workers/restarts.ts';

/** What the operator knows that a scrape reports as it is then; each part may be missing (tests, the bench). */
export interface MetricSources {
  /** Writes this process made to the Kubernetes API (only the leader writes). */
  writes?(): number;
  leader?(): boolean;
  /** The notAfter of every serving certificate installed for the TLS handshakes; suite undefined for the operator's own. */
  servingCertificates?(): Iterable<{ suite?: string; notAfter: Date }>;
  /** The CAs of the operator's CA Secret as last seen: current, and next and previous during a rotation. */
  caCertificates?(): Iterable<{ ca: 'current' | 'next' | 'previous'; notAfter: Date }>;
  /** Each suite's conditions (type and status) as last seen. */
  suiteConditions?(): Iterable<{ type: string; status: string }[]>;
  queueDepth?(): number;
  /** Brings in what was counted elsewhere (the admission thread's answers) before a scrape is rendered. */
  collect?(): Promise<void>;
  /** The background audit as it stands, read once a scrape; undefined while this replica does not audit (it does not lead, or --audit=false). */
  audit?(): AuditReading | undefined;
  /** Report writes the background audit made since start (each replica its own, as it led). */
  auditReportWrites?(): number;
  /** The full audit scan's interval (--audit-interval), in seconds; undefined with --audit=false. */
  auditIntervalSeconds?(): number | undefined;
}

/** What the background audit's gauges report (the leader's). */
export interface AuditReading {
  /**
   * Objects judged and failing, by suite and webhook: every AdmissionPolicy together under suite
   * "" and the policies' webhook (a policy is a namespace's object: never a label).
   */
  objects: Iterable<{ suite: string; webhook: string; evaluated: number; failing: number }>;
  /** When the last full scan completed, or the audit started on this replica if later (ms since the epoch). */
  lastScanAt: number;
}

/** Full audit scans: from a fraction of a second (a few objects) to minutes (a large cluster). */
export const AUDIT_SCAN_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** The work-queue keys the controller reconciles, as a bounded label (never a suite's name). */
export type ReconcileKind = 'suite' | 'ca' | 'suite-validation' | 'orphans' | 'namespaced';
export type ReconcileResultLabel = 'success' | 'requeue' | 'error' | 'not-leader';

/**
 * Default runtime metrics (event-loop lag, heap, GC, handles) once per process, however many
 * operators a test starts; unprefixed (`nodejs_*`, `process_*`), the names every Node.js dashboard
 * expects, as controller-runtime's `go_*` and `process_*` are.
 */
let runtime: client.Registry | undefined;
function runtimeRegistry(): client.Registry {
  if (!runtime) {
    runtime = new client.Registry();
    client.collectDefaultMetrics({ register: runtime });
  }
  return runtime;
}

export class Metrics {
  readonly registry = new client.Registry();
  private sources: MetricSources = {};
  private readonly instruments: AdmissionInstruments;
  private readonly webhooks = new Map<string, Map<string, WebhookMetrics>>();
  private readonly rejected: client.Counter<'code'>;
  private readonly rotations: client.Counter<'kind'>;
  private readonly reconcileDuration: client.Histogram<'kind' | 'result'>;
  private readonly reconcileErrors: client.Counter<'kind'>;
  private readonly retries: client.Counter<'kind'>;
  private readonly auditScans: client.Histogram;
  /** The audit as read for the last scrape rendered (its gauges read it once a scrape, not once each: counting walks every result). */
  private auditNow: AuditReading | undefined;

  constructor(sources: MetricSources = {}) {
    this.sources = sources;
    runtimeRegistry();
    const registers = [this.registry];
    const read = <T>(fn: (s: MetricSources) => T) => fn(this.sources);

    this.instruments = {
      requests: new SeriesCounter({
        name: 'portcullis_admission_requests_total',
        help: 'AdmissionReviews answered, by suite, webhook, operation and decision (allowed, denied, patched, warned, error: answered by failurePolicy).',
        registers,
      }),
      // The request path's series: see request-series.ts for why not prom-client's own.
      duration: new BucketHistogram({
        name: 'portcullis_admission_request_duration_seconds',
        help: 'Time from an AdmissionReview read to its answer sent, by suite and webhook.',
        buckets: LATENCY_BUCKETS,
        registers,
      }),
      celDuration: new BucketHistogram({
        name: 'portcullis_admission_cel_evaluation_duration_seconds',
        help: "Time spent evaluating one webhook's CEL variables, validations, messages, audit annotations or mutations for one request.",
        buckets: LATENCY_BUCKETS,
        registers,
      }),
      celCost: new BucketHistogram({
        name: 'portcullis_admission_cel_evaluation_cost',
        help: "CEL cost (the API server's cost units; its budget is 10,000,000 per evaluation) one webhook's evaluation of one request spent.",
        buckets: [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
        registers,
      }),
      failures: new SeriesCounter({
        name: 'portcullis_admission_failure_policy_total',
        help: "Evaluation errors (an expression's error, cost budget exhausted, a handler's failure, params missing) answered by the webhook's failurePolicy, by suite, webhook and failure_policy (Fail denies, Ignore allows); also a handler's backend that failed (ImagePolicyWebhook's, answered as its defaultAllow says).",
        registers,
      }),
    };
    this.rejected = new client.Counter({
      name: 'portcullis_admission_rejected_requests_total',
      help: 'Requests refused before a decision (malformed, unknown webhook, wrong content type), by code.',
      labelNames: ['code'],
      registers,
    });

    new client.Gauge({
      name: 'portcullis_serving_certificate_expiry_seconds',
      help: 'Seconds until the notAfter of each serving certificate installed for TLS handshakes: kind="suite" per suite, kind="suite-validation" for the operator\'s own webhook.',
      labelNames: ['kind', 'suite'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const { suite, notAfter } of read((s) => s.servingCertificates?.() ?? [])) {
          this.set(suite === undefined ? { kind: 'suite-validation' } : { kind: 'suite', suite }, (notAfter.getTime() - now) / 1e3);
        }
      },
    });
    new client.Gauge({
      name: 'portcullis_ca_certificate_expiry_seconds',
      help: "Seconds until the notAfter of each CA in the operator's CA Secret: ca=current (signs), next (trusted, not signing yet), previous (still trusted).",
      labelNames: ['ca'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const { ca, notAfter } of read((s) => s.caCertificates?.() ?? [])) this.set({ ca }, (notAfter.getTime() - now) / 1e3);
      },
    });
    this.rotations = new client.Counter({
      name: 'portcullis_certificate_rotations_total',
      help: 'Certificates this replica saw replaced: kind="serving" a served certificate renewed, kind="ca" the signing CA changed.',
      labelNames: ['kind'],
      registers,
    });

    this.reconcileDuration = new client.Histogram({
      name: 'portcullis_reconcile_duration_seconds',
      help: 'Time of one reconcile, by kind (suite, ca, suite-validation, orphans: the sweep of what deleted suites left) and result (success, requeue, error, not-leader).',
      labelNames: ['kind', 'result'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.reconcileErrors = new client.Counter({
      name: 'portcullis_reconcile_errors_total',
      help: 'Reconciles that failed (and will be retried with backoff), by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.retries = new client.Counter({
      name: 'portcullis_workqueue_retries_total',
      help: 'Work-queue keys scheduled again after a failed reconcile, by kind.',
      labelNames: ['kind'],
      registers,
    });
    new client.Gauge({
      name: 'portcullis_workqueue_depth',
      help: 'Keys waiting in the work queue (only the leader runs it).',
      registers,
      collect() {
        this.set(read((s) => s.queueDepth?.() ?? 0));
      },
    });
    new client.Gauge({
      name: 'portcullis_suites',
      help: 'AdmissionSuites by condition type and status, as this replica last saw them.',
      labelNames: ['condition', 'status'],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, { condition: string; status: string; n: number }>();
        for (const conditions of read((s) => s.suiteConditions?.() ?? [])) {
          for (const { type, status } of conditions) {
            const key = `${type}\n${status}`;
            const entry = counts.get(key) ?? { condition: type, status, n: 0 };
            entry.n++;
            counts.set(key, entry);
          }
        }
        for (const { condition, status, n } of counts.values()) this.set({ condition, status }, n);
      },
    });
    new client.Gauge({
      name: 'portcullis_leader',
      help: '1 while this replica holds the leader Lease (and writes), else 0.',
      registers,
      collect() {
        this.set(read((s) => s.leader?.()) ? 1 : 0);
      },
    });
    new client.Counter({
      name: 'portcullis_api_writes_total',
      help: 'Writes this process made to the Kubernetes API (only the leader writes).',
      registers,
      collect() {
        this.reset();
        this.inc(read((s) => s.writes?.() ?? 0));
      },
    });

    // The background audit (src/audit), the leader's: another replica reports no objects, and 0 as its last scan.
    const audit = () => this.auditNow;
    new client.Gauge({
      name: 'portcullis_audit_objects',
      help: 'Objects the background audit judged, by suite and webhook (every AdmissionPolicy together: suite "", webhook admissionpolicies.admission.portcullis.dev); only the leader reports them.',
      labelNames: ['suite', 'webhook'],
      registers,
      collect() {
        this.reset();
        for (const { suite, webhook, evaluated } of audit()?.objects ?? []) this.set({ suite, webhook }, evaluated);
      },
    });
    new client.Gauge({
      name: 'portcullis_audit_failing_objects',
      help: "Objects the background audit found failing (a fail or error result: a [Warn]-only webhook's warnings are not failures), by suite and webhook as portcullis_audit_objects; only the leader reports them.",
      labelNames: ['suite', 'webhook'],
      registers,
      collect() {
        this.reset();
        for (const { suite, webhook, failing } of audit()?.objects ?? []) this.set({ suite, webhook }, failing);
      },
    });
    new client.Gauge({
      name: 'portcullis_audit_last_scan_timestamp_seconds',
      help: 'When the last full audit scan completed (Unix time), or this replica began auditing if later; 0 on a replica that does not audit (not the leader, or --audit=false).',
      registers,
      collect() {
        this.set((audit()?.lastScanAt ?? 0) / 1e3);
      },
    });
    new client.Gauge({
      name: 'portcullis_audit_interval_seconds',
      help: 'The interval of full audit scans (--audit-interval); 0 with --audit=false.',
      registers,
      collect() {
        this.set(read((s) => s.auditIntervalSeconds?.()) ?? 0);
      },
    });
    this.auditScans = new client.Histogram({
      name: 'portcullis_audit_scan_duration_seconds',
      help: 'Time of each full audit scan this replica completed: listing and judging every object the audited suites and policies select (its _count: the scans).',
      buckets: AUDIT_SCAN_BUCKETS,
      registers,
    });
    new client.Counter({
      name: 'portcullis_audit_report_writes_total',
      help: "Writes of the background audit's reports (creates, updates, deletes of Reports, ClusterReports and, with --policy-reports, PolicyReports), also counted in portcullis_api_writes_total.",
      registers,
      collect() {
        this.reset();
        this.inc(read((s) => s.auditReportWrites?.() ?? 0));
      },
    });
    new client.Gauge({
      name: 'portcullis_build_info',
      help: 'Always 1; the labels are the operator version and the Node.js version running it.',
      labelNames: ['version', 'node_version'],
      registers,
    }).set({ version: VERSION, node_version: process.version }, 1);
    // The admission endpoint's connections by kind (recordConnections, below): series from the start, before any connection.
    recordConnections(this, { apiserver: 0, other: 0, apiserverLimit: 0, otherLimit: 0 });
  }

  /** Adds (or replaces) the sources a scrape reads; the operator attaches them once its parts exist. */
  attach(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** The recorder of one webhook's answers, the same object for the same names (resolved once per webhook when compiled). */
  webhook(suite: string, webhook: string): WebhookMetrics {
    let bySuite = this.webhooks.get(suite);
    if (!bySuite) this.webhooks.set(suite, (bySuite = new Map()));
    let metrics = bySuite.get(webhook);
    if (!metrics) bySuite.set(webhook, (metrics = new WebhookMetrics(this.instruments, suite, webhook)));
    return metrics;
  }

  /** Drops the series of a suite's webhooks but those in `keep` (none: the suite is gone). */
  forget(suite: string, keep: ReadonlySet<string> = new Set()): void {
    const bySuite = this.webhooks.get(suite);
    if (!bySuite) return;
    for (const [name, metrics] of bySuite) {
      if (keep.has(name)) continue;
      metrics.remove();
      bySuite.delete(name);
    }
    if (bySuite.size === 0) this.webhooks.delete(suite);
  }

  countRejected(code: string): void {
    this.rejected.inc({ code });
  }

  private readonly exceptionUses = new client.Counter({
    name: 'portcullis_exception_uses_total',
    help: "Requests an AdmissionException let through a suite webhook's validations, by the exception (namespace, exception), suite and webhook.",
    labelNames: ['namespace', 'exception', 'suite', 'webhook'],
    registers: [this.registry],
  });

  private readonly exceptionUseListeners: ((namespace: string, name: string) => void)[] = [];

  /** A request the AdmissionException `namespace`/`name` let through webhook `webhook` of `suite`. */
  exceptionUsed(suite: string, webhook: string, namespace: string, name: string): void {
    this.exceptionUses.inc({ namespace, exception: name, suite, webhook });
    for (const listener of this.exceptionUseListeners) listener(namespace, name);
  }

  /**
   * Called with every use counted: the exception's status counts them too. Here because every
   * use, from whichever thread judged it, is reported to this one place.
   */
  onExceptionUsed(listener: (namespace: string, name: string) => void): void {
    this.exceptionUseListeners.push(listener);
  }

  rotated(kind: 'serving' | 'ca'): void {
    this.rotations.inc({ kind });
  }

  /** One reconcile of the work queue done (the controller's recording API). */
  reconciled(kind: ReconcileKind, result: ReconcileResultLabel, seconds: number): void {
    this.reconcileDuration.observe({ kind, result }, seconds);
    if (result === 'error') this.reconcileErrors.inc({ kind });
  }

  /** A full audit scan completed (the scanner's observer). */
  auditScanned(seconds: number): void {
    this.auditScans.observe(seconds);
  }

  /** A failed key scheduled again with backoff. */
  retried(kind: ReconcileKind): void {
    this.retries.inc({ kind });
  }

  readonly contentType = client.Registry.PROMETHEUS_CONTENT_TYPE;

  /** The text exposition: this operator's metrics, then the process's runtime metrics. */
  async render(): Promise<string> {
    await this.sources.collect?.();
    this.auditNow = this.sources.audit?.();
    return (await this.registry.metrics()) + (await runtimeRegistry().metrics());
  }

  /** Worker threads that died, by kind (src/workers/restarts.ts): each is started again. Series of every kind from the start. */
  private readonly workerDeaths = everyWorkerKind(
    new client.Counter({
      name: 'portcullis_worker_deaths_total',
      help: 'Worker threads that died (exited, crashed, out of memory, or stopped as stuck), by kind: admission-thread, review (large reviews), tenant (AdmissionPolicies), handler-module. Each is started again with backoff.',
      labelNames: ['worker'],
      registers: [this.registry],
    }),
  );
  private readonly workerQuarantines = everyWorkerKind(
    new client.Counter({
      name: 'portcullis_worker_quarantines_total',
      help: 'Inputs quarantined for stopping a worker again and again (a suite generation, an AdmissionPolicy generation, a handler with a config), by worker kind; answered by failurePolicy until they change.',
      labelNames: ['worker'],
      registers: [this.registry],
    }),
  );

  /** A worker of `kind` died (the pools' WorkerWatcher). */
  workerDied(kind: WorkerKind): void {
    this.workerDeaths.inc({ worker: kind });
  }

  /** An input was quarantined for killing a worker of `kind`. */
  workerQuarantined(kind: WorkerKind): void {
    this.workerQuarantines.inc({ worker: kind });
  }
}

const WORKER_KINDS: WorkerKind[] = ['admission-thread', 'review', 'tenant', 'handler-module'];

function everyWorkerKind(counter: client.Counter<'worker'>): client.Counter<'worker'> {
  for (const worker of WORKER_KINDS) counter.inc({ worker }, 0);
  return counter;
}

/**
 * The connections gauges of one Metrics (issue 50), kept beside it rather than in its constructor:
 * `portcullis_admission_connections{kind}` held now and `portcullis_admission_connections_limit{kind}`,
 * what the limits allow that kind in all (the API server's grows with the webhooks served), so that an
 * alert fires at a share of it before anything is refused.
 */
const connectionGauges = new WeakMap<Metrics, { held: client.Gauge; limit: client.Gauge }>();

/** Records the endpoint's connections as they stand (the server on each change; the admission thread's with its batches). */
export function recordConnections(metrics: Metrics, counts: { apiserver: number; other: number; apiserverLimit: number; otherLimit: number }): void {
  let gauges = connectionGauges.get(metrics);
  if (!gauges) {
    gauges = {
      held: new client.Gauge({
        name: 'portcullis_admission_connections',
        help: "Connections the admission endpoint holds, by kind: apiserver (from the API server's addresses) and other.",
        labelNames: ['kind'],
        registers: [metrics.registry],
      }),
      limit: new client.Gauge({
        name: 'portcullis_admission_connections_limit',
        help: "Connections the admission endpoint's limits allow each kind in all: apiserver (its allowance per address, which grows with the webhooks served, times its addresses), other (--max-connections).",
        labelNames: ['kind'],
        registers: [metrics.registry],
      }),
    };
    connectionGauges.set(metrics, gauges);
  }
  gauges.held.set({ kind: 'apiserver' }, counts.apiserver);
  gauges.held.set({ kind: 'other' }, counts.other);
  gauges.limit.set({ kind: 'apiserver' }, counts.apiserverLimit);
  gauges.limit.set({ kind: 'other' }, counts.otherLimit);
}
