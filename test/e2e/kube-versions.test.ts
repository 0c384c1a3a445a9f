/**
 * The AdmissionPolicy guard (deploy/07) on the run's API server, whichever supported version it is
 * (docs/operating.md#kubernetes-versions): from 1.36 its MutatingAdmissionPolicy records the writer
 * as a policy's author, whatever the writer wrote there; on 1.35, which serves none, the guard
 * still holds, and says why it refuses: a policy must carry its writer as author, written by the
 * writer, and nobody can name another. Run by `npm test` on the newest and by test:oldest on 1.35.
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { ensureNamespace } from '../support/objects.ts';
import { expectAppliedAsServed, servesMutatingAdmissionPolicy } from '../support/kube-versions.ts';
import { eventually } from '../support/wait.ts';
import { apply } from '../../src/apiserver/client.ts';
import { NAMESPACED } from '../../src/api/names.ts';

const NS = 'kube-versions-e2e';
const WRITER = 'kube-versions-team';

function policy(name: string, author?: string): string {
  return JSON.stringify({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name, namespace: NS, ...(author ? { annotations: { [NAMESPACED.authorAnnotation]: author } } : {}) },
    spec: {
      type: 'Validating',
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'not that name' }],
    },
  });
}

describe("the AdmissionPolicy guard on this API server's Kubernetes version", function () {
  before(async function () {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/07-admission-policy-guard.yaml']);
    await expectAppliedAsServed(applied, 2);
    await ensureNamespace(NS);
    const { kube } = cluster();
    await apply(kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: WRITER, namespace: NS },
      rules: [{ apiGroups: ['admission.portcullis.dev'], resources: ['admissionpolicies'], verbs: ['get', 'create', 'delete'] }],
    });
    await apply(kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: WRITER, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: WRITER },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: WRITER }],
    });
  });

  after(async function () {
    await kubectl(['delete', 'namespace', NS, '--wait=false']);
  });

  it('records the writer as author from 1.36, and before it refuses a policy without its writer named, saying so', async function () {
    const served = await servesMutatingAdmissionPolicy();
    // The guard takes a moment to load after it is created: wait for it to act on a write.
    const bare = await eventually(
      async () => {
        const result = await kubectl(['create', `--as=${WRITER}`, '-f', '-'], policy('bare'));
        const author = result.code === 0 ? (await kubectl(['get', 'admissionpolicy', 'bare', '-n', NS, '-o', `jsonpath={.metadata.annotations.admission\\.portcullis\\.dev/author}`])).stdout : undefined;
        if (result.code === 0 && author === '') {
          await kubectl(['delete', 'admissionpolicy', 'bare', '-n', NS]);
          throw new Error('admitted without an author: the guard is not loaded yet');
        }
        return { result, author };
      },
      { what: 'the AdmissionPolicy guard to act' },
    );
    if (served) {
      expect(bare.result.code, bare.result.stderr).to.equal(0);
      expect(bare.author).to.equal(WRITER);
    } else {
      expect(bare.result.code).to.not.equal(0);
      expect(bare.result.stderr).to.contain('portcullis-admission-policy-guard');
      expect(bare.result.stderr).to.contain(`metadata.annotations[${NAMESPACED.authorAnnotation}]: must be the writer, ${WRITER}`);
    }
  });

  it('admits a policy that names its writer as author, on every version', async function () {
    const named = await kubectl(['create', `--as=${WRITER}`, '-f', '-'], policy('named', WRITER));
    expect(named.code, named.stderr).to.equal(0);
    const author = await kubectl(['get', 'admissionpolicy', 'named', '-n', NS, '-o', `jsonpath={.metadata.annotations.admission\\.portcullis\\.dev/author}`]);
    expect(author.stdout).to.equal(WRITER);
  });

  it('never keeps another as author: overwritten with the writer from 1.36, refused before it', async function () {
    const forged = await kubectl(['create', `--as=${WRITER}`, '-f', '-'], policy('forged', 'cluster-admin-someone'));
    if (await servesMutatingAdmissionPolicy()) {
      expect(forged.code, forged.stderr).to.equal(0);
      const author = await kubectl(['get', 'admissionpolicy', 'forged', '-n', NS, '-o', `jsonpath={.metadata.annotations.admission\\.portcullis\\.dev/author}`]);
      expect(author.stdout).to.equal(WRITER);
    } else {
      expect(forged.code).to.not.equal(0);
      expect(forged.stderr).to.contain(`must be the writer, ${WRITER}`);
    }
  });
});
