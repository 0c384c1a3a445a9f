/**
 * audit: the leader's background audit, off the admission path. Lists the objects the targets
 * select, page by page (`limit`/`continue`: no cache of every object of every kind; only the
 * results are kept, results.ts), judges each as a CREATE of it, then watches each listed resource
 * from the list's resourceVersion, judging every change as it comes (a fixed object turns to
 * `pass` in seconds, a deleted one leaves the reports) without keeping the objects. When: at
 * start, for a target whose suite or policy changed (that target only), and every interval (a
 * full scan). Reports are written a moment after results change (writer.ts). Knows targets only
 * through their `judge` and their `reader`: a target's results are judged (an AdmissionPolicy), or
 * counted in its status (a suite), only where its recorded author may list them (access.ts).
 * A live result (a request its webhook allowed with Warn or Audit failures) is kept only once the
 * watch has seen that object, with the same uid, and the target judges it (live-confirm.ts): a
 * request alone (anyone can POST one to the admission port) writes nothing. A stored object as a
 * CREATE and its results are stored.ts'; this file must not judge or match anything itself.
 */
import * as k8s from '@kubernetes/client-node';
import type { AuthorizationUser } from '../api/authorization.ts';
import type { ListAccess } from './access.ts';
import type { Logger } from '../log.ts';
import { describeError, type Kube } from '../apiserver/client.ts';
import { backoffMs } from '../apiserver/backoff.ts';
import { WATCH_RESTART } from '../apiserver/watch.ts';
import { resourceKey, resourcePath, ScanDiscovery, targetsByResource, type ListableResource } from './listable-resources.ts';
import { listPaged, type KubeItem } from './list.ts';
import { AuditResults, type AuditCounts, type ObjectRef } from './results.ts';
import type { AuditTarget, CheckResult } from './targets.ts';
import type { TargetInfo } from './reports.ts';
import type { ReportWriter } from './writer.ts';
import { judgeStored, namespaceLabelsOf, refOf, storedCreate } from './stored.ts';
import { LiveConfirmations, liveKey } from './live-confirm.ts';

export interface AuditOptions {
  /** A full scan every this often. */
  intervalMs: number;
  /** Reports are written this long after results change (changes in between are written together). */
  flushDelayMs?: number;
  /** Objects per LIST page. */
  pageSize?: number;
  /** How long a live result waits for the watch to see its object (30 s). */
  liveWaitMs?: number;
}

/** What status says of a target's audit. */
export interface AuditSummary extends AuditCounts {
  /** When a scan last judged every object it selects (RFC 3339). */
  lastRun?: string;
  /** Why some of it is not audited (a kind the operator may not list, reports not installed). */
  message?: string;
}

/** How long new or changed targets wait to be scanned together. */
const PENDING_DELAY_MS = 500;

/** A target whose author's access could not be asked (the API server did not answer) is scanned again this much later. */
const ACCESS_RETRY_MS = 5_000;

const describeUser = (user: AuthorizationUser) => `"${user.username}"`;
const describeResource = (r: ListableResource, namespace: string) => `${r.resource}${r.group ? `.${r.group}` : ''} ${namespace ? `in namespace ${namespace}` : r.namespaced ? 'in all namespaces' : ''}`.trim();

interface Watched {
  resource: ListableResource;
  request?: { abort(): void };
  stopped: boolean;
  failures: number;
}

