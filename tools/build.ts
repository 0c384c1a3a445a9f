/**
 * `node tools/build.ts [OUT]`: the image's JavaScript (OUT defaults to dist/). One self-contained
 * bundle per entry, written flat in OUT: main.js, and one file per worker thread that src/ starts
 * (found by its `workerEntry('name', import.meta.url)` call, so a new worker cannot be left out).
 * Dependencies are bundled in, so the image carries no node_modules.
 *
 * Why a bundle (esbuild): a module per file costs the process memory of its own, and
 * @kubernetes/client-node's `KubeConfig` alone loads its whole generated API, a few hundred files.
 * Bundled, tree-shaken and stripped of whitespace, the operator idles about 28 MB smaller
 * (bench:scale: 123 MB against 151 MB). Identifiers and function names are kept, so logs and stack
 * traces read as in the sources; a source map (positions only) sits beside each bundle for
 * `node --enable-source-maps`. Types are stripped by esbuild: src/ uses only erasable syntax
 * (tsconfig's erasableSyntaxOnly), so it is the same code Node's own stripper runs in the tests.
 *
 * Beside the bundles, `sbom.cdx.json`: the image's software bill of materials (CycloneDX 1.5), read
 * from what esbuild put in them (its metafile's inputs under node_modules, each package's own
 * package.json for name, version and license) and the Node runtime that runs them. A scanner of the
 * image sees no package.json of a bundled dependency, so this is where they are listed.
 *
 * Run by the Dockerfile's build stage, and (`buildApp`) by the benches and the bundle's test; it must
 * not touch anything but the directory it is given.
 */
import fs from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(REPO, 'src');

/** A worker started from src/: `workerEntry('thread-worker', import.meta.url)`. */
const WORKER_ENTRY = /workerEntry\(\s*'([\w-]+)'\s*,\s*import\.meta\.url\s*\)/g;

/** Bundled CommonJS dependencies call `require` for Node's own modules: give them one. */
const REQUIRE_BANNER = "import { createRequire as __portcullisCreateRequire } from 'node:module';\nconst require = __portcullisCreateRequire(import.meta.url);";

/**
 * Packages a dependency asks for only inside a try (ws' optional native speed-ups; debug's
 * supports-color, which is not a production dependency: it is installed where the image is built
 * only as a test tool's): absent from the image, the asker does without. Left out, the image holds
 * only what production needs (its SBOM says so). Anything else not bundled fails the build.
 */
const OPTIONAL_AT_RUN_TIME = new Set(['bufferutil', 'utf-8-validate', 'supports-color']);

/** Entry name (the output file's, without .js) to its source. */
export function entries(): Record<string, string> {
  const found: Record<string, string> = { main: path.join(SRC, 'main.ts') };
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) {
        for (const [, name] of fs.readFileSync(file, 'utf8').matchAll(WORKER_ENTRY)) {
          const source = path.join(dir, `${name}.ts`);
          if (!fs.existsSync(source)) throw new Error(`${path.relative(REPO, file)} starts a worker from ${path.relative(REPO, source)}, which does not exist`);
          if (found[name!] && found[name!] !== source) throw new Error(`two entries named ${name}: ${found[name!]} and ${source}`);
          found[name!] = source;
        }
      }
    }
  };
  walk(SRC);
  return found;
}

export interface Built {
  /** Output file (relative to OUT) to its size in bytes. */
  files: Record<string, number>;
  warnings: string[];
}

/** The SBOM's file name in OUT. */
export const SBOM_FILE = 'sbom.cdx.json';

/** `node_modules/@scope/name/lib/x.js` or `.../node_modules/a/node_modules/b/x.js`: the innermost package's directory. */
function packageDirOf(input: string): string | undefined {
  const parts = input.split('/');
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const nameParts = parts[at + 1]!.startsWith('@') ? 2 : 1;
  return parts.slice(0, at + 1 + nameParts).join('/');
}

/** The CycloneDX 1.5 document of what the bundles hold: each npm package esbuild took code from, and Node itself. */
export function sbomOf(inputs: string[]): Record<string, unknown> {
  const app = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
  const packages = new Map<string, { name: string; version: string; license?: string }>();
  for (const dir of new Set(inputs.map(packageDirOf).filter((d): d is string => d !== undefined))) {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(REPO, dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    packages.set(`${manifest.name}@${manifest.version}`, manifest);
  }
  const purl = (name: string, version: string) => `pkg:npm/${name.replace('@', '%40')}@${version}`;
  const licenses = (license?: string) => (typeof license === 'string' && license ? { licenses: [{ expression: license }] } : {});
  const components = [...packages.values()]
    .sort((a, b) => (a.name === b.name ? a.version.localeCompare(b.version) : a.name.localeCompare(b.name)))
    .map((p) => ({ type: 'library', 'bom-ref': purl(p.name, p.version), name: p.name, version: p.version, purl: purl(p.name, p.version), ...licenses(p.license) }));
  const node = process.version.slice(1);
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    version: 1,
    metadata: {
      component: { type: 'application', 'bom-ref': purl(app.name, app.version), name: app.name, version: app.version, purl: purl(app.name, app.version), ...licenses(app.license) },
      tools: { components: [{ type: 'application', name: 'tools/build.ts (esbuild metafile)' }] },
    },
    components: [{ type: 'platform', 'bom-ref': `pkg:generic/node@${node}`, name: 'node', version: node, purl: `pkg:generic/node@${node}` }, ...components],
  };
}

export async function build(out: string): Promise<Built> {
  fs.rmSync(out, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: entries(),
    outdir: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    banner: { js: REQUIRE_BANNER },
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    external: [...OPTIONAL_AT_RUN_TIME],
    logLevel: 'silent',
  });
  // Whatever the bundles still import at run time must be Node's own: the image has no node_modules.
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    const foreign = output.imports.filter((i) => i.external && !builtins.has(i.path) && !OPTIONAL_AT_RUN_TIME.has(i.path)).map((i) => i.path);
    if (foreign.length) throw new Error(`${file} imports ${foreign.join(', ')} at run time; the image has no node_modules`);
  }
  fs.writeFileSync(path.join(out, SBOM_FILE), `${JSON.stringify(sbomOf(Object.keys(result.metafile.inputs)), null, 2)}\n`);
  const files: Record<string, number> = {};
  for (const file of fs.readdirSync(out)) files[file] = fs.statSync(path.join(out, file)).size;
  const warnings = await esbuild.formatMessages(result.warnings, { kind: 'warning', color: false });
  return { files, warnings };
}

/**
 * The image's /app in `dir`, as the Dockerfile lays it out: package.json (the version is read from
 * it), crds/ and the bundles in dist/; no node_modules. Returns dist/main.js. For the benches and
 * tests that run the operator as the image runs it.
 */
export async function buildApp(dir: string): Promise<string> {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(REPO, 'package.json'), path.join(dir, 'package.json'));
  fs.cpSync(path.join(REPO, 'crds'), path.join(dir, 'crds'), { recursive: true });
  await build(path.join(dir, 'dist'));
  return path.join(dir, 'dist', 'main.js');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = path.resolve(process.argv[2] ?? path.join(REPO, 'dist'));
  const built = await build(out);
  for (const warning of built.warnings) process.stderr.write(warning);
  for (const [file, size] of Object.entries(built.files)) process.stdout.write(`${path.join(out, file)}: ${(size / 1e6).toFixed(2)} MB\n`);
}
