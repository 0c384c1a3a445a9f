/**
 * test/node/layout.ts: the names, addresses and paths of the node cluster, in one place so that
 * the cluster (cluster.ts) and its clean-up (cleanup.ts) agree on what is the run's.
 * Every file of a run lives under one scratch folder (PORTCULLIS_NODE_DIR, /tmp/portcullis-node by
 * default); the few paths the kubelet, libcni and the shims hard-code outside it are named here too.
 * Must not touch anything: it only names.
 */
import path from 'node:path';

/** The network namespace the whole cluster lives in (/run/netns/NAME), and the node's name. */
export const NETNS = 'portcullis-node';
export const NODE_NAME = 'portcullis-node';
/** The CNI network's name: libcni's cache files in /var/lib/cni/results start with it. */
export const CNI_NETWORK = 'portcullis-node';

/** Addresses private to the namespace: it has no route to anything outside itself. */
export const NODE_IP = '10.213.0.2';
export const NODE_PREFIX = 24;
export const NODE_BRIDGE = 'node0';
export const SERVICE_CIDR = '10.214.0.0/24';
export const KUBERNETES_SERVICE_IP = '10.214.0.1';
export const CLUSTER_CIDR = '10.215.0.0/16';
export const API_PORT = 6443;

/**
 * Paths outside the scratch folder that the kubelet, libcni and containerd's shims write (and
 * whose folders they make; none is a Debian package's). iproute2 adds /run/netns.
 */
export const HOST_PATHS = {
  cniResults: '/var/lib/cni/results',
  containerLogLinks: '/var/log/containers',
  kubeletDevicePlugins: '/var/lib/kubelet/device-plugins',
  shimSockets: '/run/containerd/s',
  /** Not written when volumePluginDir is set; a run before that setting made it. */
  volumePlugins: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec',
};

export function defaultDir(): string {
  return process.env.PORTCULLIS_NODE_DIR ?? '/tmp/portcullis-node';
}

export function layout(dir: string) {
  return {
    dir,
    netnsPath: `/run/netns/${NETNS}`,
    logs: path.join(dir, 'logs'),
    pki: path.join(dir, 'pki'),
    etcd: path.join(dir, 'etcd'),
    containerdRoot: path.join(dir, 'containerd', 'root'),
    containerdState: path.join(dir, 'containerd', 'state'),
    containerdConfig: path.join(dir, 'containerd', 'config.toml'),
    containerdSocket: path.join(dir, 'containerd', 'containerd.sock'),
    runcRoot: path.join(dir, 'runc'),
    cniConfDir: path.join(dir, 'cni', 'net.d'),
    cniIpam: path.join(dir, 'cni', 'ipam'),
    kubeletRoot: path.join(dir, 'kubelet'),
    /** Else the kubelet makes /usr/libexec/kubernetes/kubelet-plugins/volume/exec on the host. */
    volumePluginDir: path.join(dir, 'kubelet-plugins', 'volume', 'exec'),
    kubeletConfig: path.join(dir, 'kubelet.yaml'),
    podLogs: path.join(dir, 'pod-logs'),
    kubeProxyConfig: path.join(dir, 'kube-proxy.yaml'),
    resolvConf: path.join(dir, 'resolv.conf'),
    kubectlCache: path.join(dir, 'kubectl-cache'),
    /** The API server's port on the host's loopback is forwarded through this socket into the namespace. */
    apiSocket: path.join(dir, 'apiserver.sock'),
    /** The host sysctls the kubelet sets, as they were before it ran; put back by the clean-up. */
    savedSysctls: path.join(dir, 'host-sysctls.json'),
    /** kubeconfig for the host (API server through the loopback forward). */
    kubeconfig: path.join(dir, 'kubeconfig'),
    /** kubeconfig for programs inside the namespace (API server at NODE_IP). */
    netnsKubeconfig: path.join(dir, 'kubeconfig.netns'),
    /** Beside the folder, not in it: the clean-up empties the folder. */
    lock: `${dir}.pid`,
  };
}
export type Layout = ReturnType<typeof layout>;

/**
 * The host sysctls the kubelet (protectKernelDefaults: false) sets to its own values: global,
 * not per namespace, so the run must put them back.
 */
export const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops', 'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes'];
