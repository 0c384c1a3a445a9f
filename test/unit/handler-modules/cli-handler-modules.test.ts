/**
 * `portcullis test --handler-modules DIR`: a test file's suite names a module's handler and its
 * cases are answered by that handler, offline, in the module's own worker, what it looks up being
 * the test file's objects; a module refused is said on stderr and its handler then unknown; a
 * handler that throws is answered by its webhook's failurePolicy, as the operator answers it.
 * The command is run as a user runs it (its own process).
 */
import path from 'node:path';
import { expect } from 'chai';
import { runCli } from '../../support/cli.ts';
import { tempFolder } from '../../support/temp-files.ts';

const MODULE = `export const apiVersion = '1.0';
export const handlers = [
  {
    name: 'acme.dev/NoTwins',
    resources: [{ group: '', resource: 'configmaps' }],
    lookups: ['Ingress'],
    parseConfig: (config) => ({ config, errors: [] }),
    validate: (request, config, view) => view.list('Ingress').some((i) => i.metadata.name === request.name)
      ? { allowed: false, code: 403, reason: 'Forbidden', message: 'an Ingress is named ' + request.name }
      : { allowed: true },
  },
  { name: 'acme.dev/Throws', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (config) => ({ config, errors: [] }), validate: () => { throw new Error('boom'); } },
];
`;

const suite = (handler: string, failurePolicy = 'Fail') => `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: twins }
spec:
  failurePolicy: ${failurePolicy}
  webhooks:
    - name: check
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps] }]
      handler: { name: ${handler} }
`;

const testFile = (expectTwin: string) => `suites: [suite.yaml]
objects:
  - { apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: { name: web, namespace: shop } }
cases:
  - name: a ConfigMap named as an Ingress
    object: { apiVersion: v1, kind: ConfigMap, metadata: { name: web, namespace: shop } }
    expect:
      webhooks:
        check: ${expectTwin}
  - name: a ConfigMap of its own name
    object: { apiVersion: v1, kind: ConfigMap, metadata: { name: other, namespace: shop } }
    expect: { allowed: true }
`;

const workspace = (files: Record<string, string>) => tempFolder('cli-handler-modules-', files);

describe('portcullis test --handler-modules', function () {
  it("answers the cases by the module's handler, its lookups given as the test file's objects", async function () {
    const dir = workspace({ 'modules/twins.mjs': MODULE, 'suite.yaml': suite('acme.dev/NoTwins'), 'twins.portcullis-test.yaml': testFile("{ allowed: false, code: 403, message: 'an Ingress is named web' }") });
    const result = await runCli(['test', '--handler-modules', path.join(dir, 'modules'), dir]);
    expect(result.stderr).to.equal('');
    expect(result.stdout).to.contain('2 of 2 expectations met');
    expect(result.code).to.equal(0);
  });

  it('fails a case the handler answers otherwise (exit 1), and knows no module handler without the flag', async function () {
    const dir = workspace({ 'modules/twins.mjs': MODULE, 'suite.yaml': suite('acme.dev/NoTwins'), 'twins.portcullis-test.yaml': testFile('{ allowed: true }') });
    const wrong = await runCli(['test', '--handler-modules', path.join(dir, 'modules'), dir]);
    expect(wrong.code).to.equal(1);
    expect(wrong.stdout).to.contain('1 of 2 expectations met');
    const without = await runCli(['test', dir]);
    expect(without.code).not.to.equal(0);
    expect(without.stderr).to.contain('no handler named "acme.dev/NoTwins" is loaded (--handler-modules)');
  });

  it('answers a throw by failurePolicy, and says on stderr which module was refused', async function () {
    const dir = workspace({
      'modules/twins.mjs': MODULE,
      'modules/future.mjs': "export const apiVersion = '2.0'; export const handlers = [];",
      'suite.yaml': suite('acme.dev/Throws'),
      'twins.portcullis-test.yaml':
        "suites: [suite.yaml]\ncases:\n  - name: failed\n    object: { apiVersion: v1, kind: ConfigMap, metadata: { name: a, namespace: shop } }\n    expect: { webhooks: { check: { allowed: false, message: 'internal error: handler acme.dev/Throws failed: boom' } } }\n",
    });
    const result = await runCli(['test', '--handler-modules', path.join(dir, 'modules'), dir]);
    expect(result.code).to.equal(0);
    expect(result.stderr).to.contain('handler module refused').and.contain('future.mjs').and.contain('it declares handler API version \\"2.0\\"');
  });
});
