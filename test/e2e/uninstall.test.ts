/**
 * Uninstall with the operator stopped: `kubectl delete -f deploy/` leaves no Portcullis webhook
 * configuration, Secret or Service behind (garbage collection through owner references, the CA
 * with its namespace), and does not hang. Runs last; it reinstalls the CRD for anything after it.
 */
import { expect } from 'chai';
import { cluster, kubectl, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { expectAppliedAsServed } from '../support/kube-versions.ts';
import { installForLocalRun } from '../../src/local/install.ts';
import { isNotFound } from '../../src/apiserver/client.ts';

const managed = 'app.kubernetes.io/managed-by=portcullis';

describe('uninstall: kubectl delete -f deploy/ with the operator stopped', function () {
  after(async function () {
    await installForLocalRun(cluster().kubeConfig, OPERATOR_NAMESPACE);
  });

  it('leaves nothing of ours behind and does not hang', async function () {
    this.timeout(600_000);
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/']);
    await expectAppliedAsServed(applied, 4);
    const operator = await startTestOperator();
    for (const [name, type] of [
      ['leftover-validating', 'Validating'],
      ['leftover-mutating', 'Mutating'],
    ] as const) {
      await createSuite(name, {
        failurePolicy: 'Fail',
        webhooks: [
          {
            name: 'w',
            type,
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            objectSelector: { matchLabels: { 'portcullis-test': 'uninstall' } },
            ...(type === 'Validating' ? { validations: [{ expression: 'true' }] } : { mutations: [{ patch: [{ op: 'add', path: '/data', value: {} }] }] }),
          },
        ],
      });
      await waitForCondition(name, 'Ready', 'True');
    }
    await operator.stop();

    const { admissionregistration, kube } = cluster();
    expect((await admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managed })).items).to.not.have.length(0);

    const started = Date.now();
    const deleted = await kubectl(['delete', '-f', 'deploy/', '--timeout=150s']);
    // Before Kubernetes 1.36 kubectl says it cannot delete the kind it could not make, and deletes the rest.
    await expectAppliedAsServed(deleted, 4);
    expect(Date.now() - started).to.be.below(150_000);

    await eventually(
      async () => {
        const left = [...(await admissionregistration.listValidatingWebhookConfiguration({ labelSelector: managed })).items, ...(await admissionregistration.listMutatingWebhookConfiguration({ labelSelector: managed })).items].map(
          (c) => c.metadata?.name,
        );
        if (left.length) throw new Error(`configurations left: ${left.join(', ')}`);
        try {
          await kube.core.readNamespace({ name: OPERATOR_NAMESPACE });
          throw new Error('the operator namespace (and so the CA Secret) is still there');
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      },
      // A ceiling only: the configurations go by garbage collection once their suites are gone with the CRD.
      { what: 'everything of ours to be gone', timeoutMs: 240_000, intervalMs: 1000 },
    );
    const secrets = await kube.core.listSecretForAllNamespaces({ labelSelector: managed });
    const services = await kube.core.listServiceForAllNamespaces({ labelSelector: managed });
    expect(secrets.items.map((s) => s.metadata?.name)).to.deep.equal([]);
    expect(services.items.map((s) => s.metadata?.name)).to.deep.equal([]);
  });
});
