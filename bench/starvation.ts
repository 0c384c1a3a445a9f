/**
 * `npm run bench:starvation`: can a few clients that send the largest objects the API server
 * passes on (3 MiB, 266k labels) starve everyone else's admissions? The admission server runs in
 * its own process pinned to core 0 (as in bench/run.ts); from core 1, LARGE_CLIENTS clients each
 * send large reviews back to back while one client sends a typical Pod review every 20 ms and
 * records how long each took. Two rounds: `threaded`, served as the operator serves (an admission
 * thread, large reviews handed to the main thread and judged by the review worker), and
 * `portcullis`, the server listening on the process' main thread (`--admission-thread=false`);
 * BENCH_SERVERS chooses (`threaded,portcullis`). Prints, per round, the typical reviews'
 * p50/p99/max and how many large reviews were answered; the last line is one JSON object with the
 * figures.
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createCA, issueLeaf } from '../src/certs/x509.ts';
import { podReview, SERVER_NAME } from './fixtures.ts';
import { runOnLoadCore, startServer } from './processes.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const LARGE_CLIENTS = Number(process.env.BENCH_LARGE_CLIENTS ?? 4);
const LABELS = 266_000;
runOnLoadCore();

const ca = await createCA({ commonName: 'bench-ca', notAfter: new Date(Date.now() + 86_400_000) });
const leaf = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-starvation-'));
fs.writeFileSync(path.join(dir, 'tls.crt'), leaf.certPem);
fs.writeFileSync(path.join(dir, 'tls.key'), leaf.keyPem);
const small = JSON.stringify(podReview(1));
const largeReview = podReview(1);
const labels: Record<string, string> = {};
for (let i = 0; i < LABELS; i++) labels[`l${i}`] = '';
(largeReview.request!.object as { metadata: { labels: Record<string, string> } }).metadata.labels = labels;
const large = JSON.stringify(largeReview);

function post(port: number, agent: https.Agent, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/admit/bench/guards', method: 'POST', servername: SERVER_NAME, ca: ca.certPem, agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end(body);
  });
}

type Kind = 'threaded' | 'portcullis';
const SERVERS = (process.env.BENCH_SERVERS ?? 'threaded,portcullis').split(',') as Kind[];

async function round(kind: Kind) {
  const { child: server, port } = await startServer(kind, path.join(dir, 'tls.crt'), path.join(dir, 'tls.key'));
  const deadline = Date.now() + SECONDS * 1000;
  let largeAnswered = 0;
  const largeClients = Array.from({ length: LARGE_CLIENTS }, async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    while (Date.now() < deadline) {
      await post(port, agent, large).catch(() => 0);
      largeAnswered += 1;
    }
    agent.destroy();
  });
  const latencies: number[] = [];
  // As the API server does, a new connection whenever all are busy.
  const smallAgent = new https.Agent({ keepAlive: true });
  const smallClient = (async () => {
    const inFlight: Promise<void>[] = [];
    while (Date.now() < deadline) {
      const started = performance.now();
      inFlight.push(post(port, smallAgent, small).then(() => void latencies.push(performance.now() - started)));
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all(inFlight);
  })();
  await Promise.all([...largeClients, smallClient]);
  server.kill('SIGINT');
  smallAgent.destroy();

  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  const figures = {
    server: kind,
    largeClients: LARGE_CLIENTS,
    largeBytes: large.length,
    largeAnswered,
    typicalAnswered: latencies.length,
    typicalP50Ms: Number(at(0.5).toFixed(1)),
    typicalP99Ms: Number(at(0.99).toFixed(1)),
    typicalMaxMs: Number(latencies.at(-1)!.toFixed(1)),
  };
  console.log(
    `${kind}: ${LARGE_CLIENTS} clients sending ${(large.length / 2 ** 20).toFixed(1)} MiB reviews (${largeAnswered} answered in ${SECONDS} s); typical reviews every 20 ms: p50 ${figures.typicalP50Ms} ms, p99 ${figures.typicalP99Ms} ms, max ${figures.typicalMaxMs} ms (${latencies.length})`,
  );
  return figures;
}

const rounds = [];
for (const kind of SERVERS) rounds.push(await round(kind));
console.log(JSON.stringify({ rounds }));
fs.rmSync(dir, { recursive: true, force: true });
