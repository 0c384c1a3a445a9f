/**
 * The background audit's metrics through the real API server: a leader auditing a suite and an
 * AdmissionPolicy is scraped, its objects judged and failing by suite and webhook (the policies
 * together under suite ""), a new failing object counted within seconds (the watch, not the next
 * scan) and a fixed one no longer, its full scans timed and the last one's time, the interval and
 * its report writes; another replica reports no counts until it takes the lead, then the same.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace } from '../support/objects.ts';
import { sampleValue, scrape, type Family } from '../support/prometheus.ts';
import { eventually } from '../support/wait.ts';
import { recordAuthors } from '../support/authors.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { freePort } from '../../src/local/ports.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import { GROUP, POLICY_PLURAL, VERSION, type SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'audit-metrics-e2e';
const SUITE = 'audit-metrics';
const POLICY = 'no-bad-one';
const INTERVAL_MS = 60 * 60_000;
const configmaps = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const hasOwner = "has(object.metadata.labels) && 'owner' in object.metadata.labels";

const spec: SuiteSpec = {
  webhooks: [
    // Audit: allowed on write (so a failing object can be created), a `fail` in the audit.
    { name: 'owner', type: 'Validating', validationActions: ['Audit'], namespaceSelector: { matchLabels: { 'audit-metrics-e2e': 'yes' } }, rules: configmaps, validations: [{ expression: hasOwner, message: 'no owner' }] },
    // Warn only: its results are `warn`, not failures.
    { name: 'warned', type: 'Validating', validationActions: ['Warn'], namespaceSelector: { matchLabels: { 'audit-metrics-e2e': 'yes' } }, rules: configmaps, validations: [{ expression: hasOwner, message: 'no owner' }] },
  ],
};
const POLICIES = { suite: '', webhook: NAMESPACED.webhook };

/** The audit's gauges of a webhook in a scrape (undefined: not reported). */
const audited = (metrics: Map<string, Family>, labels: Record<string, string>) => ({
  evaluated: sampleValue(metrics, 'portcullis_audit_objects', labels),
  failing: sampleValue(metrics, 'portcullis_audit_failing_objects', labels),
});

