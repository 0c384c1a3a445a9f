/**
 * local: a real etcd + kube-apiserver + kube-controller-manager on loopback, started the way
 * controller-runtime's envtest starts them (self-made CA, admin client certificate in
 * system:masters, RBAC, service-account keys), plus a kubeconfig that both client-node and
 * kubectl read. Used by `npm start` when no cluster is configured, and by the tests.
 * Must never be needed inside a cluster. Its process, flag and kubeconfig helpers are exported
 * for test/node's cluster, which runs the same programs inside a network namespace.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createCA, issueLeaf, type KeyPairPem } from '../certs/x509.ts';
import { ensureBinaries, type ControlPlaneBinaries } from './binaries.ts';
import { freePort } from './ports.ts';
import { errorMessage } from '../error-message.ts';

export interface ControlPlane {
  kubeconfigPath: string;
  server: string;
  dataDir: string;
  auditLogPath: string;
  binaries: ControlPlaneBinaries;
  /** Stops the API server alone (etcd keeps the data), for outage tests. */
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** Where certificates, etcd data, logs and the kubeconfig go; a fresh temp dir by default. */
  dataDir?: string;
  /** Admission plugins that a managed cluster typically does not offer (tests of our own versions need them off). */
  disableAdmissionPlugins?: string[];
  /** Admission plugins to turn on beyond the API server's defaults (the plugin differential's oracle). */
  enableAdmissionPlugins?: string[];
  /** An AdmissionConfiguration file (`--admission-control-config-file`), for plugins that read one. */
  admissionConfigFile?: string;
  log?: (line: string) => void;
  /**
   * An older supported Kubernetes to run (a minor with a module in test/controlplane/versions, e.g.
   * '1.35'); the newest by default, which `npm start` always runs.
   */
  kubeVersion?: string;
}

export const DEFAULT_DISABLED_PLUGINS = ['ServiceAccount', 'LimitRanger', 'DefaultTolerationSeconds'];
const READY_TIMEOUT_MS = 180_000;
/** How long each stage of stop() waits for its processes to exit before killing them. */
const STOP_GRACE_MS = 2000;

/**
 * The command run so that the kernel kills it when this process dies, however it dies (SIGKILL,
 * `timeout` killing npm, a crashed test run), which no exit handler can promise: util-linux's
 * setpriv sets the parent-death signal and execs the command, so the child is the command itself
 * and our signals reach it directly. Without setpriv, the command as it is.
 */
