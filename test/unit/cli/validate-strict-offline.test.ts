/**
 * `portcullis validate --strict` with no cluster: type-checked against the built-in kinds' schemas
 * bundled in schemas/ (per --kube-version), a field a Pod does not have refused, a correct
 * expression accepted, a kind with no schema an error naming it, and a bundle for every Kubernetes
 * minor docs/install.md supports. Owns these offline checks only; must not start a cluster (the
 * agreement with a real API server's schemas: test/e2e/validate-strict-bundled.test.ts).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import { runCli, scratchFiles } from '../../support/cli.ts';

/** The line (from 1) of `file` where `text` first stands. */
function yamlLine(file: string, text: string): number {
  return (
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .findIndex((l) => l.includes(text)) + 1
  );
}

/** Every minor of docs/install.md's supported range ('1.35', '1.36', ...), as users read it there. */
function supportedMinors(): string[] {
  const install = fs.readFileSync(new URL('../../../docs/install.md', import.meta.url), 'utf8');
  const [, from, to] = /\*\*Kubernetes 1\.(\d+) to 1\.(\d+)\*\*/.exec(install) ?? [];
  expect(from, 'docs/install.md states the supported range as **Kubernetes 1.X to 1.Y**').to.be.a('string');
  return Array.from({ length: Number(to) - Number(from) + 1 }, (_, i) => `1.${Number(from) + i}`);
}

/** A suite with one webhook for `resource` of `group`/v1 and one validation. */
function suite(expression: string, group = '', resource = 'pods') {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'strict-offline' },
    spec: { webhooks: [{ name: 'pods', type: 'Validating', rules: [{ apiGroups: [group], apiVersions: ['v1'], resources: [resource], operations: ['CREATE'] }], validations: [{ expression }] }] },
  };
}