export class AuditScanner {
  readonly results = new AuditResults();
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly writers: ReportWriter[];
  private readonly namespaceLabels: (namespace: string) => Record<string, string> | undefined;
  private readonly options: Required<AuditOptions>;
  private readonly access: ListAccess | undefined;
  /** target key -> what its author may not list, as said in its status (found in its last scan and since). */
  private readonly hidden = new Map<string, Set<string>>();
  /** Live results waiting for the watch to see their object. */
  private readonly liveResults: LiveConfirmations;
  /** Targets to scan again soon: whether their author may list something could not be asked. */
  private readonly unsure = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private targets = new Map<string, AuditTarget>();
  /** target key -> the resources its rules name (as last resolved). */
  private readonly resourcesOf = new Map<string, ListableResource[]>();
  private readonly lastRun = new Map<string, string>();
  private readonly problems = new Map<string, string>();
  private readonly watches = new Map<string, Watched>();
  /** Targets to scan at the next turn (new, or changed). */
  private readonly pending = new Set<string>();
  private running = false;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private pendingTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private published = new Map<string, string>();
  /** Called with the targets whose summary changed (to write their status). */
  onSummaries: (targets: AuditTarget[]) => void = () => undefined;
  /** Called when a full scan completes, with its duration (metrics: the scans' histogram). */
  onScan: (seconds: number) => void = () => undefined;
  /**
   * Completed full scans, and the objects judged by the last (for metrics and the bench);
   * `lastScanAt`: when (ms since the epoch) the last full scan completed, or this scanner last
   * started if later (0 before it first started): what an overdue scan is measured from.
   */
  readonly stats = { scans: 0, objects: 0, lastScanSeconds: 0, lastScanAt: 0 };

  /** `access`: whether a target's author may list what it judges; absent, every target is judged and counted everywhere. */
  constructor(kube: Kube, log: Logger, writers: ReportWriter[], namespaceLabels: (namespace: string) => Record<string, string> | undefined, options: AuditOptions, access?: ListAccess) {
    this.kube = kube;
    this.log = log;
    this.writers = writers;
    this.namespaceLabels = namespaceLabels;
    this.options = { flushDelayMs: 1000, pageSize: 500, liveWaitMs: 30_000, ...options };
    this.access = access;
    this.liveResults = new LiveConfirmations(this.results, this.options.liveWaitMs);
  }

