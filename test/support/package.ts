/**
 * The npm package as its users get it: the tarball `npm pack` makes of this repository (its
 * prepack compiles src/ to dist/), installed with `npm install <tarball>` in folders outside the
 * repository, and commands run there with this Node (24) first on PATH, as a user's shell has it.
 * Owns those temporary folders; must not write into the repository: the pack runs in a copy of the
 * files npm would see here, so that no test run rebuilds the dist/ another run is packing.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The environment of a user's shell with this Node (24) first on PATH (the machine's own `node` may be older). */
export function userEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` };
}

/** `npm <args>` in `cwd`, as a user runs it; its stdout (a failure throws with all npm printed: the compiler's errors, for one). */
export async function npm(cwd: string, ...args: string[]): Promise<string> {
  const result = await runIn(cwd, 'npm', args);
  if (result.code !== 0) throw new Error(`npm ${args.join(' ')} (in ${cwd}) exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `command <args>` in `cwd`, as a user runs it, with its exit code (a non-zero one does not throw). */
export async function runIn(cwd: string, command: string, args: string[]): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(command, args, { cwd, env: userEnv(), timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw err;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

let packed: Promise<string> | undefined;

/** The path of the tarball `npm pack` makes of this repository, made once per test process in a folder outside it. */
export function packageTarball(): Promise<string> {
  return (packed ??= pack());
}

async function pack(): Promise<string> {
  // What npm sees here: tracked files and new ones not ignored (npm pack honours .gitignore, as git does).
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, maxBuffer: 16 * 1024 * 1024 });
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-pack-'));
  for (const file of stdout.split('\0')) {
    if (!file || !fs.existsSync(path.join(REPO, file))) continue;
    fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    fs.copyFileSync(path.join(REPO, file), path.join(copy, file));
  }
  // prepack's compiler and types; npm never packs node_modules.
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(copy, 'node_modules'));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-tarball-'));
  process.once('exit', () => fs.rmSync(out, { recursive: true, force: true }));
  try {
    const name = (await npm(copy, 'pack', '--pack-destination', out)).trim().split('\n').at(-1)!;
    return path.join(out, name);
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}

/**
 * `npm install <tarball>` in `folder` (a new empty folder outside the repository when none is
 * given): from the registry, through npm's cache (the one this repository's install filled).
 */
export async function installPackage(folder = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-installed-'))): Promise<string> {
  await npm(folder, 'install', '--no-audit', '--no-fund', '--prefer-offline', await packageTarball());
  return folder;
}

/** What a user's copy of an example leaves out: what its own install and build make. */
const NOT_COPIED = new Set(['node_modules', 'dist', 'package-lock.json']);

/**
 * An example of examples/ as its users have it: copied out of the repository into a new folder
 * (named as the example, so that a handler folder holding it reads the same), its dependencies
 * installed there, `portcullis` by name from the package's tarball, the rest from the registry.
 * Not built: the caller runs the example's own scripts (`npm run build`, `npm test`). Removed when
 * the test process exits.
 */
export async function installExample(example: string): Promise<string> {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-example-'));
  process.once('exit', () => fs.rmSync(parent, { recursive: true, force: true }));
  const folder = path.join(parent, path.basename(example));
  fs.cpSync(example, folder, { recursive: true, filter: (source) => !NOT_COPIED.has(path.basename(source)) || path.dirname(source) !== example });
  return installPackage(folder);
}
