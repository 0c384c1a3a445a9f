/**
 * `portcullis import` of a Gatekeeper ConstraintTemplate through the real API server: the suite it
 * prints, served by the operator, answers ConfigMap creates as the ValidatingAdmissionPolicy that
 * Gatekeeper generates for the same template and Constraint (the Constraint as its params, through
 * the Constraint's CRD) answers them: admitted, or denied with the same message. Each side is
 * scoped to a namespace of its own (gk-import-vap, gk-import-suite), which this file owns with its
 * suite, policy, binding, CRD and Constraint; it touches nothing else.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { cluster, kubectl } from '../support/cluster.ts';
import { runCli } from '../support/cli.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import type { SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const VAP_NS = 'gk-import-vap';
const SUITE_NS = 'gk-import-suite';
const SCOPE = 'import-gatekeeper-e2e';
const SUITE = 'gk-teamlabels';
const POLICY = 'gatekeeper-teamlabels';

const SOURCE = {
  variables: [{ name: 'missing', expression: 'variables.params.labels.filter(l, !(l in variables.anyObject.metadata.?labels.orValue({})))' }],
  validations: [{ expression: 'size(variables.missing) == 0', messageExpression: '"missing labels: " + variables.missing.join(", ")' }],
};
const TEMPLATE = {
  apiVersion: 'templates.gatekeeper.sh/v1',
  kind: 'ConstraintTemplate',
  metadata: { name: 'teamlabels' },
  spec: { crd: { spec: { names: { kind: 'TeamLabels' } } }, targets: [{ target: 'admission.k8s.gatekeeper.sh', code: [{ engine: 'K8sNativeValidation', source: SOURCE }] }] },
};
const CONSTRAINT = {
  apiVersion: 'constraints.gatekeeper.sh/v1beta1',
  kind: 'TeamLabels',
  metadata: { name: 'gk-import-owner' },
  spec: { match: { kinds: [{ apiGroups: [''], kinds: ['ConfigMap'] }], namespaces: ['gk-import-*'] }, parameters: { labels: ['team', 'owner'] } },
};
/** The Constraint kind's CRD, as Gatekeeper makes it from the template (its schema left open, as a template without one is). */
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'teamlabels.constraints.gatekeeper.sh' },
  spec: {
    group: 'constraints.gatekeeper.sh',
    scope: 'Cluster',
    names: { kind: 'TeamLabels', plural: 'teamlabels', singular: 'teamlabels', listKind: 'TeamLabelsList' },
    versions: [{ name: 'v1beta1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};
/**
 * The policy Gatekeeper generates for the template (pkg/drivers/k8scel/transform): CREATE and UPDATE
 * of everything, the Constraint as params, `variables.anyObject` and `variables.params` first, and
 * the Constraint's match.kinds and match.namespaces as conditions on params (written here for this
 * Constraint's two fields); its binding names the Constraint and, here, only this file's namespace.
 */
const POLICY_OBJECTS = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: POLICY },
    spec: {
      failurePolicy: 'Fail',
      paramKind: { apiVersion: 'constraints.gatekeeper.sh/v1beta1', kind: 'TeamLabels' },
      matchConstraints: { resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['*'] }] },
      matchConditions: [
        { name: 'kinds', expression: 'params.spec.match.kinds.exists(k, request.kind.kind in k.kinds && request.kind.group in k.apiGroups)' },
        { name: 'namespaces', expression: 'params.spec.match.namespaces.exists(n, n.endsWith("*") ? object.metadata.namespace.startsWith(n.substring(0, size(n) - 1)) : object.metadata.namespace == n)' },
      ],
      variables: [
        { name: 'anyObject', expression: 'request.operation == "DELETE" && object == null ? oldObject : object' },
        { name: 'params', expression: '!has(params.spec) ? null : !has(params.spec.parameters) ? null : params.spec.parameters' },
        ...SOURCE.variables,
      ],
      validations: SOURCE.validations,
    },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: POLICY },
    spec: { policyName: POLICY, validationActions: ['Deny'], paramRef: { name: CONSTRAINT.metadata.name, parameterNotFoundAction: 'Deny' }, matchResources: { namespaceSelector: { matchLabels: { [SCOPE]: 'vap' } } } },
  },
];

describe('portcullis import of Gatekeeper: the suite answers as the policy Gatekeeper generates', function () {
  this.timeout(300_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-import-gatekeeper-'));
  const file = (name: string, objects: unknown[]) => {
    const target = path.join(dir, name);
    fs.writeFileSync(target, objects.map((o) => yaml.dump(o)).join('---\n'));
    return target;
  };
  let operator: Operator | undefined;

  before(async function () {
    await ensureNamespace(VAP_NS, { [SCOPE]: 'vap' });
    await ensureNamespace(SUITE_NS, { [SCOPE]: 'suite' });
    const crd = await kubectl(['apply', '-f', file('crd.yaml', [CRD])]);
    expect(crd.code, crd.stderr).to.equal(0);
    // The API server serves a new CRD's kind a moment after taking it.
    await eventually(
      async () => {
        const applied = await kubectl(['apply', '-f', file('constraint.yaml', [CONSTRAINT])]);
        if (applied.code !== 0) throw new Error(applied.stderr);
      },
      { what: 'the Constraint to be taken' },
    );
    const policy = await kubectl(['apply', '-f', file('policy.yaml', POLICY_OBJECTS)]);
    expect(policy.code, policy.stderr).to.equal(0);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.stop();
    for (const name of ['policy.yaml', 'constraint.yaml', 'crd.yaml']) await kubectl(['delete', '--ignore-not-found', '-f', path.join(dir, name)]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('admits and denies the same ConfigMaps, in the same words', async function () {
    const imported = await runCli(['import', '-o', 'json', file('gatekeeper.yaml', [TEMPLATE, CONSTRAINT])]);
    expect(imported.code, imported.stderr).to.equal(0);
    const [suite] = (JSON.parse(imported.stdout) as { items: { spec: SuiteSpec }[] }).items;
    // Scoped to this file's namespace, as the binding is: no other test's ConfigMaps are judged.
    await createSuite(SUITE, { ...suite!.spec, namespaceSelector: { matchLabels: { [SCOPE]: 'suite' } } });
    await waitForCondition(SUITE, 'Ready', 'True');

    let n = 0;
    /** The answer to a create of a ConfigMap with `labels`, its message without the words that name the answering side. */
    const answer = async (namespace: string, labels: Record<string, string>) => {
      const name = `cm-${++n}`;
      const refused = await refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels } } }));
      return refused ? `denied: ${String(refused.message).replace(/^.*denied (the )?request: /, '')}` : 'admitted';
    };
    // Both sides in force: the unlabelled ConfigMap is denied in both namespaces.
    await eventually(
      async () => {
        for (const namespace of [VAP_NS, SUITE_NS]) if ((await answer(namespace, {})) === 'admitted') throw new Error(`admitted in ${namespace}`);
      },
      { what: 'the policy and the suite to be in force' },
    );
    const rows: Record<string, string>[] = [{}, { team: 'a' }, { owner: 'b' }, { team: 'a', owner: 'b' }];
    const answers = [];
    for (const labels of rows) answers.push({ labels, vap: await answer(VAP_NS, labels), suite: await answer(SUITE_NS, labels) });
    expect(answers.map((a) => a.suite)).to.deep.equal(answers.map((a) => a.vap));
    expect(answers.map((a) => a.vap)).to.deep.equal(['denied: missing labels: team, owner', 'denied: missing labels: owner', 'denied: missing labels: team', 'admitted']);
  });
});
