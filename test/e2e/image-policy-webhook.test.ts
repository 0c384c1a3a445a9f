/**
 * ImagePolicyWebhook against the in-tree plugin, both pointed at the same ImageReview backend
 * (test/support/image-review-backend.ts, loopback HTTPS, a CA of its own): a reference API server
 * of its own runs the plugin (its AdmissionConfiguration naming the backend through a kubeconfig
 * file), the run's own API server is served by a Portcullis suite whose handler names the backend
 * by url and caBundle. Each row creates the same Pod (a dry run) on both sides; the answers must
 * be the same (status code, message without the webhook's wrapper, the Pod's annotations), and so
 * must the reviews the backend was sent for it by each side, but where Portcullis differs on
 * purpose: a failing backend is answered with a fixed message. The operator allows the backend
 * (--handler-backends) as a cluster admin would; the attack of issue 49 (a suite author choosing
 * the URL to probe the network, and reading what was found there in the denial) is tried against
 * it: a URL off the list is refused on apply, a listed backend that fails shows the requester
 * nothing of why (the log and the metrics do). Owns its reference and backend.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import winston from 'winston';
import { cluster, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startReference, writeAdmissionFile, type ReferenceCluster } from '../support/reference.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { ensureNamespace } from '../support/objects.ts';
import { sampleValue, scrape } from '../support/prometheus.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequestTo, type RawResponse } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { BREAK_GLASS, startImageReviewBackend, type BackendMode, type ImageReviewBackend } from '../support/image-review-backend.ts';
import { apply } from '../../src/apiserver/client.ts';
import { DEFAULT_DISABLED_PLUGINS } from '../../src/local/controlplane.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { freePort } from '../../src/local/ports.ts';
import { logger } from '../../src/log.ts';
import { BACKEND_FAILED } from '../../src/handlers/image-policy-webhook.ts';
import { API_VERSION, PLURAL } from '../../src/api/types.ts';

const NS = 'ipw-diff';
const LABEL = { 'ipw-diff': 'yes' };
const SUITE = 'ipw-diff';
/** The plugin's TTLs on both sides (seconds); every row's images are its own, so no row is answered from a cache. */
const POLICY = { allowTTL: 50, denyTTL: 50, retryBackoff: 200, defaultAllow: false };

interface Row {
  name: string;
  containers: string[];
  initContainers?: string[];
  annotations?: Record<string, string>;
  mode?: BackendMode;
  /** Instead of a create: a merge patch of the Pod ipw-base (made before the rows), or of its subresource. */
  update?: { subresource?: string; body: Record<string, unknown> };
  /** Text the reference's answer must hold (the plugin acted). */
  shows?: string;
  /** Portcullis answers with BACKEND_FAILED where the plugin quotes the failure (the backend's URL is a suite author's). */
  fixedFailure?: true;
}

const ROWS: Row[] = [
  { name: 'an image the backend allows', containers: ['registry.k8s.io/pause:3.10'] },
  { name: 'an image the backend denies, with its reason', containers: ['registry.k8s.io/pause:3.10', 'example.com/denied-1'], shows: 'image policy webhook backend denied one or more images' },
  { name: 'an image the backend denies without a reason', containers: ['example.com/silent-1'], shows: 'one or more images rejected by webhook backend' },
  { name: 'an init container the backend denies', containers: ['example.com/ok-2'], initContainers: ['example.com/denied-init'], shows: 'denied-init' },
  {
    name: 'the image-policy annotations are sent, others not',
    containers: ['example.com/ok-3'],
    annotations: { 'team.image-policy.k8s.io/ticket': 'T-1', 'example.com/unrelated': 'x' },
  },
  { name: 'the break-glass annotation lets a denied image through (the backend decides)', containers: ['example.com/denied-2'], annotations: { [BREAK_GLASS]: 'true' } },
  { name: 'a failing backend (500), without defaultAllow: refused', containers: ['example.com/ok-4'], mode: 'fail', shows: 'has prevented the request from succeeding', fixedFailure: true },
  { name: 'an UPDATE is reviewed too (a new image-policy annotation)', containers: [], update: { body: { metadata: { annotations: { 'team.image-policy.k8s.io/ticket': 'T-2' } } } } },
  {
    name: 'an ephemeral container (kubectl debug) is reviewed alone, and refused',
    containers: [],
    update: { subresource: 'ephemeralcontainers', body: { spec: { ephemeralContainers: [{ name: 'debugger', image: 'example.com/denied-debugger', terminationMessagePolicy: 'File' }] } } },
    shows: 'denied-debugger',
  },
];
const BASE: Row = { name: 'base', containers: ['example.com/ok-base'] };

