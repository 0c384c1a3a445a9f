/**
 * `portcullis import` of Kyverno ClusterPolicies with CEL rules through the real API server: the
 * suites it prints, served by the operator, admit and deny Pods, Deployments, CronJobs and Services
 * as the policies' own kyverno-test.yaml expectations say (fail: denied with the rule's message;
 * pass or skip: admitted), Pod rules reaching pod controllers through the rules Kyverno generates
 * for them. The policies are modelled on kyverno/policies' *-cel samples (disallow-host-path,
 * disallow-latest-tag, require-labels, restrict-node-port), set to Enforce as their chainsaw tests
 * set them. The suites are scoped to a namespace of their own (kyverno-cpol-import), which this
 * file owns with its suites; it touches nothing else.
 */
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import * as k8s from '@kubernetes/client-node';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cluster } from '../support/cluster.ts';
import { runCli } from '../support/cli.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import type { SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'kyverno-cpol-import';
const SCOPE = 'import-kyverno-clusterpolicy-e2e';

const clusterPolicy = (name: string, rule: string, kinds: string[], expressions: { expression: string; message: string }[]) => ({
  apiVersion: 'kyverno.io/v1',
  kind: 'ClusterPolicy',
  metadata: { name },
  spec: { validationFailureAction: 'Enforce', background: true, rules: [{ name: rule, match: { any: [{ resources: { kinds, operations: ['CREATE', 'UPDATE'] } }] }, validate: { cel: { expressions } } }] },
});

const HOST_PATH = 'HostPath volumes are forbidden. The field spec.volumes[*].hostPath must be unset';
const NO_TAG = 'An image tag is required.';
const LATEST = "Using a mutable image tag e.g. 'latest' is not allowed.";
const NAME_LABEL = 'The label `app.kubernetes.io/name` is required.';
const NODE_PORT = 'Services of type NodePort are not allowed.';

const POLICIES = [
  clusterPolicy('disallow-host-path', 'host-path', ['Pod'], [{ expression: 'object.spec.?volumes.orValue([]).all(volume, size(volume) == 0 || !has(volume.hostPath))', message: HOST_PATH }]),
  clusterPolicy(
    'disallow-latest-tag',
    'require-and-validate-image-tag',
    ['Pod'],
    [
      { expression: "object.spec.containers.all(container, container.image.contains(':'))", message: NO_TAG },
      { expression: "object.spec.containers.all(container, !container.image.endsWith(':latest'))", message: LATEST },
    ],
  ),
  clusterPolicy('require-labels', 'check-for-labels', ['Pod'], [{ expression: "object.metadata.?labels[?'app.kubernetes.io/name'].orValue('') != \"\"", message: NAME_LABEL }]),
  clusterPolicy('restrict-node-port', 'validate-nodeport', ['Service'], [{ expression: "has(object.spec.type) ? (object.spec.type != 'NodePort') : true", message: NODE_PORT }]),
];

const LABELS = { 'app.kubernetes.io/name': 'web' };
const podSpec = (image: string, volumes?: k8s.V1Volume[]): k8s.V1PodSpec => ({ containers: [{ name: 'app', image }], ...(volumes ? { volumes } : {}) });
const hostPath: k8s.V1Volume[] = [{ name: 'host', hostPath: { path: '/var/lib' } }];
const emptyDir: k8s.V1Volume[] = [{ name: 'scratch', emptyDir: {} }];

type Create = (name: string) => Promise<unknown>;
const createPod =
  (spec: k8s.V1PodSpec, labels: Record<string, string> = LABELS): Create =>
  (name) =>
    cluster().kube.core.createNamespacedPod({ namespace: NS, body: { metadata: { name, labels }, spec } });
const createDeployment =
  (spec: k8s.V1PodSpec): Create =>
  (name) =>
    cluster().apps.createNamespacedDeployment({ namespace: NS, body: { metadata: { name }, spec: { replicas: 0, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name, ...LABELS } }, spec } } } });
const createCronJob =
  (spec: k8s.V1PodSpec): Create =>
  (name) =>
    cluster()
      .kubeConfig.makeApiClient(k8s.BatchV1Api)
      .createNamespacedCronJob({
        namespace: NS,
        body: { metadata: { name }, spec: { schedule: '0 0 1 1 *', suspend: true, jobTemplate: { spec: { template: { metadata: { labels: LABELS }, spec: { ...spec, restartPolicy: 'Never' } } } } } },
      });
const createService =
  (type: string | undefined): Create =>
  (name) =>
    cluster().kube.core.createNamespacedService({ namespace: NS, body: { metadata: { name }, spec: { ...(type ? { type } : {}), ports: [{ port: 80 }], selector: { app: 'x' } } } });

