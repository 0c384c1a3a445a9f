/**
 * local: finds (and on first use builds) the control-plane binaries from the Go module in
 * test/controlplane. Only `npm start` without a cluster and the tests need this; the node
 * programs (kubelet, kube-proxy, kube-scheduler) only test/node's cluster, Helm only the chart's
 * tests, checkov (from PyPI) only the manifest lint test, promtool only the alert rules' tests.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { appFile } from '../app-files.ts';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
}

const buildScript = appFile('test', 'controlplane', 'build.sh');

/** Runs build.sh (a no-op when its cache holds the binaries); its progress goes to our stderr. */
export async function ensureBinaries(): Promise<ControlPlaneBinaries> {
  const dir = process.env.PORTCULLIS_CONTROLPLANE_BIN ?? (await runBuild('controlplane'));
  return {
    etcd: path.join(dir, 'etcd'),
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
    kubectl: path.join(dir, 'kubectl'),
  };
}

export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  kubeScheduler: string;
}

/** The node's programs, from the same k8s.io/kubernetes module as the control plane (`build.sh node`). */
export async function ensureNodeBinaries(): Promise<NodeBinaries> {
  const dir = process.env.PORTCULLIS_NODE_BIN ?? (await runBuild('node'));
  return {
    kubelet: path.join(dir, 'kubelet'),
    kubeProxy: path.join(dir, 'kube-proxy'),
    kubeScheduler: path.join(dir, 'kube-scheduler'),
  };
}

/** Helm, from its own module in test/helm (`build.sh helm`): only the chart's tests use it. */
export async function ensureHelm(): Promise<string> {
  return path.join(process.env.PORTCULLIS_HELM_BIN ?? (await runBuild('helm')), 'helm');
}

/** checkov, the manifest linter, installed from PyPI into a venv (`build.sh checkov`): only the lint test uses it. */
export async function ensureCheckov(): Promise<string> {
  return path.join(process.env.PORTCULLIS_CHECKOV_BIN ?? (await runBuild('checkov')), 'checkov');
}

/** Prometheus' promtool, from its own module in test/promtool (`build.sh promtool`): only the alert rules' tests use it. */
export async function ensurePromtool(): Promise<string> {
  return path.join(process.env.PORTCULLIS_PROMTOOL_BIN ?? (await runBuild('promtool')), 'promtool');
}

function runBuild(set: 'controlplane' | 'node' | 'helm' | 'checkov' | 'promtool'): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [buildScript, set], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', (err) => reject(new Error(`cannot run ${buildScript}: ${err.message}`)));
    child.on('exit', (code) => {
      const dir = out.trim().split('\n').pop();
      if (code === 0 && dir) resolve(dir);
      else reject(new Error(`building the ${set} programs failed (exit ${code}); see the build.sh lines above. It needs ${set === 'checkov' ? 'Python 3 and PyPI' : 'Go 1.26 and the Go module proxy'}.`));
    });
  });
}
