/**
 * test/node/host-state.ts: what the machine looks like from the host, in the terms the issue
 * names (network namespaces, links, routes, iptables rules, mounts, cgroups, the kubelet's
 * sysctls and hard-coded files), so that a test can show a node-cluster run left none of it
 * behind. Read-only: it changes nothing.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HOST_PATHS, KUBELET_SYSCTLS } from './layout.ts';

export interface HostState {
  netns: string[];
  links: string[];
  routes: string[];
  iptables: string[];
  mounts: string[];
  cgroups: string[];
  sysctls: Record<string, string>;
  files: string[];
}

const PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

function out(command: string, args: string[]): string {
  const r = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, PATH } });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return `(no ${command})`;
  return r.stdout ?? '';
}

function lines(text: string): string[] {
  return text.split('\n').filter(Boolean);
}

function list(dir: string): string[] {
  try {
    return fs.readdirSync(dir).map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

/** Rules without counters and comments, from every iptables backend present. */
function iptables(): string[] {
  const rules: string[] = [];
  for (const save of ['iptables-nft-save', 'ip6tables-nft-save', 'iptables-legacy-save', 'ip6tables-legacy-save']) {
    for (const line of lines(out(save, []))) {
      if (line.startsWith('#')) continue;
      rules.push(`${save}: ${line.replace(/\[\d+:\d+\]/g, '')}`);
    }
  }
  return rules;
}

function cgroupDirs(): string[] {
  const dirs: string[] = [];
  for (const h of list('/sys/fs/cgroup')) {
    for (const d of list(h)) {
      try {
        if (fs.statSync(d).isDirectory()) dirs.push(d);
      } catch {
        // gone meanwhile
      }
    }
  }
  return dirs.sort();
}

export function hostState(): HostState {
  const sysctls: Record<string, string> = {};
  for (const key of [...KUBELET_SYSCTLS, 'net/ipv4/ip_forward', 'net/bridge/bridge-nf-call-iptables']) {
    try {
      sysctls[key] = fs.readFileSync(`/proc/sys/${key}`, 'utf8').trim();
    } catch {
      // absent
    }
  }
  return {
    netns: lines(out('ip', ['netns', 'list'])),
    links: lines(out('ip', ['-o', 'link', 'show'])).map((l) => l.split(':')[1]!.trim().split('@')[0]!),
    routes: lines(out('ip', ['route', 'show', 'table', 'all'])),
    iptables: iptables(),
    mounts: lines(fs.readFileSync('/proc/self/mountinfo', 'utf8')).map((l) => {
      const f = l.split(' ');
      const sep = f.indexOf('-');
      return `${f[4]} ${f[sep + 1]} ${f[sep + 2]}`;
    }),
    cgroups: cgroupDirs(),
    sysctls,
    files: [
      ...list(HOST_PATHS.cniResults),
      ...list(HOST_PATHS.containerLogLinks),
      ...list(HOST_PATHS.kubeletDevicePlugins),
      ...list(HOST_PATHS.shimSockets),
      ...list('/var/lib'),
      ...list('/var/log'),
      ...list('/run'),
      ...list('/usr/libexec'),
      ...list('/etc'),
    ].sort(),
  };
}
