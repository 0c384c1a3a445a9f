/**
 * The operator as users run it (issue 23, checks 1 and 2; issue 21's first seconds): its image
 * built from the project's Dockerfile, `kubectl apply -f deploy/` unchanged (its image name, its
 * ServiceAccount and least-privilege RBAC, its token guard), two Ready replicas and a leader; the
 * pods run as uid 65532 on a read-only root filesystem with no shell; a sample suite applied at
 * once denies with its own message, the API server calling it through `clientConfig.service`
 * (the ClusterIP, kube-proxy), and a create sent in a loop from the instant the suite is applied
 * is always answered by the policy or admitted by the API server, never failed by a transport error.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { getJson, kc } from '../kubectl.ts';
import { OPERATOR_NODE_FLAGS } from '../../../src/admission/v8-tuning.ts';
import { apiRequest, applyDeploy, ensureOperator, leader, operatorImage, OPERATOR_NS, operatorPods, REPO, seconds, settledReplicas, waitSuiteReady, type ApiAnswer } from '../operator.ts';

const SAMPLE = path.join(REPO, 'config', 'samples', 'replica-limit.yaml');
const SAMPLE_WEBHOOK = 'replica-limit.replica-guard.admission.portcullis.dev';
const SAMPLE_MESSAGE = 'replicas must be no greater than 5';

/** A Deployment the sample suite refuses, created as a dry run: admission runs in full (the suite's webhooks have sideEffects None), nothing is stored. */
const tooManyReplicas = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default' },
  spec: {
    replicas: 6,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'localhost/portcullis-test:1' }] } },
  },
});
const createDryRun = (name: string) => apiRequest('POST', '/apis/apps/v1/namespaces/default/deployments?dryRun=All', tooManyReplicas(name));

type Answer = 'policy' | 'admitted' | 'failed';
function judge(a: ApiAnswer): Answer {
  if (a.status === 201) return 'admitted';
  if (a.status === 422 && a.body.message === `admission webhook "${SAMPLE_WEBHOOK}" denied the request: ${SAMPLE_MESSAGE}`) return 'policy';
  return 'failed';
}

/**
 * Sends the create back to back (one in flight) from now until `until` resolves, and returns
 * every answer with when it came (ms from `t0`).
 */
async function loopCreates(t0: number, until: Promise<unknown>): Promise<{ at: number; answer: Answer; text: string }[]> {
  let done = false;
  void until.finally(() => (done = true));
  const answers: { at: number; answer: Answer; text: string }[] = [];
  for (let i = 0; !done; i++) {
    const a = await createDryRun(`loop-${i}`);
    answers.push({ at: performance.now() - t0, answer: judge(a), text: `${a.status} ${a.body.message ?? ''}` });
  }
  return answers;
}

