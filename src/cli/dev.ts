/**
 * `portcullis dev MODULE [--suite FILE]... [--kubeconfig FILE]`: a handler module's dev loop (as `pepr
 * dev`): a local control plane (or --kubeconfig's cluster), the operator as its own process with the
 * module from source (`src/index.ts`, else its main, else the file), the --suite files applied, and the
 * operator started again on any module change (node_modules and dist aside): a new process is the
 * reload, nothing old survives. Owns the loop and its processes; the module's use is src/handler-modules's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULTS } from '../config.ts';
import { apply, connect, loadKubeConfig } from '../apiserver/client.ts';
import { freePort } from '../local/ports.ts';
import { isSuite, readDocuments } from './files.ts';
import { errorMessage } from '../error-message.ts';

const MAIN = fileURLToPath(new URL(`../main${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));
/** Changes closer together than this are one reload (an editor writes a file in several steps). */
const SETTLE_MS = 200;

export interface DevOptions {
  module: string;
  suites: string[];
  kubeconfig?: string;
  /** Where the loop says what it does (stdout). */
  say: (line: string) => void;
}

/** The file the operator imports for `module`: its source when it has one. */
export function moduleSource(module: string): string {
  const full = path.resolve(module);
  if (fs.statSync(full).isFile()) return full;
  for (const candidate of ['src/index.ts', 'src/index.mts', 'index.ts']) if (fs.existsSync(path.join(full, candidate))) return path.join(full, candidate);
  const { main } = JSON.parse(fs.readFileSync(path.join(full, 'package.json'), 'utf8')) as { main?: string };
  if (!main) throw new Error(`${module}: no src/index.ts, and its package.json names no main`);
  return path.join(full, main);
}

export interface DevLoop {
  /** How many times the operator was started again on a change (each start serves the module's code as it then was). */
  reloads: number;
  stop(): Promise<void>;
}

export async function startDev(options: DevOptions): Promise<DevLoop> {
  const { say } = options;
  const source = moduleSource(options.module);
  // The folder the operator loads: one shim re-exporting the module's source (imports resolve from the source's own folder).
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-dev-'));
  fs.writeFileSync(path.join(folder, 'module.mjs'), `export * from ${JSON.stringify(pathToFileURL(source).href)};\n`);
  let stopControlPlane: (() => Promise<void>) | undefined;
  let kubeconfig = options.kubeconfig;
  if (!kubeconfig) {
    const { startControlPlane } = await import('../local/controlplane.ts');
    const { installForLocalRun } = await import('../local/install.ts');
    say('starting a local control plane');
    const controlPlane = await startControlPlane();
    stopControlPlane = () => controlPlane.stop();
    kubeconfig = controlPlane.kubeconfigPath;
    await installForLocalRun(loadKubeConfig(kubeconfig), DEFAULTS.namespace);
    say(`local control plane: kubectl --kubeconfig ${kubeconfig} ...`);
  }
  const ports = { serving: await freePort(), metrics: await freePort() };
  let child: ChildProcess | undefined;
  const loop: DevLoop = { reloads: 0, stop: async () => undefined };

  const startOperator = () =>
    new Promise<void>((resolve, reject) => {
      const started = spawn(
        process.execPath,
        [
          MAIN,
          `--kubeconfig=${kubeconfig}`,
          '--mode=local',
          `--namespace=${DEFAULTS.namespace}`,
          `--serving-port=${ports.serving}`,
          `--metrics-port=${ports.metrics}`,
          `--handler-modules=${folder}`,
          '--lease-duration=4s',
          '--renew-deadline=3s',
          '--retry-period=500ms',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORTCULLIS_LOG_FORMAT: 'text', PORTCULLIS_LOG_LEVEL: process.env.PORTCULLIS_LOG_LEVEL ?? 'info' } },
      );
      child = started;
      let ready = false;
      const forward = (chunk: Buffer) => {
        for (const line of String(chunk).split('\n')) {
          if (!line.trim()) continue;
          if (line.includes('Portcullis is ready') && !ready) {
            ready = true;
            resolve();
          }
          say(`operator: ${line}`);
        }
      };
      started.stdout!.on('data', forward);
      started.stderr!.on('data', forward);
      started.once('exit', (code) => {
        if (!ready) reject(new Error(`the operator exited (${code}) before it was ready`));
      });
    });
  const stopOperator = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  };

  await startOperator();
  const kube = connect(loadKubeConfig(kubeconfig));
  for (const file of options.suites) {
    for (const suite of readDocuments(file).filter(isSuite)) {
      await apply(kube, suite);
      say(`applied AdmissionSuite ${(suite.metadata as { name?: string } | undefined)?.name ?? ''} (${file})`);
    }
  }
  // Every change, debounced: one restart at a time, a change during a restart starts another after it.
  const root = fs.statSync(path.resolve(options.module)).isDirectory() ? path.resolve(options.module) : path.dirname(source);
  say(`serving ${source}; watching ${root} for changes`);
  let timer: NodeJS.Timeout | undefined;
  let restarting: Promise<void> = Promise.resolve();
  // Not watched at all, not only not acted on: a module's node_modules holds thousands of files, a
  // watch (kernel inotify, shared by the user's every process) each.
  const notWatched = /(^|\/)(node_modules|dist|\.git)(\/|$)/;
  const watcher = fs.watch(root, { recursive: true, ignore: notWatched }, (_event, name) => {
    const changed = String(name ?? '');
    if (notWatched.test(changed)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      restarting = restarting.then(async () => {
        say(`${changed} changed: reloading`);
        await stopOperator();
        try {
          await startOperator();
          loop.reloads++;
          say(`reloaded (${loop.reloads})`);
        } catch (err) {
          say(`the operator did not start again: ${errorMessage(err)}; fix the module and save`);
        }
      });
    }, SETTLE_MS);
  });

  loop.stop = async () => {
    watcher.close();
    clearTimeout(timer);
    await restarting;
    await stopOperator();
    await stopControlPlane?.();
    fs.rmSync(folder, { recursive: true, force: true });
  };
  return loop;
}
