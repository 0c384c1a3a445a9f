/**
 * test/node/cluster.ts: a one-node Kubernetes cluster inside a network namespace the run creates:
 * etcd, kube-apiserver, kube-controller-manager, kube-scheduler (src/local's programs and flag
 * helpers), containerd + runc (Debian's), the bridge + host-local CNI plugins, kube-proxy in
 * iptables mode and a kubelet, all from one Kubernetes version and every file under one scratch
 * folder (layout.ts). No registry: the images come from images.ts and are imported into containerd.
 * startNodeCluster() is the one way in (tests, `npm run cluster`); stop() and cleanup.ts leave
 * nothing of the run on the machine.
 * Owns: the namespace, the scratch folder, the processes it starts. Must not touch: the host's
 * network (no route leaves the namespace), the host's iptables, any other containerd or kubelet.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { issueLeaf, type KeyPairPem } from '../../src/certs/x509.ts';
import { ensureBinaries, ensureNodeBinaries, type ControlPlaneBinaries, type NodeBinaries } from '../../src/local/binaries.ts';
import { apiServerArgs, etcdArgs, tail, terminate, tiedToUs, waitApiServerReady, writeApiServerPki, writeKubeconfig, type ApiServerFiles } from '../../src/local/controlplane.ts';
import { cleanupNode, leftovers } from './cleanup.ts';
import { ensureNodeImages, IMAGES, run, type ImageArchive } from './images.ts';
import { API_PORT, CLUSTER_CIDR, CNI_NETWORK, defaultDir, KUBELET_SYSCTLS, KUBERNETES_SERVICE_IP, layout, NETNS, NODE_BRIDGE, NODE_IP, NODE_NAME, NODE_PREFIX, SERVICE_CIDR, type Layout } from './layout.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SETUP = path.join(HERE, 'setup.sh');
const FORWARD = path.join(HERE, 'forward.ts');
/** Debian puts runc, iptables, ip and the CNI tools in sbin folders a user's PATH may lack. */
const PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface NodeCluster {
  /** For the host: the API server through a loopback port forwarded into the namespace. */
  kubeconfigPath: string;
  /** For programs run inside the namespace (inNetns): the API server at the node's address. */
  netnsKubeconfigPath: string;
  server: string;
  nodeName: string;
  netns: string;
  dir: string;
  binaries: ControlPlaneBinaries & NodeBinaries;
  images: typeof IMAGES;
  /** kubectl on the host against this cluster. */
  kubectl(args: string[], options?: { input?: string; timeoutMs?: number }): Promise<CommandResult>;
  /** A command inside the cluster's network namespace (pod and Service addresses reachable). */
  inNetns(command: string, args: string[], options?: { input?: string; timeoutMs?: number }): Promise<CommandResult>;
  /** Imports an OCI or Docker archive into the node's containerd (namespace k8s.io) for pods to run. */
  importImage(archive: string): Promise<void>;
  /** Seconds from start to each milestone (apiserver ready, containerd up, Node Ready ...). */
  timings: Record<string, number>;
  stop(): Promise<void>;
}

export interface NodeClusterOptions {
  dir?: string;
  log?: (line: string) => void;
  /** More image archives to import before the node is declared ready. */
  extraImages?: string[];
  /** Called once a previous run's leftovers are gone and before anything of this run exists. */
  afterCleanup?: () => void;
}

interface Launched {
  name: string;
  child: ChildProcess;
}