describe('background audit metrics: objects judged and failing, scans and report writes, on the leader', function () {
  this.timeout(180_000);
  let leader: Operator | undefined;
  let follower: Operator | undefined;
  let leaderPort: number;
  let followerPort: number;
  let started: number;

  before(async function () {
    // The audit counts a suite's or policy's results only for its recorded author (src/audit/access.ts).
    await recordAuthors();
    await ensureNamespace(NS, { 'audit-metrics-e2e': 'yes' });
    for (const name of ['bad-1', 'bad-2', 'good']) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS } });
    await createConfigMap(NS, 'bad-1');
    await createConfigMap(NS, 'good', {}, { owner: 'team-a' });
    leaderPort = await freePort();
    followerPort = await freePort();
    started = Date.now();
    leader = await startTestOperator({ audit: true, auditIntervalMs: INTERVAL_MS, metricsPort: leaderPort });
    await waitForSuiteValidation(leader);
    await eventually(async () => expect(sampleValue(await scrape(leaderPort), 'portcullis_leader')).to.equal(1), { what: 'the first operator to lead' });
    follower = await startTestOperator({ audit: true, auditIntervalMs: INTERVAL_MS, metricsPort: followerPort });
    await createSuite(SUITE, spec);
    await cluster().kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POLICY_PLURAL,
      namespace: NS,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'AdmissionPolicy',
        metadata: { name: POLICY, namespace: NS },
        spec: { type: 'Validating', rules: configmaps, validations: [{ expression: "object.metadata.name != 'bad-1'", message: 'not bad-1' }] },
      },
    });
  });

  after(async function () {
    await deleteSuite(SUITE);
    await cluster()
      .kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name: POLICY })
      .catch(() => undefined);
    await leader?.stop();
    await follower?.stop();
  });

  it("counts the objects each suite webhook judged and those failing it, and every AdmissionPolicy's together", async function () {
    const metrics = await eventually(
      async () => {
        const scraped = await scrape(leaderPort);
        expect(audited(scraped, { suite: SUITE, webhook: 'owner' })).to.deep.equal({ evaluated: 2, failing: 1 });
        expect(audited(scraped, POLICIES)).to.deep.equal({ evaluated: 2, failing: 1 });
        return scraped;
      },
      { what: "the audit's counts", timeoutMs: 60_000 },
    );
    // bad-1 warned, not failing.
    expect(audited(metrics, { suite: SUITE, webhook: 'warned' })).to.deep.equal({ evaluated: 2, failing: 0 });
    // Labelled by suite and webhook only: never a policy's or an object's name or namespace.
    for (const name of ['portcullis_audit_objects', 'portcullis_audit_failing_objects']) {
      for (const sample of metrics.get(name)!.samples) expect(Object.keys(sample.labels).sort(), name).to.deep.equal(['suite', 'webhook']);
      expect(metrics.get(name)!.samples.map((s) => s.labels.suite)).to.not.include(NS);
    }
  });

  it('counts a new failing object and a fixed one within seconds, without waiting for the next scan', async function () {
    await createConfigMap(NS, 'bad-2');
    await eventually(async () => expect(audited(await scrape(leaderPort), { suite: SUITE, webhook: 'owner' })).to.deep.equal({ evaluated: 3, failing: 2 }), { what: 'the new failing object to be counted', timeoutMs: 60_000 });
    await cluster().kube.core.patchNamespacedConfigMap({ namespace: NS, name: 'bad-2', body: { metadata: { labels: { owner: 'team-b' } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await eventually(async () => expect(audited(await scrape(leaderPort), { suite: SUITE, webhook: 'owner' })).to.deep.equal({ evaluated: 3, failing: 1 }), { what: 'the fixed object to be counted passing', timeoutMs: 60_000 });
  });

  it('times each full scan, says when the last completed and the interval, and counts the report writes', async function () {
    const metrics = await eventually(
      async () => {
        const scraped = await scrape(leaderPort);
        expect(sampleValue(scraped, 'portcullis_audit_report_writes_total')).to.be.greaterThan(0);
        return scraped;
      },
      { what: 'the reports to be written', timeoutMs: 60_000 },
    );
    // Its full scan ran when it took the lead, before the suite and the policy were there (each was then scanned alone, not a full scan).
    const lastScan = sampleValue(metrics, 'portcullis_audit_last_scan_timestamp_seconds')!;
    expect(lastScan * 1e3).to.be.within(started, Date.now());
    expect(sampleValue(metrics, 'portcullis_audit_interval_seconds')).to.equal(INTERVAL_MS / 1e3);
    expect(metrics.get('portcullis_audit_scan_duration_seconds')!.type).to.equal('histogram');
    const scans = sampleValue(metrics, 'portcullis_audit_scan_duration_seconds_count')!;
    expect(scans).to.be.a('number');
    expect(sampleValue(metrics, 'portcullis_audit_scan_duration_seconds_bucket', { le: '+Inf' })).to.equal(scans);
    // Report writes are API writes too.
    expect(sampleValue(metrics, 'portcullis_api_writes_total')).to.be.at.least(sampleValue(metrics, 'portcullis_audit_report_writes_total')!);
  });

  it('another replica reports no counts and 0 as its last scan; once it leads, the same counts and a full scan of its own', async function () {
    const before = await scrape(followerPort);
    expect(sampleValue(before, 'portcullis_leader')).to.equal(0);
    expect(before.get('portcullis_audit_objects')!.samples).to.deep.equal([]);
    expect(before.get('portcullis_audit_failing_objects')!.samples).to.deep.equal([]);
    expect(sampleValue(before, 'portcullis_audit_last_scan_timestamp_seconds')).to.equal(0);
    expect(sampleValue(before, 'portcullis_audit_scan_duration_seconds_count')).to.equal(0);
    expect(sampleValue(before, 'portcullis_audit_interval_seconds'), 'the interval is configuration: every replica says it').to.equal(INTERVAL_MS / 1e3);

    await leader!.stop();
    leader = undefined;
    const after = await eventually(
      async () => {
        const scraped = await scrape(followerPort);
        expect(sampleValue(scraped, 'portcullis_leader')).to.equal(1);
        // Its first full scan judged the suite's and the policy's objects.
        expect(sampleValue(scraped, 'portcullis_audit_scan_duration_seconds_count')).to.be.at.least(1);
        expect(audited(scraped, { suite: SUITE, webhook: 'owner' })).to.deep.equal({ evaluated: 3, failing: 1 });
        return scraped;
      },
      { what: 'the other replica to lead and audit', timeoutMs: 60_000 },
    );
    expect(audited(after, POLICIES)).to.deep.equal({ evaluated: 3, failing: 1 });
    expect(sampleValue(after, 'portcullis_audit_last_scan_timestamp_seconds')! * 1e3).to.be.within(started, Date.now());
  });
});
