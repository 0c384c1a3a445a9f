/**
 * `portcullis validate --strict` offline (the schemas bundled in schemas/) and against the run's real
 * kube-apiserver (`--kubeconfig`) give the same answer for a table of expressions over built-in
 * kinds: the same warnings, refusals and exit code. Owns that agreement only; must not change the
 * cluster (the offline checks alone: test/unit/cli/validate-strict-offline.test.ts).
 */
import { expect } from 'chai';
import { cluster, KUBE_VERSION } from '../support/cluster.ts';
import { runCli, scratchFiles } from '../support/cli.ts';
import { bundledKubeVersions } from '../../src/apiserver/bundled-schemas.ts';

const POD = { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };
const DEPLOYMENT = { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] };
const CONFIGMAP = { apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };
const JOB = { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs', 'cronjobs'] };
const INGRESS = { apiGroups: ['networking.k8s.io'], apiVersions: ['v1'], resources: ['ingresses'] };

/** [rule, expression]: right ones, a misspelled field, wrong types, an overload that does not exist, a field on some kinds only. */
const TABLE: [typeof POD, string][] = [
  [POD, 'object.spec.containers.all(c, c.image.startsWith("registry.example/"))'],
  [POD, 'object.spec.containerz.size() < 5'],
  [POD, 'object.spec.containers[0].resources.limits["memory"] == "1Gi"'],
  [POD, 'object.spec.hostNetwork == "true"'],
  [POD, 'object.metadata.labels.exists(k, k == "team")'],
  [POD, 'object.spec.securityContext.runAsUser + "x" == 1'],
  [POD, 'object.spec.containers.map(c, c.ports.size()).sum() > 0'],
  [DEPLOYMENT, 'object.spec.replicas <= 5'],
  [DEPLOYMENT, 'object.replicas <= 5'],
  [DEPLOYMENT, 'object.spec.template.spec.containers.size() > 0'],
  [DEPLOYMENT, 'object.spec.strategy.rollingUpdate.maxSurge == 1'],
  [CONFIGMAP, 'object.data.size() < 10'],
  [CONFIGMAP, 'object.spec.replicas == 1'],
  [CONFIGMAP, 'size(object.binaryData) > 0 && object.immutable'],
  [JOB, 'object.spec.backoffLimit < 3'],
  [JOB, 'has(object.metadata.ownerReferences)'],
  [INGRESS, 'object.spec.rules.all(r, r.host.endsWith(".example.com"))'],
  [INGRESS, 'object.spec.tls.all(t, t.hosts.size() > "1")'],
];

describe("validate --strict: the bundled schemas answer as the API server's", function () {
  const files = scratchFiles('portcullis-strict-e2e-');
  // The run's control plane is the newest bundled unless PORTCULLIS_KUBE_VERSION says otherwise.
  const minor = KUBE_VERSION ?? bundledKubeVersions().at(-1)!;

  it(`gives the same warnings, refusals and exit code offline (--kube-version ${minor}) as with --kubeconfig, for ${TABLE.length} expressions`, async function () {
    const suites = TABLE.map(([rule, expression], i) => ({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: `strict-${i}` },
      spec: { webhooks: [{ name: 'w', type: 'Validating', rules: [{ ...rule, operations: ['CREATE'] }], validations: [{ expression }] }] },
    }));
    let refused = 0;
    for (const suite of suites) {
      const file = files.write([suite]);
      const offline = await runCli(['validate', '--strict', '--kube-version', minor, file]);
      const online = await runCli(['validate', '--strict', '--kubeconfig', cluster().controlPlane.kubeconfigPath, file]);
      const expression = suite.spec.webhooks[0]!.validations[0]!.expression;
      expect(offline.stdout + offline.stderr, expression).to.equal(online.stdout + online.stderr);
      expect(offline.code, expression).to.equal(online.code);
      if (online.code === 1) refused++;
    }
    // The table is only a check if it holds both answers.
    expect(refused).to.be.within(3, TABLE.length - 3);
  });
});
