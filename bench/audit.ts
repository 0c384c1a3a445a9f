/**
 * `npm run bench:audit`: the background audit at the issue's scale, through the real API server
 * (local control plane) and the operator as the image runs it (tools/build.ts' bundles).
 * AUDIT_NAMESPACES namespaces (default 200) each hold AUDIT_PER_NAMESPACE objects (default 100:
 * three ConfigMaps to one Pod, half of each labelled with a team), AUDIT_SUITES suites (default
 * 50) each judge ConfigMaps or Pods in a tenth of the namespaces (by a namespace label). Then:
 *   idle    one dry-run ConfigMap create every 20 ms through a suite's webhook (bench-probe), for
 *           AUDIT_IDLE_SECONDS (default 10), and the operator's RSS, before any audited suite;
 *   scan    the suites are applied at once; the same creates and RSS samples go on until every
 *           suite's status.audit says a scan has judged all it selects (the time to that is the
 *           audit's, the 50 suites' own reconciles included), and the report writes it took;
 *   again   the next full scan (--audit-interval, AUDIT_INTERVAL default 45s) with nothing
 *           changed: its duration, its report writes (the target: none), and the creates inside
 *           its window against those before it (the scan's own cost to admission).
 * AUDIT_CONTROL=1 runs the first two phases with the audit off, until every suite is Ready: what
 * applying the suites costs without it.
 * Prints each figure and the ratio of the creates' p99 (scan / idle); the last line is one JSON
 * object. Everything shares this machine's cores with the API server and etcd.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { installForLocalRun } from '../src/local/install.ts';
import { connect, type Kube } from '../src/apiserver/client.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION, type AdmissionSuite, type SuiteSpec } from '../src/api/types.ts';
import { DEFAULTS } from '../src/config.ts';
import { startOperatorBundle } from './processes.ts';
import { quantile } from './stats.ts';
import { pool } from '../test/support/wait.ts';

const NAMESPACES = Number(process.env.AUDIT_NAMESPACES ?? 200);
const PER_NAMESPACE = Number(process.env.AUDIT_PER_NAMESPACE ?? 100);
const SUITES = Number(process.env.AUDIT_SUITES ?? 50);
const IDLE_SECONDS = Number(process.env.AUDIT_IDLE_SECONDS ?? 10);
const INTERVAL = process.env.AUDIT_INTERVAL ?? '45s';
/** AUDIT_CONTROL=1: the same suites with the audit off (--audit=false), until each is Ready: what their reconciles alone cost. */
const CONTROL = process.env.AUDIT_CONTROL === '1';
const TRACE = process.env.AUDIT_TRACE === '1';
const APP = fileURLToPath(new URL('../.local/audit-app', import.meta.url));
const SERVING_PORT = 19743;
const METRICS_PORT = 19780;
const SHARDS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The operator's resident memory in MB (Linux /proc). */
function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** One sample of a metric from the operator's /metrics (summed over its series). */
function metric(name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: METRICS_PORT, path: '/metrics' }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => {
          let sum = 0;
          for (const line of body.split('\n')) if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
          resolve(sum);
        });
      })
      .on('error', reject);
  });
}

const suite = (name: string, spec: SuiteSpec): AdmissionSuite => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name, uid: '' }, spec });
const configMaps = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const pods = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

/** Suite i: ConfigMaps (even) or Pods (odd) in the namespaces of shard i % SHARDS must carry a team. */
function auditedSuite(i: number): AdmissionSuite {
  return suite(`bench-audit-${i}`, {
    webhooks: [
      {
        name: 'team',
        type: 'Validating',
        validationActions: ['Audit'],
        namespaceSelector: { matchLabels: { 'bench-audit-shard': String(i % SHARDS) } },
        rules: i % 2 === 0 ? configMaps : pods,
        validations: [
          { expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", messageExpression: "object.metadata.name + ' has no team'" },
          { expression: 'object.metadata.name.size() < 64', message: 'name too long' },
        ],
      },
    ],
  });
}

async function applySuite(kube: Kube, body: AdmissionSuite): Promise<void> {
  const { uid: _uid, ...metadata } = body.metadata;
  await kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: { ...body, metadata } });
}

async function create(core: k8s.CoreV1Api, name: string): Promise<number> {
  const start = performance.now();
  await core.createNamespacedConfigMap({ namespace: 'bench-probe', dryRun: 'All', body: { metadata: { name }, data: { k: 'v' } } }).catch(() => undefined);
  return performance.now() - start;
}