describe('portcullis validate --strict offline (bundled schemas)', function () {
  this.timeout(60_000);
  const files = scratchFiles('portcullis-strict-');

  // Every supported minor, so a version added to the range without its bundle fails here.
  for (const version of [[], ...supportedMinors().map((minor) => ['--kube-version', minor])]) {
    it(`refuses a field Pods do not have, in cel-go's words with its position, and accepts a correct one ${version.join(' ') || '(the newest)'}`, async function () {
      const wrong = files.write([suite('object.spec.containerz.size() < 5')]);
      const refused = await runCli(['validate', '--strict', ...version, wrong]);
      expect(refused.code, refused.stdout + refused.stderr).to.equal(1);
      expect(refused.stdout).to.contain(`${wrong}: warning: AdmissionSuite "strict-offline": spec.webhooks[0].validations[0].expression: /v1, Kind=Pod: ERROR: <input>:1:12: undefined field 'containerz'`);
      expect(refused.stdout).to.match(
        /document 1: AdmissionSuite "strict-offline" is invalid: spec\.webhooks\[0\]\.validations\[0\]\.expression: type checking failed on every kind the webhook matches \(\/v1, Kind=Pod\): undefined field 'containerz'/,
      );

      const right = files.write([suite('object.spec.containers.all(c, c.image != "")')]);
      const accepted = await runCli(['validate', '--strict', ...version, right]);
      expect(accepted.stdout + accepted.stderr).to.equal(`${right}: AdmissionSuite "strict-offline" is valid\n`);
      expect(accepted.code).to.equal(0);
    });
  }

  it('refuses, naming it, a kind it has no schema for, where without --strict the suite is valid', async function () {
    const file = files.write([suite('object.spec.size > 1', 'example.com', 'widgets')]);
    const loose = await runCli(['validate', file]);
    expect(loose.code, loose.stdout + loose.stderr).to.equal(0);
    const strict = await runCli(['validate', '--strict', file]);
    expect(strict.code, strict.stdout + strict.stderr).to.equal(1);
    // at the line of the rule that names it
    expect(strict.stdout).to.match(
      /:\d+: document 1: AdmissionSuite "strict-offline" is invalid: spec\.webhooks\[0\]\.rules\[0\]: --strict: no schema for resource example\.com\/v1 widgets to type-check against \(the built-in kinds of Kubernetes 1\.37 have none: give --kubeconfig FILE to read a cluster's, its CRDs included\)\n/,
    );
    expect(strict.stdout.split(':')[1]).to.equal(String(yamlLine(file, 'apiGroups')));

    // a params kind alike: its expressions' params would go unchecked
    const withParams = suite('params.spec.max > 1');
    (withParams.spec.webhooks[0] as Record<string, unknown>).params = { apiVersion: 'example.com/v1', kind: 'Limit', name: 'limits' };
    const params = await runCli(['validate', '--strict', files.write([withParams])]);
    expect(params.code, params.stdout + params.stderr).to.equal(1);
    expect(params.stdout).to.contain('is invalid: spec.webhooks[0].params: --strict: no schema for kind example.com/v1 Limit to type-check against');
  });

  it('reads a kind of an older Kubernetes only in its bundle: a field 1.36 added is unknown to 1.35', async function () {
    // Something the 1.35 schema does not know proves the version chosen is the one read.
    const file = files.write([suite('has(object.spec.schedulingGroup)')]);
    const newest = await runCli(['validate', '--strict', '--kube-version', '1.37', file]);
    const middle = await runCli(['validate', '--strict', '--kube-version', '1.36', file]);
    const oldest = await runCli(['validate', '--strict', '--kube-version', '1.35', file]);
    expect(newest.code, newest.stdout).to.equal(0);
    expect(middle.code, middle.stdout).to.equal(0);
    expect(oldest.code, oldest.stdout).to.equal(1);
    expect(oldest.stdout).to.contain(`undefined field 'schedulingGroup'`);
  });

  it('type-checks MutatingAdmissionPolicies v1 from 1.36, which first serves them, and has no schema for them on 1.35', async function () {
    const right = files.write([suite('object.spec.mutations.all(m, m.patchType != "")', 'admissionregistration.k8s.io', 'mutatingadmissionpolicies')]);
    const served = await runCli(['validate', '--strict', '--kube-version', '1.36', right]);
    expect(served.stdout + served.stderr).to.equal(`${right}: AdmissionSuite "strict-offline" is valid\n`);
    expect(served.code).to.equal(0);

    const wrong = files.write([suite('object.spec.mutationz.size() > 0', 'admissionregistration.k8s.io', 'mutatingadmissionpolicies')]);
    const refused = await runCli(['validate', '--strict', '--kube-version', '1.36', wrong]);
    expect(refused.code, refused.stdout + refused.stderr).to.equal(1);
    expect(refused.stdout).to.contain(`undefined field 'mutationz'`);

    const older = await runCli(['validate', '--strict', '--kube-version', '1.35', right]);
    expect(older.code, older.stdout + older.stderr).to.equal(1);
    expect(older.stdout).to.contain('--strict: no schema for resource admissionregistration.k8s.io/v1 mutatingadmissionpolicies to type-check against (the built-in kinds of Kubernetes 1.35 have none');
  });

  it('says which versions are bundled when asked for another: every minor docs/install.md supports; and refuses --kube-version with --kubeconfig', async function () {
    const file = files.write([suite('true')]);
    const other = await runCli(['validate', '--strict', '--kube-version', '1.20', file]);
    expect(other.code).to.equal(2);
    // The list a user is shown, held to the supported range, so a supported minor's bundle cannot be forgotten.
    expect(other.stderr).to.contain(`--kube-version 1.20: schemas are bundled for Kubernetes ${supportedMinors().join(', ')}\n`);
    const both = await runCli(['validate', '--strict', '--kube-version', '1.37', '--kubeconfig', file, file]);
    expect(both.code).to.equal(2);
    expect(both.stderr).to.contain('not both');
  });
});
