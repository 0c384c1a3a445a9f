/**
 * local: finds (and on first use builds) the control-plane binaries from the Go module in
 * test/controlplane. Only `npm start` without a cluster and the tests need this.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
}

const buildScript = fileURLToPath(new URL('../../test/controlplane/build.sh', import.meta.url));

/** Runs build.sh (a no-op when its cache holds the binaries); its progress goes to our stderr. */
export async function ensureBinaries(): Promise<ControlPlaneBinaries> {
  const dir = process.env.PORTCULLIS_CONTROLPLANE_BIN ?? (await runBuild());
  return {
    etcd: path.join(dir, 'etcd'),
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
    kubectl: path.join(dir, 'kubectl'),
  };
}

function runBuild(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [buildScript], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', (err) => reject(new Error(`cannot run ${buildScript}: ${err.message}`)));
    child.on('exit', (code) => {
      const dir = out.trim().split('\n').pop();
      if (code === 0 && dir) resolve(dir);
      else reject(new Error(`building the local control plane failed (exit ${code}); see the build.sh lines above. It needs Go 1.26 and the Go module proxy.`));
    });
  });
}
