/**
 * `portcullis import` of Gatekeeper as a user runs it: a ConstraintTemplate with K8sNativeValidation
 * and two Constraints of it become a suite that `validate` accepts and that `portcullis eval` shows
 * answering as Gatekeeper's webhook does (parameters, namespaces and excludedNamespaces globs, a
 * Namespace matched by its own name, warn as a warning); a Rego-only template is named as not
 * imported. Templates and Constraints are written here. It does not test the VAP and Kyverno import
 * (import.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { evalAnswer, runCli, scratchFiles } from '../../support/cli.ts';

const template = (name: string, kind: string, code: unknown[]) => ({
  apiVersion: 'templates.gatekeeper.sh/v1',
  kind: 'ConstraintTemplate',
  metadata: { name },
  spec: { crd: { spec: { names: { kind } } }, targets: [{ target: 'admission.k8s.gatekeeper.sh', code }] },
});
const constraint = (kind: string, name: string, spec: Record<string, unknown>) => ({ apiVersion: 'constraints.gatekeeper.sh/v1beta1', kind, metadata: { name }, spec });

/** Every label the Constraint's parameters list must be on the object. */
const REQUIRED_LABELS = template('teamlabels', 'TeamLabels', [
  {
    engine: 'K8sNativeValidation',
    source: {
      variables: [{ name: 'missing', expression: 'variables.params.labels.filter(l, !(l in variables.anyObject.metadata.?labels.orValue({})))' }],
      validations: [{ expression: 'size(variables.missing) == 0', messageExpression: '"missing labels: " + variables.missing.join(", ")' }],
    },
  },
]);

const configMap = (namespace: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace, labels } });
const namespace = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

describe('portcullis import of Gatekeeper', function () {
  this.timeout(60_000);
  const { dir: scratch, write } = scratchFiles('portcullis-import-gatekeeper-');
  const evaluate = (suite: string, object: unknown) => evalAnswer(suite, write([object]));

  it('makes a webhook per Constraint that answers as Gatekeeper: parameters, namespace globs, warn', async function () {
    const source = write([
      REQUIRED_LABELS,
      constraint('TeamLabels', 'prod-owner', { match: { kinds: [{ apiGroups: [''], kinds: ['ConfigMap'] }], namespaces: ['prod-*'] }, parameters: { labels: ['team', 'owner'] } }),
      constraint('TeamLabels', 'team-everywhere', {
        enforcementAction: 'warn',
        match: { kinds: [{ apiGroups: ['*'], kinds: ['ConfigMap', 'Namespace'] }], excludedNamespaces: ['kube-*', 'prod-*'] },
        parameters: { labels: ['team'] },
      }),
    ]);
    const imported = await runCli(['import', source]);
    expect(imported.stderr).to.equal('');
    expect(imported.code).to.equal(0);
    const suites = yaml.loadAll(imported.stdout) as { metadata: { name: string }; spec: { webhooks: { name: string; validationActions: string[] }[] } }[];
    expect(suites.map((s) => [s.metadata.name, s.spec.webhooks.map((w) => [w.name, w.validationActions])])).to.deep.equal([
      [
        'teamlabels',
        [
          ['prod-owner', ['Deny']],
          ['team-everywhere', ['Warn']],
        ],
      ],
    ]);
    const suite = path.join(scratch(), 'suite.yaml');
    fs.writeFileSync(suite, imported.stdout);
    const validated = await runCli(['validate', suite]);
    expect(validated.code, validated.stdout + validated.stderr).to.equal(0);

    const denied = 'admission webhook "prod-owner.teamlabels.admission.portcullis.dev" denied the request: ';
    expect(await evaluate(suite, configMap('prod-a', { team: 'a', owner: 'b' })), 'both labels in prod-*').to.deep.equal({ allowed: true, message: undefined, warnings: [] });
    expect(await evaluate(suite, configMap('prod-a', { team: 'a' })), 'prod-* needs owner too; excluded from the warning').to.deep.equal({ allowed: false, message: `${denied}missing labels: owner`, warnings: [] });
    expect(await evaluate(suite, configMap('dev')), 'outside prod-*: only the warning').to.deep.equal({ allowed: true, message: undefined, warnings: ['missing labels: team'] });
    expect(await evaluate(suite, namespace('kube-tools')), 'a Namespace is excluded by its own name').to.deep.equal({ allowed: true, message: undefined, warnings: [] });
    expect(await evaluate(suite, namespace('dev')), 'any group: a Namespace matches the kinds').to.deep.equal({ allowed: true, message: undefined, warnings: ['missing labels: team'] });
  });

  it('matches by name or generateName glob and scope; takes the scoped action at the webhook, naming the other points', async function () {
    const source = write([
      REQUIRED_LABELS,
      constraint('TeamLabels', 'legacy', {
        enforcementAction: 'scoped',
        scopedEnforcementActions: [{ action: 'warn', enforcementPoints: [{ name: 'validation.gatekeeper.sh' }, { name: 'audit.gatekeeper.sh' }] }],
        match: { name: 'legacy-*', scope: 'Namespaced' },
        parameters: { labels: ['team'] },
      }),
    ]);
    const imported = await runCli(['import', source]);
    expect(imported.code).to.equal(1);
    expect(imported.stderr).to.equal('portcullis: TeamLabels/legacy: its scoped enforcement at audit.gatekeeper.sh is not carried over (a suite is the admission webhook only)\n');
    const suite = path.join(scratch(), 'scoped.yaml');
    fs.writeFileSync(suite, imported.stdout);
    const warned = { allowed: true, message: undefined, warnings: ['missing labels: team'] };
    const quiet = { allowed: true, message: undefined, warnings: [] };
    expect(await evaluate(suite, configMap('dev')), 'another name').to.deep.equal(quiet);
    expect(await evaluate(suite, { ...configMap('dev'), metadata: { name: 'legacy-a', namespace: 'dev' } }), 'a name the glob matches').to.deep.equal(warned);
    expect(await evaluate(suite, { ...configMap('dev'), metadata: { generateName: 'legacy-', namespace: 'dev' } }), 'a generateName the glob matches').to.deep.equal(warned);
    expect(await evaluate(suite, namespace('legacy-ns')), 'a Namespace is not in Namespaced scope').to.deep.equal(quiet);
  });

  it('names a Rego-only template as not imported, and a Constraint without its template; exits 1', async function () {
    const source = write([
      REQUIRED_LABELS,
      constraint('TeamLabels', 'all', { parameters: { labels: ['team'] } }),
      template('rego-only', 'RegoOnly', [{ engine: 'Rego', source: { rego: 'package regoonly\nviolation[{"msg": "no"}] { true }' } }]),
      constraint('RegoOnly', 'rego-constraint', {}),
      constraint('Missing', 'orphan', {}),
    ]);
    const imported = await runCli(['import', source]);
    expect(imported.code).to.equal(1);
    expect((yaml.loadAll(imported.stdout) as { metadata: { name: string } }[]).map((s) => s.metadata.name)).to.deep.equal(['teamlabels']);
    expect(imported.stderr.trim().split('\n')).to.deep.equal([
      'portcullis: Missing/orphan: its ConstraintTemplate (kind Missing) is not among the objects given; not imported',
      "portcullis: ConstraintTemplate/rego-only: it has only Rego, which a suite cannot run (only a K8sNativeValidation engine's CEL is carried over); not imported",
    ]);
  });
});
