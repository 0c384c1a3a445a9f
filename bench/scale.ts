/**
 * `npm run bench:scale`: how the operator copes with many suites, on the local control plane.
 * For each N (default 100 and 1000; `SCALE_SUITES=100,500` to choose), on a fresh control plane:
 *  1. starts the operator as its own process, as the image runs it (the bundles of tools/build.ts,
 *     the image's Node flags; local mode), and reads its idle RSS;
 *  2. applies N suites at once and times each from its create to Ready=True (a watch);
 *  3. reads the operator's RSS with N suites served, and per suite;
 *  3b. creates one ConfigMap per suite through the API server, each selected by that suite's
 *     webhook alone, which denies it: how many of the N answered (the API server's connections to
 *     N webhook configurations, issue 50), the failures' first words, and the creates' p50 and p99;
 *  4. restarts the operator (SIGTERM, a new process) and times until every suite serves again:
 *     each suite's webhook is called as the API server calls it (TLS verified against the bundle the
 *     operator wrote, the suite's server name, its admit path) and must deny the object it denies.
 * Figures print as they come; the last line is one JSON object with all of them.
 * SCALE_OPERATOR_ARGS adds operator flags (`--max-concurrent-reconciles=20`), SCALE_NODE_FLAGS Node's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { installForLocalRun } from '../src/local/install.ts';
import { loadKubeConfig } from '../src/apiserver/client.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION, type AdmissionSuite } from '../src/api/types.ts';
import { admitPath, tlsSecretName } from '../src/api/names.ts';
import { DEFAULTS } from '../src/config.ts';
import { servingNames } from '../src/desired/objects.ts';
import { OPERATOR_NODE_FLAGS } from '../src/admission/v8-tuning.ts';
import { requestFor } from '../test/fixtures/reviews.ts';
import { pool } from '../test/support/wait.ts';
import { buildApp } from '../tools/build.ts';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** The image's /app (tools/build.ts' buildApp): package.json, crds/, dist/. */
const APP = path.join(REPO, '.local', 'scale-app');
const SIZES = (process.env.SCALE_SUITES ?? '100,1000').split(',').map(Number);
const NAMESPACE = DEFAULTS.namespace;
const READY_TIMEOUT_MS = Number(process.env.SCALE_TIMEOUT_S ?? 600) * 1000;
/** Creates in flight at once: "applied at once" as kubectl apply of one file of N would be, bounded. */
const CREATE_CONCURRENCY = 32;
const PROBE_CONCURRENCY = 32;

interface Round {
  suites: number;
  allReadyS: number;
  readyP50S: number;
  readyP99S: number;
  rssIdleMB: number;
  rssLoadedMB: number;
  rssPerSuiteMB: number;
  /** Suites whose webhook answered a create through the API server (denied it with its message). */
  answeredCreates: number;
  failedCreates: number;
  createP50Ms: number;
  createP99Ms: number;
  restartAllServingS: number;
  rssAfterRestartMB: number;
}