export async function startNodeCluster(options: NodeClusterOptions = {}): Promise<NodeCluster> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const l = layout(path.resolve(options.dir ?? defaultDir()));
  const started = Date.now();
  const timings: Record<string, number> = {};
  const mark = (what: string) => {
    timings[what] = (Date.now() - started) / 1000;
    log(`cluster: [${timings[what]!.toFixed(1)} s] ${what}`);
  };

  setup();
  takeLock(l);
  const previous = cleanupNode(l);
  if (previous.killed || previous.containers || previous.unmounted || previous.cgroups || previous.netns) log(`cluster: cleaned up a previous run (${JSON.stringify(previous)})`);
  mark('machine ready (packages, previous run cleaned)');

  const binaries = { ...(await ensureBinaries()), ...(await ensureNodeBinaries()) };
  const images = await ensureNodeImages(log);
  mark('programs and images ready');
  // Taken once the cached programs and images exist: a cold machine's first image build leaves
  // buildah's storage (/var/lib/containers, /etc/cni), which stays as the cache, not as the run's.
  options.afterCleanup?.();

  for (const d of [l.logs, l.pki, l.cniConfDir, l.cniIpam, l.podLogs, l.kubeletRoot]) fs.mkdirSync(d, { recursive: true });
  const processes: Launched[] = [];
  let stopping = false;
  let hostForward: net.Server | undefined;
  const killAll = () => {
    for (const { child } of processes) child.kill('SIGKILL');
  };
  const onExit = () => {
    if (stopping) return;
    killAll();
    cleanupNode(l, { keepLogs: true });
    fs.rmSync(l.lock, { force: true });
  };
  process.on('exit', onExit);

  /** A program that exits while the cluster starts ends the start at once, with its log. */
  const assertRunning = () => {
    for (const { name, child } of processes) {
      if (child.exitCode !== null || child.signalCode !== null) {
        const logFile = path.join(l.logs, `${name}.log`);
        throw new Fatal(`${name} exited (${child.signalCode ?? child.exitCode}) while the cluster started; the end of ${logFile}:\n${tail(logFile)}`);
      }
    }
  };

  const launch = (name: string, command: string, args: string[]): ChildProcess => {
    const out = fs.openSync(path.join(l.logs, `${name}.log`), 'a');
    // setpriv: killed with us, however we die; nsenter --net: only the network namespace changes
    // (ip netns exec would also unshare the mounts and hide /sys/fs/cgroup). Own process group:
    // a Ctrl-C on the terminal reaches only the harness, which stops them in order.
    const child = spawn(...tiedToUs('nsenter', [`--net=${l.netnsPath}`, command, ...args]), {
      stdio: ['ignore', out, out],
      detached: true,
      env: { ...process.env, PATH },
    });
    fs.closeSync(out);
    processes.push({ name, child });
    child.on('exit', (code, signal) => {
      if (!stopping) log(`cluster: ${name} exited (${signal ?? code}); its log is ${path.join(l.logs, `${name}.log`)}`);
    });
    return child;
  };

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const t0 = Date.now();
    hostForward?.close();
    const byName = (n: string) => processes.filter((p) => p.name === n).map((p) => p.child);
    const end = (names: string[], graceMs: number) => Promise.all(names.flatMap(byName).map((c) => terminate(c, graceMs)));
    // The node first, so that nothing restarts the containers; the clean-up then kills them.
    await end(['kube-proxy', 'kubelet'], 3000);
    await end(['containerd'], 2000);
    await end(['kube-scheduler', 'kube-controller-manager'], 2000);
    await end(['kube-apiserver', 'forward'], 3000);
    await end(['etcd'], 2000);
    const report = cleanupNode(l, { keepLogs: true });
    process.off('exit', onExit);
    fs.rmSync(l.lock, { force: true });
    const left = leftovers(l);
    log(`cluster: stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s (${report.containers} containers, ${report.unmounted} mounts, ${report.cgroups} cgroups removed); logs kept in ${l.logs}`);
    if (left.length) throw new Error(`cluster: the clean-up left: ${left.join('; ')}`);
  };

  try {
    createNetns(l);
    saveSysctls(l);
    const pki = await writePki(l.pki);
    const netnsServer = `https://${NODE_IP}:${API_PORT}`;
    writeKubeconfig(l.netnsKubeconfig, netnsServer, pki.ca.certPem, pki.admin, 'portcullis-node');
    const kubeconfigs = {
      kcm: path.join(l.dir, 'kube-controller-manager.kubeconfig'),
      scheduler: path.join(l.dir, 'kube-scheduler.kubeconfig'),
      kubelet: path.join(l.dir, 'kubelet.kubeconfig'),
      proxy: path.join(l.dir, 'kube-proxy.kubeconfig'),
    };
    writeKubeconfig(kubeconfigs.kcm, netnsServer, pki.ca.certPem, pki.controllerManager, 'portcullis-node');
    writeKubeconfig(kubeconfigs.scheduler, netnsServer, pki.ca.certPem, pki.scheduler, 'portcullis-node');
    writeKubeconfig(kubeconfigs.kubelet, netnsServer, pki.ca.certPem, pki.kubelet, 'portcullis-node');
    writeKubeconfig(kubeconfigs.proxy, netnsServer, pki.ca.certPem, pki.proxy, 'portcullis-node');

    // The control plane, at the node's address inside the namespace.
    launch('etcd', binaries.etcd, etcdArgs(l.etcd, 2379, 2380));
    const apiserver = launch('kube-apiserver', binaries.kubeApiserver, [
      ...apiServerArgs({
        etcdClientPort: 2379,
        certDir: l.pki,
        files: pki.files,
        port: API_PORT,
        address: NODE_IP,
        serviceRange: SERVICE_CIDR,
        issuer: netnsServer,
        auditPolicyPath: writeNodeAuditPolicy(l.dir),
        auditLogPath: path.join(l.logs, 'audit.log'),
      }),
      '--authorization-mode=Node,RBAC',
      // The defaults (ServiceAccount, LimitRanger, ... as any real cluster) plus NodeRestriction.
      '--enable-admission-plugins=NodeRestriction',
      `--kubelet-client-certificate=${path.join(l.pki, 'apiserver-kubelet-client.crt')}`,
      `--kubelet-client-key=${path.join(l.pki, 'apiserver-kubelet-client.key')}`,
      '--kubelet-preferred-address-types=InternalIP',
    ]);
    launch('forward', process.execPath, [FORWARD, l.apiSocket, NODE_IP, String(API_PORT)]);
    hostForward = await forwardFromLoopback(l.apiSocket);
    const port = (hostForward.address() as net.AddressInfo).port;
    const server = `https://127.0.0.1:${port}`;
    writeKubeconfig(l.kubeconfig, server, pki.ca.certPem, pki.admin, 'portcullis-node');
    await waitApiServerReady(server, { ca: pki.ca.certPem, client: pki.admin }, apiserver, path.join(l.logs, 'kube-apiserver.log'));
    mark('kube-apiserver ready');

    launch('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kubeconfigs.kcm}`,
      `--authentication-kubeconfig=${kubeconfigs.kcm}`,
      `--authorization-kubeconfig=${kubeconfigs.kcm}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--cert-dir=${path.join(l.pki, 'kcm')}`,
      '--allocate-node-cidrs=true',
      `--cluster-cidr=${CLUSTER_CIDR}`,
      '--node-cidr-mask-size=24',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--service-account-private-key-file=${pki.files.saPrivate}`,
      `--root-ca-file=${pki.files.caCert}`,
      `--cluster-signing-cert-file=${pki.files.caCert}`,
      `--cluster-signing-key-file=${path.join(l.pki, 'ca.key')}`,
      '--use-service-account-credentials=true',
    ]);
    launch('kube-scheduler', binaries.kubeScheduler, [
      `--kubeconfig=${kubeconfigs.scheduler}`,
      `--authentication-kubeconfig=${kubeconfigs.scheduler}`,
      `--authorization-kubeconfig=${kubeconfigs.scheduler}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
    ]);

    // The runtime, then the images (the sandbox image must be there before the first pod).
    writeContainerdConfig(l);
    launch('containerd', 'containerd', ['--config', l.containerdConfig]);
    await waitFor('containerd to answer', 60_000, async () => {
      assertRunning();
      await exec('ctr', ['--address', l.containerdSocket, 'version']);
    });
    mark('containerd ready');
    const importImage = async (archive: string) => {
      await exec('ctr', ['--address', l.containerdSocket, '--namespace', 'k8s.io', 'images', 'import', '--snapshotter', 'overlayfs', archive]);
    };
    for (const archive of [...images.map((i: ImageArchive) => i.archive), ...(options.extraImages ?? [])]) await importImage(archive);
    mark('images imported');

    writeKubeletConfig(l);
    launch('kubelet', binaries.kubelet, [
      `--config=${l.kubeletConfig}`,
      `--kubeconfig=${kubeconfigs.kubelet}`,
      `--root-dir=${l.kubeletRoot}`,
      `--cert-dir=${path.join(l.pki, 'kubelet')}`,
      `--node-ip=${NODE_IP}`,
      `--hostname-override=${NODE_NAME}`,
    ]);
    writeKubeProxyConfig(l, kubeconfigs.proxy);
    launch('kube-proxy', binaries.kubeProxy, [`--config=${l.kubeProxyConfig}`]);

    const api = (p: string) => apiGet(server, pki, p);
    // The bridge CNI's subnet is the node's podCIDR, which kube-controller-manager allocates.
    const podCIDR = await waitFor('the Node to register and get a podCIDR', 120_000, async () => {
      assertRunning();
      const node = (await api(`/api/v1/nodes/${NODE_NAME}`)) as { spec?: { podCIDR?: string } };
      if (!node.spec?.podCIDR) throw new Error('no podCIDR yet');
      return node.spec.podCIDR;
    });
    mark(`Node registered, podCIDR ${podCIDR}`);
    writeCniConfig(l, podCIDR);
    await waitFor('the Node to be Ready', 120_000, async () => {
      assertRunning();
      const node = (await api(`/api/v1/nodes/${NODE_NAME}`)) as { status?: { conditions?: { type: string; status: string; message?: string }[] } };
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True') throw new Error(`Ready is ${ready?.status}: ${ready?.message}`);
    });
    mark('Node Ready');

    return {
      kubeconfigPath: l.kubeconfig,
      netnsKubeconfigPath: l.netnsKubeconfig,
      server,
      nodeName: NODE_NAME,
      netns: NETNS,
      dir: l.dir,
      binaries,
      images: IMAGES,
      timings,
      // Its discovery cache in the scratch folder, not ~/.kube/cache.
      kubectl: (args, o = {}) => execResult(binaries.kubectl, ['--kubeconfig', l.kubeconfig, `--cache-dir=${l.kubectlCache}`, ...args], o),
      inNetns: (command, args, o = {}) => execResult('nsenter', [`--net=${l.netnsPath}`, command, ...args], o),
      importImage,
      stop,
    };
  } catch (err) {
    log(`cluster: start failed: ${(err as Error).message}`);
    await stop().catch((e: Error) => log(e.message));
    throw err;
  }
}

