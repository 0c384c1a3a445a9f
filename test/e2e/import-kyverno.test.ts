/**
 * `portcullis import` of Kyverno ValidatingPolicies through the real API server: the suite it prints,
 * served by the operator, answers Pod and ConfigMap creates as the ValidatingAdmissionPolicy Kyverno
 * generates for the same policy (its `BuildValidatingAdmissionPolicy`: matchConstraints,
 * matchConditions, variables, validations and auditAnnotations copied, the policy's
 * validationActions on the binding) answers them: admitted, or denied with the same message. The
 * policies are modelled on kyverno/policies' ValidatingPolicy samples. Each side is scoped to a
 * namespace of its own (kyverno-import-vap, kyverno-import-suite), which this file owns with its
 * suites, policies and bindings; it touches nothing else.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as yaml from 'js-yaml';
import type * as k8s from '@kubernetes/client-node';
import { cluster, kubectl } from '../support/cluster.ts';
import { runCli } from '../support/cli.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import type { SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const VAP_NS = 'kyverno-import-vap';
const SUITE_NS = 'kyverno-import-suite';
const SCOPE = 'import-kyverno-e2e';

type Doc = Record<string, unknown>;
const pods = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] };
const configMaps = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] };
const validatingPolicy = (name: string, spec: Doc): Doc => ({ apiVersion: 'policies.kyverno.io/v1', kind: 'ValidatingPolicy', metadata: { name }, spec });

/** Kyverno ValidatingPolicies in the shapes kyverno/policies publishes them. */
const POLICIES = [
  validatingPolicy('disallow-latest-tag', {
    validationActions: ['Deny'],
    matchConstraints: { resourceRules: [pods] },
    validations: [
      { expression: "object.spec.containers.all(container, container.image.contains(':'))", message: 'An image tag is required.' },
      { expression: "object.spec.containers.all(container, !container.image.endsWith(':latest'))", message: "Using a mutable image tag e.g. 'latest' is not allowed." },
    ],
  }),
  validatingPolicy('require-team-label', {
    validationActions: ['Deny'],
    matchConstraints: { resourceRules: [configMaps] },
    // Kyverno's samples leave the generated kube-root-ca.crt alone.
    matchConditions: [{ name: 'not-root-ca', expression: "object.metadata.name != 'kube-root-ca.crt'" }],
    variables: [{ name: 'labels', expression: 'object.metadata.?labels.orValue({})' }],
    validations: [
      {
        expression: "'team' in variables.labels && variables.labels['team'].matches('^[a-z]+$')",
        messageExpression: "'label team must be lowercase letters, not ' + ('team' in variables.labels ? variables.labels['team'] : 'missing')",
        reason: 'Invalid',
      },
    ],
    auditAnnotations: [{ key: 'team', valueExpression: "string(variables.labels[?'team'].orValue('none'))" }],
  }),
  validatingPolicy('restrict-host-network', {
    validationActions: ['Deny'],
    matchConstraints: { resourceRules: [pods] },
    matchConditions: [{ name: 'host-network', expression: 'has(object.spec.hostNetwork)' }],
    validations: [{ expression: 'object.spec.hostNetwork == false', messageExpression: "'hostNetwork is not allowed for ' + object.metadata.name" }],
  }),
];

/** The VAP and binding Kyverno generates for one ValidatingPolicy, its binding scoped to this file's namespace. */
function generated(policy: Doc): Doc[] {
  const name = (policy.metadata as { name: string }).name;
  const spec = policy.spec as Doc;
  const copied = Object.fromEntries(['matchConstraints', 'matchConditions', 'variables', 'validations', 'auditAnnotations'].filter((k) => spec[k] !== undefined).map((k) => [k, spec[k]]));
  return [
    { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: `vpol-${name}` }, spec: copied },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: `vpol-${name}-binding` },
      spec: { policyName: `vpol-${name}`, validationActions: spec.validationActions, matchResources: { namespaceSelector: { matchLabels: { [SCOPE]: 'vap' } } } },
    },
  ];
}

const pod = (name: string, image: string, spec: Partial<k8s.V1PodSpec> = {}): k8s.V1Pod => ({ metadata: { name }, spec: { containers: [{ name: 'app', image }], ...spec } });

