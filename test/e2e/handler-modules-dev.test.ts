/**
 * `portcullis dev MODULE --suite FILE` through the real API server: the command run as a user runs
 * it (its own process, against the test cluster with --kubeconfig), serving a copy of the
 * unique-ingress-host example (outside the repository, `portcullis` installed from the packed
 * tarball) from its TypeScript source; the suite applied by it denies a
 * duplicate host; after the source is edited and saved, the operator is started again and the
 * next denial is in the edited words. Scoped to this file's namespaces (hmod-dev-*).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { deleteSuite } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { installExample } from '../support/package.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = path.join(REPO, 'examples', 'unique-ingress-host');
const NS = { a: 'hmod-dev-a', b: 'hmod-dev-b' };
const SUITE = 'hmod-dev';

const suiteYaml = `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: ${SUITE} }
spec:
  failurePolicy: Fail
  webhooks:
    - name: hosts
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [networking.k8s.io], apiVersions: [v1], resources: [ingresses] }]
      namespaceSelector: { matchExpressions: [{ key: kubernetes.io/metadata.name, operator: In, values: [${NS.a}, ${NS.b}] }] }
      handler: { name: example.portcullis.dev/UniqueIngressHost }
`;

let serial = 0;
const ingress = (name: string, host: string): k8s.V1Ingress => ({
  metadata: { name: `${name}-${++serial}` },
  spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
});
const createIngress = (namespace: string, body: k8s.V1Ingress) => cluster().kubeConfig.makeApiClient(k8s.NetworkingV1Api).createNamespacedIngress({ namespace, body });

describe('portcullis dev: a handler module served from source, reloaded on save', function () {
  this.timeout(180_000);
  let work: string;
  let dev: ChildProcess | undefined;
  let output = '';

  before(async function () {
    // A copy of the example outside the repository, its dependencies (portcullis/sdk from the packed tarball) installed as its users install them.
    work = await installExample(EXAMPLE);
    fs.writeFileSync(path.join(work, 'suite.yaml'), suiteYaml);
    await Promise.all(Object.values(NS).map((name) => ensureNamespace(name)));
  });

  after(async function () {
    if (dev && dev.exitCode === null) {
      await new Promise((resolve) => {
        dev!.once('exit', resolve);
        dev!.kill('SIGINT');
      });
    }
    await deleteSuite(SUITE);
    for (const name of Object.values(NS)) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('applies the suite, denies a duplicate host, and answers in the edited words once the source is saved', async function () {
    dev = spawn(process.execPath, [path.join(REPO, 'src', 'cli', 'main.ts'), 'dev', work, '--suite', path.join(work, 'suite.yaml'), '--kubeconfig', cluster().controlPlane.kubeconfigPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORTCULLIS_LOG_LEVEL: 'warn' },
    });
    dev.stdout!.on('data', (chunk) => (output += chunk));
    dev.stderr!.on('data', (chunk) => (output += chunk));
    await eventually(async () => (output.includes('watching') ? undefined : Promise.reject(new Error(output || 'no output yet'))), { what: 'portcullis dev to serve the module', timeoutMs: 60_000 });
    expect(output).to.contain(`applied AdmissionSuite ${SUITE}`);

    await createIngress(NS.a, ingress('web', 'dev.hmod.example'));
    const first = await eventually(async () => (await refusal(() => createIngress(NS.b, ingress('dup', 'dev.hmod.example')))) ?? Promise.reject(new Error('admitted')), { what: 'the duplicate host to be refused' });
    expect(first.message).to.contain('host dev.hmod.example is already used by Ingress hmod-dev-a/web-');

    // Saved as an editor saves it: the operator is started again with the new code.
    const source = path.join(work, 'src', 'index.ts');
    const saved = performance.now();
    fs.writeFileSync(source, fs.readFileSync(source, 'utf8').replace('is already used by Ingress', 'is taken, by Ingress'));
    await eventually(async () => (output.includes('reloaded (1)') ? undefined : Promise.reject(new Error('not reloaded yet'))), { what: 'the operator to be started again', timeoutMs: 60_000 });
    const second = await eventually(
      async () => {
        const status = await refusal(() => createIngress(NS.b, ingress('dup', 'dev.hmod.example')));
        if (!status?.message?.includes('is taken, by Ingress')) throw new Error(`answered ${status?.message ?? 'admitted'}`);
        return status;
      },
      { what: 'the edited words', timeoutMs: 60_000 },
    );
    expect(second.code).to.equal(409);
    console.log(`      from save to the edited answer: ${((performance.now() - saved) / 1e3).toFixed(1)} s`);
  });
});
