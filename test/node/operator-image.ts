/**
 * test/node/operator-image.ts: the operator's image as users build it: `buildah bud` of the
 * project's own Dockerfile (no second, test-only recipe of the app), tagged exactly as
 * deploy/03-deployment.yaml names it, so that `kubectl apply -f deploy/` runs it unchanged.
 *
 * Nothing can be pulled here, so the Dockerfile's default base (`node:24-slim`) is a stand-in
 * made on this machine and given the public name in the harness's buildah storage: a Debian
 * bookworm minbase root (mmdebstrap) with the Node binary of the npm `node` package this project
 * pins (the official build, the same binary the public image ships) at /usr/local/bin/node, and
 * the npm that Node release bundles under /usr/local/lib/node_modules/npm.
 *
 * This machine reaches the npm registry through an extra CA (NODE_EXTRA_CA_CERTS, npm's cafile)
 * that a clean image does not trust; the build gets an npmrc naming that bundle as read-only
 * mounts of the build's RUN steps only: nothing of them is in any layer.
 *
 * Caches (under ~/.cache/portcullis/operator-image), each keyed by what decides it: the Debian
 * root tarball and npm's package (cold: about a minute), the base image in buildah's storage (a
 * label holds its key), and the operator image's OCI archive (key: the Dockerfile,
 * .dockerignore, package.json, package-lock.json, every file of src/ and crds/, tools/build.ts, the base's key),
 * so a warm run builds nothing.
 * Must not touch: buildah's default storage, the host's npm configuration, any registry but npm's.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildah, cacheRoot, run, type ImageArchive } from './images.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SELF = fileURLToPath(import.meta.url);

/** The npm that Node 24.21.0 bundles (its changelog: "upgrade npm to 11.19.0"), as in the public image. */
const NPM_VERSION = '11.19.0';
const DEBIAN_SUITE = 'bookworm';
const MMDEBSTRAP_ARGS = ['--variant=minbase', '--include=ca-certificates', DEBIAN_SUITE];
/** The names the Dockerfile's default `FROM node:24-slim` resolves to. */
const BASE_NAMES = ['docker.io/library/node:24-slim', 'localhost/node:24-slim'];
const BASE_KEY_LABEL = 'dev.portcullis.test.base-key';

export interface OperatorImage extends ImageArchive {
  /** Bytes of the image's layers uncompressed (what `docker images` calls its size). */
  sizeBytes: number;
  /** Bytes of the OCI archive (layers compressed). */
  archiveBytes: number;
  /** Whether this call built it (false: the cached archive was current). */
  built: boolean;
  /** Seconds spent building, per step (empty when nothing was built). */
  timings: Record<string, number>;
}