  /** The targets to audit now; those new or of a new generation are scanned (alone) soon. */
  setTargets(targets: AuditTarget[]): void {
    const next = new Map(targets.map((t) => [t.key, t]));
    for (const [key, old] of this.targets) {
      const now = next.get(key);
      if (!now) {
        this.results.removeTarget(key);
        this.results.removeTarget(liveKey(key));
        this.resourcesOf.delete(key);
        this.lastRun.delete(key);
        this.problems.delete(key);
        this.hidden.delete(key);
      } else if (now.source.generation !== old.source.generation || JSON.stringify(now.reader) !== JSON.stringify(old.reader)) {
        this.results.removeTarget(key);
        this.results.removeTarget(liveKey(key));
        this.pending.add(key);
      }
    }
    for (const key of next.keys()) if (!this.targets.has(key)) this.pending.add(key);
    this.targets = next;
    this.scheduleFlush();
    if (!this.stopped && this.pending.size) this.schedulePending();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stats.lastScanAt = Date.now();
    this.pending.clear();
    this.enqueue(() => this.scan(undefined));
    this.timer = setInterval(() => this.enqueue(() => this.scan(undefined)), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.pendingTimer) clearTimeout(this.pendingTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    // (a leader again later schedules anew)
    this.flushTimer = this.pendingTimer = this.retryTimer = undefined;
    this.unsure.clear();
    for (const w of this.watches.values()) this.stopWatch(w);
    this.watches.clear();
    this.liveResults.clear();
    await this.chain.catch(() => undefined);
  }

  /**
   * A request `key`'s webhook allowed with Warn or Audit failures (audit/live.ts): kept as the
   * object's admission results beside the scan's, the latest per object; not counted in status
   * (which says what the stored objects are). Only while this replica audits (leads), and only
   * when the watch sees a write of the object it names (same uid, namespace and name), within
   * seconds of it, and the target judges it (live-confirm.ts): until then it waits, a while and in
   * bounded numbers.
   */
  live(key: string, ref: ObjectRef, results: CheckResult[]): void {
    if (this.stopped || !this.targets.has(key)) return;
    if (this.liveResults.offer(key, ref, results)) this.scheduleFlush();
  }

  /**
   * Whether `target`'s author may list `resource` where an object of `namespace` is: in the
   * policy's namespace; for a suite, in all namespaces or in the object's. Undefined when they
   * may; otherwise what its status says they may not list.
   */
  private async refusedFor(target: AuditTarget, resource: ListableResource, namespace: string | undefined): Promise<string | undefined> {
    if (!this.access) return undefined;
    const user = target.reader.user;
    if (!user) return 'no author is recorded';
    const where = resource.namespaced ? (target.namespace ?? '') : '';
    try {
      if (await this.access.mayList(user, resource, where)) return undefined;
      if (where === '' && resource.namespaced && namespace && (await this.access.mayList(user, resource, namespace))) return undefined;
      return `${describeUser(user)} may not list ${describeResource(resource, where || (resource.namespaced ? (namespace ?? '') : ''))}`;
    } catch (err) {
      this.retryLater(target.key);
      return `whether ${describeUser(user)} may list ${describeResource(resource, where)} could not be asked (${describeError(err)})`;
    }
  }

  /** Scans `key` again a moment later, rather than at the next full scan: an unanswered question is not a refusal. */
  private retryLater(key: string): void {
    this.unsure.add(key);
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      for (const k of this.unsure) if (this.targets.has(k)) this.pending.add(k);
      this.unsure.clear();
      if (this.pending.size) this.schedulePending();
    }, ACCESS_RETRY_MS);
    this.retryTimer.unref();
  }

  /** `counts`: the target's, when the caller has them already (one pass over the results for every target). */
  summary(key: string, counts: AuditCounts = this.results.counts(key)): AuditSummary | undefined {
    const target = this.targets.get(key);
    if (!target) return undefined;
    const problem = this.problems.get(key) ?? this.hiddenMessage(target) ?? this.writers.map((w) => w.available()).find((w) => w);
    return { ...counts, ...(this.lastRun.has(key) ? { lastRun: this.lastRun.get(key) } : {}), ...(problem ? { message: problem } : {}) };
  }

  /**
   * Objects judged and failing per group of targets (`groupOf` a target's group; undefined: not
   * counted), each object once per group; every target's group is there, 0 before it judged
   * anything. One pass over the results (metrics, when scraped).
   */
  countsBy(groupOf: (target: AuditTarget) => string | undefined): Map<string, AuditCounts> {
    const groups = new Map<string, string | undefined>();
    for (const [key, target] of this.targets) groups.set(key, groupOf(target));
    const counts = this.results.countsBy((key) => groups.get(key));
    for (const group of groups.values()) if (group !== undefined && !counts.has(group)) counts.set(group, { evaluated: 0, failing: 0 });
    return counts;
  }

  /** What status says of what the target's author may not see. */
  private hiddenMessage(target: AuditTarget): string | undefined {
    const hidden = this.hidden.get(target.key);
    if (!hidden?.size) return undefined;
    const what = [...hidden].sort();
    const shown = what.slice(0, 3).join('; ') + (what.length > 3 ? `; and ${what.length - 3} more` : '');
    return target.reader.scope === 'judge' ? `not audited where its author may not list the objects: ${shown}` : `counted only where its author may list the objects (the reports of each namespace hold the rest): ${shown}`;
  }

  /** Report writes (creates, updates and deletes) since start, by every writer. */
  reportWrites(): number {
    return this.writers.reduce((n, w) => n + w.writes, 0);
  }

  /** Resolves once every scan asked so far has finished (tests, the bench). */
  idle(): Promise<void> {
    return this.chain;
  }

  private enqueue(work: () => Promise<void>): void {
    this.chain = this.chain.then(work).catch((err: unknown) => {
      this.running = false;
      this.log.warn('audit: a scan failed', { error: describeError(err) });
    });
  }

  /** Judges every object the `only` targets (all, when undefined) select. */
  /**
   * The targets pending, scanned together a moment later: suites applied at once (a `kubectl
   * apply` of many) share one LIST of each kind rather than one each. A scan already queued or
   * running leaves the newer ones to the next.
   */
  private schedulePending(): void {
    if (this.pendingTimer) return;
    this.pendingTimer = setTimeout(() => {
      this.pendingTimer = undefined;
      this.enqueue(() => this.scan([...this.pending]));
    }, PENDING_DELAY_MS);
    this.pendingTimer.unref();
  }

  private async scan(only: string[] | undefined): Promise<void> {
    if (this.stopped) return;
    const keys = only ?? [...this.targets.keys()];
    for (const k of keys) this.pending.delete(k);
    const targets = keys.map((k) => this.targets.get(k)).filter((t): t is AuditTarget => t !== undefined);
    if (targets.length === 0) {
      // A full scan with nothing to judge is done, not overdue.
      if (!only) this.stats.lastScanAt = Date.now();
      return;
    }
    const started = performance.now();
    this.running = true;
    for (const t of targets) this.hidden.delete(t.key);
    const discovery = new ScanDiscovery(this.kube.config);
    const byResource = await targetsByResource(discovery, targets, (target, resources) => {
      if ('error' in resources) return void this.problems.set(target.key, `discovery failed: ${describeError(resources.error)}`);
      this.resourcesOf.set(target.key, resources);
      this.problems.delete(target.key);
    });
    let objects = 0;
    for (const { resource, targets: judging } of byResource.values()) {
      if (this.stopped) return;
      try {
        const { count, resourceVersion } = await this.list(resource, judging);
        objects += count;
        this.watch(resource, resourceVersion);
      } catch (err) {
        const message = `cannot list ${resource.group || 'core'}/${resource.resource}: ${describeError(err)}`;
        for (const t of judging) this.problems.set(t.key, message);
        this.log.warn('audit: listing failed', { resource: resourceKey(resource), error: describeError(err) });
      }
    }
    const now = new Date().toISOString();
    for (const t of targets) this.lastRun.set(t.key, now);
    this.running = false;
    if (!only) {
      this.stats.scans += 1;
      this.stats.objects = objects;
      this.stats.lastScanSeconds = (performance.now() - started) / 1e3;
      this.stats.lastScanAt = Date.now();
      this.onScan(this.stats.lastScanSeconds);
    }
    const judged = performance.now();
    await this.flush(!only);
    // One line per scan: what it judged, how long judging and writing took.
    this.log.info('audit: scanned', { full: !only, targets: targets.length, objects, seconds: +((judged - started) / 1e3).toFixed(3), writeSeconds: +((performance.now() - judged) / 1e3).toFixed(3) });
  }

  /** Lists `resource` page by page, judging each object by `targets`; forgets what they judged that is gone. */
  private async list(resource: ListableResource, targets: AuditTarget[]): Promise<{ count: number; resourceVersion: string | undefined }> {
    const seen = new Set<string>();
    let count = 0;
    const { resourceVersion } = await listPaged(
      this.kube.config,
      resourcePath(resource),
      this.options.pageSize,
      async (item) => {
        const ref = refOf(item, resource);
        seen.add(ref.uid);
        count += 1;
        await this.judge(item, ref, resource, targets);
      },
      () => this.stopped,
    );
    for (const target of targets) {
      for (const { namespace, uid } of this.results.judgedBy(target.key, resource.kind)) {
        if (!seen.has(uid)) this.results.set({ apiVersion: '', kind: resource.kind, name: '', namespace, uid }, target.key, undefined);
      }
    }
    return { count, resourceVersion };
  }

  private async judge(item: KubeItem, ref: ObjectRef, resource: ListableResource, targets: AuditTarget[]): Promise<void> {
    const request = storedCreate(item, resource);
    const labels = namespaceLabelsOf(ref.namespace, this.namespaceLabels);
    for (const target of targets) {
      if (target.namespace && target.namespace !== ref.namespace) continue;
      const refused = await this.refusedFor(target, resource, ref.namespace);
      if (refused !== undefined) {
        let hidden = this.hidden.get(target.key);
        if (!hidden) this.hidden.set(target.key, (hidden = new Set()));
        hidden.add(refused);
      }
      if (refused !== undefined && target.reader.scope === 'judge') {
        // Not judged at all: neither its status nor its namespace's Report tells its author anything.
        this.results.set(ref, target.key, undefined);
        this.results.set(ref, liveKey(target.key), undefined);
        continue;
      }
      this.results.set(ref, target.key, await judgeStored(target, request, labels), Date.now(), refused === undefined);
    }
  }

  /** Judges each change of a listed resource as it comes, from `resourceVersion`; listed again when the watch breaks. */
  private watch(resource: ListableResource, resourceVersion: string | undefined): void {
    const key = resourceKey(resource);
    const existing = this.watches.get(key);
    if (existing) this.stopWatch(existing);
    const watched: Watched = { resource, stopped: false, failures: existing?.failures ?? 0 };
    this.watches.set(key, watched);
    const targetsNow = () => [...this.targets.values()].filter((t) => (this.resourcesOf.get(t.key) ?? []).some((r) => resourceKey(r) === key));
    const onEvent = (type: string, object: KubeItem) => {
      if (watched.stopped || type === 'BOOKMARK' || type === 'ERROR') return;
      watched.failures = 0;
      const ref = refOf(object, resource);
      if (type === 'DELETED') {
        if (this.results.removeObject(ref.namespace, ref.uid)) this.scheduleFlush();
        return;
      }
      void this.judge(object, ref, resource, targetsNow()).then(() => {
        // Seen by the watch: what a webhook let through for this very object is now its live result.
        this.liveResults.seen(ref);
        this.scheduleFlush();
      });
    };
    const onDone = (err: unknown) => {
      if (watched.stopped || this.stopped) return;
      watched.failures += 1;
      const delay = backoffMs(watched.failures, WATCH_RESTART);
      if (err) this.log.debug('audit: watch ended; listing again', { resource: key, error: describeError(err) });
      setTimeout(() => {
        if (watched.stopped || this.stopped) return;
        const judging = targetsNow();
        if (judging.length === 0) return void this.watches.delete(key);
        this.enqueue(async () => {
          if (watched.stopped || this.stopped) return;
          const { resourceVersion: rv } = await this.list(resource, judging);
          this.watch(resource, rv);
          this.scheduleFlush();
        });
      }, delay).unref();
    };
    void new k8s.Watch(this.kube.config)
      .watch(resourcePath(resource), { allowWatchBookmarks: true, ...(resourceVersion ? { resourceVersion } : {}) }, onEvent as (type: string, obj: unknown) => void, onDone)
      .then((request) => {
        if (watched.stopped) request.abort();
        else watched.request = request;
      })
      .catch(onDone);
  }

  private stopWatch(watched: Watched): void {
    watched.stopped = true;
    watched.request?.abort();
  }

  private scheduleFlush(): void {
    if (this.stopped || this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.enqueue(() => this.flush(false));
    }, this.options.flushDelayMs);
    this.flushTimer.unref();
  }

  /** Writes the reports of what changed (`all`: of every namespace with reports, after a full scan), and tells whose summary changed. */
  private async flush(all: boolean): Promise<void> {
    if (this.running && !all) return this.scheduleFlush();
    const infos = new Map<string, TargetInfo>();
    for (const t of this.targets.values()) {
      const info: TargetInfo = {
        policy: t.policy,
        action: t.action,
        sourceKind: t.source.kind,
        ...(t.source.webhook ? { webhook: t.source.webhook } : {}),
        ...(t.severity ? { severity: t.severity } : {}),
        ...(t.category ? { category: t.category } : {}),
      };
      infos.set(t.key, info);
      infos.set(liveKey(t.key), { ...info, origin: 'admission' });
    }
    // Status first: what was judged is known now, whatever the reports' writes take.
    this.publishSummaries();
    // More targets about to be scanned (suites applied together, served one after another): their
    // scan writes these namespaces' reports once, with theirs, rather than each batch rewriting them.
    if (!all && this.pending.size > 0) return;
    const dirty = new Set(this.results.takeDirty());
    if (all) for (const writer of this.writers) for (const n of writer.namespaces()) dirty.add(n);
    for (const writer of this.writers) await writer.flush(this.results, [...dirty], infos);
    // A write that failed left its namespace dirty: tried again a moment later.
    if (this.results.hasDirty()) this.scheduleFlush();
    this.publishSummaries();
  }

  /** Tells whose summary (status.audit) changed since it was last told. */
  private publishSummaries(): void {
    const changed: AuditTarget[] = [];
    // Every target's counts in one pass over the results (this runs after every flush).
    const counts = this.results.countsBy((target) => (this.targets.has(target) ? target : undefined));
    for (const target of this.targets.values()) {
      const text = JSON.stringify(this.summary(target.key, counts.get(target.key) ?? { evaluated: 0, failing: 0 }));
      if (this.published.get(target.key) === text) continue;
      this.published.set(target.key, text);
      changed.push(target);
    }
    for (const key of this.published.keys()) if (!this.targets.has(key)) this.published.delete(key);
    if (changed.length) this.onSummaries(changed);
  }
}
