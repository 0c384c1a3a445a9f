/**
 * `npm start` with no cluster configured: the operator starts a control plane of its own, runs
 * against it, and takes it down with it however it stops: killed outright, or cleanly on Ctrl-C
 * or SIGTERM. Its audit judges what is already stored there, as in a cluster with deploy/ applied
 * (the author-recording guards installed with the CRDs).
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
import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION, type AdmissionSuite } from '../../src/api/types.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
/** Ceilings, not expectations: the run is waited for until these, and fails with its output after them. */
const STARTUP_CEILING_MS = 420_000;
const EXIT_CEILING_MS = 60_000;

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
      // Its progress so far (which of etcd, kube-apiserver, the CRDs and the operator it has reached) is the failure's message.
      if (!run.output.includes('Portcullis is ready')) throw new Error(`not ready yet; its output so far: ${run.output.slice(-1500) || '(none)'}`);
    },
    // A ceiling only: ready in about 20 s on a quiet machine, minutes where other control planes share the two cores.
    { what: 'the operator to start its control plane and be ready', timeoutMs: STARTUP_CEILING_MS, intervalMs: 500 },
  );
  return run;
}

describe('npm start with no cluster configured', function () {
  this.timeout(STARTUP_CEILING_MS + 2 * EXIT_CEILING_MS);
  let scratch: string;
  let dataDir: string | undefined;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-local-run-'));
  });
  afterEach(() => {
    for (const pid of dataDir ? processesUsing(dataDir) : []) process.kill(pid, 'SIGKILL');
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('starts a control plane of its own, audits what is stored there, and the control plane dies with the operator even when it is killed outright', async function () {
    const run = await startLocalRun(scratch);
    dataDir = run.dataDir;
    try {
      const kubeconfig = path.join(run.dataDir, 'kubeconfig');
      expect(run.output).to.include(`Local control plane: kubectl --kubeconfig ${kubeconfig}`);
      const controlPlane = processesUsing(run.dataDir);
      expect(controlPlane.length, 'etcd, kube-apiserver and kube-controller-manager running').to.be.at.least(3);

      // A suite written by the local cluster's admin judges the ConfigMap stored before it: its author is recorded.
      const config = new k8s.KubeConfig();
      config.loadFromFile(kubeconfig);
      const core = config.makeApiClient(k8s.CoreV1Api);
      const custom = config.makeApiClient(k8s.CustomObjectsApi);
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'unowned' }, data: { a: 'b' } } });
      const rules = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
      const validations = [{ expression: "has(object.data) && 'owner' in object.data", message: 'a configmap names its owner' }];
      const webhooks = [{ name: 'owners', type: 'Validating', rules, validationActions: ['Audit'], validations }];
      await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name: 'owners' }, spec: { webhooks } } });
      await eventually(
        async () => {
          const audit = ((await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name: 'owners' })) as AdmissionSuite).status?.audit;
          expect(audit?.failing, `the suite's audit: ${JSON.stringify(audit)}`).to.be.at.least(1);
        },
        { what: 'the audit to judge the stored ConfigMap', timeoutMs: 120_000 },
      );

      run.child.kill('SIGKILL'); // no exit handler runs
      await eventually(
        async () => {
          const left = processesUsing(run.dataDir);
          if (left.length) throw new Error(`still running: ${left.join(', ')}`);
        },
        { what: 'the control plane to die with the operator', timeoutMs: EXIT_CEILING_MS },
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
    it(`stops cleanly on ${what}, leaving nothing running`, async function () {
      const run = await startLocalRun(scratch);
      dataDir = run.dataDir;
      try {
        const exited = new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)));
        process.kill(group ? -run.child.pid! : run.child.pid!, signal);
        // Waited for, not timed: a stop that hangs fails at the ceiling, with what the operator printed.
        let ceiling: NodeJS.Timeout | undefined;
        const code = await Promise.race([
          exited,
          new Promise<never>((_, reject) => (ceiling = setTimeout(() => reject(new Error(`the operator did not exit within ${EXIT_CEILING_MS} ms of ${what}: ${run.output.slice(-1500)}`)), EXIT_CEILING_MS))),
        ]).finally(() => clearTimeout(ceiling));
        expect(code, run.output).to.equal(0);
        expect(processesUsing(run.dataDir), 'control-plane processes left').to.deep.equal([]);
      } finally {
        run.child.kill('SIGKILL');
      }
    });
  }
});