describe("portcullis import of Kyverno ClusterPolicies with CEL rules: the suites answer as the policies' kyverno tests say", function () {
  this.timeout(300_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-import-kyverno-cpol-'));
  let operator: Operator | undefined;
  let suites: string[] = [];

  before(async function () {
    await ensureNamespace(NS, { [SCOPE]: 'suite' });
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of suites) await deleteSuite(name);
    await operator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("imports each policy whole; its suite denies what the kyverno test says fails, in the rule's words, and admits what passes", async function () {
    const source = path.join(dir, 'policies.yaml');
    fs.writeFileSync(source, POLICIES.map((p) => yaml.dump(p)).join('---\n'));
    const imported = await runCli(['import', '-o', 'json', source]);
    expect(imported.stderr, 'nothing is left out').to.equal('');
    expect(imported.code).to.equal(0);
    const items = (JSON.parse(imported.stdout) as { items: { metadata: { name: string }; spec: SuiteSpec }[] }).items;
    expect(items.map((s) => s.metadata.name)).to.deep.equal(POLICIES.map((p) => p.metadata.name));
    suites = items.map((s) => `kyverno-cpol-${s.metadata.name}`);
    // Scoped to this file's namespace: no other test's objects are judged.
    for (const [i, item] of items.entries()) await createSuite(suites[i]!, { ...item.spec, namespaceSelector: { matchLabels: { [SCOPE]: 'suite' } } });
    for (const name of suites) await waitForCondition(name, 'Ready', 'True');

    let probes = 0;
    const answer = async (create: Create) => {
      const refused = await refusal(() => create(`probe-${++probes}`));
      return refused ? `fail: ${String(refused.message).replace(/^.*denied the request: /, '')}` : 'pass';
    };
    // Every suite in force: each denies its bad Pod.
    await eventually(
      async () => {
        for (const create of [createPod(podSpec('nginx:1.27', hostPath)), createPod(podSpec('nginx')), createPod(podSpec('nginx:1.27'), {}), createService('NodePort')]) {
          if ((await answer(create)) === 'pass') throw new Error('a bad object was admitted');
        }
      },
      { what: 'the imported suites to be in force' },
    );
    // Rows as the policies' kyverno-test.yaml results read: kind, resource, expected result (with the rule's message for a fail).
    const rows: [string, Create, string][] = [
      ['Pod badpod01 (hostPath)', createPod(podSpec('nginx:1.27', hostPath)), `fail: ${HOST_PATH}`],
      ['Pod goodpod01 (emptyDir)', createPod(podSpec('nginx:1.27', emptyDir)), 'pass'],
      ['Pod goodpod02 (no volumes)', createPod(podSpec('nginx:1.27')), 'pass'],
      ['Deployment baddeployment01 (hostPath)', createDeployment(podSpec('nginx:1.27', hostPath)), `fail: ${HOST_PATH}`],
      ['Deployment gooddeployment01', createDeployment(podSpec('nginx:1.27', emptyDir)), 'pass'],
      ['CronJob badcronjob01 (hostPath)', createCronJob(podSpec('nginx:1.27', hostPath)), `fail: ${HOST_PATH}`],
      ['CronJob goodcronjob01', createCronJob(podSpec('nginx:1.27')), 'pass'],
      ['Pod myapp-pod1 (untagged)', createPod(podSpec('nginx')), `fail: ${NO_TAG}`],
      ['Pod myapp-pod2 (latest)', createPod(podSpec('nginx:latest')), `fail: ${LATEST}`],
      ['Deployment latest', createDeployment(podSpec('nginx:latest')), `fail: ${LATEST}`],
      ['Pod badpod (no name label)', createPod(podSpec('nginx:1.27'), { app: 'web' }), `fail: ${NAME_LABEL}`],
      [
        'Deployment without the name label on its template',
        (name) =>
          cluster().apps.createNamespacedDeployment({
            namespace: NS,
            body: { metadata: { name }, spec: { replicas: 0, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: podSpec('nginx:1.27') } } },
          }),
        `fail: ${NAME_LABEL}`,
      ],
      ['Service badservice (NodePort)', createService('NodePort'), `fail: ${NODE_PORT}`],
      ['Service goodservice01 (ClusterIP)', createService('ClusterIP'), 'pass'],
      ['Service goodservice02 (no type)', createService(undefined), 'pass'],
    ];
    const answers: string[] = [];
    for (const [row, create] of rows) answers.push(`${row}: ${await answer(create)}`);
    expect(answers).to.deep.equal(rows.map(([row, , expected]) => `${row}: ${expected}`));
  });
});
