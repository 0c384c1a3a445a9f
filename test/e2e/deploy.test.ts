/** `kubectl apply -f deploy/` against the real API server, and the operator's RBAC as the API server sees it. */
import { expect } from 'chai';
import { kubectl } from '../support/cluster.ts';
import { expectAppliedAsServed } from '../support/kube-versions.ts';
import { eventually } from '../support/wait.ts';

const AS_OPERATOR = ['--as', 'system:serviceaccount:portcullis-system:portcullis-operator'];

async function canI(...args: string[]): Promise<string> {
  const result = await kubectl(['auth', 'can-i', ...args, ...AS_OPERATOR]);
  return result.stdout.trim();
}

/** can-i as `who`, once what aggregation adds to its roles (the controller manager's, a moment after the apply) says `answer`. */
async function eventuallyCan(who: string[], answer: 'yes' | 'no', ...args: string[]): Promise<void> {
  await eventually(async () => expect((await kubectl(['auth', 'can-i', ...args, ...who])).stdout.trim(), args.join(' ')).to.equal(answer), { what: `can-i ${args.join(' ')}: ${answer}` });
}

describe('deploy/: the install manifests', function () {
  it('are accepted by the API server', async function () {
    const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/']);
    // Before Kubernetes 1.36 everything but the guards' two MutatingAdmissionPolicies and their bindings.
    await expectAppliedAsServed(result, 4);
    for (const object of [
      'namespace/portcullis-system',
      'customresourcedefinition.apiextensions.k8s.io/admissionsuites.admission.portcullis.dev',
      'customresourcedefinition.apiextensions.k8s.io/reports.openreports.io',
      'customresourcedefinition.apiextensions.k8s.io/clusterreports.openreports.io',
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

  it('let the operator write its audit reports, and read what the audit reads, never Secrets', async function () {
    for (const verb of ['list', 'create', 'update', 'delete']) {
      expect(await canI(verb, 'reports.openreports.io', '-n', 'default'), `${verb} reports`).to.equal('yes');
      expect(await canI(verb, 'clusterreports.openreports.io'), `${verb} clusterreports`).to.equal('yes');
    }
    expect(await canI('patch', 'reports.openreports.io', '-n', 'default')).to.equal('no');
    // deploy/ has no wgpolicyk8s.io CRDs, nor their grants (the chart's audit.reports.policyReports).
    expect(await canI('create', 'policyreports.wgpolicyk8s.io', '-n', 'default')).to.equal('no');
    // portcullis-audit-default, aggregated into portcullis-operator-audit.
    for (const resource of ['deployments.apps', 'cronjobs.batch', 'ingresses.networking.k8s.io', 'poddisruptionbudgets.policy', 'serviceaccounts', 'persistentvolumeclaims']) {
      await eventuallyCan(AS_OPERATOR, 'yes', 'watch', resource, '--all-namespaces');
    }
    expect(await canI('list', 'secrets', '--all-namespaces')).to.equal('no');
    expect(await canI('get', 'deployments.apps', '-n', 'default')).to.equal('no');
  });

  it('let `view` in a namespace read its Reports, but not ClusterReports, and nobody else write them', async function () {
    const viewer = ['--as', 'deploy-test-viewer'];
    const bound = await kubectl(['create', 'rolebinding', 'deploy-test-view', '-n', 'default', '--clusterrole=view', '--user=deploy-test-viewer']);
    expect(bound.code, bound.stderr).to.equal(0);
    try {
      for (const verb of ['get', 'list', 'watch']) await eventuallyCan(viewer, 'yes', verb, 'reports.openreports.io', '-n', 'default');
      await eventuallyCan(viewer, 'no', 'list', 'clusterreports.openreports.io');
      await eventuallyCan(viewer, 'no', 'list', 'reports.openreports.io', '-n', 'kube-system');
      await eventuallyCan(viewer, 'no', 'create', 'reports.openreports.io', '-n', 'default');
    } finally {
      await kubectl(['delete', 'rolebinding', 'deploy-test-view', '-n', 'default', '--ignore-not-found']);
    }
  });

  it("show each Report's summary in `kubectl get reports -A`", async function () {
    const body = { apiVersion: 'openreports.io/v1alpha1', kind: 'Report', metadata: { name: 'deploy-test', namespace: 'default' }, summary: { pass: 3, fail: 1, warn: 0, error: 0, skip: 2 }, results: [] };
    const created = await kubectl(['create', '-f', '-'], JSON.stringify(body));
    expect(created.code, created.stderr).to.equal(0);
    try {
      const listed = await kubectl(['get', 'reports', '-A']);
      expect(listed.code, listed.stderr).to.equal(0);
      const [header, ...rows] = listed.stdout
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/));
      expect(header).to.deep.equal(['NAMESPACE', 'NAME', 'PASS', 'FAIL', 'WARN', 'ERROR', 'SKIP', 'AGE']);
      expect(rows.find((row) => row[1] === 'deploy-test')?.slice(0, 7)).to.deep.equal(['default', 'deploy-test', '3', '1', '0', '0', '2']);
    } finally {
      await kubectl(['delete', 'report', 'deploy-test', '-n', 'default', '--ignore-not-found']);
    }
  });

  it("let the operator ask SubjectAccessReviews for CEL's authorizer", async function () {
    expect(await canI('create', 'subjectaccessreviews.authorization.k8s.io')).to.equal('yes');
  });
});
