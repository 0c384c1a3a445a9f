/**
 * test/node/images.ts: the images the node cluster's pods run, built here because nothing can be
 * pulled: buildah (vfs storage, its own --root/--runroot under the cache, no daemon) assembles
 * each from a staging folder and writes an OCI archive, cached under
 * ~/.cache/portcullis/node-images keyed by every input, so a warm start builds nothing.
 *   pause    the sandbox image containerd names (a static C program, images/pause.c)
 *   test     busybox-static with its applets and a page, whose default command is httpd on 8080
 *   webhook  a static Go validating webhook (images/webhook) for the admission tests
 * `buildah()` is exported so that another image (the operator's, `buildah bud` of the
 * Dockerfile) can be built into the same storage and pushed to an archive that
 * NodeCluster.importImage() loads.
 * Must not touch: buildah's default storage (/var/lib/containers), any registry, the cluster.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ImageArchive {
  /** The name the archive's image carries, and the name pods use. */
  name: string;
  /** An OCI archive (`oci-archive:` transport) for `ctr images import`. */
  archive: string;
}

export const IMAGES = {
  pause: 'localhost/portcullis-pause:1',
  test: 'localhost/portcullis-test:1',
  webhook: 'localhost/portcullis-webhook:1',
} as const;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCES = path.join(HERE, 'images');

export function cacheRoot(): string {
  return process.env.PORTCULLIS_CACHE ?? path.join(os.homedir(), '.cache', 'portcullis');
}

/** buildah with this harness's own storage; BUILDAH_ISOLATION=chroot for any `bud`/`run`. */
export function buildah(args: string[], options: { cwd?: string } = {}): Promise<string> {
  const storage = path.join(cacheRoot(), 'buildah');
  return run('buildah', ['--storage-driver', 'vfs', '--root', path.join(storage, 'root'), '--runroot', path.join(storage, 'runroot'), ...args], { cwd: options.cwd, env: { ...process.env, BUILDAH_ISOLATION: 'chroot' } });
}

interface ImageSpec {
  name: string;
  /** Files whose bytes decide the image (besides this module and the spec itself). */
  inputs: string[];
  /** Fills the staging folder that becomes the image's root. */
  stage(dir: string): Promise<void>;
  config: string[];
}

const SPECS: ImageSpec[] = [
  {
    name: IMAGES.pause,
    inputs: [path.join(SOURCES, 'pause.c')],
    stage: async (dir) => {
      await run('gcc', ['-static', '-Os', '-s', '-o', path.join(dir, 'pause'), path.join(SOURCES, 'pause.c')]);
    },
    config: ['--entrypoint', '["/pause"]', '--cmd', ''],
  },
  {
    name: IMAGES.test,
    inputs: ['/bin/busybox', path.join(SOURCES, 'index.html')],
    stage: async (dir) => {
      for (const sub of ['bin', 'www', 'tmp', 'etc']) fs.mkdirSync(path.join(dir, sub));
      fs.chmodSync(path.join(dir, 'tmp'), 0o1777);
      fs.copyFileSync('/bin/busybox', path.join(dir, 'bin', 'busybox'));
      fs.chmodSync(path.join(dir, 'bin', 'busybox'), 0o755);
      const applets = (await run('/bin/busybox', ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
      for (const applet of applets) fs.symlinkSync('busybox', path.join(dir, 'bin', applet));
      fs.copyFileSync(path.join(SOURCES, 'index.html'), path.join(dir, 'www', 'index.html'));
      fs.writeFileSync(path.join(dir, 'etc', 'passwd'), 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
      fs.writeFileSync(path.join(dir, 'etc', 'group'), 'root:x:0:\nnobody:x:65534:\n');
    },
    config: ['--env', 'PATH=/bin', '--entrypoint', '', '--cmd', '["httpd","-f","-v","-p","8080","-h","/www"]', '--port', '8080'],
  },
  {
    name: IMAGES.webhook,
    inputs: [path.join(SOURCES, 'webhook', 'main.go'), path.join(SOURCES, 'webhook', 'go.mod')],
    stage: async (dir) => {
      await run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', path.join(dir, 'webhook'), '.'], {
        cwd: path.join(SOURCES, 'webhook'),
        env: { ...process.env, CGO_ENABLED: '0', GOWORK: 'off', GOFLAGS: '-mod=mod' },
      });
    },
    config: ['--entrypoint', '["/webhook"]', '--cmd', '', '--user', '65532:65532', '--port', '8443'],
  },
];

/** The archives of the three images, built (about 10 s in all) only when an input changed. */
export async function ensureNodeImages(log: (line: string) => void): Promise<ImageArchive[]> {
  const dir = path.join(cacheRoot(), 'node-images');
  fs.mkdirSync(dir, { recursive: true });
  const self = fs.readFileSync(fileURLToPath(import.meta.url));
  const out: ImageArchive[] = [];
  for (const spec of SPECS) {
    const hash = createHash('sha256')
      .update(self)
      .update(JSON.stringify({ name: spec.name, config: spec.config }));
    for (const input of spec.inputs) hash.update(input).update(fs.readFileSync(input));
    const base = spec.name.replace(/^localhost\//, '').replace(/[:/]/g, '-');
    const archive = path.join(dir, `${base}-${hash.digest('hex').slice(0, 16)}.tar`);
    if (!fs.existsSync(archive)) {
      const started = Date.now();
      await buildImage(spec, archive);
      log(`cluster: built image ${spec.name} in ${((Date.now() - started) / 1000).toFixed(1)} s (${archive})`);
      // Older archives of the same image are of no further use.
      for (const old of fs.readdirSync(dir)) if (old.startsWith(`${base}-`) && path.join(dir, old) !== archive) fs.rmSync(path.join(dir, old), { force: true });
    }
    out.push({ name: spec.name, archive });
  }
  return out;
}

async function buildImage(spec: ImageSpec, archive: string): Promise<void> {
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-image-'));
  const rootfs = path.join(staging, 'rootfs');
  fs.mkdirSync(rootfs);
  let container = '';
  try {
    await spec.stage(rootfs);
    const tarball = path.join(staging, 'rootfs.tar');
    await run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', rootfs, '-cf', tarball, '.']);
    container = (await buildah(['from', '--pull-never', 'scratch'])).trim();
    await buildah(['add', container, tarball, '/']);
    await buildah(['config', ...spec.config, container]);
    await buildah(['commit', '--rm', '--quiet', container, spec.name]);
    container = '';
    const partial = `${archive}.partial`;
    fs.rmSync(partial, { force: true });
    await buildah(['push', '--quiet', spec.name, `oci-archive:${partial}:${spec.name}`]);
    fs.renameSync(partial, archive);
    // The archive is the cache; the storage keeps no stale copy of each rebuilt image.
    await buildah(['rmi', spec.name]);
  } finally {
    if (container) await buildah(['rm', container]).catch(() => undefined);
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { cwd: options.cwd, env: options.env, maxBuffer: 64 << 20, timeout: 600_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed: ${(stderr || err.message).trim()}`));
      else resolve(stdout);
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}
