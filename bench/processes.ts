/**
 * The benchmarks' processes: the load generator (the bench script itself) on core 1, each server
 * under test (bench/server.ts) in a process of its own on core 0, when taskset and two cores are
 * there; unpinned otherwise.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OPERATOR_NODE_FLAGS, SERVING_NODE_FLAGS } from '../src/admission/v8-tuning.ts';
import { buildApp } from '../tools/build.ts';

const CAN_PIN = spawnSync('taskset', ['--version']).status === 0 && os.cpus().length > 1;
const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'server.ts');

/** Re-runs this script pinned to core 1 and exits with its status; returns when already pinned (or unable to pin). */
export function runOnLoadCore(): void {
  if (!CAN_PIN || process.env.PORTCULLIS_BENCH_PINNED === '1') return;
  const pinned = spawnSync('taskset', ['-c', '1', process.execPath, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, PORTCULLIS_BENCH_PINNED: '1' } });
  process.exit(pinned.status ?? 1);
}

/**
 * Starts bench/server.ts (`portcullis`, `threaded`, `e2e` or `floor`) on core 0 (unpinned with
 * `pin: false`); resolves with its port once it listens. Our server, listening on its main thread,
 * runs with the Node flags of the admission thread's isolate (SERVING_NODE_FLAGS); `threaded` with
 * the operator's (its thread sizes its own); the floor with Node's defaults.
 */
export async function startServer(kind: 'portcullis' | 'threaded' | 'e2e' | 'floor', certFile: string, keyFile: string, options: { pin?: boolean } = {}): Promise<{ child: ChildProcess; port: number }> {
  const flags = kind === 'floor' ? [] : kind === 'threaded' ? OPERATOR_NODE_FLAGS : SERVING_NODE_FLAGS;
  const args = [...(CAN_PIN && options.pin !== false ? ['taskset', '-c', '0'] : []), process.execPath, ...flags, SERVER, kind, certFile, keyFile];
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

/**
 * Starts the operator as the image runs it (tools/build.ts' bundles, built into `app`; the image's
 * Node flags), in local mode against `kubeconfig`, with `args`; resolves once it is ready.
 */
export async function startOperatorBundle(app: string, kubeconfig: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...OPERATOR_NODE_FLAGS, await buildApp(app), `--kubeconfig=${kubeconfig}`, '--mode=local', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORTCULLIS_LOG_LEVEL: 'error' },
  });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output = (output + c).slice(-10_000)));
  for (let i = 0; !output.includes('Portcullis is ready'); i++) {
    if (child.exitCode !== null || i > 1200) throw new Error(`the operator did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return child;
}
