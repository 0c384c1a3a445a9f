/**
 * config/samples/, each applied as a user would (`kubectl apply -f`, `-n` for AdmissionPolicies),
 * alone, against a running operator: each does what its opening comment says, shows in
 * `kubectl get`, and is deleted.
 * platform-guards.yaml is the contract's example suite, as written there.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { deployment, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { rawRequest } from '../support/raw.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { apply } from '../../src/apiserver/client.ts';
import { certificateRequestPem } from '../../src/certs/csr.ts';

const NS = 'samples-e2e';
const PRODUCTION_NS = 'samples-e2e-production';
/** The in-tree plugins written as CEL suites (docs/handlers.md's table of plugins names them). */
const PLUGIN_SAMPLES = [
  { file: 'always-deny.yaml', suite: 'always-deny' },
  { file: 'cluster-trust-bundle-attest.yaml', suite: 'cluster-trust-bundle-attest' },
  { file: 'pod-group-protection.yaml', suite: 'pod-group-protection' },
];

/** Applies the sample with kubectl and waits until its suite is Ready. */
async function applySample(file: string, suite: string): Promise<void> {
  const result = await kubectl(['apply', '-f', `config/samples/${file}`]);
  expect(result.code, result.stderr).to.equal(0);
  expect(result.stdout).to.contain(`admissionsuite.admission.portcullis.dev/${suite} created`);
  await waitForCondition(suite, 'Ready', 'True');
}

/** The refusal of creating `body`, once the suite's webhook is in force. */
function denialOf(create: () => Promise<unknown>) {
  return eventually(async () => (await refusal(create)) ?? Promise.reject(new Error('admitted')), { what: 'the denial' });
}

const createDeployment = (name: string, replicas: number) => () => cluster().apps.createNamespacedDeployment({ namespace: NS, body: deployment(name, replicas) });
const createPod = (name: string, labels?: Record<string, string>) =>
  cluster().kube.core.createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name, ...(labels ? { labels } : {}) },
      spec: {
        containers: [
          { name: 'a', image: 'nginx:1.27' },
          { name: 'b', image: 'busybox:1.36', imagePullPolicy: 'Never' },
        ],
      },
    },
  });