function suiteFor(name: string): AdmissionSuite {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name } as AdmissionSuite['metadata'],
    spec: {
      webhooks: [
        {
          name: 'guard',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          // Each suite sees only its own objects, so N suites do not all answer every create.
          objectSelector: { matchLabels: { 'scale.portcullis.dev/suite': name } },
          validations: [{ expression: "!has(object.data) || !('deny' in object.data)", message: `denied by ${name}` }],
        },
      ],
    },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function rssMB(pid: number): number {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface OperatorChild {
  child: ChildProcess;
  /** The last of what it wrote (its warnings and errors). */
  output(): string;
  servingPort: number;
  stop(): Promise<void>;
}

async function startOperator(kubeconfig: string, servingPort: number, metricsPort: number): Promise<OperatorChild> {
  const child = spawn(
    process.execPath,
    [
      ...OPERATOR_NODE_FLAGS,
      ...(process.env.SCALE_NODE_FLAGS ? process.env.SCALE_NODE_FLAGS.split(' ') : []),
      MAIN,
      `--kubeconfig=${kubeconfig}`,
      '--mode=local',
      `--namespace=${NAMESPACE}`,
      `--serving-port=${servingPort}`,
      `--metrics-port=${metricsPort}`,
      ...(process.env.SCALE_OPERATOR_ARGS ? process.env.SCALE_OPERATOR_ARGS.split(' ') : []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORTCULLIS_LOG_LEVEL: 'warn' } },
  );
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-20_000)));
  const started = Date.now();
  while (!output.includes('Portcullis is ready')) {
    if (child.exitCode !== null) throw new Error(`the operator exited: ${output}`);
    if (Date.now() - started > 60_000) throw new Error(`the operator did not start in 60 s: ${output}`);
    await sleep(50);
  }
  return {
    child,
    servingPort,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Watches suites and resolves each name's first Ready=True time. */
function watchReady(kubeConfig: k8s.KubeConfig, names: Set<string>): { readyAt: Map<string, number>; all: Promise<void>; stop(): void } {
  const readyAt = new Map<string, number>();
  let resolveAll!: () => void;
  const all = new Promise<void>((resolve) => (resolveAll = resolve));
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const watch = new k8s.Watch(kubeConfig);
  let request: { abort(): void } | undefined;
  let stopped = false;
  const seen = (suite: AdmissionSuite) => {
    const name = suite.metadata.name;
    if (!names.has(name) || readyAt.has(name)) return;
    const ready = suite.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'True' && suite.status?.observedGeneration === suite.metadata.generation) {
      readyAt.set(name, Date.now());
      if (readyAt.size === names.size) resolveAll();
    }
  };
  // A watch the API server ends (its timeout, or a moment of overload under the burst) is listed
  // and watched again: a suite that turned Ready meanwhile is timed by the list that finds it.
  const start = async (): Promise<void> => {
    if (stopped) return;
    try {
      const list = (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as { items: AdmissionSuite[]; metadata: { resourceVersion: string } };
      for (const suite of list.items) seen(suite);
      request = await watch.watch(
        `/apis/${GROUP}/${VERSION}/${PLURAL}`,
        { resourceVersion: list.metadata.resourceVersion },
        (_type, suite: AdmissionSuite) => seen(suite),
        () => void restart(),
      );
    } catch {
      void restart();
    }
  };
  const restart = async () => {
    if (stopped) return;
    await sleep(200);
    await start();
  };
  void start();
  return {
    readyAt,
    all,
    stop: () => {
      stopped = true;
      request?.abort();
    },
  };
}

/** Waits until the operator has reconciled `n` suites and its work queue is empty (its metrics). */
async function untilReconciled(metricsPort: number, n: number, deadline: number): Promise<void> {
  for (;;) {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const sum = (pattern: RegExp) => [...text.matchAll(pattern)].reduce((total, m) => total + Number(m[1]), 0);
    const reconciled = sum(/^portcullis_reconcile_duration_seconds_count\{[^}]*kind="suite"[^}]*\} (\S+)$/gm);
    const depth = sum(/^portcullis_workqueue_depth (\S+)$/gm);
    if (reconciled >= n && depth === 0) return;
    if (Date.now() > deadline) throw new Error(`after a restart, ${reconciled} of ${n} suites reconciled, ${depth} keys queued`);
    await sleep(250);
  }
}

/**
 * One create per suite through the API server, each ConfigMap labelled for that suite's webhook
 * alone, which denies it. A create that succeeds was not sent to the suite yet (the API server
 * sees a new configuration a moment after it is written): made again, up to the deadline. Any
 * other refusal (a reset connection, EOF, a timeout: answered by failurePolicy Fail) is a failure,
 * never retried. The time of each answered create is the one that reached the suite.
 */
async function createsAnswered(kubeConfig: k8s.KubeConfig, names: string[], deadline: number): Promise<{ answered: number; failures: string[]; ms: number[] }> {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const failures: string[] = [];
  const ms: number[] = [];
  await pool(names, CREATE_CONCURRENCY, async (name) => {
    for (;;) {
      const started = performance.now();
      try {
        await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: `${name}-`, labels: { 'scale.portcullis.dev/suite': name } }, data: { deny: 'yes' } } });
      } catch (err) {
        const elapsed = performance.now() - started;
        const message = String((err as { body?: unknown }).body ?? err);
        if (message.includes(`denied by ${name}`)) ms.push(elapsed);
        else failures.push(`${name}: ${message.slice(0, 200)}`);
        return;
      }
      if (Date.now() > deadline) {
        failures.push(`${name}: never sent to its webhook`);
        return;
      }
      await sleep(200);
    }
  });
  return { answered: ms.length, failures, ms: ms.sort((a, b) => a - b) };
}