/**
 * The loopback control plane's audit policy (writes at Metadata, no reads), plus every request
 * of the operator's ServiceAccount, reads included: the RBAC audit test compares what the
 * operator installed from deploy/ really asked with what deploy/02-rbac.yaml grants it.
 */
export const OPERATOR_USER = 'system:serviceaccount:portcullis-system:portcullis-operator';
function writeNodeAuditPolicy(dir: string): string {
  const file = path.join(dir, 'audit-policy.yaml');
  fs.writeFileSync(
    file,
    `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: ["${OPERATOR_USER}"]
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
`,
  );
  return file;
}

/** setup.sh: packages and kernel facilities; its message names what is missing. */
function setup(): void {
  const r = spawnSync('bash', [SETUP], { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] });
  if (r.status !== 0) throw new Error(`the node cluster cannot run on this machine: ${(r.stderr ?? '').trim() || `setup.sh exited ${r.status}`}`);
}

/** One run at a time per folder: a live owner is an error, a dead one's leftovers are cleaned. */
function takeLock(l: Layout): void {
  try {
    const owner = fs.readFileSync(l.lock, 'utf8').trim();
    if (owner && owner !== String(process.pid) && fs.existsSync(`/proc/${owner}`)) {
      const cmd = fs.readFileSync(`/proc/${owner}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes('node')) throw new Error(`another node cluster (pid ${owner}: ${cmd.trim()}) is running in ${l.dir}; stop it first`);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(path.dirname(l.lock), { recursive: true });
  fs.writeFileSync(l.lock, String(process.pid));
}

function sh(command: string, args: string[]): void {
  const r = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, PATH } });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${(r.stderr || r.error?.message || '').trim()}`);
}

/**
 * The namespace: loopback, and a port-less bridge carrying the node's address (no dummy links
 * here). No veth to the host and no default route: nothing in it reaches any outside address.
 */
function createNetns(l: Layout): void {
  sh('ip', ['netns', 'add', NETNS]);
  sh('ip', ['-n', NETNS, 'link', 'set', 'lo', 'up']);
  sh('ip', ['-n', NETNS, 'link', 'add', NODE_BRIDGE, 'type', 'bridge']);
  sh('ip', ['-n', NETNS, 'addr', 'add', `${NODE_IP}/${NODE_PREFIX}`, 'dev', NODE_BRIDGE]);
  sh('ip', ['-n', NETNS, 'link', 'set', NODE_BRIDGE, 'up']);
  // Connections made in the namespace itself (the API server calling a webhook's ClusterIP) need
  // a route to the Service range before kube-proxy's OUTPUT rules rewrite their destination.
  sh('ip', ['-n', NETNS, 'route', 'add', SERVICE_CIDR, 'dev', NODE_BRIDGE]);
  // Per namespace: the host keeps its own values.
  sh('nsenter', [`--net=${l.netnsPath}`, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.bridge.bridge-nf-call-iptables=1']);
}

function saveSysctls(l: Layout): void {
  const saved: Record<string, string> = {};
  for (const key of KUBELET_SYSCTLS) {
    try {
      saved[key] = fs.readFileSync(`/proc/sys/${key}`, 'utf8').trim();
    } catch {
      // absent on this kernel
    }
  }
  fs.writeFileSync(l.savedSysctls, JSON.stringify(saved));
}

interface NodePki {
  ca: KeyPairPem;
  admin: KeyPairPem;
  controllerManager: KeyPairPem;
  scheduler: KeyPairPem;
  kubelet: KeyPairPem;
  proxy: KeyPairPem;
  files: ApiServerFiles;
}

/** One CA; each component its own identity, as the bootstrap RBAC roles and the Node authorizer expect. */
async function writePki(dir: string): Promise<NodePki> {
  const notAfter = new Date(Date.now() + 30 * 24 * 3600_000);
  const { ca, files } = await writeApiServerPki(dir, { caName: 'portcullis-node-cluster-ca', ipAddresses: ['127.0.0.1', NODE_IP, KUBERNETES_SERVICE_IP], notAfter });
  const leaf = (commonName: string, organization?: string) => issueLeaf(ca, { commonName, organization, usage: 'client', notAfter });
  const admin = await leaf('portcullis-admin', 'system:masters');
  const controllerManager = await leaf('system:kube-controller-manager');
  const scheduler = await leaf('system:kube-scheduler');
  const kubelet = await leaf(`system:node:${NODE_NAME}`, 'system:nodes');
  const proxy = await leaf('system:kube-proxy');
  // The kubelet authorizes with AlwaysAllow; this identity is what it sees for logs and exec.
  const kubeletClient = await leaf('kube-apiserver-kubelet-client', 'system:masters');
  // kube-controller-manager signs CertificateSigningRequests with the cluster's CA.
  fs.writeFileSync(path.join(dir, 'ca.key'), ca.keyPem, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'apiserver-kubelet-client.crt'), kubeletClient.certPem);
  fs.writeFileSync(path.join(dir, 'apiserver-kubelet-client.key'), kubeletClient.keyPem, { mode: 0o600 });
  return { ca, admin, controllerManager, scheduler, kubelet, proxy, files };
}

/**
 * containerd 1.6 (Debian's): its own root, state and socket; runc's state under the run's own
 * runc root, so the clean-up finds exactly the run's containers. restrict_oom_score_adj: root here
 * lacks CAP_SYS_RESOURCE, and the sandbox's oom_score_adj -998 makes runc fail every pod without it.
 */
function writeContainerdConfig(l: Layout): void {
  fs.mkdirSync(path.dirname(l.containerdConfig), { recursive: true });
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  fs.writeFileSync(
    l.containerdConfig,
    `version = 2
root = "${l.containerdRoot}"
state = "${l.containerdState}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${l.containerdSocket}"

[ttrpc]
  address = "${l.containerdSocket}.ttrpc"

[metrics]
  address = ""

[${cri}]
  sandbox_image = "${IMAGES.pause}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "${l.runcRoot}"

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "${l.cniConfDir}"
  max_conf_num = 1

# Nothing is pulled: any name outside localhost/ resolves to a registry that is not there.
[${cri}.registry.mirrors."docker.io"]
  endpoint = ["https://127.0.0.1:1"]
`,
  );
}

/** JSON is YAML. */
function writeKubeletConfig(l: Layout): void {
  fs.writeFileSync(l.resolvConf, '');
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // Kubelet 1.35+ refuses cgroup v1 unless told; this kernel has only v1 hierarchies for it.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${l.containerdSocket}`,
    imageServiceEndpoint: `unix://${l.containerdSocket}`,
    address: NODE_IP,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: path.join(l.pki, 'ca.crt') } },
    authorization: { mode: 'AlwaysAllow' },
    podLogsDir: l.podLogs,
    volumePluginDir: l.volumePluginDir,
    resolvConf: l.resolvConf,
    failSwapOn: false,
    // Images exist only as imported: never collected, and no disk pressure evicts pods here.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '2%', 'imagefs.available': '2%', 'nodefs.inodesFree': '2%' },
    // Quick to notice what the tests change.
    syncFrequency: '5s',
    nodeStatusUpdateFrequency: '5s',
    fileCheckFrequency: '5s',
    serializeImagePulls: false,
    registerNode: true,
  };
  fs.writeFileSync(l.kubeletConfig, JSON.stringify(config, null, 2));
}

