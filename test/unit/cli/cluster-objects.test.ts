/**
 * The `portcullis` command knows what the cluster knows: AdmissionPolicies are validated, tested
 * and evaluated beside suites; files with other objects (RBAC, ConfigMaps, Namespaces) are read,
 * their suites and policies checked and the rest named as skipped; a request carries the options
 * the API server fills for its operation and the resource the API server serves its kind as (the
 * built-in kinds' real plurals, a CRD's `spec.names.plural` given on the command line).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { REPO, runCli } from '../../support/cli.ts';
import { OfflineCluster, requestOf } from '../../../src/cli/evaluate.ts';

const SAMPLES = path.join(REPO, 'config/samples');

const deployment = (namespace: string, replicas: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace },
  spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } } },
});

const MICE_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: mice.zoo.example.com }
spec:
  group: zoo.example.com
  scope: Namespaced
  names: { kind: Mouse, plural: mice, singular: mouse, listKind: MouseList }
  versions: [{ name: v1, served: true, storage: true, schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } } }]
`;

describe('portcullis (the command): what the cluster knows', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-cli-objects-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('validates every file of config/samples with exit 0, naming each object it skipped', async function () {
    const files = fs
      .readdirSync(SAMPLES)
      .filter((name) => /\.(ya?ml|json)$/.test(name))
      .sort()
      .map((name) => `config/samples/${name}`);
    expect(files).to.include.members(['config/samples/params-rbac.yaml', 'config/samples/team-policies.yaml']);
    const result = await runCli(['validate', ...files]);
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(0);
    const lines = result.stdout.trimEnd().split('\n');
    for (const line of [
      'config/samples/params-rbac.yaml: ClusterRole/portcullis-params-replicalimits skipped: not an AdmissionSuite or AdmissionPolicy',
      'config/samples/params-rbac.yaml: no AdmissionSuite or AdmissionPolicy',
      'config/samples/team-limits.yaml: Namespace/shop skipped: not an AdmissionSuite or AdmissionPolicy',
      'config/samples/team-limits.yaml: ConfigMap/replica-limits skipped: not an AdmissionSuite or AdmissionPolicy',
      'config/samples/team-policies.yaml: AdmissionPolicy "default-team-label" in namespace default is valid',
      'config/samples/team-policies.yaml: AdmissionPolicy "replica-limit" in namespace default is valid',
      'config/samples/replica-limit.yaml: AdmissionSuite "replica-guard" is valid',
    ])
      expect(lines).to.include(line);
    // one line per document of every file: valid, or skipped, and nothing refused
    expect(lines.filter((l) => l.endsWith(' is valid')).length).to.be.at.least(files.length - 1);
    expect(
      lines.every((l) => / is valid$| skipped: not an AdmissionSuite or AdmissionPolicy$|: no AdmissionSuite or AdmissionPolicy$/.test(l)),
      result.stdout,
    ).to.equal(true);
  });

  it("validate refuses an AdmissionPolicy that cannot work with the operator's words and exit 1; --namespace places the policies that name none", async function () {
    const file = path.join(dir, 'policies.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: v1
kind: ConfigMap
metadata: { name: limits, namespace: shop }
data: { max: "3" }
---
apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionPolicy
metadata: { name: not-bool, namespace: shop }
spec:
  type: Validating
  rules: [{ operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps] }]
  validations: [{ expression: "object.metadata.name" }]
`,
    );
    const refused = await runCli(['validate', file]);
    expect(refused.code, refused.stderr).to.equal(1);
    expect(refused.stdout).to.contain(`${file}: ConfigMap/limits skipped: not an AdmissionSuite or AdmissionPolicy\n`);
    expect(refused.stdout).to.match(/: AdmissionPolicy "not-bool" is invalid: spec\.validations\[0\]\.expression: /);

    // The samples' policies name no namespace: in kube-system they could never be served, as applying them there says.
    const protectedNamespace = await runCli(['validate', '--namespace', 'kube-system', 'config/samples/team-policies.yaml']);
    expect(protectedNamespace.code).to.equal(1);
    expect(protectedNamespace.stdout).to.contain('AdmissionPolicy "replica-limit" is invalid: metadata.namespace: no policy is served in kube-system');
    const shop = await runCli(['validate', '--namespace', 'shop', 'config/samples/team-policies.yaml']);
    expect(shop.code, shop.stdout).to.equal(0);
    expect(shop.stdout).to.contain('AdmissionPolicy "replica-limit" in namespace shop is valid');
  });

  it("eval runs AdmissionPolicies in the request's namespace before the suites, as the API server calls them", async function () {
    const object = path.join(dir, 'deployment.yaml');
    fs.writeFileSync(object, JSON.stringify(deployment('shop', 4)));
    const result = await runCli(['eval', '--suite', 'config/samples/team-policies.yaml', '--suite', 'config/samples/replica-limit.yaml', '--object', object]);
    expect(result.code, result.stderr).to.equal(0);
    const output = JSON.parse(result.stdout);
    expect(output.webhooks.map((w: { name: string; type: string; called: boolean; policies?: string[] }) => [w.name, w.type, w.called, w.policies])).to.deep.equal([
      ['admissionpolicies.admission.portcullis.dev', 'Mutating', true, ['default-team-label']],
      ['admissionpolicies.admission.portcullis.dev', 'Validating', true, ['replica-limit']],
      ['replica-limit.replica-guard.admission.portcullis.dev', 'Validating', true, undefined],
    ]);
    expect(output.allowed).to.equal(false);
    expect(output.message).to.equal('admission webhook "admissionpolicies.admission.portcullis.dev" denied the request: AdmissionPolicy replica-limit: at most 3 replicas in shop, not 4');
    expect(output.patchedObject.metadata.labels).to.deep.equal({ team: 'shop' });
  });

  it("test runs the test file of the samples' AdmissionPolicies", async function () {
    const result = await runCli(['test', 'config/samples/tests/team-policies.portcullis-test.yaml']);
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(0);
    expect(result.stdout).to.match(/^PASS\s+\S+team-policies\.portcullis-test\.yaml\s+four replicas are refused, by name\s+Validating\s+denied 422: AdmissionPolicy replica-limit/m);
    expect(result.stdout).to.match(/\n9 of 9 expectations met\n$/);
  });

  it('a request carries the options the API server fills for its operation', function () {
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'shop' } };
    expect(requestOf({ object: configMap }).options).to.deep.equal({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' });
    expect(requestOf({ object: configMap, oldObject: configMap }).options).to.deep.equal({ kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' });
    expect(requestOf({ oldObject: configMap }).options).to.deep.equal({ kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1' });
    expect(requestOf({ object: configMap, dryRun: true }).options).to.deep.equal({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', dryRun: ['All'] });
    // what a case gives is kept
    const given = { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict' };
    expect(requestOf({ object: configMap, options: given }).options).to.deep.equal(given);
  });

  it('a request names the resource of a built-in kind as the API server serves it', function () {
    const resource = (apiVersion: string, kind: string) => requestOf({ object: { apiVersion, kind, metadata: { name: 'x', namespace: 'shop' } } }).resource;
    expect(resource('v1', 'Endpoints')).to.deep.equal({ group: '', version: 'v1', resource: 'endpoints' });
    expect(resource('networking.k8s.io/v1', 'Ingress').resource).to.equal('ingresses');
    expect(resource('networking.k8s.io/v1', 'NetworkPolicy').resource).to.equal('networkpolicies');
    expect(resource('scheduling.k8s.io/v1', 'PriorityClass').resource).to.equal('priorityclasses');
    expect(resource('storage.k8s.io/v1', 'CSIStorageCapacity').resource).to.equal('csistoragecapacities');
    expect(resource('v1', 'ComponentStatus').resource).to.equal('componentstatuses');
    expect(resource('admission.portcullis.dev/v1alpha1', 'AdmissionPolicy').resource).to.equal('admissionpolicies');
  });

  it("a CRD among the objects names its kind's resource (spec.names.plural), not a guess", async function () {
    const crd = (await import('js-yaml')).load(MICE_CRD) as Record<string, unknown>;
    const mouse = { apiVersion: 'zoo.example.com/v1', kind: 'Mouse', metadata: { name: 'm', namespace: 'shop' } };
    const evaluation = await new OfflineCluster([], [crd]).evaluate({ object: mouse });
    expect(evaluation.request.resource).to.deep.equal({ group: 'zoo.example.com', version: 'v1', resource: 'mice' });
    expect(evaluation.request.requestResource?.resource).to.equal('mice');
  });

  it("a CRD file given on the command line, and request.options, reach the suites' rules and expressions", async function () {
    fs.writeFileSync(path.join(dir, 'mice-crd.yaml'), MICE_CRD);
    fs.writeFileSync(
      path.join(dir, 'suite.yaml'),
      `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: zoo }
spec:
  webhooks:
    - name: small-mice
      type: Validating
      rules: [{ operations: [CREATE], apiGroups: [zoo.example.com], apiVersions: [v1], resources: [mice] }]
      validations: [{ expression: "object.spec.size <= 3", messageExpression: "'a ' + request.resource.resource + ' of size ' + string(object.spec.size) + ' (' + request.options.kind + ')'" }]
    - name: endpoints-deletes
      type: Validating
      rules: [{ operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [endpoints] }]
      validations: [{ expression: "false", messageExpression: "'no ' + request.options.kind + ' ' + request.options.apiVersion + ' for ' + request.resource.resource" }]
`,
    );
    const test = path.join(dir, 'zoo.portcullis-test.yaml');
    fs.writeFileSync(
      test,
      `suites: [suite.yaml]
cases:
  - name: a big mouse
    object: { apiVersion: zoo.example.com/v1, kind: Mouse, metadata: { name: m, namespace: shop }, spec: { size: 5 } }
    expect:
      webhooks:
        small-mice: { allowed: false, message: a mice of size 5 (CreateOptions) }
  - name: deleting Endpoints
    oldObject: { apiVersion: v1, kind: Endpoints, metadata: { name: e, namespace: shop } }
    expect:
      webhooks:
        endpoints-deletes: { allowed: false, message: no DeleteOptions meta.k8s.io/v1 for endpoints }
`,
    );
    const result = await runCli(['test', test, path.join(dir, 'mice-crd.yaml')]);
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(0);
    expect(result.stdout).to.match(/\n2 of 2 expectations met\n$/);

    // eval: the CRD given with --objects
    const mouse = path.join(dir, 'mouse.yaml');
    fs.writeFileSync(mouse, 'apiVersion: zoo.example.com/v1\nkind: Mouse\nmetadata: { name: m, namespace: shop }\nspec: { size: 4 }\n');
    const evaluated = await runCli(['eval', '--suite', path.join(dir, 'suite.yaml'), '--objects', path.join(dir, 'mice-crd.yaml'), '--object', mouse]);
    expect(evaluated.code, evaluated.stderr).to.equal(0);
    expect(JSON.parse(evaluated.stdout).message).to.equal('admission webhook "small-mice.zoo.admission.portcullis.dev" denied the request: a mice of size 4 (CreateOptions)');
  });
});