describe('the operator installed with kubectl apply -f deploy/', function () {
  this.timeout(30 * 60_000);

  it('builds its image from the Dockerfile: the runtime stage only, well under the 420 MB of a Node image with the app', async function () {
    const image = await operatorImage();
    const manifest = fs.readFileSync(path.join(REPO, 'deploy', '03-deployment.yaml'), 'utf8');
    expect(manifest).to.match(/image: ghcr\.io\/portcullis-dev\/operator:0\.1\.0/);
    expect(image.name).to.equal('ghcr.io/portcullis-dev/operator:0.1.0');
    process.stderr.write(
      `      image ${image.name}: ${(image.sizeBytes / 1e6).toFixed(0)} MB (layers uncompressed), archive ${(image.archiveBytes / 1e6).toFixed(0)} MB` + `${image.built ? `, built: ${JSON.stringify(image.timings)}` : ' (cached)'}\n`,
    );
    // The Node 24 binary alone is about 126 MB; the bundles (tools/build.ts) with their source maps
    // about 10 MB. node_modules (about 45 MB) back in the image would break this.
    expect(image.sizeBytes).to.be.below(165e6);
    // Imported into the node's containerd: the kubelet lists it in the Node's status once its image
    // cache has refreshed (every 30 s, kubelet images/image_gc_manager.go) and its next status
    // update has run (every 10 s): up to 40 s.
    await eventually(
      async () => {
        const node = await getJson(['get', 'node', nodeCluster().nodeName]);
        expect(node.status.images.flatMap((i: { names: string[] }) => i.names)).to.include(image.name);
      },
      { what: `the Node to list ${image.name}`, timeoutMs: 75_000 },
    );
  });

  it('2 Ready replicas and a leader after kubectl apply -f deploy/; the sample suite applied at once is Ready and denies through its Service, with no create failed meanwhile', async function () {
    await operatorImage();
    const t0 = performance.now();
    const wall0 = Date.now();
    const applied = await applyDeploy();
    for (const kind of ['namespace/portcullis-system', 'deployment.apps/portcullis-operator', 'poddisruptionbudget.policy/portcullis-operator']) expect(applied).to.contain(kind);
    // As a user would right after the install: the suite, once its CRD is served, applied again while
    // the API server answers that it cannot take AdmissionSuites yet (kc does; docs/operating.md).
    await kc(['wait', '--for=condition=Established', 'crd/admissionsuites.admission.portcullis.dev', '--timeout=30s'], undefined, 40_000);
    await kc(['apply', '-f', SAMPLE]);
    const appliedAt = performance.now() - t0;
    let suiteReadyAt = 0;
    const suiteReady = waitSuiteReady('replica-guard', 120_000).then(() => (suiteReadyAt = performance.now() - t0));
    const answers = await loopCreates(
      t0,
      suiteReady.then(() => new Promise((r) => setTimeout(r, 3000))),
    );
    const pods = await settledReplicas();
    // The API server's timestamps have whole seconds.
    const replicasReadyAt = Math.max(...pods.map((p) => Date.parse(p.status.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime!))) - wall0;
    const lead = await leader();

    const failed = answers.filter((a) => a.answer === 'failed');
    const firstPolicy = answers.find((a) => a.answer === 'policy');
    process.stderr.write(
      `      deploy/ applied; 2 replicas Ready at ~${seconds(replicasReadyAt)}; suite applied at ${seconds(appliedAt)}, Ready at ${seconds(suiteReadyAt)}, its first denial at ${firstPolicy ? seconds(firstPolicy.at) : 'never'}; ` +
        `${answers.length} creates in a loop: ${answers.filter((a) => a.answer === 'admitted').length} admitted before registration, ` +
        `${answers.filter((a) => a.answer === 'policy').length} denied by the policy, ${failed.length} failed; leader ${lead.pod}\n`,
    );
    expect(
      failed.map((a) => `${seconds(a.at)}: ${a.text}`),
      'creates that failed instead of being judged',
    ).to.deep.equal([]);
    expect(firstPolicy, 'a denial by the suite').to.not.equal(undefined);
    // Once the policy answered, it answers every time.
    expect(answers.filter((a) => a.at > firstPolicy!.at && a.answer !== 'policy').map((a) => a.text)).to.deep.equal([]);
    expect(pods).to.have.length(2);

    // The API server reached it as in any cluster: a Service reference, a ClusterIP Service in front of the operator's pods.
    const configuration = await getJson(['get', 'validatingwebhookconfiguration', 'portcullis-replica-guard']);
    const clientConfig = configuration.webhooks[0].clientConfig;
    expect(clientConfig.url).to.equal(undefined);
    expect(clientConfig.service).to.include({ namespace: OPERATOR_NS, name: 'portcullis-replica-guard', port: 443 });
    const service = await getJson(['get', 'service', '-n', OPERATOR_NS, 'portcullis-replica-guard']);
    expect(service.spec.type).to.equal('ClusterIP');
    expect(service.spec.clusterIP).to.match(/^10\.214\.0\.\d+$/);
    expect(service.spec.selector).to.deep.equal({ 'app.kubernetes.io/name': 'portcullis' });

    // And as kubectl shows it to the user.
    const refused = await nodeCluster().kubectl(['create', 'deployment', 'web', '--image=localhost/portcullis-test:1', '--replicas=6']);
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain(`admission webhook "${SAMPLE_WEBHOOK}" denied the request: ${SAMPLE_MESSAGE}`);
  });

  it('runs as uid 65532 on a read-only root filesystem, in cluster mode on its ServiceAccount, with no shell in the image', async function () {
    const pods = await ensureOperator();
    // Admitted by the API server's PodSecurity plugin where deploy/ enforces the restricted standard.
    const ns = await getJson(['get', 'namespace', OPERATOR_NS]);
    expect(ns.metadata.labels['pod-security.kubernetes.io/enforce']).to.equal('restricted');
    for (const pod of pods) {
      const name = pod.metadata.name;
      expect(pod.spec.securityContext).to.include({ runAsNonRoot: true, runAsUser: 65532 });
      expect(pod.spec.containers[0]!.securityContext).to.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      // No shell: an exec of one finds nothing to run. (node is there, being the runtime; whoever may exec may run it anyway.)
      for (const shell of ['sh', '/bin/sh', 'bash']) {
        const r = await nodeCluster().kubectl(['exec', '-n', OPERATOR_NS, name, '--', shell, '-c', 'id']);
        expect(r.code, `${shell} ran in ${name}: ${r.stdout}`).to.not.equal(0);
        expect(r.stderr).to.match(/executable file not found|no such file or directory/);
      }
      const facts = JSON.parse(
        await kc([
          'exec',
          '-n',
          OPERATOR_NS,
          name,
          '--',
          '/usr/local/bin/node',
          '-e',
          `const fs = require('fs');
           const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } };
           const exists = (p) => fs.existsSync(p);
           console.log(JSON.stringify({
             uid: process.getuid(), gid: process.getgid(), euid: process.geteuid(),
             root: tryWrite('/probe'), app: tryWrite('/app/probe'), tmp: tryWrite('/tmp/probe'),
             npm: exists('/usr/local/lib/node_modules/npm') || exists('/usr/local/bin/npm'),
             npmrc: exists('/usr/local/etc/npmrc'), nodeModules: exists('/app/node_modules'),
             token: exists('/var/run/secrets/kubernetes.io/serviceaccount/token'),
             cmdline: fs.readFileSync('/proc/1/cmdline', 'utf8').split('\\0').filter(Boolean),
           }));`,
        ]),
      );
      expect(facts, name).to.deep.include({ uid: 65532, gid: 65532, euid: 65532, root: 'EROFS', app: 'EROFS', npm: false, npmrc: false, nodeModules: false, token: true });
      // /tmp is part of the read-only root too: the operator needs no writable path.
      expect(facts.tmp).to.equal('EROFS');
      // The bundles of tools/build.ts (dependencies inside, no type stripper in the process), and the V8 flags (src/admission/v8-tuning.ts).
      expect(facts.cmdline).to.deep.equal(['/usr/local/bin/node', ...OPERATOR_NODE_FLAGS, 'dist/main.js', '--mode=cluster']);
      const log = await kc(['logs', '-n', OPERATOR_NS, name]);
      expect(log).to.contain('serving admission on :9443 (mode cluster)');
      expect(log).to.not.match(/"level":"error"/);
    }
    // Nothing restarted: the liveness probe never failed.
    for (const pod of await operatorPods()) expect(pod.status.containerStatuses?.[0]?.restartCount, pod.metadata.name).to.equal(0);
  });
});
