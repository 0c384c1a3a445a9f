/**
 * `npm run bench:validation`: is applying suites bound by the API server, not by Portcullis? Through
 * the real API server (local control plane) and the operator as the image runs it (tools/build.ts'
 * bundles), in this order:
 *   configmaps  VALIDATION_CREATES ConfigMap creates, one after another: the baseline, a create no webhook is called for;
 *   suites      as many AdmissionSuite creates (each matching nothing the bench makes), one after
 *               another: each is judged by the operator's suite-validation webhook (compiled and
 *               type-checked against Deployments), and reconciled;
 *   dry run     `kubectl apply --dry-run=server -f` of one file of VALIDATION_APPLIED ConfigMaps, then
 *               of as many suites: judged (the webhook called), not stored, so nothing is reconciled;
 *   apply       the same applies, stored: each suite is then reconciled (its certificate, Service,
 *               webhook configuration and status written) while the next ones are applied.
 * Prints, from the API server's own metrics (each phase's delta): the validation webhook's
 * `apiserver_admission_webhook_admission_duration_seconds` p50/p99 (as histogram_quantile
 * interpolates its buckets: 5, 25, 100 ms...) and its bucket counts, the request duration
 * (`apiserver_request_duration_seconds`) of the ConfigMap and suite creates; the creates' times as
 * the client sees them; the operator's own histogram for the webhook; the applies' wall times, and
 * the CPU seconds the API server, etcd and the operator spent in each (from /proc, where there is one).
 * The last line is one JSON object. The machine's cores are shared by the API server, etcd, the
 * operator (whose reconciles of the new suites run beside the validations) and this script:
 * repeat it and compare medians.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { installForLocalRun } from '../src/local/install.ts';
import { connect } from '../src/apiserver/client.ts';
import { GROUP, PLURAL, VERSION } from '../src/api/types.ts';
import { SUITE_VALIDATION } from '../src/api/names.ts';
import { DEFAULTS } from '../src/config.ts';
import { startOperatorBundle } from './processes.ts';
import { quantile } from './stats.ts';

const CREATES = Number(process.env.VALIDATION_CREATES ?? 200);
const APPLIED = Number(process.env.VALIDATION_APPLIED ?? 1000);
const APP = fileURLToPath(new URL('../.local/validation-app', import.meta.url));
const SERVING_PORT = 19843;
const METRICS_PORT = 19880;
const NAMESPACE = 'bench-validation';

/** A suite that type-checks against Deployments and matches none the bench makes. */
const suite = (name: string, i: number) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionSuite',
  metadata: { name },
  spec: {
    webhooks: [
      {
        name: 'w',
        type: 'Validating',
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
        namespaceSelector: { matchLabels: { 'bench-validation': 'none' } },
        validations: [{ expression: `object.spec.replicas <= ${(i % 10) + 1}`, message: 'too many replicas' }, { expression: "object.metadata.name.startsWith('a') || has(object.spec.template)" }],
      },
    ],
  },
});
const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NAMESPACE }, data: { k: 'v' } });

