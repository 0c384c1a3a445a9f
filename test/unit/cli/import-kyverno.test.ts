/**
 * `portcullis import` of Kyverno's ClusterPolicy and Policy with CEL rules as a user runs it (the
 * CLI as a subprocess): the suite or AdmissionPolicies printed are accepted by `validate`, and
 * `portcullis eval` answers as Kyverno's engine does (match any/all and exclude, kinds, namespace
 * wildcards, selectors, operations, celPreconditions, the rules Kyverno generates for pod
 * controllers, Enforce and Audit per policy and per rule, the rule's message, params); what is not
 * CEL is named on stderr with exit 1. Policies are written here, modelled on kyverno/policies'
 * *-cel ones. It does not test the VAP, ValidatingPolicy or Gatekeeper import.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { evalAnswer, runCli, scratchFiles } from '../../support/cli.ts';

const clusterPolicy = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  apiVersion: 'kyverno.io/v1',
  kind: 'ClusterPolicy',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec,
});
const podRule = (name: string, expression: string, extra: Record<string, unknown> = {}) => ({
  name,
  match: { any: [{ resources: { kinds: ['Pod'], operations: ['CREATE', 'UPDATE'] } }] },
  validate: { message: `${name} refused`, cel: { expressions: [{ expression }] } },
  ...extra,
});
const HOST_PATH = 'object.spec.?volumes.orValue([]).all(v, !has(v.hostPath))';

const pod = (name: string, namespace: string, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
});
const hostPath = { volumes: [{ name: 'h', hostPath: { path: '/etc' } }] };
const template = (spec: Record<string, unknown>) => ({ metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec } });
const deployment = (spec: Record<string, unknown>) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'team' }, spec: { selector: { matchLabels: { app: 'a' } }, template: template(spec) } });
const cronJob = (spec: Record<string, unknown>) => ({
  apiVersion: 'batch/v1',
  kind: 'CronJob',
  metadata: { name: 'c', namespace: 'team' },
  spec: { schedule: '* * * * *', jobTemplate: { spec: { template: template({ ...spec, restartPolicy: 'Never' }) } } },
});

describe('portcullis import of Kyverno ClusterPolicies and Policies', function () {
  this.timeout(120_000);
  const { dir: scratch, write } = scratchFiles('portcullis-import-kyverno-');
  const imported = async (objects: unknown[]) => {
    const source = write(objects);
    const run = await runCli(['import', source]);
    const file = path.join(scratch(), `imported-${path.basename(source)}`);
    fs.writeFileSync(file, run.stdout);
    return { ...run, file, documents: yaml.loadAll(run.stdout) as { kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, any> }[] };
  };
  const evaluate = (suite: string, object: unknown, extra: string[] = []) => evalAnswer(suite, write([object]), extra);

  it("makes a webhook per rule and per generated pod-controller rule, denying as Kyverno's Enforce does, with the rule's message", async function () {
    const run = await imported([clusterPolicy('disallow-host-path', { validationFailureAction: 'Enforce', rules: [podRule('host-path', HOST_PATH)] })]);
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
    expect(run.documents.map((d) => [d.kind, d.metadata.name, d.spec.webhooks.map((w: { name: string }) => w.name)])).to.deep.equal([
      ['AdmissionSuite', 'disallow-host-path', ['host-path', 'autogen-host-path', 'autogen-cronjob-host-path']],
    ]);
    const validated = await runCli(['validate', run.file]);
    expect(validated.code, validated.stdout + validated.stderr).to.equal(0);
    const denied = (webhook: string) => ({ allowed: false, message: `admission webhook "${webhook}.disallow-host-path.admission.portcullis.dev" denied the request: ${webhook.replace(/^autogen-(cronjob-)?/, '')} refused`, warnings: [] });
    const admitted = { allowed: true, message: undefined, warnings: [] };
    expect(await evaluate(run.file, pod('bad', 'team', hostPath)), 'a Pod with a hostPath').to.deep.equal(denied('host-path'));
    expect(await evaluate(run.file, pod('good', 'team')), 'a Pod without').to.deep.equal(admitted);
    expect(await evaluate(run.file, deployment(hostPath)), "a Deployment's template, by the autogen rule").to.deep.equal(denied('autogen-host-path'));
    expect(await evaluate(run.file, deployment({})), 'a good Deployment').to.deep.equal(admitted);
    expect(await evaluate(run.file, cronJob(hostPath)), "a CronJob's job template").to.deep.equal(denied('autogen-cronjob-host-path'));
    expect(await evaluate(run.file, pod('bad', 'team', hostPath), ['--operation', 'DELETE']), 'a DELETE is not among the operations').to.deep.equal(admitted);
  });

  it('matches as Kyverno: namespace wildcards, selectors, exclude, celPreconditions; Audit per rule admits, with a warning under emitWarning; no autogen when turned off', async function () {
    const run = await imported([
      clusterPolicy(
        'labels',
        {
          validationFailureAction: 'Enforce',
          emitWarning: true,
          rules: [
            {
              name: 'prod-needs-team',
              match: { all: [{ resources: { kinds: ['v1/Pod'], namespaces: ['prod-?', 'live-*'] } }, { resources: { selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['web'] }] } } }] },
              exclude: { any: [{ resources: { namespaces: ['prod-x'] } }, { resources: { annotations: { 'skip/*': 'y?s' } } }] },
              celPreconditions: [{ name: 'not-system', expression: "!object.metadata.name.startsWith('system-')" }],
              validate: { cel: { expressions: [{ expression: 'has(object.metadata.labels.team)', message: 'needs a team label' }] } },
            },
            { ...podRule('audited', "object.metadata.name != 'watched'"), validate: { failureAction: 'Audit', message: 'watched', cel: { expressions: [{ expression: "object.metadata.name != 'watched'" }] } } },
          ],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.stderr).to.equal('');
    expect(run.documents[0]!.spec.webhooks.map((w: { name: string; validationActions: string[] }) => [w.name, w.validationActions])).to.deep.equal([
      ['prod-needs-team', ['Deny']],
      ['audited', ['Audit', 'Warn']],
    ]);
    const denied = { allowed: false, message: 'admission webhook "prod-needs-team.labels.admission.portcullis.dev" denied the request: needs a team label', warnings: [] };
    const admitted = { allowed: true, message: undefined, warnings: [] };
    const web = { tier: 'web' };
    expect(await evaluate(run.file, pod('a', 'prod-1', {}, web)), 'prod-? and the selector').to.deep.equal(denied);
    expect(await evaluate(run.file, pod('a', 'live-eu', {}, web)), 'live-*').to.deep.equal(denied);
    expect(await evaluate(run.file, pod('a', 'prod-12', {}, web)), '? is one character').to.deep.equal(admitted);
    expect(await evaluate(run.file, pod('a', 'prod-1', {}, { tier: 'db' })), 'all: the selector must match too').to.deep.equal(admitted);
    expect(await evaluate(run.file, pod('a', 'prod-x', {}, web)), 'excluded by namespace').to.deep.equal(admitted);
    expect(await evaluate(run.file, { ...pod('a', 'prod-1', {}, web), metadata: { name: 'a', namespace: 'prod-1', labels: web, annotations: { 'skip/me': 'yes' } } }), 'excluded by an annotation wildcard').to.deep.equal(admitted);
    expect(await evaluate(run.file, pod('system-a', 'prod-1', {}, web)), 'celPreconditions not met').to.deep.equal(admitted);
    expect(await evaluate(run.file, pod('a', 'prod-1', {}, { ...web, team: 't' })), 'with a team').to.deep.equal(admitted);
    expect(await evaluate(run.file, pod('watched', 'dev')), "Audit admits; emitWarning warns with the rule's message").to.deep.equal({ allowed: true, message: undefined, warnings: ['watched'] });
  });

  it('makes a namespaced Policy an AdmissionPolicy per rule in its namespace, with its params', async function () {
    const policy = {
      apiVersion: 'kyverno.io/v1',
      kind: 'Policy',
      metadata: { name: 'replicas', namespace: 'team' },
      spec: {
        validationFailureAction: 'Enforce',
        rules: [
          {
            name: 'max',
            match: { any: [{ resources: { kinds: ['apps/v1/Deployment'] } }] },
            validate: {
              cel: {
                paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
                paramRef: { name: 'limits', parameterNotFoundAction: 'Deny' },
                expressions: [{ expression: 'object.spec.replicas <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' replicas'" }],
              },
            },
          },
        ],
      },
    };
    const run = await imported([policy]);
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
    const [made] = run.documents;
    expect([made!.kind, made!.metadata, made!.spec.params]).to.deep.equal(['AdmissionPolicy', { name: 'replicas-max', namespace: 'team' }, { apiVersion: 'v1', kind: 'ConfigMap', name: 'limits', notFoundAction: 'Deny' }]);
    const limits = write([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'limits', namespace: 'team' }, data: { max: '3' } }]);
    const many = { ...deployment({}), spec: { ...deployment({}).spec, replicas: 5 } };
    const answer = await evaluate(run.file, many, ['--objects', limits]);
    expect([answer.allowed, answer.message?.endsWith('at most 3 replicas')], answer.message).to.deep.equal([false, true]);
    expect((await evaluate(run.file, { ...many, spec: { ...many.spec, replicas: 2 } }, ['--objects', limits])).allowed).to.equal(true);
  });

  it("matches and excludes by subjects as Kyverno: a User and a ServiceAccount by the username, a Group by the user's groups, with wildcards", async function () {
    const run = await imported([
      clusterPolicy(
        'subjects',
        {
          validationFailureAction: 'Enforce',
          rules: [
            {
              ...podRule('users', HOST_PATH),
              match: {
                any: [
                  {
                    resources: { kinds: ['Pod'] },
                    subjects: [
                      { kind: 'User', name: 'ali?e' },
                      { kind: 'ServiceAccount', name: 'deploy*', namespace: 'ci' },
                    ],
                  },
                ],
              },
              exclude: { any: [{ subjects: [{ kind: 'Group', name: 'system:masters' }] }] },
            },
            { ...podRule('everyone-but-system', HOST_PATH), match: { any: [{ resources: { kinds: ['Pod'] }, subjects: [{ kind: 'Group', name: 'system:auth*' }] }] }, exclude: { any: [{ subjects: [{ kind: 'User', name: 'system:*' }] }] } },
          ],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.stderr).to.equal('');
    // eval's --user is in the group system:authenticated.
    const by = async (user: string) => (await evaluate(run.file, pod('bad', 'team', hostPath), ['--user', user])).message?.replace(/^admission webhook "([^".]+)\..*$/, '$1');
    expect(await by('alice'), 'a User').to.equal('users');
    expect(await by('bob'), 'not a User named, but in the Group').to.equal('everyone-but-system');
    expect(await by('system:serviceaccount:ci:deployer'), 'a ServiceAccount').to.equal('users');
    expect(await by('system:serviceaccount:ci:other'), 'excluded as a User system:*').to.equal(undefined);
  });

  it('applies only the first rule that applies under applyRules One, as Kyverno stops there', async function () {
    const run = await imported([
      clusterPolicy(
        'first-only',
        {
          validationFailureAction: 'Enforce',
          applyRules: 'One',
          rules: [
            {
              ...podRule('system-pods', "object.metadata.name != 'good'"),
              match: { any: [{ resources: { kinds: ['Pod'], namespaces: ['kube-*'] } }] },
              celPreconditions: [{ name: 'not-static', expression: "object.metadata.name != 'static'" }],
            },
            podRule('host-path', HOST_PATH),
          ],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.stderr).to.equal('');
    const which = async (object: unknown) => (await evaluate(run.file, object)).message?.replace(/^admission webhook "([^".]+)\..*$/, '$1');
    expect(await which(pod('bad', 'team', hostPath)), 'only the second rule matches').to.equal('host-path');
    expect(await which(pod('good', 'kube-a')), 'the first applies (and fails)').to.equal('system-pods');
    expect(await which(pod('bad', 'kube-a', hostPath)), 'the first applies (and passes), so the second is not reached').to.equal(undefined);
    expect(await which(pod('static', 'kube-a', hostPath)), "the first's celPreconditions are not met: the second applies").to.equal('host-path');
  });

  it("takes the failure action per namespace as Kyverno resolves it: the rule's overrides, then its failureAction, then the policy's overrides, then its action", async function () {
    const run = await imported([
      clusterPolicy(
        'per-namespace',
        {
          validationFailureAction: 'Enforce',
          validationFailureActionOverrides: [{ action: 'Audit', namespaces: ['dev-*'] }],
          rules: [
            {
              ...podRule('host-path', HOST_PATH),
              validate: { message: 'host-path refused', failureActionOverrides: [{ action: 'Enforce', namespaceSelector: { matchLabels: { strict: 'true' } } }], cel: { expressions: [{ expression: HOST_PATH }] } },
            },
            { ...podRule('pinned', HOST_PATH), validate: { message: 'pinned refused', failureAction: 'Enforce', cel: { expressions: [{ expression: HOST_PATH }] } } },
          ],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.stderr).to.equal('');
    expect(run.documents[0]!.spec.webhooks.map((w: { name: string; validationActions: string[] }) => [w.name, w.validationActions])).to.deep.equal([
      ['host-path-enforce', ['Deny']],
      ['host-path-audit', ['Audit']],
      ['pinned', ['Deny']],
    ]);
    const strict = write([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev-strict', labels: { strict: 'true' } } }]);
    const deniedBy = async (namespace: string) => (await evaluate(run.file, pod('bad', namespace, hostPath), ['--objects', strict])).message?.replace(/^admission webhook "([^".]+)\..*$/, '$1');
    expect(await deniedBy('prod'), "the policy's action").to.equal('host-path-enforce');
    expect(await deniedBy('dev-1'), "the policy's override: audited; the rule's own action still denies").to.equal('pinned');
    expect(await deniedBy('dev-strict'), "the rule's override before the policy's").to.equal('host-path-enforce');
  });

  it("matches a namespaceSelector by the request's Namespace, which matchConditions cannot read, through a variable its validations are gated on", async function () {
    const run = await imported([
      clusterPolicy(
        'strict-namespaces',
        {
          validationFailureAction: 'Enforce',
          rules: [{ ...podRule('host-path', HOST_PATH), match: { any: [{ resources: { kinds: ['Pod'], namespaceSelector: { matchLabels: { strict: 'true' } } } }] } }],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.stderr).to.equal('');
    const [webhook] = run.documents[0]!.spec.webhooks as { matchConditions?: unknown[]; variables: { name: string }[] }[];
    expect([webhook!.matchConditions, webhook!.variables.map((v) => v.name)]).to.deep.equal([undefined, ['kyverno_applies']]);
    const namespaces = write([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'locked', labels: { strict: 'true' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'open' } },
    ]);
    expect((await evaluate(run.file, pod('bad', 'locked', hostPath), ['--objects', namespaces])).allowed, 'a Namespace with the label').to.equal(false);
    expect((await evaluate(run.file, pod('bad', 'open', hostPath), ['--objects', namespaces])).allowed, 'one without').to.equal(true);
  });

  it('shortens a name too long for a suite and a message with line breaks, saying so', async function () {
    const long = 'disallow-security-context-constraint-anyuid';
    const run = await imported([
      clusterPolicy(
        long,
        { validationFailureAction: 'Enforce', rules: [{ ...podRule('cel', HOST_PATH), validate: { message: 'no hostPath\nvolumes here\n', cel: { expressions: [{ expression: HOST_PATH }] } } }] },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
    ]);
    expect(run.code).to.equal(1);
    expect(run.documents.map((d) => [d.metadata.name, d.spec.webhooks[0].validations[0].message])).to.deep.equal([['disallow-security-context-constraint-any', 'no hostPath volumes here']]);
    expect(run.stderr.trim().split('\n')).to.deep.equal([
      `portcullis: ClusterPolicy/${long}: rule cel: its message's line breaks are said as spaces (a suite's message has none, as a ValidatingAdmissionPolicy's)`,
      `portcullis: ClusterPolicy/${long}: its suite is named disallow-security-context-constraint-any (a suite's name is at most 40 characters)`,
    ]);
  });

  it('names every rule it cannot carry over and why, keeps the rest, and exits 1', async function () {
    const run = await imported([
      clusterPolicy(
        'mixed',
        {
          validationFailureAction: 'Enforce',
          rules: [
            podRule('cel', HOST_PATH),
            { name: 'pattern', match: { any: [{ resources: { kinds: ['Pod'] } }] }, validate: { pattern: { spec: { hostNetwork: false } } } },
            { name: 'deny', match: { any: [{ resources: { kinds: ['Pod'] } }] }, validate: { deny: { conditions: { any: [{ key: '{{ request.operation }}', operator: 'Equals', value: 'DELETE' }] } } } },
            { ...podRule('jmespath-preconditions', HOST_PATH), preconditions: { all: [{ key: '{{ request.operation }}', operator: 'NotEquals', value: 'DELETE' }] } },
            { ...podRule('context', HOST_PATH), context: [{ name: 'cm', configMap: { name: 'c', namespace: 'd' } }] },
            { ...podRule('roles', HOST_PATH), exclude: { any: [{ clusterRoles: ['cluster-admin'] }] } },
            { name: 'mutate', match: { any: [{ resources: { kinds: ['Pod'] } }] }, mutate: { patchStrategicMerge: { metadata: { labels: { a: 'b' } } } } },
          ],
        },
        { 'pod-policies.kyverno.io/autogen-controllers': 'none' },
      ),
      clusterPolicy('background-only', { admission: false, rules: [podRule('cel', HOST_PATH)] }),
    ]);
    expect(run.code).to.equal(1);
    expect(run.documents.map((d) => [d.metadata.name, d.spec.webhooks.map((w: { name: string }) => w.name)])).to.deep.equal([['mixed', ['cel']]]);
    expect(run.stderr.trim().split('\n')).to.deep.equal([
      'portcullis: ClusterPolicy/mixed: rule pattern: its validate has a pattern (Kyverno overlay, not CEL), which a suite cannot run; not imported',
      'portcullis: ClusterPolicy/mixed: rule deny: its validate has a deny with JMESPath conditions, which a suite cannot run; not imported',
      'portcullis: ClusterPolicy/mixed: rule jmespath-preconditions: its preconditions are JMESPath conditions (celPreconditions are carried over); not imported',
      'portcullis: ClusterPolicy/mixed: rule context: it has a context (JMESPath variables, API calls, ConfigMaps), which CEL here cannot read; not imported',
      'portcullis: ClusterPolicy/mixed: rule roles: its match or exclude names roles or clusterRoles, which Kyverno reads from RBAC bindings and a suite cannot; not imported',
      'portcullis: ClusterPolicy/mixed: rule mutate: it is a mutate rule; only validate rules with CEL are carried over; not imported',
      'portcullis: ClusterPolicy/background-only: its admission is false (background scans only), so Kyverno enforces it on no request; not imported',
    ]);
  });
});
