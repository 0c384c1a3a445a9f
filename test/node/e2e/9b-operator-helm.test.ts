/**
 * The chart as users install it (issues 14 and 51): `helm package` of charts/portcullis, then
 * `helm install` of the packaged .tgz (what a release publishes) on the real node,
 * with the operator's own image, gives two Ready replicas and a leader; a suite applied then
 * denies through the API server; the suite deleted, `helm uninstall` leaves nothing of Portcullis
 * behind but the operator CA's Secret, which goes with the namespace. Runs after deploy/'s
 * uninstall (9-*).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../support/wait.ts';
import { ensureHelm } from '../../../src/local/binaries.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, kc, namespace } from '../kubectl.ts';
import { leader, operatorImage, OPERATOR_NS, ourObjects, REPO, seconds, settledReplicas, waitSuiteReady } from '../operator.ts';

const NS = 'helm-guarded';
const SUITE = 'helm-guard';
const MESSAGE = 'helm-guard: ConfigMaps named forbidden-* are refused';

describe('the operator installed with helm install of the packaged chart', function () {
  this.timeout(5 * 60_000);
  let helmBinary: string;
  let dropNamespace: (() => Promise<void>) | undefined;
  const helm = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(helmBinary, [...args, '--kubeconfig', nodeCluster().kubeconfigPath], { timeout: 240_000 }, (err, stdout, stderr) => (err ? reject(new Error(`helm ${args.join(' ')}: ${stderr.trim() || err.message}`)) : resolve(stdout)));
    });

  before(async function () {
    helmBinary = await ensureHelm();
    await operatorImage();
  });

  after(async function () {
    await dropNamespace?.();
  });

  it('installs, denies through the chart-installed operator, and uninstalls leaving nothing', async function () {
    // Packaged as a release packages it: the archive named for the project's one version.
    const version = (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    const packaged = await helm(['package', path.join(REPO, 'charts/portcullis'), '--destination', fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-chart-'))]);
    const archive = /saved it to: (\S+\.tgz)/.exec(packaged)?.[1];
    expect(archive, packaged).to.match(new RegExp(`/portcullis-${version.replaceAll('.', '\\.')}\\.tgz$`));
    const t0 = performance.now();
    await helm(['install', 'portcullis', archive!, '--namespace', OPERATOR_NS, '--create-namespace', '--wait', '--timeout', '180s']);
    await settledReplicas();
    await leader();
    process.stderr.write(`      helm install: 2 Ready replicas and a leader after ${seconds(performance.now() - t0)}\n`);

    dropNamespace = await namespace(NS);
    await apply({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: SUITE },
      spec: {
        webhooks: [
          {
            name: 'names',
            type: 'Validating',
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
            validations: [{ expression: "!object.metadata.name.startsWith('forbidden-')", message: MESSAGE }],
          },
        ],
      },
    });
    await waitSuiteReady(SUITE);
    const denied = await nodeCluster().kubectl(['create', 'configmap', 'forbidden-one', '-n', NS]);
    expect(denied.code).to.not.equal(0);
    expect(denied.stderr).to.contain(`admission webhook "names.${SUITE}.admission.portcullis.dev" denied the request: ${MESSAGE}`);
    await kc(['create', 'configmap', 'allowed-one', '-n', NS]);

    // The suite goes first, as docs/operating.md's uninstall says. Removed only with its CRD moments after
    // the CRD was installed, its objects can outlive it: the garbage collector learns of a new
    // resource type on its next discovery pass (30 s), and one whose owner's type is already gone
    // again is never collected (seen here; deploy/'s uninstall test covers suites that predate it).
    await kc(['delete', 'admissionsuite', SUITE, '--wait=true']);
    await eventually(
      async () => {
        const found = await ourObjects('validatingwebhookconfigurations,mutatingwebhookconfigurations');
        if (found.some((o) => o.includes(SUITE))) throw new Error(found.join(', '));
      },
      { what: "the suite's configuration to be garbage-collected", timeoutMs: 60_000, intervalMs: 250 },
    );
    await helm(['uninstall', 'portcullis', '--namespace', OPERATOR_NS, '--wait', '--timeout', '120s']);
    // All but the operator CA, which belongs to no suite and goes with the operator's namespace
    // (the contract); helm leaves the namespace it was asked to create, so docs/operating.md says to delete it.
    const left = await eventually(
      async () => {
        const found = await ourObjects();
        if (found.length !== 1) throw new Error(found.join(', '));
        return found;
      },
      { what: 'everything of Portcullis but its CA to be gone after helm uninstall', timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(left).to.deep.equal([`Secret ${OPERATOR_NS}/portcullis-ca`]);
    // With nothing registered, the create the suite denied is admitted.
    await eventually(() => kc(['create', 'configmap', 'forbidden-two', '-n', NS]), { what: 'a forbidden-* ConfigMap to be admitted once uninstalled' });
    await kc(['delete', 'namespace', OPERATOR_NS, '--wait=true', '--timeout=90s'], undefined, 100_000);
    expect(await ourObjects()).to.deep.equal([]);
  });
});
