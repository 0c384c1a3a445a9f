/**
 * Pod Security checks of what a Pod may share with its node (policy/check_hostNamespaces.go,
 * check_hostPathVolumes.go, check_hostPorts.go, check_hostProbesAndhostLifecycle.go,
 * check_windowsHostProcess.go, check_sysctls.go): host namespaces, hostPath volumes, host ports,
 * probe and lifecycle hosts, Windows host processes and unsafe sysctls, each revision with the
 * version it applies from. Pure; the frame is checks.ts'.
 */
import { ALLOWED, containersNamed, forbidden, joinQuote, nameOf, pluralize, sortedSet, visitContainers, type Check, type CheckPod } from './checks.ts';

const hostNamespaces1_0: CheckPod = (_meta, spec) => {
  const shared = (['hostNetwork', 'hostPID', 'hostIPC'] as const).filter((field) => spec[field] === true).map((field) => `${field}=true`);
  return shared.length ? forbidden('host namespaces', shared.join(', ')) : ALLOWED;
};

const volumesOf = (spec: Record<string, any>): Record<string, any>[] => (Array.isArray(spec.volumes) ? spec.volumes.filter((v: unknown) => v && typeof v === 'object') : []);

const hostPathVolumes1_0: CheckPod = (_meta, spec) => {
  const names = volumesOf(spec)
    .filter((v) => v.hostPath != null)
    .map((v) => String(v.name ?? ''));
  return names.length ? forbidden('hostPath volumes', `${pluralize('volume', 'volumes', names.length)} ${joinQuote(names)}`) : ALLOWED;
};

const hostPorts1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  const ports: string[] = [];
  visitContainers(spec, (c) => {
    const used = (Array.isArray(c.ports) ? c.ports : []).filter((p: any) => p && p.hostPort != null && p.hostPort !== 0).map((p: any) => String(p.hostPort));
    if (used.length) {
      bad.push(nameOf(c));
      ports.push(...used);
    }
  });
  if (!bad.length) return ALLOWED;
  const distinct = sortedSet(ports);
  return forbidden('hostPort', `${containersNamed(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('hostPort', 'hostPorts', distinct.length)} ${distinct.join(', ')}`, bad);
};

/** The hosts an httpGet or tcpSocket handler names (probes and lifecycle handlers alike). */
function hostsOf(handler: any): string[] {
  if (!handler || typeof handler !== 'object') return [];
  return [handler.httpGet?.host, handler.tcpSocket?.host].filter((h): h is string => typeof h === 'string' && h !== '');
}

const hostProbesAndHostLifecycle1_34: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  const hosts: string[] = [];
  visitContainers(spec, (c) => {
    const found = [...hostsOf(c.livenessProbe), ...hostsOf(c.readinessProbe), ...hostsOf(c.startupProbe), ...hostsOf(c.lifecycle?.postStart), ...hostsOf(c.lifecycle?.preStop)];
    if (found.length) {
      bad.push(nameOf(c));
      hosts.push(...found);
    }
  });
  if (!bad.length) return ALLOWED;
  const containers = sortedSet(bad);
  const distinct = sortedSet(hosts);
  return forbidden(
    'probe or lifecycle host',
    `${containersNamed(containers)} ${pluralize('uses', 'use', containers.length)} ${pluralize('probe or lifecycle host', 'probe or lifecycle hosts', distinct.length)} ${joinQuote(distinct)}`,
    containers,
  );
};

const windowsHostProcess1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    if (c.securityContext?.windowsOptions?.hostProcess === true) bad.push(nameOf(c));
  });
  const pod = spec.securityContext?.windowsOptions?.hostProcess === true;
  const setters = [...(pod ? ['pod'] : []), ...(bad.length ? [containersNamed(bad)] : [])];
  return setters.length ? forbidden('hostProcess', `${setters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true`, pod ? undefined : bad) : ALLOWED;
};

const SYSCTLS_1_0 = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_unprivileged_port_start'];
const SYSCTLS_1_27 = [...SYSCTLS_1_0, 'net.ipv4.ip_local_reserved_ports'];
const SYSCTLS_1_29 = [...SYSCTLS_1_27, 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'];
const SYSCTLS_1_32 = [...SYSCTLS_1_29, 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem'];
const SYSCTLS_1_37 = [...SYSCTLS_1_32, 'net.ipv4.tcp_slow_start_after_idle', 'net.ipv4.tcp_notsent_lowat'];

function sysctls(allowedNames: string[]): CheckPod {
  const allowed = new Set(allowedNames);
  return (_meta, spec) => {
    const list = spec.securityContext?.sysctls;
    const bad = (Array.isArray(list) ? list : []).map((s: any) => String(s?.name ?? '')).filter((name: string) => !allowed.has(name));
    return bad.length ? forbidden('forbidden sysctls', bad.join(', ')) : ALLOWED;
  };
}

export const HOST_CHECKS: Check[] = [
  { id: 'hostNamespaces', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: hostNamespaces1_0 }] },
  { id: 'hostPathVolumes', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: hostPathVolumes1_0 }] },
  { id: 'hostPorts', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: hostPorts1_0 }] },
  { id: 'hostProbesAndHostLifecycle', level: 'baseline', versions: [{ minimumVersion: 34, checkPod: hostProbesAndHostLifecycle1_34 }] },
  { id: 'windowsHostProcess', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: windowsHostProcess1_0 }] },
  {
    id: 'sysctls',
    level: 'baseline',
    versions: [
      { minimumVersion: 0, checkPod: sysctls(SYSCTLS_1_0) },
      { minimumVersion: 27, checkPod: sysctls(SYSCTLS_1_27) },
      { minimumVersion: 29, checkPod: sysctls(SYSCTLS_1_29) },
      { minimumVersion: 32, checkPod: sysctls(SYSCTLS_1_32) },
      { minimumVersion: 37, checkPod: sysctls(SYSCTLS_1_37) },
    ],
  },
];
