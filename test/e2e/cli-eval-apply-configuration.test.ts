/**
 * `portcullis eval --kubeconfig` merges an ApplyConfiguration mutation by the kind's schema the
 * cluster publishes (read from the harness's API server), a suite's and a team's AdmissionPolicy's
 * alike: a Deployment's containers merged by name, as the API server merges them, with no
 * warning; without --kubeconfig the same mutation replaces the list whole and says so. Owns these
 * checks only (no operator is started, nothing is written to the cluster); the merge's comparison
 * with the API server's own MAP is map-apply-differential.test.ts'.
 */
import path from 'node:path';
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { runCli } from '../support/cli.ts';
import { tempFolder } from '../support/temp-files.ts';

const SIDECAR = "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'sidecar', image: 'busybox'}]}}}}";
const mutation = `      mutations:
        - patchType: ApplyConfiguration
          applyConfiguration:
            expression: ${JSON.stringify(SIDECAR)}
`;
const deployments = '[{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }]';
const SUITE = `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionSuite
metadata: { name: sidecar }
spec:
  webhooks:
    - name: sidecar
      type: Mutating
      rules: ${deployments}
${mutation}`;
const POLICY = `apiVersion: admission.portcullis.dev/v1alpha1
kind: AdmissionPolicy
metadata: { name: sidecar, namespace: shop }
spec:
  type: Mutating
  rules: ${deployments}
${mutation.replace(/^ {4}/gm, '')}`;
const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: shop }
spec:
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: app, image: nginx }]
`;

describe('portcullis eval --kubeconfig: ApplyConfiguration mutations merged by the cluster’s schemas', function () {
  let dir: string;
  before(() => {
    dir = tempFolder('portcullis-eval-apply-', { 'suite.yaml': SUITE, 'policy.yaml': POLICY, 'deployment.yaml': DEPLOYMENT });
  });

  const evaluate = async (file: string, ...extra: string[]) => {
    const result = await runCli(['eval', '--suite', path.join(dir, file), '--object', path.join(dir, 'deployment.yaml'), ...extra]);
    expect(result.code, result.stderr).to.equal(0);
    const answer = JSON.parse(result.stdout) as { patchedObject: { spec: { template: { spec: { containers: { name: string }[] } } } } };
    return { names: answer.patchedObject.spec.template.spec.containers.map((c) => c.name), text: result.stdout };
  };

  for (const file of ['suite.yaml', 'policy.yaml']) {
    it(`${file === 'suite.yaml' ? "a suite's" : "a team's AdmissionPolicy's"}: containers merged by name with the cluster's schema, replaced whole without it (with a warning)`, async function () {
      const merged = await evaluate(file, '--kubeconfig', cluster().controlPlane.kubeconfigPath);
      expect(merged.names).to.deep.equal(['app', 'sidecar']);
      expect(merged.text).to.not.contain('no schema of Deployment is known here');
      const offline = await evaluate(file);
      expect(offline.names).to.deep.equal(['sidecar']);
      expect(offline.text).to.contain('no schema of Deployment is known here');
    });
  }
});
