/**
 * test/node/cleanup.ts: removes everything a node-cluster run leaves on the machine, whether the
 * run stopped well or was killed (SIGKILL leaves shims, containers, mounts, the namespace and
 * cgroups behind). Run at every start (for a killed predecessor) and at every stop. Synchronous,
 * so that it can also run from a process 'exit' handler. Idempotent; each step tolerates absence.
 * Owns: processes of the run (by their executable and a command line naming the scratch folder),
 * runc containers under the run's runc root, mounts under the scratch folder, the network
 * namespace, the kubepods cgroup trees, the libcni cache entries of the run's network, the
 * /var/log/containers links into the folder, the kubelet's device-plugin socket, the host
 * sysctls the kubelet changed (put back as they were).
 * Must not touch: any other process, mount, namespace, cgroup or file of the machine.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CNI_NETWORK, HOST_PATHS, NETNS, type Layout } from './layout.ts';

/** The executables a run starts (by basename); only these are ever killed by command line. */
const OUR_PROGRAMS = new Set(['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy', 'containerd', 'containerd-shim-runc-v2', 'containerd-shim', 'node', 'nsenter', 'setpriv']);

export interface CleanupReport {
  killed: number;
  containers: number;
  unmounted: number;
  cgroups: number;
  netns: boolean;
}

/** Removes the run's traces. With keepLogs the folder's logs/ stays for inspection. */
export function cleanupNode(l: Layout, options: { keepLogs?: boolean } = {}): CleanupReport {
  const report: CleanupReport = { killed: 0, containers: 0, unmounted: 0, cgroups: 0, netns: false };
  report.containers = killContainers(l);
  const sockets = new Set<string>();
  report.killed += killProcesses(ourProcesses(l.dir), sockets);
  report.killed += killProcesses(cgroupProcesses(), sockets);
  for (const socket of sockets) fs.rmSync(socket, { force: true });
  report.unmounted = unmountUnder(l.dir);
  if (netnsExists()) {
    run('ip', ['netns', 'del', NETNS]);
    report.netns = true;
  }
  report.cgroups = removeCgroups();
  restoreSysctls(l.savedSysctls);
  removeHostFiles(l.dir);
  removeFolder(l, options.keepLogs ?? false);
  return report;
}

function run(command: string, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: 10_000 });
  return { code: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** runc containers of the run: its own runc root (one folder per containerd namespace) holds only them. */
function killContainers(l: Layout): number {
  let count = 0;
  let namespaces: string[];
  try {
    namespaces = fs.readdirSync(l.runcRoot).map((ns) => path.join(l.runcRoot, ns));
  } catch {
    return 0;
  }
  for (const root of namespaces) {
    const ids = run('runc', ['--root', root, 'list', '-q']).stdout.split('\n').filter(Boolean);
    for (const id of ids) run('runc', ['--root', root, 'kill', '--all', id, 'KILL']);
    for (const id of ids) run('runc', ['--root', root, 'delete', '--force', id]);
    count += ids.length;
  }
  return count;
}

function readProc(pid: string, file: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
}

function ancestors(): Set<string> {
  const mine = new Set<string>();
  let pid = String(process.pid);
  while (pid && pid !== '0' && !mine.has(pid)) {
    mine.add(pid);
    pid = /PPid:\s+(\d+)/.exec(readProc(pid, 'status'))?.[1] ?? '';
  }
  return mine;
}

/** Processes of the run: one of our programs, with the scratch folder in its command line. */
function ourProcesses(dir: string): string[] {
  const skip = ancestors();
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || skip.has(pid)) continue;
    const argv = readProc(pid, 'cmdline').split('\0');
    let exe: string;
    try {
      exe = path.basename(fs.readlinkSync(`/proc/${pid}/exe`));
    } catch {
      continue;
    }
    if (!OUR_PROGRAMS.has(exe)) continue;
    if (argv.some((arg) => arg === dir || arg.includes(`${dir}/`) || arg.includes(`=${dir}`))) found.push(pid);
  }
  return found;
}