const controlPlane = await startControlPlane();
let operator: ChildProcess | undefined;
try {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  await installForLocalRun(kubeConfig, DEFAULTS.namespace);
  const kube = connect(kubeConfig);

  const populated = performance.now();
  const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `bench-audit-${i}`);
  await pool(namespaces, 8, async (name) => {
    await kube.core.createNamespace({ body: { metadata: { name, labels: { 'bench-audit-shard': String(Number(name.slice(12)) % SHARDS) } } } });
  });
  const objects = namespaces.flatMap((namespace) => Array.from({ length: PER_NAMESPACE }, (_, j) => ({ namespace, j })));
  await pool(objects, 16, async ({ namespace, j }) => {
    const labels: Record<string, string> = j % 2 === 0 ? { team: 'a' } : {};
    if (j % 4 === 3) await kube.core.createNamespacedPod({ namespace, body: { metadata: { name: `p-${j}`, labels }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } } });
    else await kube.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `c-${j}`, labels }, data: { k: 'v' } } });
  });
  console.log(`populated: ${objects.length} objects in ${NAMESPACES} namespaces in ${((performance.now() - populated) / 1e3).toFixed(0)} s`);

  operator = await startOperatorBundle(APP, controlPlane.kubeconfigPath, [
    `--serving-port=${SERVING_PORT}`,
    `--metrics-port=${METRICS_PORT}`,
    `--audit-interval=${INTERVAL}`,
    ...(CONTROL ? ['--audit=false'] : []),
    ...(TRACE ? ['--log-level=info'] : []),
  ]);
  const pid = operator.pid!;
  // AUDIT_TRACE=1: the operator's line per scan (with --log-level=info), as it comes.
  if (TRACE)
    operator.stdout!.on('data', (chunk: Buffer) =>
      chunk
        .toString()
        .split('\n')
        .filter((l) => l.includes('audit: scanned'))
        .forEach((l) => console.log(`  ${((performance.now() - populated) / 1e3).toFixed(1)} s ${l}`)),
    );
  // The probe: a webhook every create in bench-probe goes through (its namespace is in no shard).
  await kube.core.createNamespace({ body: { metadata: { name: 'bench-probe' } } });
  await applySuite(
    kube,
    suite('bench-probe', {
      webhooks: [
        {
          name: 'probe',
          type: 'Validating',
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'bench-probe' } },
          rules: configMaps,
          validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'not that name' }],
        },
      ],
    }),
  );
  for (let i = 0; ; i++) {
    const refused = await kube.core.createNamespacedConfigMap({ namespace: 'bench-probe', dryRun: 'All', body: { metadata: { name: 'forbidden' } } }).then(
      () => false,
      () => true,
    );
    if (refused) break;
    if (i > 600) throw new Error('the probe suite is not in force');
    await sleep(100);
  }

  const creates = async (stop: () => boolean, rss: number[]) => {
    const times: number[] = [];
    for (let n = 0; !stop(); n++) {
      const started = performance.now();
      times.push(await create(kube.core, `q-${n}`));
      if (n % 10 === 0) rss.push(rssMb(pid));
      await sleep(Math.max(0, 20 - (performance.now() - started)));
    }
    return times;
  };
  const idleRss: number[] = [];
  const idleEnd = performance.now() + IDLE_SECONDS * 1e3;
  const idle = await creates(() => performance.now() > idleEnd, idleRss);
  const writesBefore = await metric('portcullis_audit_report_writes_total');

  const scanRss: number[] = [];
  const started = performance.now();
  const names = Array.from({ length: SUITES }, (_, i) => auditedSuite(i));
  await pool(names, 4, (s) => applySuite(kube, s));
  let done = false;
  let stopCreates = false;
  let lastCount = -1;
  const during = creates(() => stopCreates, scanRss);
  while (!done) {
    await sleep(500);
    const list = (await kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as { items: AdmissionSuite[] };
    const scanned = list.items.filter((s) => s.metadata.name.startsWith('bench-audit-') && (CONTROL ? s.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') : s.status?.audit?.lastRun));
    if (TRACE && scanned.length !== lastCount) console.log(`  ${((performance.now() - started) / 1e3).toFixed(1)} s after the apply: ${(lastCount = scanned.length)} of ${SUITES} suites ${CONTROL ? 'Ready' : 'with status.audit.lastRun'}`);
    done = scanned.length === SUITES;
    if (performance.now() - started > 600_000) throw new Error(`the audit did not finish in 10 minutes: ${scanned.length} of ${SUITES} suites scanned`);
  }
  const auditSeconds = (performance.now() - started) / 1e3;
  if (CONTROL) {
    stopCreates = true;
    const scan = await during;
    const ratio = quantile(scan, 0.99) / quantile(idle, 0.99);
    console.log(
      `control (--audit=false): ${SUITES} suites Ready in ${auditSeconds.toFixed(1)} s; creates p99 ${quantile(idle, 0.99).toFixed(1)} ms idle, ${quantile(scan, 0.99).toFixed(1)} ms meanwhile (x${ratio.toFixed(2)}); RSS ${Math.max(...idleRss).toFixed(0)} -> ${Math.max(...scanRss).toFixed(0)} MB`,
    );
    console.log(JSON.stringify({ control: true, readySeconds: auditSeconds, creates: { idleP99: quantile(idle, 0.99), duringP99: quantile(scan, 0.99), p99Ratio: ratio } }));
  } else {
    // Status comes before the reports' writes: written once the count has stood still for 3 s.
    let writes = await metric('portcullis_audit_report_writes_total');
    for (let still = 0; still < 6;) {
      await sleep(500);
      const now = await metric('portcullis_audit_report_writes_total');
      still = now === writes ? still + 1 : 0;
      writes = now;
    }
    const writtenSeconds = (performance.now() - started) / 1e3 - 3;
    const writesFirst = writes - writesBefore;
    stopCreates = true;
    const scan = await during;
    const evaluated = await metric('portcullis_audit_objects');
    const failing = await metric('portcullis_audit_failing_objects');

    // The next full scan, with nothing changed: the creates go on, each stamped, and those inside
    // the scan's window (its end and its duration, from the operator's metrics) are the scan's alone.
    // (a full scan the interval queued while the suites were judged runs first: waited out)
    const queued = await metric('portcullis_audit_last_scan_timestamp_seconds');
    for (let i = 0; i < 20 && (await metric('portcullis_audit_last_scan_timestamp_seconds')) <= queued; i++) await sleep(500);
    const lastScan = await metric('portcullis_audit_last_scan_timestamp_seconds');
    const writesAfterFirst = await metric('portcullis_audit_report_writes_total');
    const [sumBefore, countBefore] = [await metric('portcullis_audit_scan_duration_seconds_sum'), await metric('portcullis_audit_scan_duration_seconds_count')];
    let second = false;
    const stamped: { at: number; ms: number }[] = [];
    const stamping = (async () => {
      for (let n = 0; !second; n++) {
        const at = Date.now();
        stamped.push({ at, ms: await create(kube.core, `s-${n}`) });
        await sleep(Math.max(0, 20 - (Date.now() - at)));
      }
    })();
    for (let i = 0; (await metric('portcullis_audit_last_scan_timestamp_seconds')) <= lastScan; i++) {
      if (i > 1200) throw new Error('no second full scan');
      await sleep(500);
    }
    second = true;
    await stamping;
    const end = (await metric('portcullis_audit_last_scan_timestamp_seconds')) * 1e3;
    const [sumAfter, countAfter] = [await metric('portcullis_audit_scan_duration_seconds_sum'), await metric('portcullis_audit_scan_duration_seconds_count')];
    const secondSeconds = countAfter > countBefore ? (sumAfter - sumBefore) / (countAfter - countBefore) : NaN;
    const inScan = stamped.filter((c) => c.at >= end - secondSeconds * 1e3 && c.at <= end).map((c) => c.ms);
    const beforeScan = stamped.filter((c) => c.at < end - secondSeconds * 1e3 - 1000).map((c) => c.ms);
    await sleep(3000);
    const writesSecond = (await metric('portcullis_audit_report_writes_total')) - writesAfterFirst;

    const summary = (t: number[]) => ({ n: t.length, p50: quantile(t, 0.5), p99: quantile(t, 0.99) });
    const figures = {
      objects: objects.length,
      namespaces: NAMESPACES,
      suites: SUITES,
      auditSeconds,
      writtenSeconds,
      evaluated,
      failing,
      rssMb: { idle: Math.max(...idleRss), peakDuringScan: Math.max(...scanRss), growth: Math.max(...scanRss) - Math.max(...idleRss) },
      creates: { idle: summary(idle), scan: summary(scan), p99Ratio: summary(scan).p99 / summary(idle).p99 },
      secondScan: { seconds: secondSeconds, creates: { before: summary(beforeScan), during: summary(inScan), p99Ratio: summary(inScan).p99 / summary(beforeScan).p99 } },
      reportWrites: { firstScan: writesFirst, secondScan: writesSecond },
    };
    console.log(
      `audit:        ${SUITES} suites over ${objects.length} objects judged in ${auditSeconds.toFixed(1)} s (${evaluated} object judgments held, ${failing} failing); every report written ${writtenSeconds.toFixed(1)} s after the apply`,
    );
    console.log(`memory:       RSS ${figures.rssMb.idle.toFixed(0)} MB idle, ${figures.rssMb.peakDuringScan.toFixed(0)} MB at most during the scan (+${figures.rssMb.growth.toFixed(0)} MB)`);
    console.log(
      `admission:    p99 ${figures.creates.idle.p99.toFixed(1)} ms idle, ${figures.creates.scan.p99.toFixed(1)} ms during the scan (x${figures.creates.p99Ratio.toFixed(2)}); p50 ${figures.creates.idle.p50.toFixed(1)} / ${figures.creates.scan.p50.toFixed(1)} ms`,
    );
    const f2 = figures.secondScan;
    console.log(
      `second scan:  ${f2.seconds.toFixed(1)} s (a full scan, nothing changed); creates p99 ${f2.creates.before.p99.toFixed(1)} ms before it, ${f2.creates.during.p99.toFixed(1)} ms during it (x${f2.creates.p99Ratio.toFixed(2)}, ${f2.creates.during.n} creates); p50 ${f2.creates.before.p50.toFixed(1)} / ${f2.creates.during.p50.toFixed(1)} ms`,
    );
    console.log(`report writes: ${writesFirst} for the first scan, ${writesSecond} for the next with nothing changed`);
    console.log(JSON.stringify(figures));
  }
} finally {
  operator?.kill('SIGTERM');
  await controlPlane.stop();
}