export function tiedToUs(command: string, args: string[]): [string, string[]] {
  return HAS_SETPRIV ? ['setpriv', ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}
const HAS_SETPRIV = spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout?.includes('--pdeathsig') ?? false;

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const binaries = await ensureBinaries(options.kubeVersion);
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-cp-'));
  const certDir = path.join(dataDir, 'pki');
  fs.mkdirSync(certDir, { recursive: true });

  const [etcdClientPort, etcdPeerPort, apiPort, kcmPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const server = `https://127.0.0.1:${apiPort}`;
  const pki = await writePki(certDir);
  const auditLogPath = path.join(dataDir, 'audit.log');
  const auditPolicyPath = writeAuditPolicy(dataDir);

  const kubeconfigPath = path.join(dataDir, 'kubeconfig');
  writeKubeconfig(kubeconfigPath, server, pki.ca.certPem, pki.admin);
  const kcmKubeconfig = path.join(dataDir, 'controller-manager.kubeconfig');
  writeKubeconfig(kcmKubeconfig, server, pki.ca.certPem, pki.controllerManager);

  const processes: { name: string; child: ChildProcess }[] = [];
  const expectedExits = new Set<ChildProcess>();
  const launch = (name: string, command: string, args: string[]): ChildProcess => {
    const out = fs.openSync(path.join(dataDir, `${name}.log`), 'a');
    // A process group of its own: Ctrl-C in a terminal signals the whole foreground group at once,
    // which would stop etcd under a running API server; stop() stops them in order instead.
    const child = spawn(...tiedToUs(command, args), { stdio: ['ignore', out, out], detached: true });
    fs.closeSync(out);
    processes.push({ name, child });
    child.on('exit', (code, signal) => {
      if (!stopping && !expectedExits.has(child)) log(`controlplane: ${name} exited (${signal ?? code}); its log is ${path.join(dataDir, `${name}.log`)}`);
    });
    return child;
  };
  let stopping = false;

  launch('etcd', binaries.etcd, etcdArgs(path.join(dataDir, 'etcd'), etcdClientPort, etcdPeerPort));

  const apiserverArgs = [
    ...apiServerArgs({ etcdClientPort, certDir, files: pki.files, port: apiPort, address: '127.0.0.1', serviceRange: '10.0.0.0/24', issuer: server, auditPolicyPath, auditLogPath }),
    '--endpoint-reconciler-type=none',
    '--authorization-mode=RBAC',
    `--disable-admission-plugins=${knownPlugins(binaries.kubeApiserver, options.disableAdmissionPlugins ?? DEFAULT_DISABLED_PLUGINS).join(',')}`,
    ...(options.enableAdmissionPlugins?.length ? [`--enable-admission-plugins=${options.enableAdmissionPlugins.join(',')}`] : []),
    ...(options.admissionConfigFile ? [`--admission-control-config-file=${options.admissionConfigFile}`] : []),
  ];
  let apiserver: ChildProcess | undefined;
  const startApiServer = async () => {
    apiserver = launch('kube-apiserver', binaries.kubeApiserver, apiserverArgs);
    await waitApiServerReady(server, { ca: pki.ca.certPem, client: pki.admin }, apiserver, path.join(dataDir, 'kube-apiserver.log'));
  };
  const stop = async () => {
    stopping = true;
    // The API server and controller manager first, then etcd: an API server whose etcd is gone waits
    // on etcd's timeouts. Short graces: this control plane's data is thrown away, and a kube-apiserver
    // stopped just after it started can hang in its shutdown, which must not hold up Ctrl-C.
    const clients = processes.filter((p) => p.name !== 'etcd');
    await Promise.all(clients.map(({ child }) => terminate(child, STOP_GRACE_MS)));
    await Promise.all(processes.filter((p) => p.name === 'etcd').map(({ child }) => terminate(child, STOP_GRACE_MS)));
    // A data dir we made is ours to remove; one the caller named is left for inspection.
    if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', () => processes.forEach(({ child }) => child.kill('SIGKILL')));

  try {
    log(`controlplane: starting etcd and kube-apiserver at ${server} (data in ${dataDir})`);
    await startApiServer();
    launch('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kcmKubeconfig}`,
      `--authentication-kubeconfig=${kcmKubeconfig}`,
      `--authorization-kubeconfig=${kcmKubeconfig}`,
      // Garbage collection (owner references), the namespace controller (Namespace deletion),
      // ClusterRole aggregation (the operator's params role gathers what an admin labels for it)
      // and ValidatingAdmissionPolicies' status (their type checking, which suites' is compared with).
      '--controllers=garbage-collector-controller,namespace-controller,clusterrole-aggregation-controller,validatingadmissionpolicy-status-controller',
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${kcmPort}`,
      `--cert-dir=${path.join(certDir, 'kcm')}`,
    ]);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    kubeconfigPath,
    server,
    dataDir,
    auditLogPath,
    binaries,
    stop,
    startApiServer,
    stopApiServer: async () => {
      if (!apiserver) return;
      expectedExits.add(apiserver);
      await terminate(apiserver);
    },
  };
}

/**
 * Of `plugins`, those this kube-apiserver has (its --help lists them): an older one lacks plugins
 * a newer one added (1.35 has no PodResizeValidator), which it refuses to start on, and a plugin it
 * does not have is off there anyway.
 */
function knownPlugins(kubeApiserver: string, plugins: string[]): string[] {
  const help = spawnSync(kubeApiserver, ['--help'], { encoding: 'utf8' }).stdout ?? '';
  const listed = /--disable-admission-plugins[^\n]*Comma-delimited list of admission plugins: ([^.]*)\./.exec(help)?.[1];
  if (!listed) return plugins;
  const known = new Set(listed.split(',').map((name) => name.trim()));
  return plugins.filter((name) => known.has(name));
}

/** etcd on the loopback of the network namespace it runs in, one member, no fsync (test data). */
export function etcdArgs(dataDir: string, clientPort: number, peerPort: number): string[] {
  return [
    `--data-dir=${dataDir}`,
    `--listen-client-urls=http://127.0.0.1:${clientPort}`,
    `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

export interface ApiServerFiles {
  caCert: string;
  servingCert: string;
  servingKey: string;
  saPublic: string;
  saPrivate: string;
}

/** The kube-apiserver flags both clusters share; authorization and admission are the caller's. */
export function apiServerArgs(p: { etcdClientPort: number; certDir: string; files: ApiServerFiles; port: number; address: string; serviceRange: string; issuer: string; auditPolicyPath: string; auditLogPath: string }): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${p.etcdClientPort}`,
    `--cert-dir=${p.certDir}`,
    `--tls-cert-file=${p.files.servingCert}`,
    `--tls-private-key-file=${p.files.servingKey}`,
    `--client-ca-file=${p.files.caCert}`,
    `--secure-port=${p.port}`,
    `--bind-address=${p.address}`,
    `--advertise-address=${p.address}`,
    `--service-cluster-ip-range=${p.serviceRange}`,
    '--allow-privileged=true',
    `--service-account-issuer=${p.issuer}/`,
    `--service-account-key-file=${p.files.saPublic}`,
    `--service-account-signing-key-file=${p.files.saPrivate}`,
    `--audit-policy-file=${p.auditPolicyPath}`,
    `--audit-log-path=${p.auditLogPath}`,
    '--audit-log-mode=blocking',
  ];
}

/** Writes the service-account key pair as the API server and kube-controller-manager read it. */
export function writeServiceAccountKeys(publicFile: string, privateFile: string): void {
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  fs.writeFileSync(publicFile, sa.publicKey.export({ type: 'spki', format: 'pem' }));
  fs.writeFileSync(privateFile, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
}

export function writeAuditPolicy(dir: string): string {
  const file = path.join(dir, 'audit-policy.yaml');
  fs.writeFileSync(file, AUDIT_POLICY);
  return file;
}

interface Pki {
  ca: KeyPairPem;
  admin: KeyPairPem;
  controllerManager: KeyPairPem;
  files: ApiServerFiles;
}

/**
 * A CA, the API server's serving certificate (its addresses, the kubernetes Service's names) and
 * the service-account key pair, written under dir as the API server's flags name them.
 */
export async function writeApiServerPki(dir: string, p: { caName: string; ipAddresses: string[]; notAfter: Date }): Promise<{ ca: KeyPairPem; files: ApiServerFiles }> {
  const ca = await createCA({ commonName: p.caName, notAfter: p.notAfter });
  const serving = await issueLeaf(ca, {
    commonName: 'kube-apiserver',
    dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
    ipAddresses: p.ipAddresses,
    usage: 'server',
    notAfter: p.notAfter,
  });
  const files = {
    caCert: path.join(dir, 'ca.crt'),
    servingCert: path.join(dir, 'apiserver.crt'),
    servingKey: path.join(dir, 'apiserver.key'),
    saPublic: path.join(dir, 'sa.pub'),
    saPrivate: path.join(dir, 'sa.key'),
  };
  fs.writeFileSync(files.caCert, ca.certPem);
  fs.writeFileSync(files.servingCert, serving.certPem);
  fs.writeFileSync(files.servingKey, serving.keyPem, { mode: 0o600 });
  writeServiceAccountKeys(files.saPublic, files.saPrivate);
  return { ca, files };
}

async function writePki(dir: string): Promise<Pki> {
  const notAfter = new Date(Date.now() + 365 * 24 * 3600_000);
  const { ca, files } = await writeApiServerPki(dir, { caName: 'portcullis-local-controlplane-ca', ipAddresses: ['127.0.0.1', '10.0.0.1'], notAfter });
  const admin = await issueLeaf(ca, { commonName: 'portcullis-admin', organization: 'system:masters', usage: 'client', notAfter });
  // In system:masters: the controllers' own RBAC roles are bootstrapped for per-controller service accounts, which this control plane does not run.
  const controllerManager = await issueLeaf(ca, { commonName: 'system:kube-controller-manager', organization: 'system:masters', usage: 'client', notAfter });
  return { ca, admin, controllerManager, files };
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** JSON is YAML: kubectl and client-node both read this file. */
export function writeKubeconfig(file: string, server: string, caPem: string, user: KeyPairPem, name = 'portcullis-local'): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: 'admin', user: { 'client-certificate-data': b64(user.certPem), 'client-key-data': b64(user.keyPem) } }],
    contexts: [{ name, context: { cluster: name, user: 'admin' } }],
    'current-context': name,
  };
  fs.writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
}

/** Waits for /readyz to answer 200, failing early with the log's tail when the process exits. */
export async function waitApiServerReady(server: string, tls: { ca: string; client: KeyPairPem }, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`kube-apiserver exited with ${child.exitCode}; see ${logFile}:\n${tail(logFile)}`);
    try {
      const status = await get(`${server}/readyz`, tls);
      if (status === 200) return;
      last = `readyz answered ${status}`;
    } catch (err) {
      last = errorMessage(err);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`kube-apiserver was not ready within ${READY_TIMEOUT_MS / 1000}s (${last}); see ${logFile}:\n${tail(logFile)}`);
}

function get(url: string, tls: { ca: string; client: KeyPairPem }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: tls.ca, cert: tls.client.certPem, key: tls.client.keyPem, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

export function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

/** SIGTERM, then SIGKILL after graceMs; resolves when the process has exited. */
export function terminate(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
`;