describe('portcullis import of Kyverno ValidatingPolicies: the suites answer as the policies Kyverno generates', function () {
  this.timeout(300_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-import-kyverno-'));
  const file = (name: string, objects: unknown[]) => {
    const target = path.join(dir, name);
    fs.writeFileSync(target, objects.map((o) => yaml.dump(o)).join('---\n'));
    return target;
  };
  let operator: Operator | undefined;
  let suites: string[] = [];

  before(async function () {
    await ensureNamespace(VAP_NS, { [SCOPE]: 'vap' });
    await ensureNamespace(SUITE_NS, { [SCOPE]: 'suite' });
    const applied = await kubectl(['apply', '-f', file('generated.yaml', POLICIES.flatMap(generated))]);
    expect(applied.code, applied.stderr).to.equal(0);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of suites) await deleteSuite(name);
    await operator?.stop();
    await kubectl(['delete', '--ignore-not-found', '-f', path.join(dir, 'generated.yaml')]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('imports each policy whole, and admits and denies the same Pods and ConfigMaps in the same words', async function () {
    const imported = await runCli(['import', '-o', 'json', file('kyverno.yaml', POLICIES)]);
    expect(imported.stderr, 'nothing is left out').to.equal('');
    expect(imported.code).to.equal(0);
    const items = (JSON.parse(imported.stdout) as { items: { metadata: { name: string }; spec: SuiteSpec }[] }).items;
    expect(items.map((s) => s.metadata.name)).to.deep.equal(POLICIES.map((p) => (p.metadata as { name: string }).name));
    suites = items.map((s) => `kyverno-${s.metadata.name}`);
    // Scoped to this file's namespace, as the generated bindings are: no other test's objects are judged.
    for (const [i, item] of items.entries()) await createSuite(suites[i]!, { ...item.spec, namespaceSelector: { matchLabels: { [SCOPE]: 'suite' } } });
    for (const name of suites) await waitForCondition(name, 'Ready', 'True');

    let probes = 0;
    /** The answer to a create, its message without the words that name the answering side. */
    const answer = async (create: (namespace: string, name: string) => Promise<unknown>, namespace: string, name = `probe-${++probes}`) => {
      const refused = await refusal(() => create(namespace, name));
      return refused ? `denied: ${String(refused.message).replace(/^.*denied (the )?request: /, '')}` : 'admitted';
    };
    const createPod = (body: k8s.V1Pod) => (namespace: string, name: string) => cluster().kube.core.createNamespacedPod({ namespace, body: { ...body, metadata: { name } } });
    const createConfigMap = (labels: Record<string, string>) => (namespace: string, name: string) => cluster().kube.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels } } });

    // Both sides in force: an untagged image is denied in both namespaces.
    await eventually(
      async () => {
        for (const namespace of [VAP_NS, SUITE_NS]) if ((await answer(createPod(pod('p', 'nginx')), namespace)) === 'admitted') throw new Error(`admitted in ${namespace}`);
      },
      { what: 'the generated policies and the imported suites to be in force' },
    );
    const rows: [string, (namespace: string, name: string) => Promise<unknown>][] = [
      ['a tagged image', createPod(pod('p', 'nginx:1.27'))],
      ['an untagged image', createPod(pod('p', 'nginx'))],
      ['a latest image', createPod(pod('p', 'nginx:latest'))],
      ['hostNetwork true', createPod(pod('p', 'nginx:1.27', { hostNetwork: true }))],
      ['hostNetwork false', createPod(pod('p', 'nginx:1.27', { hostNetwork: false }))],
      ['a ConfigMap with no labels', createConfigMap({})],
      ['a ConfigMap with a team', createConfigMap({ team: 'payments' })],
      ['a ConfigMap with a team in capitals', createConfigMap({ team: 'Payments' })],
    ];
    const answers: { row: string; vap: string; suite: string }[] = [];
    // Each row's object has one name on both sides, as messages may show it.
    for (const [i, [row, create]] of rows.entries()) answers.push({ row, vap: await answer(create, VAP_NS, `row-${i}`), suite: await answer(create, SUITE_NS, `row-${i}`) });
    expect(answers.map((a) => `${a.row}: ${a.suite}`)).to.deep.equal(answers.map((a) => `${a.row}: ${a.vap}`));
    // And the table is what it says: each policy both admits and denies.
    expect(answers.map((a) => a.vap)).to.deep.equal([
      'admitted',
      'denied: An image tag is required.',
      "denied: Using a mutable image tag e.g. 'latest' is not allowed.",
      'denied: hostNetwork is not allowed for row-3',
      'admitted',
      'denied: label team must be lowercase letters, not missing',
      'admitted',
      'denied: label team must be lowercase letters, not Payments',
    ]);
  });
});
