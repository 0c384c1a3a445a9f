/**
 * local: finds (and on first use builds) the control-plane binaries from the Go module in
 * test/controlplane (the newest supported Kubernetes), or those of an older supported Kubernetes
 * from its own module in test/controlplane/versions/<minor> (the tests' run on the oldest).
 * Only `npm start` without a cluster and the tests need this; the node
 * programs (kubelet, kube-proxy, kube-scheduler) only test/node's cluster, Helm only the chart's
 * tests, checkov (from PyPI) only the manifest lint test, promtool only the alert rules' tests.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { appFile } from '../app-files.ts';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
}

const buildScript = appFile('test', 'controlplane', 'build.sh');
const versionsDir = appFile('test', 'controlplane', 'versions');

/**
 * The Kubernetes minors older than test/controlplane/go.mod's that the tests run against, each a
 * module of its own under test/controlplane/versions (oldest first). The newest is go.mod's.
 */
export function olderKubeVersions(): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(versionsDir).filter((name) => fs.existsSync(path.join(versionsDir, name, 'go.mod')));
  } catch {
    return [];
  }
  return names.sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
}

/**
 * Runs build.sh (a no-op when its cache holds the binaries); its progress goes to our stderr.
 * With `kubeVersion` (a minor of olderKubeVersions(), e.g. '1.35'), that Kubernetes' kube-apiserver,
 * kube-controller-manager and kubectl, with the newest set's etcd (which serves the older API server
 * too); without it, or with PORTCULLIS_CONTROLPLANE_BIN set, the newest set.
 */
export async function ensureBinaries(kubeVersion?: string): Promise<ControlPlaneBinaries> {
  const dir = process.env.PORTCULLIS_CONTROLPLANE_BIN ?? (await runBuild('controlplane'));
  const newest = {
    etcd: path.join(dir, 'etcd'),
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
    kubectl: path.join(dir, 'kubectl'),
  };
  if (kubeVersion === undefined || process.env.PORTCULLIS_CONTROLPLANE_BIN) return newest;
  const older = olderKubeVersions();
  if (!older.includes(kubeVersion)) throw new Error(`no control plane for Kubernetes ${kubeVersion}: test/controlplane builds the newest (go.mod) and ${older.join(', ') || 'no older version'} (versions/)`);
  const versioned = await runBuild('controlplane', kubeVersion);
  return {
    etcd: newest.etcd,
    kubeApiserver: path.join(versioned, 'kube-apiserver'),
    kubeControllerManager: path.join(versioned, 'kube-controller-manager'),
    kubectl: path.join(versioned, 'kubectl'),
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

function runBuild(set: 'controlplane' | 'node' | 'helm' | 'checkov' | 'promtool', kubeVersion?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [buildScript, set, ...(kubeVersion ? [kubeVersion] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
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