function cgroupHierarchies(): string[] {
  try {
    return fs.readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h));
  } catch {
    return [];
  }
}

/** Every directory of the kubepods trees, deepest first. */
function kubepodsDirs(): string[] {
  const dirs: string[] = [];
  const walk = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(path.join(dir, e.name));
    dirs.push(dir);
  };
  for (const h of cgroupHierarchies()) if (fs.existsSync(path.join(h, 'kubepods'))) walk(path.join(h, 'kubepods'));
  return dirs;
}

/** Processes still in the pods' cgroups (containers whose runc state was lost). */
function cgroupProcesses(): string[] {
  const pids = new Set<string>();
  for (const dir of kubepodsDirs()) {
    try {
      for (const pid of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (pid) pids.add(pid);
    } catch {
      // not a hierarchy with cgroup.procs, or gone
    }
  }
  for (const pid of ancestors()) pids.delete(pid);
  return [...pids];
}

/** Unix sockets a process listens on (a shim's /run/containerd/s/<hash>), found through its fds. */
function listeningSockets(pid: string): string[] {
  const inodes = new Set<string>();
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) inodes.add(m[1]!);
    }
  } catch {
    return [];
  }
  const paths: string[] = [];
  // The shim's own network namespace (the run's) lists its sockets, not the host's.
  for (const line of readProc(pid, 'net/unix').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    // Num RefCount Protocol Flags Type St Inode Path; flags 00010000 = listening.
    if (cols.length >= 8 && inodes.has(cols[6]!) && cols[3] === '00010000' && cols[7]!.startsWith('/')) paths.push(cols[7]!);
  }
  return paths;
}

function killProcesses(pids: string[], sockets: Set<string>): number {
  let killed = 0;
  for (const pid of pids) {
    const exe = (() => {
      try {
        return path.basename(fs.readlinkSync(`/proc/${pid}/exe`));
      } catch {
        return '';
      }
    })();
    if (exe.startsWith('containerd-shim')) for (const s of listeningSockets(pid)) if (s.startsWith(`${HOST_PATHS.shimSockets}/`)) sockets.add(s);
    try {
      process.kill(Number(pid), 'SIGKILL');
      killed++;
    } catch {
      // already gone
    }
  }
  // Wait (briefly) for them to be gone, so their mounts and cgroups can go.
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && pids.some((pid) => fs.existsSync(`/proc/${pid}`) && !readProc(pid, 'stat').includes(') Z '))) sleep(50);
  return killed;
}

/** Mount points under dir (mountinfo's escapes undone), deepest first. */
export function mountsUnder(dir: string): string[] {
  const points = readProc('self', 'mountinfo')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8))))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.split('/').length - a.split('/').length || b.length - a.length);
}

function unmountUnder(dir: string): number {
  let count = 0;
  for (let round = 0; round < 10; round++) {
    const points = mountsUnder(dir);
    if (points.length === 0) break;
    for (const p of points) {
      if (run('umount', [p]).code !== 0) run('umount', ['-l', p]);
      count++;
    }
  }
  return count;
}

function netnsExists(): boolean {
  return (
    fs.existsSync(`/run/netns/${NETNS}`) ||
    run('ip', ['netns', 'list'])
      .stdout.split('\n')
      .some((l) => l.split(' ')[0] === NETNS)
  );
}

function removeCgroups(): number {
  let removed = 0;
  for (let round = 0; round < 20; round++) {
    const dirs = kubepodsDirs();
    if (dirs.length === 0) break;
    for (const dir of dirs) {
      try {
        fs.rmdirSync(dir);
        removed++;
      } catch {
        // busy (a process still exiting) or not empty yet: next round
      }
    }
    if (kubepodsDirs().length) sleep(100);
  }
  return removed;
}

function restoreSysctls(file: string): void {
  let saved: Record<string, string>;
  try {
    saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  } catch {
    return;
  }
  for (const [key, value] of Object.entries(saved)) {
    try {
      if (fs.readFileSync(`/proc/sys/${key}`, 'utf8').trim() !== value) fs.writeFileSync(`/proc/sys/${key}`, value);
    } catch {
      // not writable here: left as it is
    }
  }
  fs.rmSync(file, { force: true });
}

