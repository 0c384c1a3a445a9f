/**
 * `portcullis import` as a user runs it: ValidatingAdmissionPolicies with their bindings, and Kyverno
 * ValidatingPolicies, printed as suites that `portcullis validate` accepts; what cannot be carried
 * over named on stderr with why (exit 1); a file with nothing to import a usage error (exit 2).
 * (That the suites answer as the API server's own policies: test/e2e/differential.test.ts, its
 * diff-import side.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { runCli } from '../../support/cli.ts';

const RULE = { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments'] };
const vap = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec });
const binding = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec });
const kyverno = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'policies.kyverno.io/v1', kind: 'ValidatingPolicy', metadata: { name }, spec });

describe('portcullis import', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-import-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, objects: unknown[]) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, objects.map((o) => yaml.dump(o)).join('---\n'));
    return file;
  };

  it('prints a suite per policy, a webhook per binding, that validate accepts', async function () {
    const source = write('policies.yaml', [
      vap('replicas', {
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConstraints: { resourceRules: [RULE], namespaceSelector: { matchLabels: { env: 'prod' } } },
        validations: [{ expression: 'object.spec.replicas <= int(params.data.max)', messageExpression: "'at most ' + params.data.max" }],
      }),
      binding('replicas-deny', { policyName: 'replicas', validationActions: ['Deny'], paramRef: { name: 'limits', namespace: 'default', parameterNotFoundAction: 'Deny' } }),
      binding('replicas.warn', {
        policyName: 'replicas',
        validationActions: ['Warn'],
        paramRef: { name: 'soft-limits', namespace: 'default', parameterNotFoundAction: 'Allow' },
        matchResources: { resourceRules: [{ ...RULE, operations: ['UPDATE'] }] },
      }),
      kyverno('labels', {
        validationActions: ['Audit'],
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
        validations: [{ expression: "'team' in object.metadata.?labels.orValue({})" }],
      }),
    ]);
    const imported = await runCli(['import', source]);
    expect(imported.stderr).to.equal('');
    expect(imported.code).to.equal(0);
    const suites = yaml.loadAll(imported.stdout) as { metadata: { name: string }; spec: { webhooks: { name: string; rules: unknown[]; validationActions: string[]; params?: { name: string; notFoundAction: string } }[] } }[];
    expect(suites.map((s) => s.metadata.name)).to.deep.equal(['replicas', 'labels']);
    expect(suites[0]!.spec.webhooks.map((w) => [w.name, w.validationActions, w.params?.name, w.params?.notFoundAction])).to.deep.equal([
      ['replicas-deny', ['Deny'], 'limits', 'Deny'],
      ['replicas-warn', ['Warn'], 'soft-limits', 'Allow'],
    ]);
    expect(suites[0]!.spec.webhooks[1]!.rules, 'the binding narrows the policy to updates').to.deep.equal([{ ...RULE, operations: ['UPDATE'] }]);
    expect(suites[1]!.spec.webhooks[0]!.validationActions).to.deep.equal(['Audit']);
    const out = path.join(dir, 'suites.yaml');
    fs.writeFileSync(out, imported.stdout);
    const validated = await runCli(['validate', out]);
    expect(validated.code, validated.stdout + validated.stderr).to.equal(0);
    expect(validated.stdout).to.contain('AdmissionSuite "replicas" is valid').and.to.contain('AdmissionSuite "labels" is valid');
  });

  it('names what it cannot carry over, with why, and exits 1; refuses a file with nothing to import', async function () {
    const source = write('partial.yaml', [
      vap('unbound', { matchConstraints: { resourceRules: [RULE] }, validations: [{ expression: 'true' }] }),
      kyverno('lookup', { validationActions: ['Deny'], matchConstraints: { resourceRules: [RULE] }, validations: [{ expression: "resource.Get('v1', 'configmaps', 'default', 'x').data.a == 'b'" }] }),
      kyverno('envoy', { evaluation: { mode: 'Envoy' }, validations: [{ expression: 'true' }] }),
      vap('kept', { matchConstraints: { resourceRules: [RULE] }, validations: [{ expression: 'true' }] }),
      binding('kept', { policyName: 'kept', validationActions: ['Deny'] }),
    ]);
    const imported = await runCli(['import', source]);
    expect(imported.code).to.equal(1);
    expect((yaml.loadAll(imported.stdout) as { metadata: { name: string } }[]).map((s) => s.metadata.name)).to.deep.equal(['kept']);
    expect(imported.stderr.trim().split('\n')).to.deep.equal([
      'portcullis: ValidatingAdmissionPolicy/unbound: no binding names it, so the API server enforces it nowhere; not imported',
      'portcullis: ValidatingPolicy/envoy: its evaluation.mode is Envoy, not Kubernetes admission; not imported',
      // cel-go's words and place, as the API server refuses it (its caret lines included)
      "portcullis: ValidatingPolicy/lookup: as a suite it would be refused on apply: AdmissionSuite \"lookup\" is invalid: spec.webhooks[0].validations[0].expression: compilation failed: ERROR: <input>:1:1: undeclared reference to 'resource' (in container '')",
      " | resource.Get('v1', 'configmaps', 'default', 'x').data.a == 'b'",
      ' | ^; not imported',
    ]);
    const nothing = await runCli(['import', write('none.yaml', [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }])]);
    expect(nothing.code).to.equal(2);
    expect(nothing.stderr).to.contain('no ValidatingAdmissionPolicy, binding, Kyverno ValidatingPolicy, ClusterPolicy or Policy, or Gatekeeper ConstraintTemplate');
  });
});