/** Cumulative bucket counts (upper bound in seconds -> count) of the series of `family` whose labels include every one of `labels`, summed. */
type Buckets = Map<number, number>;
function buckets(text: string, family: string, labels: Record<string, string>): Buckets {
  const sums: Buckets = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}_bucket{`)) continue;
    const close = line.lastIndexOf('}');
    const pairs = new Map([...line.slice(line.indexOf('{') + 1, close).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (!Object.entries(labels).every(([k, v]) => pairs.get(k) === v)) continue;
    const le = pairs.get('le') === '+Inf' ? Infinity : Number(pairs.get('le'));
    sums.set(le, (sums.get(le) ?? 0) + Number(line.slice(close + 1).trim()));
  }
  return sums;
}
function minus(after: Buckets, before: Buckets): Buckets {
  return new Map([...after].map(([le, n]) => [le, n - (before.get(le) ?? 0)]));
}
/** As PromQL's histogram_quantile: linear within the bucket the rank falls in (the lowest bucket from 0), in ms. */
function histogramQuantile(counts: Buckets, q: number): number {
  const sorted = [...counts].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let [lower, below] = [0, 0];
  for (const [le, n] of sorted) {
    if (n >= rank) {
      if (le === Infinity) return lower * 1e3;
      return (lower + ((le - lower) * (rank - below)) / (n - below || 1)) * 1e3;
    }
    [lower, below] = [le, n];
  }
  return NaN;
}
const showBuckets = (counts: Buckets) =>
  [...counts]
    .sort((a, b) => a[0] - b[0])
    .map(([le, n]) => `${le === Infinity ? '+Inf' : `${le * 1e3}ms`}:${n}`)
    .join(' ');

function apiServerMetrics(kubeConfig: k8s.KubeConfig): Promise<string> {
  return new Promise((resolve, reject) => {
    const server = new URL(kubeConfig.getCurrentCluster()!.server);
    const options: https.RequestOptions = { host: server.hostname, port: server.port, path: '/metrics', method: 'GET' };
    void kubeConfig.applyToHTTPSOptions(options).then(() => {
      const request = https.request(options, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(body));
      });
      request.on('error', reject);
      request.end();
    }, reject);
  });
}

async function operatorMetrics(): Promise<string> {
  return await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
}

/** `kubectl apply -f` of `objects` as one multi-document file (with `args`); resolves with its wall time in ms. */
function kubectlApply(kubectl: string, kubeconfig: string, objects: object[], args: string[] = []): Promise<number> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-validation-')), 'objects.yaml');
  // JSON is YAML: one document per object.
  fs.writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
  const start = performance.now();
  return new Promise((resolve, reject) => {
    execFile(kubectl, ['--kubeconfig', kubeconfig, 'apply', ...args, '-f', file], { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 }, (err, _stdout, stderr) => {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      if (err) reject(new Error(`kubectl apply failed: ${stderr.slice(0, 2000)}`));
      else resolve(performance.now() - start);
    });
  });
}

/** CPU seconds spent so far by the API server and etcd (the processes whose command line names the control plane's directory), and the operator. */
function cpuSeconds(dataDir: string, operatorPid: number): Record<'apiServer' | 'etcd' | 'operator', number> {
  const ticks = 100; // USER_HZ, as /proc counts
  const spent = (pid: string) => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticks;
  };
  const cpu = { apiServer: 0, etcd: 0, operator: 0 };
  if (!fs.existsSync('/proc/self/stat')) return cpu;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (Number(pid) === operatorPid) cpu.operator += spent(pid);
      else if (command.includes(dataDir)) cpu[command.includes('kube-apiserver') ? 'apiServer' : 'etcd'] += spent(pid);
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

async function timed(create: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await create();
  return performance.now() - start;
}

const WEBHOOK = { name: SUITE_VALIDATION.webhook, operation: 'CREATE' };
const REQUEST = (resource: string) => ({ verb: 'POST', resource });
const ours = (text: string) => buckets(text, 'portcullis_admission_request_duration_seconds', { webhook: SUITE_VALIDATION.webhook });

const controlPlane = await startControlPlane();
let operator: ChildProcess | undefined;
try {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  await installForLocalRun(kubeConfig, DEFAULTS.namespace);
  const kube = connect(kubeConfig);
  operator = await startOperatorBundle(APP, controlPlane.kubeconfigPath, [`--serving-port=${SERVING_PORT}`, `--metrics-port=${METRICS_PORT}`]);
  await kube.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const createSuite = (name: string, i: number) => kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: suite(name, i) });
  // Until the validation webhook answers (registered once the operator leads), and warm: the first
  // check of a kind converts its schema.
  for (let i = 0; ; i++) {
    await createSuite(`warm-${i}`, i);
    if (buckets(await apiServerMetrics(kubeConfig), 'apiserver_admission_webhook_admission_duration_seconds', WEBHOOK).get(Infinity)! >= 5) break;
    if (i > 600) throw new Error('the suite-validation webhook is not called');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (let i = 0; i < 5; i++) await kube.core.createNamespacedConfigMap({ namespace: NAMESPACE, body: configMap(`warm-${i}`) });

  const phase = async (run: () => Promise<number[] | number>) => {
    const [apiBefore, oursBefore] = [await apiServerMetrics(kubeConfig), await operatorMetrics()];
    const cpuBefore = cpuSeconds(controlPlane.dataDir, operator!.pid!);
    const result = await run();
    const cpuAfter = cpuSeconds(controlPlane.dataDir, operator!.pid!);
    const [apiAfter, oursAfter] = [await apiServerMetrics(kubeConfig), await operatorMetrics()];
    const delta = (family: string, labels: Record<string, string>) => minus(buckets(apiAfter, family, labels), buckets(apiBefore, family, labels));
    return {
      result,
      webhook: delta('apiserver_admission_webhook_admission_duration_seconds', WEBHOOK),
      configMapRequests: delta('apiserver_request_duration_seconds', REQUEST('configmaps')),
      suiteRequests: delta('apiserver_request_duration_seconds', REQUEST(PLURAL)),
      ours: minus(ours(oursAfter), ours(oursBefore)),
      cpu: Object.fromEntries(Object.entries(cpuAfter).map(([k, v]) => [k, Number((v - cpuBefore[k as keyof typeof cpuBefore]).toFixed(1))])),
    };
  };
  const creates = (create: (i: number) => Promise<unknown>) => async () => {
    const times: number[] = [];
    for (let i = 0; i < CREATES; i++) times.push(await timed(() => create(i)));
    return times;
  };
  const kubectl = controlPlane.binaries.kubectl;
  const apply =
    (objects: object[], args: string[] = []) =>
    () =>
      kubectlApply(kubectl, controlPlane.kubeconfigPath, objects, args);
  const appliedConfigMaps = Array.from({ length: APPLIED }, (_, i) => configMap(`a${i}`));
  const appliedSuites = Array.from({ length: APPLIED }, (_, i) => suite(`a${i}`, i));
  const configMaps = await phase(creates((i) => kube.core.createNamespacedConfigMap({ namespace: NAMESPACE, body: configMap(`c${i}`) })));
  const configMapDryRun = await phase(apply(appliedConfigMaps, ['--dry-run=server']));
  const suiteDryRun = await phase(apply(appliedSuites, ['--dry-run=server']));
  const suites = await phase(creates((i) => createSuite(`s${i}`, i)));
  const configMapApply = await phase(apply(appliedConfigMaps));
  const suiteApply = await phase(apply(appliedSuites));

  const ms = (v: number) => Number(v.toFixed(1));
  const webhookFigures = (p: Awaited<ReturnType<typeof phase>>) => ({ p50: ms(histogramQuantile(p.webhook, 0.5)), p99: ms(histogramQuantile(p.webhook, 0.99)), calls: p.webhook.get(Infinity) ?? 0 });
  const requestFigures = (counts: Buckets) => ({ p50: ms(histogramQuantile(counts, 0.5)), p99: ms(histogramQuantile(counts, 0.99)) });
  const clientFigures = (times: number[]) => ({ p50: ms(quantile(times, 0.5)), p99: ms(quantile(times, 0.99)) });
  const wallTimes = (configMapPhase: Awaited<ReturnType<typeof phase>>, suitePhase: Awaited<ReturnType<typeof phase>>) => {
    const [configMapsMs, suitesMs] = [configMapPhase.result as number, suitePhase.result as number];
    return { objects: APPLIED, configMapsMs: Math.round(configMapsMs), suitesMs: Math.round(suitesMs), ratio: Number((suitesMs / configMapsMs).toFixed(2)), cpuSeconds: { configMaps: configMapPhase.cpu, suites: suitePhase.cpu } };
  };
  const figures = {
    creates: CREATES,
    webhook: { creates: webhookFigures(suites), dryRun: webhookFigures(suiteDryRun), apply: webhookFigures(suiteApply) },
    apiServerRequest: { configMapCreate: requestFigures(configMaps.configMapRequests), suiteCreate: requestFigures(suites.suiteRequests) },
    client: { configMapCreate: clientFigures(configMaps.result as number[]), suiteCreate: clientFigures(suites.result as number[]) },
    ours: { creates: { p50: ms(histogramQuantile(suites.ours, 0.5)), p99: ms(histogramQuantile(suites.ours, 0.99)) } },
    dryRun: wallTimes(configMapDryRun, suiteDryRun),
    apply: wallTimes(configMapApply, suiteApply),
  };
  const pair = (f: { p50: number; p99: number }) => `p50 ${f.p50} ms, p99 ${f.p99} ms`;
  console.log(`validation webhook (API server's), ${CREATES} creates: ${pair(figures.webhook.creates)}; buckets ${showBuckets(suites.webhook)}`);
  console.log(`validation webhook (API server's), ${APPLIED}-suite dry run: ${pair(figures.webhook.dryRun)}; buckets ${showBuckets(suiteDryRun.webhook)}`);
  console.log(`validation webhook (API server's), ${APPLIED}-suite apply: ${pair(figures.webhook.apply)}; buckets ${showBuckets(suiteApply.webhook)}`);
  console.log(`validation webhook (operator's own), ${CREATES} creates: ${pair(figures.ours.creates)}`);
  console.log(`create request (API server's):   ConfigMap ${pair(figures.apiServerRequest.configMapCreate)}; suite ${pair(figures.apiServerRequest.suiteCreate)}`);
  console.log(`create (client's):               ConfigMap ${pair(figures.client.configMapCreate)}; suite ${pair(figures.client.suiteCreate)}`);
  const cpu = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  for (const [what, f] of [
    ['kubectl apply --dry-run=server -f', figures.dryRun],
    ['kubectl apply -f', figures.apply],
  ] as const) {
    console.log(`${what} of ${APPLIED}: ConfigMaps ${f.configMapsMs} ms, suites ${f.suitesMs} ms (x${f.ratio}); CPU s: ConfigMaps ${cpu(f.cpuSeconds.configMaps)}; suites ${cpu(f.cpuSeconds.suites)}`);
  }
  console.log(JSON.stringify(figures));
} finally {
  operator?.kill('SIGTERM');
  await controlPlane.stop();
}
