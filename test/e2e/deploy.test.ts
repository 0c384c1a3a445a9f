/** `kubectl apply -f deploy/` against the real API server, and the operator's RBAC as the API server sees it. */
import { expect } from 'chai';
import { kubectl } from '../support/cluster.ts';

const AS_OPERATOR = ['--as', 'system:serviceaccount:portcullis-system:portcullis-operator'];

async function canI(...args: string[]): Promise<string> {
  const result = await kubectl(['auth', 'can-i', ...args, ...AS_OPERATOR]);
  return result.stdout.trim();
}

describe('deploy/: the install manifests', function () {
  it('are accepted by the API server', async function () {
    const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/']);
    expect(result.code, result.stderr).to.equal(0);
    for (const object of [
      'namespace/portcullis-system',
      'customresourcedefinition.apiextensions.k8s.io/admissionsuites.admission.portcullis.dev',
      'serviceaccount/portcullis-operator',
      'deployment.apps/portcullis-operator',
    ]) {
      expect(result.stdout).to.contain(object);
    }
    const deployment = await kubectl(['get', 'deployment', 'portcullis-operator', '-n', 'portcullis-system', '-o', 'jsonpath={.spec.template.spec.serviceAccountName}']);
    expect(deployment.stdout).to.equal('portcullis-operator');
  });

  it('describe the CRD to kubectl explain', async function () {
    const explained = await kubectl(['explain', 'admissionsuite.spec.webhooks.validations']);
    expect(explained.code, explained.stderr).to.equal(0);
    expect(explained.stdout).to.contain('CEL validations with ValidatingAdmissionPolicy semantics');
    expect(explained.stdout).to.contain('messageExpression');
  });

  it('let the operator read Secrets in its namespace and nowhere else', async function () {
    expect(await canI('get', 'secrets', '-n', 'portcullis-system')).to.equal('yes');
    expect(await canI('create', 'secrets', '-n', 'portcullis-system')).to.equal('yes');
    expect(await canI('get', 'secrets', '-n', 'default')).to.equal('no');
    expect(await canI('list', 'secrets', '--all-namespaces')).to.equal('no');
  });

  it('let the operator register webhooks and report suite status, but not edit suites', async function () {
    expect(await canI('create', 'validatingwebhookconfigurations')).to.equal('yes');
    expect(await canI('update', 'admissionsuites.admission.portcullis.dev', '--subresource=status')).to.equal('yes');
    expect(await canI('update', 'admissionsuites.admission.portcullis.dev')).to.equal('no');
    expect(await canI('delete', 'namespaces')).to.equal('no');
  });

  it("let the operator ask SubjectAccessReviews for CEL's authorizer", async function () {
    expect(await canI('create', 'subjectaccessreviews.authorization.k8s.io')).to.equal('yes');
  });
});
