/**
 * The `portcullis` command against the real API server: `validate` refuses what applying refuses,
 * with the same message, for a sample of suites that cannot work; `eval`'s answer for an object is
 * what the API server did with the webhook's answer for the same object (the rejection with its
 * code and message, the warnings, the patched fields).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { deleteSuite, getSuite } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { runCli } from '../support/cli.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import { GROUP, PLURAL, VERSION } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'cli-e2e';
const configmaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const validating = (extra: Record<string, unknown>) => ({ webhooks: [{ name: 'w', type: 'Validating', rules: configmaps, ...extra }] });

/** Suites the operator's webhook refuses, each for another reason. */
const INVALID: Record<string, Record<string, unknown>> = {
  'cli-syntax': validating({ validations: [{ expression: 'object.metadata.name.startsWith(' }] }),
  'cli-not-bool': validating({ validations: [{ expression: 'object.metadata.name' }] }),
  'cli-undeclared': validating({ validations: [{ expression: "params.data.max == '1'" }] }),
  'cli-bad-regex': validating({ validations: [{ expression: "object.metadata.name.matches('[')" }] }),
  'cli-message-type': validating({ validations: [{ expression: 'true', messageExpression: '1' }] }),
  'cli-no-handler': validating({ handler: { name: 'NoSuchHandler' } }),
  'cli-handler-resource': { webhooks: [{ name: 'w', type: 'Mutating', rules: configmaps, handler: { name: 'AlwaysPullImages' } }] },
  'cli-foreign-service': { service: { namespace: 'default', name: 'hooks' }, ...validating({ validations: [{ expression: 'true' }] }) },
};

const WARN_SUITE = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionSuite',
  metadata: { name: 'cli-warn' },
  spec: {
    webhooks: [
      {
        name: 'keys',
        type: 'Validating',
        rules: configmaps,
        objectSelector: { matchLabels: { 'portcullis-test': 'cli' } },
        validationActions: ['Warn'],
        validations: [{ expression: "!has(object.data) || !('legacy' in object.data)", messageExpression: "'key legacy is deprecated in ' + object.metadata.name" }],
      },
    ],
  },
};