/** Calls each suite's webhook as the API server would, until every one answers with its denial. */
async function untilAllServe(kubeConfig: k8s.KubeConfig, names: string[], servingPort: number, deadline: number): Promise<void> {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const bundles = new Map<string, string>();
  await pool(names, PROBE_CONCURRENCY, async (name) => {
    const secret = await core.readNamespacedSecret({ name: tlsSecretName(name), namespace: NAMESPACE });
    bundles.set(name, Buffer.from(secret.data!['ca.crt']!, 'base64').toString());
  });
  let waiting = [...names];
  while (waiting.length > 0) {
    if (Date.now() > deadline) throw new Error(`${waiting.length} suite(s) still not serving, e.g. ${waiting[0]}`);
    const failed: string[] = [];
    await pool(waiting, PROBE_CONCURRENCY, async (name) => {
      if (!(await deniesAsExpected(name, bundles.get(name)!, servingPort))) failed.push(name);
    });
    waiting = failed;
    if (waiting.length > 0) await sleep(100);
  }
}

function deniesAsExpected(name: string, bundle: string, port: number): Promise<boolean> {
  const suite = suiteFor(name);
  const servername = servingNames(suite, { ...DEFAULTS, mode: 'local' })[0]!;
  const request = requestFor('configmaps', 'CREATE', { object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe', namespace: 'default' }, data: { deny: 'yes' } } });
  const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { ...request, uid: `scale-${name}`, dryRun: true } });
  return new Promise((resolve) => {
    const req = https.request({ host: '127.0.0.1', port, servername, ca: bundle, method: 'POST', path: admitPath(name, 'guard'), headers: { 'content-type': 'application/json' }, agent: false, timeout: 5000 }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        try {
          const review = JSON.parse(text);
          resolve(res.statusCode === 200 && review.response?.allowed === false && String(review.response?.status?.message).includes(`denied by ${name}`));
        } catch {
          resolve(false);
        }
      });
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end(body);
  });
}

/** The API server's request counts by verb and resource (apiserver_request_total, all codes summed). */
async function apiRequests(kubeConfig: k8s.KubeConfig): Promise<Map<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    const server = new URL(kubeConfig.getCurrentCluster()!.server);
    const options: https.RequestOptions = { host: server.hostname, port: server.port, path: '/metrics', method: 'GET' };
    void kubeConfig.applyToHTTPSOptions(options).then(() => {
      const req = https.request(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString()));
      });
      req.on('error', reject);
      req.end();
    }, reject);
  });
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? '';
    const key = `${label('verb')} ${label('resource')}${label('subresource') ? `/${label('subresource')}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}

/** What the API server served per suite between two counts: its writes first, the largest first. */
function perSuiteRequests(before: Map<string, number>, after: Map<string, number>, n: number): string {
  const writes = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'CREATE', 'UPDATE']);
  const deltas = [...after]
    .map(([key, count]) => [key, (count - (before.get(key) ?? 0)) / n] as const)
    .filter(([, per]) => per >= 0.05)
    .sort((a, b) => Number(writes.has(b[0].split(' ')[0]!)) - Number(writes.has(a[0].split(' ')[0]!)) || b[1] - a[1]);
  return deltas.map(([key, per]) => `${key} ${per.toFixed(2)}`).join(', ');
}

