/**
 * Params of a kind other than ConfigMap, with the operator running as its own ServiceAccount
 * (a TokenRequest token, RBAC from deploy/): a suite whose params kind is a CRD is Ready=False
 * while the operator may not read that kind, its condition naming the missing permission and the
 * aggregation label; once a cluster admin applies config/samples/params-rbac.yaml (a ClusterRole
 * aggregated into deploy/'s portcullis-operator-params) it becomes Ready and judges with them.
 */
import { expect } from 'chai';
import { cluster, kubectl, operatorKubeConfig, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { condition, createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { deployment, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, deleteIfExists } from '../../src/apiserver/client.ts';

const NS = 'params-rbac-e2e';
const SUITE = 'params-crd';
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NAMESPACE}:portcullis-operator`;
const TOKEN_GUARD_BINDING = 'portcullis-operator-token-guard';

/** The params kind of config/samples/params-rbac.yaml: a CRD of the cluster's own. */
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'replicalimits.policy.example.com' },
  spec: {
    group: 'policy.example.com',
    scope: 'Namespaced',
    names: { kind: 'ReplicaLimit', plural: 'replicalimits', singular: 'replicalimit', listKind: 'ReplicaLimitList' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { max: { type: 'integer' } } } } } } }],
  },
};

describe('params of a CRD kind, read by the operator once a cluster admin grants it (aggregated ClusterRole)', function () {
  let operator: Operator | undefined;
  let guardWasApplied = false;

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    // The local mode of the operator serves through ExternalName Services, which deploy/'s token
    // guard forbids its ServiceAccount (cluster mode makes ClusterIP Services, which loopback
    // cannot reach): the guard's binding is lifted for this test and put back after it.
    const lifted = await kubectl(['delete', 'validatingadmissionpolicybinding', TOKEN_GUARD_BINDING, '--ignore-not-found']);
    expect(lifted.code, lifted.stderr).to.equal(0);
    guardWasApplied = lifted.stdout.includes('deleted');
    // The API server drops a deleted binding from its admission a moment later (it refreshes its
    // compiled policies on a period): until then the operator's first Service would be refused.
    await eventually(
      async () => {
        const probe = await kubectl(['create', 'service', 'externalname', 'portcullis-guard-lifted', '--external-name', 'localhost', '-n', OPERATOR_NAMESPACE, '--dry-run=server', '--as', OPERATOR_USER]);
        if (probe.code !== 0) throw new Error(probe.stderr);
      },
      { what: "the API server to drop the token guard's binding" },
    );

    await apply(cluster().kube, CRD);
    await eventually(
      async () => {
        const listed = await kubectl(['get', 'replicalimits.policy.example.com', '-A']);
        if (listed.code !== 0) throw new Error(listed.stderr);
      },
      { what: 'the ReplicaLimit CRD to be served' },
    );
    await ensureNamespace(NS);
    await apply(cluster().kube, { apiVersion: 'policy.example.com/v1', kind: 'ReplicaLimit', metadata: { name: 'limits', namespace: NS }, spec: { max: 2 } });

    operator = await startTestOperator({}, {}, await operatorKubeConfig());
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.stop();
    await kubectl(['delete', '-f', 'config/samples/params-rbac.yaml', '--ignore-not-found']);
    await deleteIfExists(cluster().kube, CRD);
    await cluster()
      .kube.core.deleteNamespace({ name: NS })
      .catch(() => undefined);
    if (guardWasApplied) {
      const restored = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/04-token-guard.yaml']);
      expect(restored.code, restored.stderr).to.equal(0);
    }
  });

  it('is Ready=False, naming the permission the operator lacks, until the sample ClusterRole is applied; then Ready and judging with those params', async function () {
    expect((await kubectl(['auth', 'can-i', 'list', 'replicalimits.policy.example.com', '--as', OPERATOR_USER])).stdout.trim()).to.equal('no');
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'replica-limit',
          type: 'Validating',
          failurePolicy: 'Fail',
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
          params: { apiVersion: 'policy.example.com/v1', kind: 'ReplicaLimit', namespace: NS, name: 'limits' },
          validations: [{ expression: 'object.spec.replicas <= params.spec.max', messageExpression: "'replicas must be no greater than ' + string(params.spec.max)" }],
        },
      ],
    });

    const waiting = await waitForCondition(SUITE, 'Ready', 'False');
    const ready = condition(waiting, 'Ready')!;
    expect(ready.reason, ready.message).to.equal('ParamsUnavailable');
    expect(ready.message).to.contain('webhook replica-limit');
    expect(ready.message).to.contain(`User "${OPERATOR_USER}" cannot list resource "replicalimits" in API group "policy.example.com"`);
    expect(ready.message).to.contain('admission.portcullis.dev/aggregate-to-params: "true"');
    // Registered all the same: with failurePolicy Fail, a Deployment it matches is refused for want of its params.
    expect(condition(waiting, 'WebhooksRegistered')?.status).to.equal('True');
    const meanwhile = await eventually(async () => (await refusal(() => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('meanwhile', 1) }))) ?? Promise.reject(new Error('admitted')), {
      what: 'the webhook to refuse for want of its params',
    });
    expect(meanwhile.message).to.contain('params of webhook replica-limit are not available');

    const granted = await kubectl(['apply', '-f', 'config/samples/params-rbac.yaml']);
    expect(granted.code, granted.stderr).to.equal(0);
    await eventually(
      async () => {
        const answer = (await kubectl(['auth', 'can-i', 'list', 'replicalimits.policy.example.com', '--as', OPERATOR_USER])).stdout.trim();
        if (answer !== 'yes') throw new Error(`can-i list: ${answer}`);
      },
      { what: 'the controller manager to aggregate the sample role into portcullis-operator-params' },
    );
    const served = await waitForCondition(SUITE, 'Ready', 'True');
    expect(condition(served, 'Ready')?.reason).to.equal('Ready');

    const denied = await eventually(async () => (await refusal(() => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('three', 3) }))) ?? Promise.reject(new Error('admitted')), { what: 'the denial' });
    expect(denied.message).to.contain('replicas must be no greater than 2');
    const two = await cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment('two', 2) });
    expect(two.spec?.replicas).to.equal(2);
  });
});
