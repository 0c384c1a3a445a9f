/**
 * `npm start` with no cluster configured: the operator starts a control plane of its own, runs
 * against it, and takes it down with it however it stops: killed outright, or within 5 s of
 * Ctrl-C or SIGTERM.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBinaries } from '../../src/local/binaries.ts';
import { freePort } from '../../src/local/ports.ts';
import { eventually } from '../support/wait.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** PIDs of the processes whose command line names `dir`. */
function processesUsing(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** `npm start` as a terminal runs it: its own process group (a job), with no cluster configured. */
async function startLocalRun(scratch: string) {
  const dataDir = path.join(scratch, 'controlplane');
  const binaries = await ensureBinaries();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KUBECONFIG: path.join(scratch, 'no-such-kubeconfig'), // no cluster configured
    PORTCULLIS_LOCAL_DATA_DIR: dataDir,
    PORTCULLIS_CONTROLPLANE_BIN: path.dirname(binaries.etcd),
    PORTCULLIS_LOG_LEVEL: 'warn',
  };
  delete env.KUBERNETES_SERVICE_HOST;
  const child = spawn(process.execPath, [MAIN, `--serving-port=${await freePort()}`, `--metrics-port=${await freePort()}`], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const run = { child, dataDir, output: '' };
  child.stdout!.on('data', (chunk) => (run.output += chunk));
  child.stderr!.on('data', (chunk) => (run.output += chunk));
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the operator exited: ${run.output}`);
      if (!run.output.includes('Portcullis is ready')) throw new Error('not ready yet');
    },
    { what: 'the operator to start its control plane and be ready', timeoutMs: 120_000 },
  );
  return run;
}

describe('npm start with no cluster configured', function () {
  this.timeout(180_000);
  let scratch: string;
  let dataDir: string | undefined;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-local-run-'));
  });
  afterEach(() => {
    for (const pid of dataDir ? processesUsing(dataDir) : []) process.kill(pid, 'SIGKILL');
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('starts a control plane of its own, and the control plane dies with the operator even when it is killed outright', async function () {
    const run = await startLocalRun(scratch);
    dataDir = run.dataDir;
    try {
      expect(run.output).to.include(`Local control plane: kubectl --kubeconfig ${path.join(run.dataDir, 'kubeconfig')}`);
      const controlPlane = processesUsing(run.dataDir);
      expect(controlPlane.length, 'etcd, kube-apiserver and kube-controller-manager running').to.be.at.least(3);

      run.child.kill('SIGKILL'); // no exit handler runs
      await eventually(
        async () => {
          const left = processesUsing(run.dataDir);
          if (left.length) throw new Error(`still running: ${left.join(', ')}`);
        },
        { what: 'the control plane to die with the operator', timeoutMs: 15_000 },
      );
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  // Ctrl-C: the terminal signals the whole foreground process group at once; SIGTERM: the process alone.
  for (const [what, signal, group] of [
    ['Ctrl-C', 'SIGINT', true],
    ['SIGTERM', 'SIGTERM', false],
  ] as const) {
    it(`stops within 5 s of ${what}, leaving nothing running`, async function () {
      const run = await startLocalRun(scratch);
      dataDir = run.dataDir;
      try {
        const exited = new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)));
        const sent = Date.now();
        process.kill(group ? -run.child.pid! : run.child.pid!, signal);
        const code = await exited;
        const tookMs = Date.now() - sent;
        expect(tookMs, `exit took ${tookMs} ms`).to.be.below(5000);
        expect(code, run.output).to.equal(0);
        expect(processesUsing(run.dataDir), 'control-plane processes left').to.deep.equal([]);
      } finally {
        run.child.kill('SIGKILL');
      }
    });
  }
});