/**
 * libcni caches each attachment as <network>-<sandbox id>-<interface>: ours are those of our
 * network, and the loopback entries ("cni-loopback") of the same sandboxes.
 */
function ourCniResults(): string[] {
  let files: string[];
  try {
    files = fs.readdirSync(HOST_PATHS.cniResults);
  } catch {
    return [];
  }
  const ours = files.filter((f) => f.startsWith(`${CNI_NETWORK}-`));
  const sandboxes = new Set(ours.map((f) => f.slice(CNI_NETWORK.length + 1).split('-')[0]!));
  const loopbacks = files.filter((f) => f.startsWith('cni-loopback-') && sandboxes.has(f.slice('cni-loopback-'.length).split('-')[0]!));
  return [...ours, ...loopbacks].map((f) => path.join(HOST_PATHS.cniResults, f));
}

function rmdirIfEmpty(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // absent, or holds something that is not the run's
  }
}

function removeHostFiles(dir: string): void {
  for (const f of ourCniResults()) fs.rmSync(f, { force: true });
  try {
    for (const f of fs.readdirSync(HOST_PATHS.containerLogLinks)) {
      const link = path.join(HOST_PATHS.containerLogLinks, f);
      try {
        if (fs.readlinkSync(link).startsWith(`${dir}/`)) fs.rmSync(link, { force: true });
      } catch {
        // not a link
      }
    }
  } catch {
    // no such folder
  }
  fs.rmSync(path.join(HOST_PATHS.kubeletDevicePlugins, 'kubelet.sock'), { force: true });
  // The folders the run's kubelet and shims made for those paths, if nothing else is in them.
  rmdirIfEmpty(HOST_PATHS.kubeletDevicePlugins);
  rmdirIfEmpty(path.dirname(HOST_PATHS.kubeletDevicePlugins));
  rmdirIfEmpty(HOST_PATHS.shimSockets);
  rmdirIfEmpty(path.dirname(HOST_PATHS.shimSockets));
  for (let d = HOST_PATHS.volumePlugins; d !== '/usr/libexec'; d = path.dirname(d)) rmdirIfEmpty(d);
  rmdirIfEmpty(HOST_PATHS.cniResults);
  rmdirIfEmpty(path.dirname(HOST_PATHS.cniResults));
  rmdirIfEmpty(HOST_PATHS.containerLogLinks);
  removeNetnsFolderIfUnused();
}

/**
 * iproute2 makes /run/netns (a shared bind mount of itself) for the first namespace and never
 * removes it: with no namespace left in it, it goes too.
 */
function removeNetnsFolderIfUnused(): void {
  try {
    if (fs.readdirSync('/run/netns').length > 0) return;
  } catch {
    return;
  }
  for (let i = 0; i < 5 && mountsUnder('/run/netns').length > 0; i++) run('umount', ['/run/netns']);
  rmdirIfEmpty('/run/netns');
}

function removeFolder(l: Layout, keepLogs: boolean): void {
  let entries: string[];
  try {
    entries = fs.readdirSync(l.dir);
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(l.dir, e);
    if (keepLogs && p === l.logs) continue;
    fs.rmSync(p, { recursive: true, force: true });
  }
}

/** What of a run is still on the machine; empty when the clean-up did its work. */
export function leftovers(l: Layout): string[] {
  const found: string[] = [];
  if (netnsExists()) found.push(`network namespace ${NETNS}`);
  for (const m of mountsUnder(l.dir)) found.push(`mount ${m}`);
  for (const d of kubepodsDirs()) found.push(`cgroup ${d}`);
  for (const p of ourProcesses(l.dir)) found.push(`process ${p} (${readProc(p, 'cmdline').split('\0').slice(0, 3).join(' ')})`);
  if (fs.existsSync(l.runcRoot)) found.push(`runc root ${l.runcRoot}`);
  for (const f of ourCniResults()) found.push(`libcni cache ${f}`);
  return found;
}
