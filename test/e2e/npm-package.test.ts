/**
 * The npm package as an outsider installs it: the tarball `npm pack` makes (test/support/package.ts),
 * `npm install`ed in an empty folder outside the repository, and used there: `portcullis validate`
 * and `portcullis test` on the samples it ships, a broken suite refused, `portcullis/sdk` imported by
 * Node and type-checked by tsc, nothing in it that Node would have to strip types from (it
 * strips none under node_modules), and the operator it ships (what `portcullis dev` runs: its
 * dist/main.js, the worker threads' files found beside the modules that start them) serving a suite
 * through the test control plane. Owns its temporary folders, the suite and namespace named below;
 * must not write into the repository.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { installPackage, runIn } from '../support/package.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { createForbiddenNamesSuite, deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { freePort } from '../../src/local/ports.ts';

const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
const SUITE = 'npm-package';
const NS = 'npm-package-e2e';

const BROKEN_SUITE = `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: broken }
spec:
  webhooks:
    - name: replicas
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }]
      validations:
        - expression: "object.spec.replicas <="
`;

/** A handler module as a team writes one against the SDK's types (a wrong type on the last line when `broken`). */
const typedModule = (broken: boolean) => `import { HANDLER_API_VERSION, allow, deny, type AdmissionRequest, type CustomHandler } from 'portcullis/sdk';
export const apiVersion = HANDLER_API_VERSION;
export const handlers: CustomHandler[] = [{
  name: 'acme.dev/NamedOnly',
  resources: [{ group: '', resource: 'configmaps' }],
  parseConfig: (config) => ({ config, errors: [] }),
  validate: (request: AdmissionRequest) => (request.name ? allow() : deny(422, 'Invalid', 'a name is required')),
}];
${broken ? 'export const version: number = HANDLER_API_VERSION;' : ''}
`;

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

describe('the npm package, installed from its tarball in an empty folder outside the repository', function () {
  this.timeout(300_000);
  let folder: string;
  let installed: string;
  let operator: OperatorProcess | undefined;

  before(async function () {
    folder = await installPackage();
    installed = path.join(folder, 'node_modules', 'portcullis');
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.kill('SIGTERM');
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });

  it('runs portcullis validate on a sample it ships: exit 0, the suite valid', async function () {
    const sample = path.join(installed, 'config', 'samples', 'replica-limit.yaml');
    const result = await runIn(folder, 'npx', ['--no', 'portcullis', 'validate', sample]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.contain('AdmissionSuite "replica-guard" is valid');
  });

  it('runs portcullis test on the sample tests it ships, every expectation met', async function () {
    const result = await runIn(folder, 'npx', ['--no', 'portcullis', 'test', path.join(installed, 'config', 'samples', 'tests')]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.match(/(\d+) of \1 expectations met/);
  });

  it("refuses a broken suite: exit 1, the field path and the compiler's words", async function () {
    fs.writeFileSync(path.join(folder, 'broken.yaml'), BROKEN_SUITE);
    const result = await runIn(folder, 'npx', ['--no', 'portcullis', 'validate', 'broken.yaml']);
    expect(result.code).to.equal(1);
    expect(result.stdout + result.stderr).to.contain('AdmissionSuite "broken" is invalid: spec.webhooks[0].validations[0].expression: compilation failed');
  });

  it('loads portcullis/sdk in Node: its helpers are functions, HANDLER_API_VERSION a MAJOR.MINOR', async function () {
    const script =
      "const sdk = await import('portcullis/sdk'); console.log(JSON.stringify({ deny: typeof sdk.deny, allow: typeof sdk.allow, patch: typeof sdk.patch, version: sdk.HANDLER_API_VERSION, decision: sdk.deny(403, 'Forbidden', 'no') }));";
    const result = await runIn(folder, 'node', ['--input-type=module', '-e', script]);
    expect(result.code, result.stderr).to.equal(0);
    expect(JSON.parse(result.stdout)).to.deep.equal({ deny: 'function', allow: 'function', patch: 'function', version: '1.0', decision: { allowed: false, code: 403, reason: 'Forbidden', message: 'no' } });
  });

  it('types a handler module written against portcullis/sdk (tsc finds the .d.ts; a wrong type is an error)', async function () {
    const options = { target: 'es2024', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: [] };
    fs.writeFileSync(path.join(folder, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: ['module.ts'] }));
    fs.writeFileSync(path.join(folder, 'module.ts'), typedModule(false));
    const clean = await runIn(folder, process.execPath, [TSC, '-p', '.']);
    expect(clean.code, clean.stdout).to.equal(0);
    // The same check fails when the types are wrong: tsc read the SDK's own types, not `any`.
    fs.writeFileSync(path.join(folder, 'module.ts'), typedModule(true));
    const wrong = await runIn(folder, process.execPath, [TSC, '-p', '.']);
    expect(wrong.stdout).to.contain("error TS2322: Type 'string' is not assignable to type 'number'");
  });

  it('ships JavaScript with types, the samples, and no TypeScript source', function () {
    const files = filesUnder(installed);
    expect(
      files.filter((file) => /\.[cm]?tsx?$/.test(file) && !/\.d\.[cm]?ts$/.test(file)),
      'TypeScript sources',
    ).to.deep.equal([]);
    expect(files).to.include.members([path.join('dist', 'cli', 'main.js'), path.join('dist', 'sdk', 'index.js'), path.join('dist', 'sdk', 'index.d.ts'), path.join('config', 'samples', 'replica-limit.yaml')]);
    // Of test/, only the Go module `portcullis dev` builds its local control plane from (with no cluster given).
    const repositoryOnly = files.filter((file) => /^(test|bench|tools|docs|examples|src)\//.test(file) && !file.startsWith(path.join('test', 'controlplane') + path.sep));
    expect(repositoryOnly, 'files of the repository only').to.deep.equal([]);
  });

  it('runs the operator it ships (what portcullis dev starts) against the API server: a suite denies through it', async function () {
    await ensureNamespace(NS);
    operator = await spawnOperator({ main: path.join(installed, 'dist', 'main.js'), servingPort: await freePort(), metricsPort: await freePort() });
    await createForbiddenNamesSuite(SUITE, NS, 'refused by the packaged operator');
    // Failure policy Fail: were the admission thread's file not found, the allowed one would be refused too.
    expect(await refusal(() => createConfigMap(NS, 'allowed', { a: 'b' }))).to.equal(undefined);
    expect((await refusal(() => createConfigMap(NS, 'forbidden', { a: 'b' })))?.message).to.contain('refused by the packaged operator');
  });
});