function podFor(row: Row, name: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: LABEL, ...(row.annotations ? { annotations: row.annotations } : {}) },
    spec: {
      containers: row.containers.map((image, i) => ({ name: `c${i}`, image })),
      ...(row.initContainers ? { initContainers: row.initContainers.map((image, i) => ({ name: `i${i}`, image })) } : {}),
    },
  };
}

function outcome(response: RawResponse) {
  const ok = response.status < 300;
  return {
    status: response.status,
    message: ok ? undefined : String(response.body.message ?? '').replace(/^admission webhook "[^"]*" denied the request: /, ''),
    annotations: ok ? (response.body as any).metadata?.annotations : undefined,
  };
}

describe('ImagePolicyWebhook against the in-tree plugin, one ImageReview backend behind both', function () {
  this.timeout(10 * 60_000);
  let backend: ImageReviewBackend;
  let reference: ReferenceCluster | undefined;
  let operator: Operator | undefined;
  let metricsPort: number;
  /** A port on the list where nothing listens. */
  let closedPort: number;
  const sides = () => [reference!.kubeConfig, cluster().kubeConfig];
  // The operator's lines from info up (its answers by failurePolicy), kept here; the console keeps its level.
  const lines: string[] = [];
  const capture = new winston.transports.Stream({ stream: new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }) });
  const level = logger.level;

  before(async function () {
    backend = await startImageReviewBackend();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-image-policy-'));
    const kubeConfigFile = path.join(dir, 'backend.kubeconfig');
    fs.writeFileSync(
      kubeConfigFile,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'backend', cluster: { server: backend.url, 'certificate-authority-data': Buffer.from(backend.caPem).toString('base64') } }],
        users: [{ name: 'apiserver', user: {} }],
        contexts: [{ name: 'backend', context: { cluster: 'backend', user: 'apiserver' } }],
        'current-context': 'backend',
      }),
    );
    reference = await startReference({
      disableAdmissionPlugins: DEFAULT_DISABLED_PLUGINS,
      enableAdmissionPlugins: ['ImagePolicyWebhook'],
      admissionConfigFile: writeAdmissionFile([{ name: 'ImagePolicyWebhook', configuration: { imagePolicy: { kubeConfigFile, ...POLICY } } }]),
    });
    for (const kube of [reference.kube, cluster().kube]) await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    // The Pod the UPDATE rows change (no node: it stays Pending), made before the suite.
    for (const kubeConfig of sides()) {
      const made = await rawRequestTo(kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods`, podFor(BASE, 'ipw-base'));
      if (made.status !== 201) throw new Error(`creating ipw-base: ${made.status} ${made.body.message ?? ''}`);
    }
    metricsPort = await freePort();
    closedPort = await freePort();
    for (const transport of logger.transports) transport.level = level;
    logger.add(capture);
    logger.level = 'info';
    // As a cluster admin allows them: the backend (its host and port), and a port with nothing behind it.
    operator = await startTestOperator({ metricsPort, handlerBackends: [new URL(backend.url).origin + '/', `https://127.0.0.1:${closedPort}/`] });
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'images',
          type: 'Validating',
          rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'pods/ephemeralcontainers'] }],
          objectSelector: { matchLabels: LABEL },
          handler: { name: 'ImagePolicyWebhook', config: { url: backend.url, caBundle: backend.caPem, ...POLICY } },
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True', 60_000);
    await eventually(
      async () => {
        const answer = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, podFor({ name: 'probe', containers: ['example.com/denied-probe'] }, 'probe'));
        if (answer.status !== 403) throw new Error(`not yet served: ${answer.status} ${answer.body.message ?? ''}`);
      },
      { what: 'the ipw-diff suite to serve', timeoutMs: 60_000 },
    );
  });

  after(async function () {
    await deleteSuite(SUITE);
    await rawRequestTo(cluster().kubeConfig, 'DELETE', `/api/v1/namespaces/${NS}/pods/ipw-base?gracePeriodSeconds=0`);
    await operator?.stop();
    logger.remove(capture);
    logger.level = level;
    for (const transport of logger.transports) transport.level = undefined;
    await reference?.controlPlane.stop();
    await backend?.close();
  });

  it('answers every row as the in-tree plugin does, having sent the backend the same reviews', async function () {
    const differing: string[] = [];
    let refused = 0;
    for (const [i, row] of ROWS.entries()) {
      backend.mode = row.mode ?? 'answer';
      const answers: ReturnType<typeof outcome>[] = [];
      const reviews: string[][] = [];
      // One side at a time, so the backend's reviews are known by side.
      for (const kubeConfig of sides()) {
        const before = backend.received.length;
        const sent = row.update
          ? rawRequestTo(kubeConfig, 'PATCH', `/api/v1/namespaces/${NS}/pods/ipw-base${row.update.subresource ? `/${row.update.subresource}` : ''}?dryRun=All`, row.update.body, {
              contentType: 'application/merge-patch+json',
            })
          : rawRequestTo(kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, podFor(row, `ipw-${i}`));
        answers.push(outcome(await sent));
        reviews.push(backend.received.slice(before).map((spec) => JSON.stringify(spec)));
      }
      const [theirs, ours] = answers;
      if (reviews[0]!.length === 0) differing.push(`${row.name}: the reference sent the backend no review (a vacuous row)`);
      if (theirs!.status === 403) refused++;
      if (row.shows && !JSON.stringify(theirs).includes(row.shows)) differing.push(`${row.name}: the reference does not show ${row.shows}: ${JSON.stringify(theirs)}`);
      // What differs on purpose: the words of a failure, here fixed (the requester learns nothing of the backend).
      const expected = row.fixedFailure && theirs!.message ? { ...theirs!, message: theirs!.message.replace(/ is forbidden: .*$/s, ` is forbidden: ${BACKEND_FAILED}`) } : theirs;
      if (JSON.stringify(expected) !== JSON.stringify(ours)) differing.push(`${row.name}:\n  reference:  ${JSON.stringify(theirs)}\n  expected:   ${JSON.stringify(expected)}\n  portcullis: ${JSON.stringify(ours)}`);
      // A failing backend is tried again by both, as many times as each deadline allows: the review sent is what must agree.
      const [sentByThem, sentByUs] = row.mode === 'fail' ? reviews.map((r) => [...new Set(r)]) : reviews;
      if (JSON.stringify(sentByThem) !== JSON.stringify(sentByUs)) differing.push(`${row.name}: reviews sent\n  reference:  ${JSON.stringify(sentByThem)}\n  portcullis: ${JSON.stringify(sentByUs)}`);
    }
    backend.mode = 'answer';
    process.stdout.write(
      `\n      ImagePolicyWebhook: ${ROWS.length} run, ${ROWS.length - differing.length} agreed (${refused} refused by the in-tree plugin; ${ROWS.filter((r) => r.fixedFailure).length} with a fixed message where it quotes the failure)\n`,
    );
    expect(differing, differing.join('\n')).to.deep.equal([]);
    expect(refused).to.equal(5);
  });

  it('with defaultAllow, a Mutating webhook admits the Pod while the backend fails and marks it failed-open, as the plugin does (our side alone: the reference is configured without)', async function () {
    const failOpen = 'ipw-fail-open';
    const label = { 'ipw-fail-open': 'yes' };
    await createSuite(failOpen, {
      webhooks: [
        {
          name: 'images',
          type: 'Mutating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          objectSelector: { matchLabels: label },
          handler: { name: 'ImagePolicyWebhook', config: { url: backend.url, caBundle: backend.caPem, ...POLICY, defaultAllow: true } },
        },
      ],
    });
    try {
      await waitForCondition(failOpen, 'Ready', 'True', 60_000);
      const pod = (name: string, image: string) => ({ ...podFor({ name, containers: [image] }, name), metadata: { name, labels: label } });
      await eventually(
        async () => {
          const answer = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod('fail-open-probe', `example.com/denied-probe-${Date.now()}`));
          if (answer.status !== 403) throw new Error(`not yet served: ${answer.status}`);
        },
        { what: 'the ipw-fail-open suite to serve', timeoutMs: 60_000 },
      );
      backend.mode = 'fail';
      const answer = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod('fail-open', 'example.com/denied-fail-open'));
      expect(answer.status, String(answer.body.message ?? '')).to.equal(201);
      expect((answer.body as any).metadata.annotations).to.deep.equal({ 'alpha.image-policy.k8s.io/failed-open': 'true' });
    } finally {
      backend.mode = 'answer';
      await deleteSuite(failOpen);
    }
  });

  it('answers a Pod again from its cache, as the plugin does: the backend is not asked twice for the same review', async function () {
    const row: Row = { name: 'cached', containers: ['example.com/ok-cached'] };
    for (const kubeConfig of sides()) {
      const before = backend.received.length;
      for (let n = 0; n < 3; n++) expect((await rawRequestTo(kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, podFor(row, `ipw-cached-${n}`))).status).to.equal(201);
      expect(backend.received.length - before).to.equal(1);
    }
  });

  describe('issue 49, attack 8: a suite author probing the network through the backend url', function () {
    const AUTHOR_NS = 'ipw-author';
    const AUTHOR = 'suite-author';
    const PROBE = 'ipw-probe';
    const suiteBody = (url: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: API_VERSION,
      kind: 'AdmissionSuite',
      metadata: { name: PROBE },
      spec: {
        webhooks: [
          {
            name: 'images',
            type: 'Validating',
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
            objectSelector: { matchLabels: { 'ipw-probe': 'yes' } },
            handler: { name: 'ImagePolicyWebhook', config: { url, ...POLICY, ...extra } },
          },
        ],
      },
    });

    before(async function () {
      await ensureNamespace(AUTHOR_NS);
      await apply(cluster().kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: AUTHOR, namespace: AUTHOR_NS } });
      // A suite author: may write AdmissionSuites, nothing else of the cluster's.
      await apply(cluster().kube, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'ipw-suite-author' },
        rules: [{ apiGroups: ['admission.portcullis.dev'], resources: [PLURAL], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }],
      });
      await apply(cluster().kube, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'ipw-suite-author' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ipw-suite-author' },
        subjects: [{ kind: 'ServiceAccount', name: AUTHOR, namespace: AUTHOR_NS }],
      });
      await waitForSuiteValidation(operator!);
    });

    afterEach(async () => {
      await deleteSuite(PROBE);
    });

    it('a url off the list the cluster admin set is refused on apply, naming the field and the list; the listed backend is admitted (the control)', async function () {
      const author = await serviceAccountKubeConfig(AUTHOR_NS, AUTHOR);
      const create = (url: string, extra?: Record<string, unknown>) => rawRequestTo(author, 'POST', `/apis/${API_VERSION}/${PLURAL}`, suiteBody(url, extra));
      // The control first: the author's rights and the listed backend are enough to write a suite.
      const admitted = await eventually(
        async () => {
          const answer = await create(backend.url, { caBundle: backend.caPem });
          if (answer.status !== 201) throw new Error(`not admitted: ${answer.status} ${answer.body.message ?? ''}`);
          return answer;
        },
        { what: "the author's suite naming the listed backend to be admitted", timeoutMs: 60_000 },
      );
      expect(admitted.status).to.equal(201);
      await deleteSuite(PROBE);
      const listed = `${new URL(backend.url).origin}/, https://127.0.0.1:${closedPort}/`;
      // The API server itself, another port on the backend's host, the backend's port by another name.
      for (const url of [cluster().controlPlane.server, `https://127.0.0.1:${closedPort + 1}/`, `https://localhost:${new URL(backend.url).port}/`]) {
        const answer = await create(url);
        expect(answer.status, `${url}: ${answer.body.message ?? ''}`).to.equal(422);
        expect(String(answer.body.message)).to.contain(`spec.webhooks[0].handler.config.url: must be under one of the backends the cluster admin allows (--handler-backends): ${listed}`);
        expect((await rawRequestTo(author, 'GET', `/apis/${API_VERSION}/${PLURAL}/${PROBE}`)).status, url).to.equal(404);
      }
    });

    it('a listed backend that fails is answered with a fixed message whatever the failure (refused, TLS, a 500), counted, and logged with why', async function () {
      // Each failure a probe would tell apart, one webhook each: nothing listening, a certificate it cannot verify (no caBundle), the backend's 500.
      const failing = [
        { webhook: 'closed', url: `https://127.0.0.1:${closedPort}/`, extra: {}, why: 'connection refused' },
        { webhook: 'unverified', url: backend.url, extra: {}, why: 'certificate' },
        { webhook: 'failing', url: `${backend.url}/failing`, extra: { caBundle: backend.caPem }, why: 'backend failing on purpose' },
      ];
      await createSuite(PROBE, {
        webhooks: failing.map(({ webhook, url, extra }) => ({
          name: webhook,
          type: 'Validating' as const,
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          objectSelector: { matchLabels: { 'ipw-probe': webhook } },
          handler: { name: 'ImagePolicyWebhook', config: { url, ...POLICY, retryBackoff: 1, timeoutSeconds: 2, ...extra } },
        })),
      });
      await waitForCondition(PROBE, 'Ready', 'True', 60_000);
      backend.mode = 'fail';
      try {
        for (const { webhook, why } of failing) {
          const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { 'ipw-probe': webhook } }, spec: { containers: [{ name: 'c', image: `example.com/probe-${webhook}` }] } });
          const answer = await eventually(
            async () => {
              const sent = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod(`probe-${webhook}`));
              if (sent.status !== 403) throw new Error(`not yet served: ${sent.status} ${sent.body.message ?? ''}`);
              return sent;
            },
            { what: `webhook ${webhook} to serve`, timeoutMs: 60_000 },
          );
          const message = String(answer.body.message);
          expect(message, webhook).to.match(new RegExp(`^admission webhook "${webhook}\\.${PROBE}\\.[^"]*" denied the request: pods "probe-${webhook}" is forbidden: `));
          expect(message.replace(/^admission webhook "[^"]*" denied the request: /, ''), webhook).to.equal(`pods "probe-${webhook}" is forbidden: ${BACKEND_FAILED}`);
          // Why is the operator's: its log line for the answer says it, for the admin.
          await eventually(
            async () => {
              const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.suite === PROBE && l.webhook === webhook && l.decision === 'error');
              if (!line) throw new Error('no line yet');
              expect(String(line.error)).to.contain(why);
              expect(line.denial).to.equal(`pods "probe-${webhook}" is forbidden: ${BACKEND_FAILED}`);
            },
            { what: `the log line of webhook ${webhook}'s failure`, timeoutMs: 30_000 },
          );
          await eventually(
            async () => {
              const counted = sampleValue(await scrape(metricsPort), 'portcullis_admission_requests_total', { suite: PROBE, webhook, decision: 'error' });
              if (!counted) throw new Error('not counted yet');
            },
            { what: `webhook ${webhook}'s failure to be counted`, timeoutMs: 30_000 },
          );
        }
      } finally {
        backend.mode = 'answer';
      }
    });
  });
});
