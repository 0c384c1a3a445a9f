/**
 * The operator for bench/e2e.ts' `E2E_SERVER=worker`: started as src/main.ts starts it (same
 * flags), with the admission server alone (bench/server.ts `e2e`) in a worker thread of the same
 * process beside it. A worker has a V8 isolate of its own (heap, inline caches, string table), so
 * the bench then compares, in one process, the operator's main thread with an isolate that runs
 * nothing else: what serving admission from a worker thread would give. Bench-only.
 * PORTCULLIS_BENCH_WORKER holds the worker's certificate and key files, space-separated.
 */
import { Worker } from 'node:worker_threads';

const [certFile, keyFile] = (process.env.PORTCULLIS_BENCH_WORKER ?? '').split(' ');
if (!certFile || !keyFile) throw new Error('PORTCULLIS_BENCH_WORKER must name the worker server\'s certificate and key files');
// It prints "listening <port>" on this process' stdout, where the bench reads it.
new Worker(new URL('./server.ts', import.meta.url), { argv: ['e2e', certFile, keyFile] });
await import('../src/main.ts');