describe('config/samples, applied as they are', function () {
  let operator: Operator;

  before(async function () {
    await ensureNamespace(NS);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of ['replica-guard', 'pod-defaults', 'platform-guards', 'team-limits', 'pod-security', 'owner-references', 'certificate-plugins', ...PLUGIN_SAMPLES.map((p) => p.suite)]) await deleteSuite(name);
    await cluster()
      .kube.core.deleteNamespace({ name: PRODUCTION_NS })
      .catch(() => undefined);
    await cluster()
      .kube.core.deleteNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, name: 'replica-limits' })
      .catch(() => undefined);
    await operator.stop();
  });

  describe('replica-limit.yaml', function () {
    before(() => applySample('replica-limit.yaml', 'replica-guard'));
    after(() => deleteSuite('replica-guard'));

    it('denies a Deployment of more than five replicas with its message, and admits five', async function () {
      const refused = await denialOf(createDeployment('six', 6));
      expect(refused.message).to.contain('replica-limit.replica-guard.admission.portcullis.dev');
      expect(refused.message).to.contain('replicas must be no greater than 5');
      expect((await createDeployment('five', 5)()).spec?.replicas).to.equal(5);
    });

    it('shows in kubectl get as Ready, with its webhook count and certificate expiry', async function () {
      const table = await kubectl(['get', 'asuite', 'replica-guard']);
      expect(table.code, table.stderr).to.equal(0);
      // Cells by the header's columns: an empty one (FAILING, with no background audit in this test's operator) is ''.
      const [headerLine, rowLine] = table.stdout.split('\n');
      const header = headerLine!.trim().split(/\s+/);
      const starts = header.map((name) => headerLine!.indexOf(name));
      const row = starts.map((start, i) => rowLine!.slice(start, starts[i + 1]).trim());
      expect(header).to.deep.equal(['NAME', 'READY', 'REASON', 'WEBHOOKS', 'FAILING', 'CERT-EXPIRY', 'AGE']);
      expect(row.slice(0, 5)).to.deep.equal(['replica-guard', 'True', 'Ready', '1', '']);
      // The expiry as the date it is: a printer column of type date would show a future one as <invalid>.
      const notAfter = (await getSuite('replica-guard'))!.status!.certificate!.notAfter!;
      expect(row[5]).to.equal(notAfter);
      expect(new Date(notAfter).getTime()).to.be.above(Date.now());
    });
  });

  describe('team-label.yaml', function () {
    before(() => applySample('team-label.yaml', 'pod-defaults'));
    after(() => deleteSuite('pod-defaults'));

    it('labels a Pod without a team `team: unassigned`, keeps a team it has, and makes every container pull always', async function () {
      const pod = await eventually(
        async () => {
          const created = await createPod(`unlabelled-${Date.now().toString(36)}`);
          if (!created.metadata?.labels) throw new Error('not mutated yet');
          return created;
        },
        { what: 'the mutation to be in force' },
      );
      expect(pod.metadata?.labels).to.deep.equal({ team: 'unassigned' });
      expect(pod.spec?.containers.map((c) => c.imagePullPolicy)).to.deep.equal(['Always', 'Always']);
      const labelled = await createPod('team-core', { team: 'core' });
      expect(labelled.metadata?.labels).to.deep.equal({ team: 'core' });
    });
  });

  describe('team-policies.yaml (AdmissionPolicies, applied in a namespace)', function () {
    before(async function () {
      const result = await kubectl(['apply', '-n', NS, '-f', 'config/samples/team-policies.yaml']);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.contain('admissionpolicy.admission.portcullis.dev/replica-limit created');
      await eventually(
        async () => {
          const table = await kubectl(['get', 'apol', '-n', NS, '--no-headers']);
          const rows = table.stdout
            .trim()
            .split('\n')
            .map((line) => line.trim().split(/\s+/));
          if (rows.length !== 2 || rows.some((row) => row[2] !== 'True')) throw new Error(table.stdout + table.stderr);
        },
        { what: 'both policies to show Ready in kubectl get apol' },
      );
    });
    after(async function () {
      await kubectl(['delete', '-n', NS, '-f', 'config/samples/team-policies.yaml', '--ignore-not-found']);
      // With the last policy, the operator removes portcullis--namespaced (nothing left pointing at this file's operator).
      await eventually(
        async () => {
          const left = await kubectl(['get', 'mutatingwebhookconfigurations,validatingwebhookconfigurations', '--field-selector', 'metadata.name=portcullis--namespaced', '--no-headers']);
          if (left.stdout.trim()) throw new Error(left.stdout);
        },
        { what: 'the portcullis--namespaced configurations to go with the last policy' },
      );
    });

    it('labels a Deployment of the namespace with its team and refuses more than three replicas, saying so', async function () {
      const refused = await denialOf(createDeployment('four', 4));
      expect(refused.message).to.contain('AdmissionPolicy replica-limit: at most 3 replicas in samples-e2e, not 4');
      const three = await createDeployment('three', 3)();
      expect(three.metadata?.labels?.team).to.equal(NS);
    });
  });

  describe('the in-tree plugins as CEL: always-deny.yaml, cluster-trust-bundle-attest.yaml, pod-group-protection.yaml', function () {
    before(async () => {
      for (const { file, suite } of PLUGIN_SAMPLES) await applySample(file, suite);
    });
    after(async () => {
      for (const { suite } of PLUGIN_SAMPLES) await deleteSuite(suite);
    });

    it('AlwaysDeny refuses an object carrying its label with the in-tree words, and nothing else', async function () {
      const labels = { 'portcullis.dev/always-deny': 'true' };
      const refused = await denialOf(() => cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'denied', labels } } }));
      expect(refused.code).to.equal(403);
      expect(refused.message).to.contain('always-deny.always-deny.admission.portcullis.dev');
      expect(refused.message).to.contain('admission control is denying all modifications');
      const admitted = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'admitted' } } });
      expect(admitted.metadata?.name).to.equal('admitted');
    });

    it('ClusterTrustBundleAttest and PodGroupProtection compile and register as they are', async function () {
      for (const suite of ['cluster-trust-bundle-attest', 'pod-group-protection']) {
        const found = await getSuite(suite);
        expect(found?.status?.webhooks?.length, suite).to.equal(1);
      }
    });
  });

  describe('platform-guards.yaml (the contract example)', function () {
    before(() => applySample('platform-guards.yaml', 'platform-guards'));
    after(() => deleteSuite('platform-guards'));

    it('creates the replica-limits ConfigMap its params name, and limits replicas to its number, saying so', async function () {
      const limits = await cluster().kube.core.readNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, name: 'replica-limits' });
      expect(limits.data).to.deep.equal({ max: '3' });
      const refused = await denialOf(createDeployment('too-many', 4));
      expect(refused.code).to.equal(422);
      expect(refused.message).to.contain('replica-limit.platform-guards.admission.portcullis.dev');
      expect(refused.message).to.contain('replicas must be no greater than 3');
      expect((await createDeployment('within', 3)()).spec?.replicas).to.equal(3);
    });

    it('follows a change of the params ConfigMap without a suite change', async function () {
      await cluster().kube.core.patchNamespacedConfigMap({ namespace: OPERATOR_NAMESPACE, name: 'replica-limits', body: { data: { max: '5' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      const admitted = await eventually(createDeployment('five-under-guards', 5), { what: 'the new limit' });
      expect(admitted.spec?.replicas).to.equal(5);
    });

    it('labels new Pods and makes every container pull always', async function () {
      const pod = await createPod('web');
      expect(pod.metadata?.labels).to.deep.equal({ team: 'unassigned' });
      expect(pod.spec?.containers.map((c) => c.imagePullPolicy)).to.deep.equal(['Always', 'Always']);
      const labelled = await createPod('owned', { team: 'core' });
      expect(labelled.metadata?.labels).to.deep.equal({ team: 'core' });
    });

    it('goes with kubectl delete -f, which leaves nothing of it registered', async function () {
      const result = await kubectl(['delete', '-f', 'config/samples/platform-guards.yaml']);
      expect(result.code, result.stderr).to.equal(0);
      const admitted = await eventually(createDeployment('after-delete', 9), { what: 'the limit to be gone' });
      expect(admitted.spec?.replicas).to.equal(9);
    });
  });

  describe('team-limits.yaml (params of the request’s namespace, by selector; excludeResourceRules; resourceNames)', function () {
    const SHOP = 'shop';
    const inShop = (name: string, replicas: number) => () => cluster().apps.createNamespacedDeployment({ namespace: SHOP, body: deployment(name, replicas) });
    const limits = (name: string, max: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: SHOP, labels: { 'portcullis.dev/limits': 'replicas' } }, data: { max } });
    before(() => applySample('team-limits.yaml', 'team-limits'));
    after(async function () {
      // --wait=false: the sample's Namespace goes once the namespace controller has emptied it.
      await kubectl(['delete', '--wait=false', '-f', 'config/samples/team-limits.yaml']);
    });

    it("limits a Deployment by every limits ConfigMap of its own namespace, saying which refused; other namespaces' are their own", async function () {
      const refused = await denialOf(inShop('four', 4));
      expect(refused.code).to.equal(422);
      expect(refused.message).to.contain('replica-limit.team-limits.admission.portcullis.dev');
      expect(refused.message).to.contain('replicas must be no greater than 3 (ConfigMap replica-limits)');
      expect((await inShop('three', 3)()).spec?.replicas).to.equal(3);
      await apply(cluster().kube, limits('weekend-limits', '2'));
      const stricter = await denialOf(inShop('three-again', 3));
      expect(stricter.message).to.contain('replicas must be no greater than 2 (ConfigMap weekend-limits)');
      // samples-e2e has no limits ConfigMap: notFoundAction Allow.
      expect((await createDeployment('unlimited', 9)()).spec?.replicas).to.equal(9);
    });

    it('never limits a Deployment named load-test (excludeResourceRules)', async function () {
      expect((await inShop('load-test', 50)()).spec?.replicas).to.equal(50);
    });

    it('refuses changing or deleting a ConfigMap named release-freeze, and only that name (resourceNames)', async function () {
      const core = cluster().kube.core;
      for (const name of ['release-freeze', 'settings']) await core.createNamespacedConfigMap({ namespace: SHOP, body: { metadata: { name }, data: { frozen: 'yes' } } });
      const refused = await denialOf(() => core.replaceNamespacedConfigMap({ namespace: SHOP, name: 'release-freeze', body: { metadata: { name: 'release-freeze' }, data: { frozen: 'no' } } }));
      expect(refused.message).to.contain('release-freeze cannot be changed or deleted');
      expect((await refusal(() => core.deleteNamespacedConfigMap({ namespace: SHOP, name: 'release-freeze' })))?.message).to.contain('release-freeze cannot be changed or deleted');
      await core.replaceNamespacedConfigMap({ namespace: SHOP, name: 'settings', body: { metadata: { name: 'settings' }, data: { frozen: 'no' } } });
      await core.deleteNamespacedConfigMap({ namespace: SHOP, name: 'settings' });
    });
  });

  describe('owner-references.yaml (OwnerReferencesPermissionEnforcement)', function () {
    const USER = 'samples-orpe-user';
    const rbac = [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: USER, namespace: NS }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'update', 'patch'] }] },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: USER, namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: USER },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
      },
    ];
    let ownerUid = '';
    before(async () => {
      for (const object of rbac) await apply(cluster().kube, object);
      const owner = await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'orpe-owner' } } });
      ownerUid = owner.metadata!.uid!;
      await cluster().kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'orpe-app' } } });
      await applySample('owner-references.yaml', 'owner-references');
    });
    after(() => deleteSuite('owner-references'));

    it('refuses adding an ownerReference to a ConfigMap its user may not delete, in the in-tree words; a create with one, and other changes, pass', async function () {
      const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'orpe-owner', uid: ownerUid };
      const patch = (body: unknown) => rawRequest('PATCH', `/api/v1/namespaces/${NS}/configmaps/orpe-app?dryRun=All`, body, { as: USER, contentType: 'application/merge-patch+json' });
      const refused = await eventually(
        async () => {
          const answer = await patch({ metadata: { ownerReferences: [ref] } });
          return answer.status === 403 ? answer : Promise.reject(new Error(`not refused yet: ${answer.status}`));
        },
        { what: 'the owner-references webhook in force' },
      );
      expect(refused.body.message).to.equal(
        `admission webhook "owner-references.owner-references.admission.portcullis.dev" denied the request: configmaps "orpe-app" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>`,
      );
      expect((await patch({ metadata: { labels: { tier: 'web' } } })).status).to.equal(200);
      const created = await rawRequest('POST', `/api/v1/namespaces/${NS}/configmaps?dryRun=All`, { metadata: { name: 'orpe-new', ownerReferences: [ref] } }, { as: USER });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
    });
  });

  describe('certificate-plugins.yaml (CertificateApproval, CertificateSigning, CertificateSubjectRestriction)', function () {
    const USER = 'samples-csr-user';
    const SIGNER = 'example.com/signer';
    const rbac = [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: USER },
        rules: [{ apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests', 'certificatesigningrequests/approval'], verbs: ['get', 'list', 'create', 'update', 'patch'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: USER },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: USER },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
      },
    ];
    const csr = (name: string, signerName: string, organizations: string[]) => ({
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: { signerName, request: Buffer.from(certificateRequestPem(name, organizations)).toString('base64'), usages: ['digital signature', 'client auth'] },
    });
    let applied: Awaited<ReturnType<typeof kubectl>>;
    before(async () => {
      for (const object of rbac) await apply(cluster().kube, object);
      applied = await kubectl(['apply', '-f', 'config/samples/certificate-plugins.yaml']);
      expect(applied.code, applied.stderr).to.equal(0);
      await waitForCondition('certificate-plugins', 'Ready', 'True');
    });
    after(async () => {
      await deleteSuite('certificate-plugins');
      await rawRequest('DELETE', '/apis/certificates.k8s.io/v1/certificatesigningrequests/samples-csr');
      await rawRequest('DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/' + USER);
      await rawRequest('DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles/' + USER);
    });

    it('kubectl apply prints the lock-out warning for each of its three webhooks', function () {
      for (const [webhook, handler] of [
        ['approval', 'CertificateApproval'],
        ['signing', 'CertificateSigning'],
        ['subject-restriction', 'CertificateSubjectRestriction'],
      ]) {
        expect(applied.stderr).to.match(new RegExp(`Warning: spec\\.webhooks\\[\\d\\] \\(${webhook}\\): handler ${handler} is sent CertificateSigningRequests.*kubelets' client and serving certificates included`));
      }
    });

    it('refuses a system:masters client certificate request, and kubectl certificate approve by a user without approve on the signer, in the in-tree words', async function () {
      const masters = await eventually(
        async () => {
          const answer = await rawRequest('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests?dryRun=All', csr('samples-masters', 'kubernetes.io/kube-apiserver-client', ['system:masters']));
          return answer.status === 403 ? answer : Promise.reject(new Error(`not refused yet: ${answer.status}`));
        },
        { what: 'the certificate-plugins webhooks in force' },
      );
      expect(masters.body.message).to.equal(
        'admission webhook "subject-restriction.certificate-plugins.admission.portcullis.dev" denied the request: certificatesigningrequests.certificates.k8s.io "samples-masters" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed',
      );
      expect((await rawRequest('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', csr('samples-csr', SIGNER, ['team-a']))).status).to.equal(201);
      const refused = await kubectl(['certificate', 'approve', 'samples-csr', '--as', USER]);
      expect(refused.code).to.not.equal(0);
      expect(refused.stderr).to.contain(`certificatesigningrequests.certificates.k8s.io "samples-csr" is forbidden: user not permitted to approve requests with signerName "${SIGNER}"`);
      const approved = await kubectl(['certificate', 'approve', 'samples-csr']);
      expect(approved.code, approved.stderr).to.equal(0);
    });
  });

  describe('pod-security.yaml', function () {
    before(async function () {
      await ensureNamespace(PRODUCTION_NS, { environment: 'production', 'pod-security.kubernetes.io/enforce': 'privileged' });
      await applySample('pod-security.yaml', 'pod-security');
    });
    after(() => deleteSuite('pod-security'));

    const podBody = (name: string, securityContext?: k8s.V1SecurityContext) => ({ metadata: { name }, spec: { containers: [{ name: 'app', image: 'nginx:1.27', ...(securityContext ? { securityContext } : {}) }] } });

    it('holds an unlabelled namespace to baseline, and warns at restricted', async function () {
      const refused = await denialOf(() => cluster().kube.core.createNamespacedPod({ namespace: NS, body: podBody('privileged', { privileged: true }) }));
      expect(refused.code).to.equal(403);
      expect(refused.message).to.equal(
        'admission webhook "pod-security.pod-security.admission.portcullis.dev" denied the request: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)',
      );
      const plain = await rawRequest('POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, podBody('plain'));
      expect(plain.status).to.equal(201);
      expect(plain.warnings).to.have.length(1);
      expect(plain.warnings[0]).to.match(/^would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
    });

    it('holds a production namespace to restricted although its own label says privileged', async function () {
      const refused = await denialOf(() => cluster().kube.core.createNamespacedPod({ namespace: PRODUCTION_NS, body: podBody('plain') }));
      expect(refused.message).to.contain('violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false');
    });
  });
});
