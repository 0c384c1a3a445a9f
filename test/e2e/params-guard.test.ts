/**
 * deploy/'s params guard, with no operator answering the suite-validation webhook (which fails
 * open): the API server itself refuses a suite whose author may not read the ConfigMap it names as
 * params, admits it once they may, and refuses every write by someone without that access, even one
 * that leaves the params alone (it could change what shows them); params by selector need `list`
 * (in all namespaces when unset). (Other kinds and the recorded author: params-author.test.ts.)
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { createConfigMap, ensureNamespace } from '../support/objects.ts';
import { deleteSuite, getSuite } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { expectAppliedAsServed } from '../support/kube-versions.ts';
import { apply, deleteIfExists } from '../../src/apiserver/client.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';

const NS = 'params-guard-e2e';
const SUITE = 'params-guard';

function manifest(params: Record<string, unknown>, timeoutSeconds = 5): string {
  return JSON.stringify({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: SUITE },
    spec: {
      timeoutSeconds,
      webhooks: [
        {
          name: 'show',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          params,
          validations: [{ expression: 'false', messageExpression: 'string(params.data)' }],
        },
      ],
    },
  });
}

async function grant(user: string, rules: object[], namespace?: string): Promise<void> {
  const kind = namespace ? 'Role' : 'ClusterRole';
  const name = `params-guard-${user}-${namespace ?? 'cluster'}`;
  await apply(cluster().kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name, ...(namespace ? { namespace } : {}) }, rules });
  await apply(cluster().kube, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: `${kind}Binding`,
    metadata: { name, ...(namespace ? { namespace } : {}) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
}

describe("deploy/'s params guard: the API server checks a suite author's access to ConfigMap params", function () {
  before(async function () {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/06-suite-params-guard.yaml']);
    // Before Kubernetes 1.36 all but the author's MutatingAdmissionPolicy and its binding: the checks below hold without them.
    await expectAppliedAsServed(applied, 2);
    // No operator answers: the suite-validation webhook is not there to refuse anything.
    await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: SUITE_VALIDATION.configuration } });
    await ensureNamespace(NS);
    await createConfigMap(NS, 'secret-limits', { max: '3' });
    for (const user of ['eve', 'bob']) await grant(user, [{ apiGroups: ['admission.portcullis.dev'], resources: ['admissionsuites'], verbs: ['get', 'list', 'create', 'update', 'patch'] }]);
  });

  after(async function () {
    await deleteSuite(SUITE);
  });

  it('refuses the suite while its author may not read the ConfigMap, and admits it once they may', async function () {
    const params = { apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'secret-limits' };
    // The policy takes a moment to load after it is created: wait for its first refusal.
    const refused = await eventually(
      async () => {
        const result = await kubectl(['create', '--as=eve', '-f', '-'], manifest(params));
        if (result.code === 0) {
          await deleteSuite(SUITE);
          throw new Error('admitted: the guard is not loaded yet');
        }
        // The author's MutatingAdmissionPolicy answers ServiceUnavailable until the API server has the CRD's schema.
        if (!result.stderr.includes('portcullis-suite-params-guard')) throw new Error(result.stderr);
        return result;
      },
      { what: 'the params guard to refuse' },
    );
    expect(refused.stderr).to.contain('portcullis-suite-params-guard');
    expect(refused.stderr).to.contain(`user "eve" may not get ConfigMap (v1) secret-limits in namespace ${NS}`);
    expect(await getSuite(SUITE)).to.equal(undefined);

    await grant('eve', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }], NS);
    const admitted = await eventually(
      async () => {
        const result = await kubectl(['create', '--as=eve', '-f', '-'], manifest(params));
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: 'the suite to be admitted once eve may read the ConfigMap' },
    );
    expect(admitted.stdout).to.contain(SUITE);
  });

  it('refuses an edit by someone without that access, even one that leaves the params alone, and one that points them elsewhere', async function () {
    const edit = await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=bob', '--as=bob', '-f', '-'], manifest({ apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'secret-limits' }, 7));
    expect(edit.code).to.not.equal(0);
    expect(edit.stderr).to.contain(`user "bob" may not get ConfigMap (v1) secret-limits in namespace ${NS}`);
    expect((await getSuite(SUITE))!.spec.timeoutSeconds).to.equal(5);
    const repoint = await kubectl(
      ['apply', '--server-side', '--force-conflicts', '--field-manager=bob', '--as=bob', '-f', '-'],
      manifest({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system', name: 'extension-apiserver-authentication' }, 7),
    );
    expect(repoint.code).to.not.equal(0);
    expect(repoint.stderr).to.contain('user "bob" may not get ConfigMap (v1) extension-apiserver-authentication in namespace kube-system');
  });

  it('asks list for params by selector: in all namespaces when the namespace is unset, else in it', async function () {
    const selector = { apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { tier: 'gold' } } };
    // Replaced whole: a server-side apply would merge its selector with the name already there.
    const refused = await kubectl(['replace', '--as=bob', '-f', '-'], manifest(selector, 7));
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr, refused.stderr).to.contain('user "bob" may not list configmaps (v1) in all namespaces');
    const inNamespace = await kubectl(['replace', '--as=eve', '-f', '-'], manifest({ ...selector, namespace: NS }, 7));
    expect(inNamespace.code, inNamespace.stderr).to.equal(0);
    expect((await getSuite(SUITE))!.spec.webhooks[0]!.params).to.deep.equal({ ...selector, namespace: NS });
  });
});
