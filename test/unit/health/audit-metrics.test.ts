/**
 * The background audit's metrics without a cluster: the results counted per group in one pass
 * (each object once per group), what the scanner exposes for a scrape (every target's group, 0
 * before it judged anything; the report writes; when the last full scan completed), and the
 * series a scrape renders from it, the leader's only.
 */
import { expect } from 'chai';
import { AuditResults, type ObjectRef } from '../../../src/audit/results.ts';
import { AuditScanner } from '../../../src/audit/scanner.ts';
import type { AuditTarget, CheckResult } from '../../../src/audit/targets.ts';
import type { ReportWriter } from '../../../src/audit/writer.ts';
import type { Kube } from '../../../src/apiserver/client.ts';
import { componentLogger } from '../../../src/log.ts';
import { Metrics, type AuditReading } from '../../../src/health/metrics.ts';
import { parseExposition, sampleValue } from '../../support/prometheus.ts';

const ref = (name: string, namespace = 'team-a'): ObjectRef => ({ apiVersion: 'v1', kind: 'ConfigMap', name, namespace, uid: `${namespace}/${name}` });
const pass: CheckResult[] = [{ rule: 'validations[0]', result: 'pass' }];
const fail: CheckResult[] = [{ rule: 'validations[0]', result: 'fail', message: 'no' }];
const error: CheckResult[] = [{ rule: 'judge', result: 'error', message: 'boom' }];
const warn: CheckResult[] = [{ rule: 'validations[0]', result: 'warn', message: 'a warning' }];
const skip: CheckResult[] = [{ rule: 'validations[0]', result: 'skip', message: 'reads request.userInfo' }];

function target(key: string, source: AuditTarget['source']): AuditTarget {
  return { key, policy: key, source, action: 'Deny', rules: [], reader: { user: { username: 'admin' }, scope: 'count' }, judge: async () => undefined };
}

