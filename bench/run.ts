/**
 * `npm run bench`: the admission hot path, measured on this machine.
 *  1. the per-review cost of a suite of 10 validations + 2 mutations on a Pod with 50 containers;
 *  2. requests/s and p50/p99 of the admission endpoint under load (autocannon, HTTPS keep-alive,
 *     TLS verified) for a typical Pod review through the validation webhook, beside the floor: a
 *     bare Node HTTPS server that reads and parses the same body and allows;
 *  3. p99 at a fixed 1,000 requests/s.
 * Servers run in their own processes pinned to core 0 (taskset), the load generator pinned to core 1.
 * Beside req/s, the servers' CPU time per request (from /proc): on a VM whose neighbours vary,
 * req/s swings between runs, CPU time per request much less.
 * The last line is one JSON object with the figures.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createCA, issueLeaf } from '../src/certs/x509.ts';
import { SuiteRegistry } from '../src/registry/registry.ts';
import { benchSuite, podReview, SERVER_NAME } from './fixtures.ts';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const CAN_PIN = spawnSync('taskset', ['--version']).status === 0;

// The load generator (this process) runs on core 1, the servers on core 0: re-run pinned.
if (CAN_PIN && os.cpus().length > 1 && process.env.PORTCULLIS_BENCH_PINNED !== '1') {
  const pinned = spawnSync('taskset', ['-c', '1', process.execPath, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, PORTCULLIS_BENCH_PINNED: '1' } });
  process.exit(pinned.status ?? 1);
}
const CONNECTIONS = 10;
const here = path.dirname(fileURLToPath(import.meta.url));

function reviewMicros(): number {
  const registry = new SuiteRegistry();
  registry.sync(benchSuite());
  const validate = registry.webhook('bench', 'guards')!;
  const mutate = registry.webhook('bench', 'defaults')!;
  const request = podReview(50).request!;
  const run = () => {
    const v = validate.admit(request);
    const m = mutate.admit(request);
    // (the bench suite does not use `authorizer`, so its answers are synchronous)
    if (v instanceof Promise || m instanceof Promise || !v.allowed || !m.patch) throw new Error(`the bench suite must allow and patch: ${JSON.stringify(v)}`);
  };
  for (let i = 0; i < 300; i++) run();
  const n = 2000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) run();
  return Number(process.hrtime.bigint() - start) / 1e3 / n;
}

async function startServer(kind: 'portcullis' | 'floor', cert: string, key: string): Promise<{ child: ChildProcess; port: number }> {
  const pin = CAN_PIN ? ['taskset', '-c', '0'] : [];
  const args = [...pin, process.execPath, path.join(here, 'server.ts'), kind, cert, key];
  const child = spawn(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return { child, port };
}

async function load(port: number, ca: string, body: string, overallRate?: number): Promise<autocannon.Result> {
  return autocannon({
    url: `https://127.0.0.1:${port}/admit/bench/guards`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: overallRate ? 4 : CONNECTIONS,
    duration: DURATION_S,
    servername: SERVER_NAME,
    tlsOptions: { ca },
    ...(overallRate ? { overallRate } : {}),
  });
}

/** CPU seconds (user + system) the process `pid` has used, from /proc; undefined where there is no /proc. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    return ticks / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

/** A load run with the server's CPU time per request: steadier than req/s where the VM's neighbours vary. */
async function measuredLoad(pid: number, port: number, ca: string, body: string): Promise<{ result: autocannon.Result; cpuUs?: number }> {
  const before = cpuSeconds(pid);
  const result = await load(port, ca, body);
  const after = cpuSeconds(pid);
  return { result, cpuUs: before === undefined || after === undefined ? undefined : ((after - before) * 1e6) / result.requests.total };
}

function checkOk(result: autocannon.Result, what: string): void {
  if (result.errors || result.non2xx || result.timeouts) throw new Error(`${what}: ${result.errors} errors, ${result.non2xx} non-2xx, ${result.timeouts} timeouts`);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-'));
const ca = await createCA({ commonName: 'bench-ca', notAfter: new Date(Date.now() + 86_400_000) });
const leaf = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 86_400_000) });
fs.writeFileSync(path.join(dir, 'tls.crt'), leaf.certPem);
fs.writeFileSync(path.join(dir, 'tls.key'), leaf.keyPem);

const review_us = reviewMicros();
console.log(`per review (10 validations + 2 mutations, Pod with 50 containers): ${review_us.toFixed(1)} us`);

const body = JSON.stringify(podReview(4));
console.log(`load: ${DURATION_S}s each, ${CONNECTIONS} keep-alive connections, a ${(body.length / 1024).toFixed(1)} KB Pod review, servers pinned to one core`);
const results: Record<string, autocannon.Result> = {};
const cpuUs: Record<string, number | undefined> = {};
for (const kind of ['floor', 'portcullis'] as const) {
  const server = await startServer(kind, path.join(dir, 'tls.crt'), path.join(dir, 'tls.key'));
  try {
    await load(server.port, ca.certPem, body); // warm-up
    const measured = await measuredLoad(server.child.pid!, server.port, ca.certPem, body);
    results[kind] = measured.result;
    cpuUs[kind] = measured.cpuUs;
    checkOk(results[kind]!, kind);
    if (kind === 'portcullis') {
      results.fixed = await load(server.port, ca.certPem, body, 1000);
      checkOk(results.fixed!, 'fixed rate');
    }
  } finally {
    server.child.kill();
  }
}
fs.rmSync(dir, { recursive: true, force: true });

const row = (name: string, r: autocannon.Result) =>
  console.log(`${name.padEnd(28)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${r.latency.p50.toFixed(2)} ms   p99 ${r.latency.p99.toFixed(2)} ms`);
row('floor (bare HTTPS + parse)', results.floor!);
row('portcullis', results.portcullis!);
row('portcullis at 1,000 req/s', results.fixed!);
if (cpuUs.floor !== undefined && cpuUs.portcullis !== undefined) {
  console.log(`server CPU per request: floor ${cpuUs.floor.toFixed(1)} us, portcullis ${cpuUs.portcullis.toFixed(1)} us (capacity ratio on one core ${(cpuUs.floor / cpuUs.portcullis).toFixed(3)})`);
}
const figures = {
  portcullis_rps: Math.round(results.portcullis!.requests.average),
  floor_rps: Math.round(results.floor!.requests.average),
  ratio: Number((results.portcullis!.requests.average / results.floor!.requests.average).toFixed(3)),
  p50_ms: results.portcullis!.latency.p50,
  p99_ms: results.portcullis!.latency.p99,
  p99_at_1k_ms: results.fixed!.latency.p99,
  review_us: Number(review_us.toFixed(1)),
  floor_cpu_us: cpuUs.floor === undefined ? null : Number(cpuUs.floor.toFixed(1)),
  portcullis_cpu_us: cpuUs.portcullis === undefined ? null : Number(cpuUs.portcullis.toFixed(1)),
};
console.log(JSON.stringify(figures));
