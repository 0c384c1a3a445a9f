/**
 * `npm start` with no cluster configured: the operator starts a control plane of its own, runs
 * against it, and takes it down with it however it stops, even killed outright.
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

describe('npm start with no cluster configured', function () {
  this.timeout(180_000);

  it('starts a control plane of its own, and the control plane dies with the operator even when it is killed outright', async function () {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-local-run-'));
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
    const child = spawn(process.execPath, [MAIN, `--serving-port=${await freePort()}`, `--metrics-port=${await freePort()}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    try {
      await eventually(
        async () => {
          if (child.exitCode !== null) throw new Error(`the operator exited: ${output}`);
          if (!output.includes('Portcullis is ready')) throw new Error('not ready yet');
        },
        { what: 'the operator to start its control plane and be ready', timeoutMs: 120_000 },
      );
      expect(output).to.include(`Local control plane: kubectl --kubeconfig ${path.join(dataDir, 'kubeconfig')}`);
      const controlPlane = processesUsing(dataDir);
      expect(controlPlane.length, 'etcd, kube-apiserver and kube-controller-manager running').to.be.at.least(3);

      child.kill('SIGKILL'); // no exit handler runs
      await eventually(
        async () => {
          const left = processesUsing(dataDir);
          if (left.length) throw new Error(`still running: ${left.join(', ')}`);
        },
        { what: 'the control plane to die with the operator', timeoutMs: 15_000 },
      );
    } finally {
      child.kill('SIGKILL');
      for (const pid of processesUsing(dataDir)) process.kill(pid, 'SIGKILL');
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  });
});