function writeKubeProxyConfig(l: Layout, kubeconfig: string): void {
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig },
    mode: 'iptables',
    clusterCIDR: CLUSTER_CIDR,
    hostnameOverride: NODE_NAME,
    bindAddress: NODE_IP,
    metricsBindAddress: '127.0.0.1:10249',
    healthzBindAddress: '127.0.0.1:10256',
    // 0: leave the kernel's conntrack settings as they are (some are global, not per namespace).
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  };
  fs.writeFileSync(l.kubeProxyConfig, JSON.stringify(config, null, 2));
}

/** The pod network: a bridge on the node with host-local addresses from the node's podCIDR. */
function writeCniConfig(l: Layout, podCIDR: string): void {
  const config = {
    cniVersion: '1.0.0',
    name: CNI_NETWORK,
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: podCIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: l.cniIpam },
      },
    ],
  };
  const file = path.join(l.cniConfDir, `10-${CNI_NETWORK}.conflist`);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(config, null, 2));
  fs.renameSync(`${file}.tmp`, file);
}

/** 127.0.0.1:<free port> on the host, each connection carried to forward.ts's socket in the namespace. */
function forwardFromLoopback(socketPath: string): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((client) => {
      const upstream = net.connect(socketPath);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function apiGet(server: string, pki: NodePki, p: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = https.get(`${server}${p}`, { ca: pki.ca.certPem, cert: pki.admin.certPem, key: pki.admin.keyPem, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${p}: ${res.statusCode} ${body.slice(0, 200)}`));
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

/** An error no retry can mend. */
class Fatal extends Error {}

async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await check();
    } catch (err) {
      if (err instanceof Fatal) throw err;
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`waiting for ${what}: ${last instanceof Error ? last.message : String(last)}`);
}

function exec(command: string, args: string[]): Promise<string> {
  return run(command, args, { env: { ...process.env, PATH } });
}

function execResult(command: string, args: string[], options: { input?: string; timeoutMs?: number }): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { env: { ...process.env, PATH }, timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === 1 ? err.message : '') });
    });
    // A command that exits without reading its input (iptables-save) must not fail the caller with EPIPE.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(options.input ?? '');
  });
}
