/**
 * The operator as the image runs it: tools/build.ts' bundles (dist/main.js and one file per worker
 * thread) in an app directory of their own with no node_modules, under the image's Node flags,
 * against the test control plane. Guards what only the bundle can break: a worker's file found
 * beside main.js (the admission thread answers the API server; the review worker judges a large
 * object), the app's own files found from dist/, no dependency left outside the bundle, and the
 * SBOM beside the bundles naming what is in them (a scanner of the image sees no package.json of a
 * bundled dependency).
 * (test/node runs the same bundles in the image itself, on a real node.)
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp, entries, SBOM_FILE } from '../../tools/build.ts';
import ajv from 'ajv';
import { OPERATOR_NODE_FLAGS } from '../../src/admission/v8-tuning.ts';
import { LARGE_BODY } from '../../src/admission/threads/offload.ts';
import { freePort } from '../../src/local/ports.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { createForbiddenNamesSuite, deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SUITE = 'bundled';
const NS = 'bundle-e2e';
const LARGE = 'x'.repeat(LARGE_BODY + 64 * 1024);

describe('the image bundle (tools/build.ts) run as the image runs it', function () {
  this.timeout(120_000);
  let app: string;
  let operator: OperatorProcess | undefined;

  before(async function () {
    app = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-bundle-'));
    await buildApp(app);
    await ensureNamespace(NS);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.kill('SIGTERM');
    fs.rmSync(app, { recursive: true, force: true });
  });

  it('writes main.js and one bundle per worker src/ starts, and nothing that needs node_modules', function () {
    const names = Object.keys(entries()).sort();
    expect(names).to.include.members(['main', 'thread-worker', 'offload-worker']);
    for (const name of names) expect(fs.existsSync(path.join(app, 'dist', `${name}.js`)), `${name}.js`).to.equal(true);
    expect(fs.existsSync(path.join(app, 'node_modules'))).to.equal(false);
    const version = spawnSync(process.execPath, [...OPERATOR_NODE_FLAGS, path.join(app, 'dist', 'main.js'), '--version'], { encoding: 'utf8', cwd: app });
    expect(version.stderr).to.equal('');
    const { version: packaged } = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout.trim()).to.equal(`portcullis ${packaged} (Node.js ${process.version})`);
  });

  it('lists in its SBOM (CycloneDX 1.5) each npm package the bundles hold, as npm installed it for production, and the Node that runs them', function () {
    const sbom = JSON.parse(fs.readFileSync(path.join(app, 'dist', SBOM_FILE), 'utf8')) as { components: { type: string; name: string; version: string; purl: string }[] };
    const schemas = path.join(REPO, 'node_modules', '@cyclonedx', 'cyclonedx-library', 'res', 'schema');
    const read = (file: string) => JSON.parse(fs.readFileSync(path.join(schemas, file), 'utf8')) as Record<string, unknown>;
    const validator = new ajv.default({ strict: false, validateFormats: false });
    // The BOM schema names these two relative to its own $id.
    for (const file of ['spdx.SNAPSHOT.schema.json', 'jsf-0.82.SNAPSHOT.schema.json']) {
      const { $id: _published, ...schema } = read(file);
      validator.addSchema(schema, `http://cyclonedx.org/schema/${file}`);
    }
    const valid = validator.validate(read('bom-1.5.SNAPSHOT.schema.json'), sbom);
    expect(valid, JSON.stringify(validator.errors?.slice(0, 3))).to.equal(true);

    // npm's own view of what production needs: every library listed is one of those, at its installed version.
    const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--json'], { cwd: REPO, encoding: 'utf8' });
    const installed = new Set<string>();
    const walk = (deps: Record<string, { version?: string; dependencies?: Record<string, unknown> }> | undefined) => {
      for (const [name, dep] of Object.entries(deps ?? {})) {
        if (dep.version) installed.add(`${name}@${dep.version}`);
        walk(dep.dependencies as never);
      }
    };
    walk((JSON.parse(listed.stdout) as { dependencies?: Record<string, never> }).dependencies);
    const libraries = sbom.components.filter((c) => c.type === 'library');
    expect(
      libraries.filter((c) => !installed.has(`${c.name}@${c.version}`)).map((c) => `${c.name}@${c.version}`),
      'listed but not a production dependency',
    ).to.deep.equal([]);
    const { dependencies } = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const version = (name: string) => (JSON.parse(fs.readFileSync(path.join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    // The operator's direct dependencies are in the bundles (each is imported by src/), so each is listed.
    for (const name of Object.keys(dependencies))
      expect(
        libraries.map((c) => `${c.name}@${c.version}`),
        name,
      ).to.include(`${name}@${version(name)}`);
    expect(sbom.components.find((c) => c.name === 'node')).to.include({ type: 'platform', version: process.version.slice(1) });
  });

  it('serves a suite through the API server from its admission thread, and judges a large object in its review worker', async function () {
    operator = await spawnOperator({
      main: path.join(app, 'dist', 'main.js'),
      nodeFlags: OPERATOR_NODE_FLAGS,
      servingPort: await freePort(),
      metricsPort: await freePort(),
      extra: ['--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms'],
    });
    await createForbiddenNamesSuite(SUITE, NS, 'forbidden names are forbidden');

    // Failure policy Fail: a worker that could not start would refuse the allowed ones too.
    expect(await refusal(() => createConfigMap(NS, 'allowed-small', { a: 'b' }))).to.equal(undefined);
    const small = await refusal(() => createConfigMap(NS, 'forbidden-small', { a: 'b' }));
    expect(small?.message).to.contain('forbidden names are forbidden');
    expect(await refusal(() => createConfigMap(NS, 'allowed-large', { a: LARGE }))).to.equal(undefined);
    const large = await refusal(() => createConfigMap(NS, 'forbidden-large', { a: LARGE }));
    expect(large?.message).to.contain('forbidden names are forbidden');
    expect(operator.output()).to.not.match(/"level":"error"/);
  });
});