/** The image reference deploy/03-deployment.yaml names, in full (docker.io/... as a runtime resolves it). */
export function deployedImageName(): string {
  const manifest = fs.readFileSync(path.join(REPO, 'deploy', '03-deployment.yaml'), 'utf8');
  const names = [...manifest.matchAll(/^\s*image:\s*["']?([^"'\s]+)/gm)].map((m) => m[1]!);
  if (names.length !== 1) throw new Error(`deploy/03-deployment.yaml names ${names.length} images (${names.join(', ')}); expected exactly one`);
  return normalizeImageName(names[0]!);
}

/** Docker's rules: no registry part means docker.io, and a single path segment means library/. */
export function normalizeImageName(name: string): string {
  const first = name.split('/')[0]!;
  const hasRegistry = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return name;
  return name.includes('/') ? `docker.io/${name}` : `docker.io/library/${name}`;
}

/** The operator's image archive, built (base included, if need be) only when an input changed. */
export async function ensureOperatorImage(log: (line: string) => void): Promise<OperatorImage> {
  const dir = path.join(cacheRoot(), 'operator-image');
  fs.mkdirSync(dir, { recursive: true });
  const name = deployedImageName();
  const baseKey = baseImageKey();
  const key = hashOf([baseKey, name, SELF, ...appInputs()]);
  const archive = path.join(dir, `operator-${key}.tar`);
  const sizeFile = `${archive}.size`;
  const timings: Record<string, number> = {};
  let built = false;
  if (!fs.existsSync(archive) || !fs.existsSync(sizeFile)) {
    built = true;
    const step = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
      const t0 = Date.now();
      const result = await f();
      timings[what] = (Date.now() - t0) / 1000;
      log(`operator image: ${what} in ${timings[what]!.toFixed(1)} s`);
      return result;
    };
    await step('base image ready', () => ensureBaseImage(dir, baseKey, log));
    await step('image built from the Dockerfile', () => budOperatorImage(name));
    const size = await step('image measured', () => imageSize(name));
    const partial = `${archive}.partial`;
    fs.rmSync(partial, { force: true });
    await step('archive written', () => buildah(['push', '--quiet', name, `oci-archive:${partial}:${name}`]));
    fs.renameSync(partial, archive);
    fs.writeFileSync(sizeFile, String(size));
    // The archive is the cache: the storage keeps only the base, for the next rebuild.
    await buildah(['rmi', name]);
    for (const old of fs.readdirSync(dir)) {
      const p = path.join(dir, old);
      if (old.startsWith('operator-') && p !== archive && p !== sizeFile) fs.rmSync(p, { force: true });
    }
  }
  return { name, archive, sizeBytes: Number(fs.readFileSync(sizeFile, 'utf8')), archiveBytes: fs.statSync(archive).size, built, timings };
}

function hashOf(parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) {
    hash.update(part).update('\0');
    if (path.isAbsolute(part) && fs.existsSync(part) && fs.statSync(part).isFile()) hash.update(fs.readFileSync(part)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Every file the Dockerfile's COPY steps and the build read, in a stable order. */
function appInputs(): string[] {
  const files = ['Dockerfile', '.dockerignore', 'package.json', 'package-lock.json'].map((f) => path.join(REPO, f));
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else files.push(p);
    }
  };
  walk(path.join(REPO, 'src'));
  walk(path.join(REPO, 'crds'));
  files.push(path.join(REPO, 'tools', 'build.ts'));
  return files;
}

/** The Node binary of the npm `node` package (its platform package ships the official build). */
function nodePlatformPackage(): { dir: string; version: string } {
  const dir = path.join(REPO, 'node_modules', 'node', 'node_modules', `node-${process.platform}-${process.arch}`);
  const manifest = path.join(dir, 'package.json');
  if (!fs.existsSync(path.join(dir, 'bin', 'node'))) throw new Error(`no Node binary at ${dir}/bin/node: run npm ci (the devDependency "node" installs its platform package there)`);
  return { dir, version: (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string }).version };
}

function baseImageKey(): string {
  const node = nodePlatformPackage();
  return hashOf(['base', ...MMDEBSTRAP_ARGS, `node ${node.version} ${process.platform}-${process.arch}`, `npm ${NPM_VERSION}`, SELF]);
}

async function storedBaseKey(): Promise<string | undefined> {
  try {
    const info = JSON.parse(await buildah(['inspect', '--type', 'image', BASE_NAMES[0]!])) as { OCIv1?: { config?: { Labels?: Record<string, string> } } };
    return info.OCIv1?.config?.Labels?.[BASE_KEY_LABEL];
  } catch {
    return undefined;
  }
}

/** The stand-in for node:24-slim in buildah's storage, rebuilt only when its key changed. */
async function ensureBaseImage(dir: string, key: string, log: (line: string) => void): Promise<void> {
  if ((await storedBaseKey()) === key) return;
  const node = nodePlatformPackage();
  const debian = path.join(dir, `debian-${DEBIAN_SUITE}-minbase-${hashOf(MMDEBSTRAP_ARGS)}.tar`);
  if (!fs.existsSync(debian)) {
    const t0 = Date.now();
    const partial = `${debian}.partial`;
    fs.rmSync(partial, { force: true });
    // Packages from Debian's mirrors (the host's apt sources), nothing from an image registry.
    await run('mmdebstrap', ['--quiet', ...MMDEBSTRAP_ARGS, partial], { env: { ...process.env, PATH: `/usr/sbin:/usr/bin:/sbin:/bin` } });
    fs.renameSync(partial, debian);
    log(`operator image: Debian ${DEBIAN_SUITE} minbase root made with mmdebstrap in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const npmPackage = path.join(dir, `npm-${NPM_VERSION}.tgz`);
  if (!fs.existsSync(npmPackage)) {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-npm-'));
    try {
      await run('npm', ['pack', `npm@${NPM_VERSION}`, '--pack-destination', out, '--silent']);
      const [file] = fs.readdirSync(out).filter((f) => f.endsWith('.tgz'));
      if (!file) throw new Error(`npm pack npm@${NPM_VERSION} wrote no package`);
      fs.copyFileSync(path.join(out, file), `${npmPackage}.partial`);
      fs.renameSync(`${npmPackage}.partial`, npmPackage);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  }

  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-node-base-'));
  let container = '';
  try {
    const root = path.join(staging, 'root');
    const lib = path.join(root, 'usr', 'local', 'lib', 'node_modules');
    fs.mkdirSync(path.join(root, 'usr', 'local', 'bin'), { recursive: true });
    fs.mkdirSync(lib, { recursive: true });
    fs.copyFileSync(path.join(node.dir, 'bin', 'node'), path.join(root, 'usr', 'local', 'bin', 'node'));
    fs.chmodSync(path.join(root, 'usr', 'local', 'bin', 'node'), 0o755);
    await run('tar', ['-xzf', npmPackage, '-C', lib]);
    fs.renameSync(path.join(lib, 'package'), path.join(lib, 'npm'));
    // As Node's own installer lays them out.
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(root, 'usr', 'local', 'bin', 'npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(root, 'usr', 'local', 'bin', 'npx'));
    const overlay = path.join(staging, 'node.tar');
    await run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', root, '-cf', overlay, '.']);

    container = (await buildah(['from', '--pull-never', 'scratch'])).trim();
    await buildah(['add', container, debian, '/']);
    await buildah(['add', container, overlay, '/']);
    await buildah(['config', '--env', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', '--env', `NODE_VERSION=${node.version}`, '--cmd', '["node"]', '--label', `${BASE_KEY_LABEL}=${key}`, container]);
    await buildah(['commit', '--rm', '--quiet', container, BASE_NAMES[0]!]);
    container = '';
    for (const alias of BASE_NAMES.slice(1)) await buildah(['tag', BASE_NAMES[0]!, alias]);
    log(`operator image: base ${BASE_NAMES.join(', ')} (Debian ${DEBIAN_SUITE} minbase, Node ${node.version}, npm ${NPM_VERSION}), ${((await imageSize(BASE_NAMES[0]!)) / 1e6).toFixed(0)} MB`);
  } finally {
    if (container) await buildah(['rm', container]).catch(() => undefined);
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * npm's settings for the build's RUN steps: this machine's registry and, when this machine's npm
 * trusts an extra CA bundle, that bundle. Returned as `-v` mounts, which no layer keeps.
 */
async function npmBuildMounts(staging: string): Promise<string[]> {
  const get = async (key: string) => (await run('npm', ['config', 'get', key])).trim();
  const registry = await get('registry');
  const configured = await get('cafile');
  const cafile = configured && configured !== 'null' && configured !== 'undefined' ? configured : process.env.NODE_EXTRA_CA_CERTS;
  const lines = [`registry=${registry}`];
  const mounts: string[] = [];
  if (cafile && fs.existsSync(cafile)) {
    lines.push('cafile=/usr/local/etc/npm-build-ca.pem');
    mounts.push('-v', `${fs.realpathSync(cafile)}:/usr/local/etc/npm-build-ca.pem:ro`);
  }
  const npmrc = path.join(staging, 'npmrc');
  fs.writeFileSync(npmrc, `${lines.join('\n')}\n`);
  mounts.push('-v', `${npmrc}:/usr/local/etc/npmrc:ro`);
  return mounts;
}

async function budOperatorImage(name: string): Promise<void> {
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-bud-'));
  try {
    await buildah(['bud', '--isolation', 'chroot', '--pull-never', '--layers=false', ...(await npmBuildMounts(staging)), '-f', path.join(REPO, 'Dockerfile'), '-t', name, REPO], { cwd: REPO });
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** The bytes of an image's layers as stored (uncompressed tars), what `docker images` reports as its size. */
async function imageSize(name: string): Promise<number> {
  const info = JSON.parse(await buildah(['inspect', '--type', 'image', name])) as { Manifest?: string };
  const layers = (JSON.parse(info.Manifest ?? '{}') as { layers?: { size: number }[] }).layers ?? [];
  const size = layers.reduce((sum, l) => sum + l.size, 0);
  if (!(size > 0)) throw new Error(`buildah inspect gave no layer sizes for ${name}`);
  return size;
}