describe('audit metrics: what a scrape reports of the background audit', () => {
  it('counts each object once per group: judged by any of its targets, failing any (fail or error; warn and skip are not failures)', () => {
    const results = new AuditResults();
    results.set(ref('a'), 'policy/team-a/p1', fail);
    results.set(ref('a'), 'policy/team-a/p2', fail);
    results.set(ref('b'), 'policy/team-a/p1', pass);
    results.set(ref('b'), 'policy/team-a/p2', error);
    results.set(ref('c', 'team-b'), 'policy/team-b/p3', warn);
    results.set(ref('c', 'team-b'), 'suite/guards/owner', skip);
    results.set(ref('d', 'team-b'), 'suite/guards/owner', fail);
    results.set(ref('d', 'team-b'), 'suite/guards/ignored', fail);
    const counts = results.countsBy((t) => (t.startsWith('policy/') ? 'policies' : t === 'suite/guards/ignored' ? undefined : t));
    expect(Object.fromEntries(counts)).to.deep.equal({
      policies: { evaluated: 3, failing: 2 },
      'suite/guards/owner': { evaluated: 2, failing: 1 },
    });
    // The same as each target's own counts where a group is one target.
    expect(counts.get('suite/guards/owner')).to.deep.equal(results.counts('suite/guards/owner'));
  });

  it("the scanner counts every target's group (0 before it judged anything), sums its writers' report writes, and marks a full scan with nothing to judge as done", async () => {
    const writers = [{ writes: 3 }, { writes: 4 }] as unknown as ReportWriter[];
    const scanner = new AuditScanner({} as Kube, componentLogger('audit-test'), writers, () => undefined, { intervalMs: 3_600_000 });
    scanner.setTargets([
      target('suite/guards/owner', { kind: 'AdmissionSuite', name: 'guards', webhook: 'owner', generation: 1 }),
      target('suite/guards/labels', { kind: 'AdmissionSuite', name: 'guards', webhook: 'labels', generation: 1 }),
      target('policy/team-a/p1', { kind: 'AdmissionPolicy', name: 'p1', namespace: 'team-a', generation: 1 }),
    ]);
    scanner.results.set(ref('a'), 'suite/guards/owner', fail);
    scanner.results.set(ref('b'), 'suite/guards/owner', pass);
    // A result of a target no longer there is not counted.
    scanner.results.set(ref('z'), 'suite/gone/owner', fail);
    const counts = scanner.countsBy((t) => (t.source.kind === 'AdmissionSuite' ? `${t.source.name}/${t.source.webhook}` : 'policies'));
    expect(Object.fromEntries(counts)).to.deep.equal({
      'guards/owner': { evaluated: 2, failing: 1 },
      'guards/labels': { evaluated: 0, failing: 0 },
      policies: { evaluated: 0, failing: 0 },
    });
    expect(scanner.reportWrites()).to.equal(7);

    // No targets: each interval's full scan has nothing to judge, and is done (not overdue) all the same.
    const idle = new AuditScanner({} as Kube, componentLogger('audit-test'), [], () => undefined, { intervalMs: 20 });
    const scanned: number[] = [];
    idle.onScan = (seconds) => scanned.push(seconds);
    expect(idle.stats.lastScanAt).to.equal(0);
    idle.start();
    const started = idle.stats.lastScanAt;
    expect(started).to.be.greaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await idle.idle();
    await idle.stop();
    expect(idle.stats.lastScanAt, "the interval's scans").to.be.greaterThan(started);
    expect(idle.stats.scans, 'nothing judged: not a scan of the histogram').to.equal(0);
    expect(scanned).to.deep.equal([]);
  });

  it("renders the leader's counts by suite and webhook, the last scan, the interval, the scans' histogram and the report writes", async () => {
    let reads = 0;
    let leading = true;
    const reading: AuditReading = {
      objects: [
        { suite: 'guards', webhook: 'owner', evaluated: 12, failing: 3 },
        { suite: '', webhook: 'admissionpolicies.admission.portcullis.dev', evaluated: 5, failing: 1 },
      ],
      lastScanAt: 1_700_000_000_500,
    };
    const metrics = new Metrics({ audit: () => (reads++, leading ? reading : undefined), auditReportWrites: () => 9, auditIntervalSeconds: () => 600 });
    metrics.auditScanned(0.3);
    metrics.auditScanned(42);

    const scraped = parseExposition(await metrics.render());
    expect(reads, 'read once a scrape, not once per gauge').to.equal(1);
    expect(sampleValue(scraped, 'portcullis_audit_objects', { suite: 'guards', webhook: 'owner' })).to.equal(12);
    expect(sampleValue(scraped, 'portcullis_audit_failing_objects', { suite: 'guards', webhook: 'owner' })).to.equal(3);
    expect(sampleValue(scraped, 'portcullis_audit_objects', { suite: '', webhook: 'admissionpolicies.admission.portcullis.dev' })).to.equal(5);
    expect(sampleValue(scraped, 'portcullis_audit_failing_objects', { suite: '', webhook: 'admissionpolicies.admission.portcullis.dev' })).to.equal(1);
    expect(sampleValue(scraped, 'portcullis_audit_last_scan_timestamp_seconds')).to.equal(1_700_000_000.5);
    expect(sampleValue(scraped, 'portcullis_audit_interval_seconds')).to.equal(600);
    expect(sampleValue(scraped, 'portcullis_audit_report_writes_total')).to.equal(9);
    expect(scraped.get('portcullis_audit_report_writes_total')!.type).to.equal('counter');
    expect(scraped.get('portcullis_audit_scan_duration_seconds')!.type).to.equal('histogram');
    expect(sampleValue(scraped, 'portcullis_audit_scan_duration_seconds_count')).to.equal(2);
    expect(sampleValue(scraped, 'portcullis_audit_scan_duration_seconds_bucket', { le: '0.5' })).to.equal(1);
    expect(sampleValue(scraped, 'portcullis_audit_scan_duration_seconds_bucket', { le: '60' })).to.equal(2);

    // Not leading (or the lead lost): no counts, 0 as the last scan; what this replica did stays counted.
    leading = false;
    const follower = parseExposition(await metrics.render());
    expect(follower.get('portcullis_audit_objects')!.samples).to.deep.equal([]);
    expect(follower.get('portcullis_audit_failing_objects')!.samples).to.deep.equal([]);
    expect(sampleValue(follower, 'portcullis_audit_last_scan_timestamp_seconds')).to.equal(0);
    expect(sampleValue(follower, 'portcullis_audit_scan_duration_seconds_count')).to.equal(2);
    expect(sampleValue(follower, 'portcullis_audit_report_writes_total')).to.equal(9);
  });

  it('with --audit=false every audit series is there, empty or 0', async () => {
    const scraped = parseExposition(await new Metrics().render());
    expect(scraped.get('portcullis_audit_objects')!.samples).to.deep.equal([]);
    expect(sampleValue(scraped, 'portcullis_audit_interval_seconds')).to.equal(0);
    expect(sampleValue(scraped, 'portcullis_audit_last_scan_timestamp_seconds')).to.equal(0);
    expect(sampleValue(scraped, 'portcullis_audit_scan_duration_seconds_count')).to.equal(0);
    expect(sampleValue(scraped, 'portcullis_audit_report_writes_total')).to.equal(0);
  });
});