describe('portcullis (the command) against the API server', function () {
  let operator: Operator;
  let dir: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-cli-e2e-'));
    await ensureNamespace(NS);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of [...Object.keys(INVALID), 'replica-guard', 'pod-defaults', 'cli-warn']) await deleteSuite(name);
    await operator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('validate refuses what applying refuses, with the same message', async function () {
    for (const [name, spec] of Object.entries(INVALID)) {
      const suite = { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name }, spec };
      const file = path.join(dir, `${name}.yaml`);
      fs.writeFileSync(file, yaml.dump(suite));
      const offline = await runCli(['validate', file]);
      expect(offline.code, `${name}: ${offline.stdout}${offline.stderr}`).to.equal(1);
      // said at the line of the field refused
      const message = offline.stdout
        .trim()
        .slice(file.length)
        .replace(/^:\d+: document 1: /, '');
      expect(message, name).to.match(new RegExp(`^AdmissionSuite "${name}" is invalid: spec\\.`));

      const applied = await eventually(async () => (await refusal(() => cluster().kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: suite }))) ?? Promise.reject(new Error('admitted')), {
        what: `${name} to be refused`,
      });
      expect(applied.message, name).to.equal(`admission webhook "${SUITE_VALIDATION.webhook}" denied the request: ${message}`);
      expect(await getSuite(name)).to.equal(undefined);
    }
  });

  it("validate --strict type-checks against the cluster's schemas: what applying with typeCheckErrors: Deny refuses, in its words; a warning it only prints", async function () {
    const deployments = [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];
    const typo = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AdmissionSuite',
      metadata: { name: 'cli-typo' },
      spec: { webhooks: [{ name: 'w', type: 'Validating', rules: deployments, validations: [{ expression: 'object.replicas <= 5' }] }] },
    };
    const file = path.join(dir, 'cli-typo.yaml');
    fs.writeFileSync(file, yaml.dump(typo));
    const kubeconfig = cluster().controlPlane.kubeconfigPath;
    expect((await runCli(['validate', file])).code, 'offline, no type checking').to.equal(0);
    const strict = await runCli(['validate', '--strict', '--kubeconfig', kubeconfig, file]);
    expect(strict.code, strict.stdout + strict.stderr).to.equal(1);
    expect(strict.stdout).to.contain(`${file}: warning: AdmissionSuite "cli-typo": spec.webhooks[0].validations[0].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'`);
    // at the line of the expression refused
    const message = strict.stdout
      .split('\n')
      .find((l) => l.startsWith(`${file}:`) && l.includes(': document 1: AdmissionSuite'))!
      .slice(file.length)
      .replace(/^:\d+: document 1: /, '');

    const applied = await eventually(
      async () =>
        (await refusal(() => cluster().kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: { ...typo, spec: { ...typo.spec, typeCheckErrors: 'Deny' } } }))) ?? Promise.reject(new Error('admitted')),
      { what: 'the typo to be refused with typeCheckErrors: Deny' },
    );
    expect(applied.message).to.equal(`admission webhook "${SUITE_VALIDATION.webhook}" denied the request: ${message}`);

    // Failing on some of its kinds only: a warning, not a refusal.
    const partial = { ...typo, metadata: { name: 'cli-partial' }, spec: { webhooks: [{ ...typo.spec.webhooks[0]!, rules: [...deployments, ...configmaps], validations: [{ expression: 'object.spec.replicas <= 5' }] }] } };
    fs.writeFileSync(file, yaml.dump(partial));
    const warned = await runCli(['validate', '--strict', '--kubeconfig', kubeconfig, file]);
    expect(warned.code, warned.stdout + warned.stderr).to.equal(0);
    expect(warned.stdout).to.contain('warning: AdmissionSuite "cli-partial": spec.webhooks[0].validations[0].expression: /v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field \'spec\'');
    expect(warned.stdout).to.contain('AdmissionSuite "cli-partial" is valid');
  });

  it("eval's rejection is the API server's: code and message", async function () {
    expect((await kubectl(['apply', '-f', 'config/samples/replica-limit.yaml'])).code).to.equal(0);
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: { replicas: 6, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
    };
    const file = path.join(dir, 'deployment.yaml');
    fs.writeFileSync(file, yaml.dump(deployment));
    const evaluated = JSON.parse((await runCli(['eval', '--suite', 'config/samples/replica-limit.yaml', '--object', file])).stdout);
    const response = evaluated.webhooks[0].review.response;
    expect(response.allowed).to.equal(false);

    const server = await eventually(
      async () => {
        const answer = await rawRequest('POST', `/apis/apps/v1/namespaces/${NS}/deployments?dryRun=All`, deployment);
        if (answer.status < 400) throw new Error('admitted: the webhook is not called yet');
        return answer;
      },
      { what: 'the replica limit to be enforced' },
    );
    expect(server.status).to.equal(response.status.code);
    expect(server.body.code).to.equal(response.status.code);
    expect(server.body.message).to.equal(evaluated.message);
  });

  it("eval's patched object is what the API server stored, mutated by the same webhooks", async function () {
    expect((await kubectl(['apply', '-f', 'config/samples/team-label.yaml'])).code).to.equal(0);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: NS, labels: { tier: 'web' } },
      spec: {
        containers: [
          { name: 'app', image: 'nginx:1.27', imagePullPolicy: 'IfNotPresent' },
          { name: 'log', image: 'fluentbit:3', imagePullPolicy: 'Never' },
        ],
      },
    };
    const file = path.join(dir, 'pod.yaml');
    fs.writeFileSync(file, yaml.dump(pod));
    const evaluated = JSON.parse((await runCli(['eval', '--suite', 'config/samples/team-label.yaml', '--object', file])).stdout);
    expect(evaluated.webhooks.every((w: { called: boolean; review?: { response: { patchType?: string } } }) => w.called && w.review?.response.patchType === 'JSONPatch')).to.equal(true);

    const stored = await eventually(
      async () => {
        const answer = await rawRequest('POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod);
        if (answer.status !== 201 || !(answer.body.metadata as { labels?: Record<string, string> }).labels?.team) throw new Error(`not mutated yet: ${answer.status}`);
        return answer.body as unknown as typeof pod;
      },
      { what: 'the pod mutations to apply' },
    );
    expect(stored.metadata.labels).to.deep.equal(evaluated.patchedObject.metadata.labels);
    expect(stored.spec.containers.map((c) => c.imagePullPolicy)).to.deep.equal(evaluated.patchedObject.spec.containers.map((c: { imagePullPolicy: string }) => c.imagePullPolicy));
  });

  it("eval's warnings are the API server's Warning headers", async function () {
    const suiteFile = path.join(dir, 'warn.yaml');
    fs.writeFileSync(suiteFile, yaml.dump(WARN_SUITE));
    expect((await kubectl(['apply', '-f', suiteFile])).code).to.equal(0);
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'old-style', namespace: NS, labels: { 'portcullis-test': 'cli' } }, data: { legacy: 'x' } };
    const file = path.join(dir, 'configmap.yaml');
    fs.writeFileSync(file, yaml.dump(configMap));
    const evaluated = JSON.parse((await runCli(['eval', '--suite', suiteFile, '--object', file])).stdout);
    const warnings = evaluated.webhooks[0].review.response.warnings;
    expect(warnings).to.deep.equal(['key legacy is deprecated in old-style']);

    const server = await eventually(
      async () => {
        const answer = await rawRequest('POST', `/api/v1/namespaces/${NS}/configmaps?dryRun=All`, configMap);
        if (answer.warnings.length === 0) throw new Error('no warning yet');
        return answer;
      },
      { what: 'the warning' },
    );
    expect(server.status).to.equal(201);
    expect(server.warnings).to.deep.equal(warnings);
  });
});
