/**
 * The one real control plane of a test run (etcd, kube-apiserver, kube-controller-manager),
 * started by the root hooks, and the clients tests use against it. No mocked Kubernetes API.
 */
import { execFile } from 'node:child_process';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../../src/local/controlplane.ts';
import { installForLocalRun } from '../../src/local/install.ts';
import { connect, type Kube } from '../../src/apiserver/client.ts';
import { OPERATOR_NAME } from '../../src/api/names.ts';
import { PORTCULLIS_SIDE_DISABLED } from './reference.ts';

export const OPERATOR_NAMESPACE = 'portcullis-system';

export interface TestCluster {
  controlPlane: ControlPlane;
  kubeConfig: k8s.KubeConfig;
  kube: Kube;
  apps: k8s.AppsV1Api;
  admissionregistration: k8s.AdmissionregistrationV1Api;
}

let current: TestCluster | undefined;

/**
 * The Kubernetes the run's control plane is: an older supported minor (`PORTCULLIS_KUBE_VERSION=1.35`,
 * package.json's test:oldest) or, unset, the newest. Other control planes a test starts are the newest.
 */
export const KUBE_VERSION: string | undefined = process.env.PORTCULLIS_KUBE_VERSION || undefined;

export async function startCluster(): Promise<TestCluster> {
  // The in-tree versions of the plugins Portcullis re-creates are off, so its handlers answer alone.
  const controlPlane = await startControlPlane({ disableAdmissionPlugins: PORTCULLIS_SIDE_DISABLED, kubeVersion: KUBE_VERSION });
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  await installForLocalRun(kubeConfig, OPERATOR_NAMESPACE);
  current = {
    controlPlane,
    kubeConfig,
    kube: connect(kubeConfig),
    apps: kubeConfig.makeApiClient(k8s.AppsV1Api),
    admissionregistration: kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api),
  };
  return current;
}

export async function stopCluster(): Promise<void> {
  await current?.controlPlane.stop();
  current = undefined;
}

export function cluster(): TestCluster {
  if (!current) throw new Error('the test control plane is not running: test/support/hooks.ts starts it (mocha --require)');
  return current;
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The kubectl built with the control plane, against the test cluster. */
export function kubectl(args: string[], input?: string): Promise<CommandResult> {
  const { controlPlane } = cluster();
  return new Promise((resolve) => {
    const child = execFile(controlPlane.binaries.kubectl, ['--kubeconfig', controlPlane.kubeconfigPath, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/**
 * A kubeconfig that is the operator's ServiceAccount, with a token the API server issues
 * (TokenRequest), so requests are authorized by the RBAC applied from deploy/ and nothing else.
 */
export async function operatorKubeConfig(): Promise<k8s.KubeConfig> {
  return serviceAccountKubeConfig(OPERATOR_NAMESPACE, OPERATOR_NAME, '(is deploy/02-rbac.yaml applied?)');
}

/** A kubeconfig that is ServiceAccount `name` of `namespace`, with a token the API server issues (a real user's credentials, not impersonation). */
export async function serviceAccountKubeConfig(namespace: string, name: string, hint = ''): Promise<k8s.KubeConfig> {
  const token = await kubectl(['create', 'token', name, '-n', namespace, '--duration=10m']);
  if (token.code !== 0) throw new Error(`kubectl create token failed ${hint}: ${token.stderr}`);
  const { controlPlane, kubeConfig } = cluster();
  const ca = kubeConfig.getCurrentCluster()!;
  const config = new k8s.KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'test', server: controlPlane.server, caData: ca.caData, caFile: ca.caFile, skipTLSVerify: false }],
    users: [{ name, token: token.stdout.trim() }],
    contexts: [{ name, cluster: 'test', user: name }],
    currentContext: name,
  });
  return config;
}
