/**
 * `portcullis compile` through the real API server: the objects it prints for a suite's webhooks,
 * applied with kubectl and no operator anywhere, deny what the suite denies, in the suite's words;
 * what stays a webhook is named with why; a Native webhook that cannot be is refused as on apply.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cluster, kubectl } from '../support/cluster.ts';
import { runCli } from '../support/cli.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { deleteIfExists, type KubeObject } from '../../src/apiserver/client.ts';

const NS = 'cli-compile';
const suite = (enforcement: string, extraWebhooks: object[] = []) => ({
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: 'compiled' },
  spec: {
    enforcement,
    webhooks: [
      {
        name: 'no-forbidden',
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
        validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", messageExpression: "'no forbidden key in ' + object.metadata.name" }],
      },
      ...extraWebhooks,
    ],
  },
});
const handled = { name: 'labels', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }], handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } } };

describe('portcullis compile: the native objects a suite becomes, to commit instead of it', function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-compile-'));
  const write = (name: string, object: object) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify(object));
    return file;
  };
  let applied: KubeObject[] = [];

  after(async function () {
    for (const object of applied.reverse()) await deleteIfExists(cluster().kube, object as Parameters<typeof deleteIfExists>[1]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prints a policy and binding that, applied with no operator, deny as the suite does; names what stays a webhook', async function () {
    await ensureNamespace(NS);
    const result = await runCli(['compile', '-o', 'json', write('auto.json', suite('Auto', [handled]))]);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stderr).to.equal('portcullis: compiled/labels: stays a webhook: handler: the built-in handler RequiredLabels runs in the operator; a native policy holds only CEL\n');
    applied = (JSON.parse(result.stdout) as { items: KubeObject[] }).items;
    expect(applied.map((o) => `${o.kind} ${o.metadata?.name}`)).to.deep.equal(['ValidatingAdmissionPolicy no-forbidden.compiled.admission.portcullis.dev', 'ValidatingAdmissionPolicyBinding no-forbidden.compiled.admission.portcullis.dev']);
    const file = path.join(dir, 'native.json');
    fs.writeFileSync(file, result.stdout);
    const kubectlApply = await kubectl(['apply', '-f', file]);
    expect(kubectlApply.code, kubectlApply.stderr).to.equal(0);
    const create = (name: string, data: Record<string, string>) => refusal(() => cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name }, data } }));
    let n = 0;
    const denied = await eventually(async () => (await create(`bad-${++n}`, { forbidden: 'x' })) ?? Promise.reject(new Error('admitted')), { what: 'the compiled policy to deny' });
    const name = 'no-forbidden.compiled.admission.portcullis.dev';
    expect(denied.message).to.equal(`configmaps "bad-${n}" is forbidden: ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: no forbidden key in bad-${n}`);
    expect(await create('good', { fine: 'x' })).to.equal(undefined);
  });

  it('refuses a suite whose Native webhook cannot be native, as applying it would', async function () {
    const result = await runCli(['compile', write('native.json', suite('Native', [handled]))]);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.contain('spec.enforcement: Invalid value: "Native": webhook labels cannot be enforced natively (handler: the built-in handler RequiredLabels runs in the operator');
  });
});