async function round(n: number, ports: { serving: number; metrics: number }): Promise<Round> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-scale-'));
  const controlPlane = await startControlPlane({ dataDir, log: () => undefined });
  try {
    const kubeConfig = loadKubeConfig(controlPlane.kubeconfigPath);
    await installForLocalRun(kubeConfig, NAMESPACE);
    const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);

    let operator = await startOperator(controlPlane.kubeconfigPath, ports.serving, ports.metrics);
    await sleep(3000);
    const rssIdleMB = rssMB(operator.child.pid!);

    const names = Array.from({ length: n }, (_, i) => `scale-${String(i).padStart(4, '0')}`);
    const ready = watchReady(kubeConfig, new Set(names));
    await sleep(500);
    const createdAt = new Map<string, number>();
    const requestsBefore = await apiRequests(kubeConfig);
    const start = Date.now();
    await pool(names, CREATE_CONCURRENCY, async (name) => {
      createdAt.set(name, Date.now());
      await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: suiteFor(name) });
    });
    const timeout = sleep(READY_TIMEOUT_MS).then(() => {
      throw new Error(`only ${ready.readyAt.size} of ${n} suites were Ready after ${READY_TIMEOUT_MS / 1000} s`);
    });
    await Promise.race([ready.all, timeout]);
    ready.stop();
    const allReadyS = (Math.max(...ready.readyAt.values()) - start) / 1000;
    const perSuite = names.map((name) => (ready.readyAt.get(name)! - createdAt.get(name)!) / 1000).sort((a, b) => a - b);
    console.log(`${n} suites: all Ready ${allReadyS.toFixed(2)} s after the first create; apply-to-Ready p50 ${percentile(perSuite, 50).toFixed(2)} s, p99 ${percentile(perSuite, 99).toFixed(2)} s`);
    // Everything the API server served meanwhile (the bench's creates and watch included), per suite.
    console.log(`${n} suites: API requests per suite: ${perSuiteRequests(requestsBefore, await apiRequests(kubeConfig), n)}`);

    await sleep(3000);
    const rssLoadedMB = rssMB(operator.child.pid!);
    const rssPerSuiteMB = (rssLoadedMB - rssIdleMB) / n;
    console.log(`${n} suites: operator RSS idle ${rssIdleMB.toFixed(0)} MB, with the suites ${rssLoadedMB.toFixed(0)} MB (${rssPerSuiteMB.toFixed(3)} MB per suite)`);

    const creates = await createsAnswered(kubeConfig, names, Date.now() + READY_TIMEOUT_MS);
    const createP50Ms = creates.ms.length ? percentile(creates.ms, 50) : NaN;
    const createP99Ms = creates.ms.length ? percentile(creates.ms, 99) : NaN;
    console.log(
      `${n} suites: ${creates.answered} of ${n} answered a create through the API server (${creates.failures.length} failed${creates.failures.length ? `, e.g. ${creates.failures[0]}` : ''}); those creates p50 ${createP50Ms.toFixed(1)} ms, p99 ${createP99Ms.toFixed(1)} ms`,
    );

    await operator.stop();
    const requestsBeforeRestart = await apiRequests(kubeConfig);
    const restarted = Date.now();
    operator = await startOperator(controlPlane.kubeconfigPath, ports.serving, ports.metrics);
    await untilAllServe(kubeConfig, names, ports.serving, restarted + READY_TIMEOUT_MS);
    const restartAllServingS = (Date.now() - restarted) / 1000;
    const rssAfterRestartMB = rssMB(operator.child.pid!);
    console.log(`${n} suites: after a restart, all serving again in ${restartAllServingS.toFixed(2)} s (RSS ${rssAfterRestartMB.toFixed(0)} MB)`);
    // The restart's resync: what the API server served until every suite was reconciled once (the probes' Secret reads included).
    await untilReconciled(ports.metrics, n, restarted + READY_TIMEOUT_MS);
    console.log(`${n} suites: after a restart, until every suite was reconciled (${((Date.now() - restarted) / 1000).toFixed(2)} s), API requests per suite: ${perSuiteRequests(requestsBeforeRestart, await apiRequests(kubeConfig), n)}`);
    await operator.stop();
    if (process.env.SCALE_OPERATOR_LOG) fs.writeFileSync(process.env.SCALE_OPERATOR_LOG, operator.output());

    return {
      suites: n,
      allReadyS: round2(allReadyS),
      readyP50S: round2(percentile(perSuite, 50)),
      readyP99S: round2(percentile(perSuite, 99)),
      rssIdleMB: Math.round(rssIdleMB),
      rssLoadedMB: Math.round(rssLoadedMB),
      rssPerSuiteMB: Math.round(rssPerSuiteMB * 1000) / 1000,
      answeredCreates: creates.answered,
      failedCreates: creates.failures.length,
      createP50Ms: round2(createP50Ms),
      createP99Ms: round2(createP99Ms),
      restartAllServingS: round2(restartAllServingS),
      rssAfterRestartMB: Math.round(rssAfterRestartMB),
    };
  } finally {
    await controlPlane.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const round2 = (x: number) => Math.round(x * 100) / 100;

const MAIN = await buildApp(APP);
const rounds: Round[] = [];
for (const n of SIZES) rounds.push(await round(n, { serving: 19443, metrics: 19080 }));
console.log(JSON.stringify({ cores: os.cpus().length, rounds }));
process.exit(0);
