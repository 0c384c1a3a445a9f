/**
 * Every replica withholds the AdmissionPolicies the leader withholds. Two operator processes
 * against one API server, each on a serving port of its own (the API server is sent to the
 * leader's; the Service of a cluster would balance over both): a Mutating policy whose recorded
 * author loses the rights to change what it changes is withheld by the leader (Ready=False,
 * AuthorForbidden), and a policy beyond the namespace's limit (ExceedsLimits); an AdmissionReview
 * POSTed straight to the follower's port is judged by neither. Before, only the leader's registry
 * withheld them and the follower kept mutating and denying.
 */
import { expect } from 'chai';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, OPERATOR_NAMESPACE, serviceAccountKubeConfig } from '../support/cluster.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { ensureNamespace } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { freePort } from '../../src/local/ports.ts';
import { connect } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION } from '../../src/api/types.ts';
import { NAMESPACED, SUITE_VALIDATION } from '../../src/api/names.ts';
import { requestFor } from '../fixtures/reviews.ts';

const NS = 'policy-replicas';
const LEAD = 'lead';
const POLICY = 'stamp';
const ref = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS };

interface Replica {
  process: OperatorProcess;
  servingPort: number;
}

/** What the replica on `port` answers for a ConfigMap created in NS, as the API server would ask it (the teams' Mutating or Validating path). */
function mutateOn(port: number, caPem: string, path: string = NAMESPACED.paths.Mutating, name = 'c'): Promise<{ allowed: boolean; patched: boolean }> {
  const review = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: requestFor('configmaps', 'CREATE', { namespace: NS, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS } } }),
  });
  return new Promise((resolve, reject) => {
    const servername = `${SUITE_VALIDATION.service}.${OPERATOR_NAMESPACE}.svc`;
    const req = https.request({ host: '127.0.0.1', port, path, method: 'POST', servername, ca: caPem, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        try {
          const response = JSON.parse(text).response as { allowed: boolean; patch?: string };
          resolve({ allowed: response.allowed, patched: response.patch !== undefined });
        } catch (err) {
          reject(new Error(`${res.statusCode}: ${text} (${String(err)})`));
        }
      });
    });
    req.on('error', reject);
    req.end(review);
  });
}

describe('AdmissionPolicies: every replica withholds what the leader withholds', function () {
  this.timeout(180_000);
  let replicas: Replica[] = [];

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml', 'deploy/07-admission-policy-guard.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    await ensureNamespace(NS);
    // One policy served per namespace: a second is withheld (ExceedsLimits).
    const args = ['--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms', '--namespaced-policy-author-recheck=1s', '--namespaced-policies-per-namespace=1'];
    for (let i = 0; i < 2; i++) {
      const servingPort = await freePort();
      replicas.push({ process: await spawnOperator({ servingPort, metricsPort: await freePort(), extra: args }), servingPort });
    }
  });

  after(async function () {
    await cluster()
      .kube.custom.deleteNamespacedCustomObject({ ...ref, name: POLICY })
      .catch(() => undefined);
    await cluster()
      .kube.core.deleteNamespace({ name: NS })
      .catch(() => undefined);
    for (const replica of replicas) await replica.process.kill('SIGTERM');
    replicas = [];
  });

  it('does not apply, on the follower either, a Mutating policy whose author may no longer change what it changes', async function () {
    const { kube } = cluster();
    // The leader: the replica whose port the configurations name.
    const lease = () => cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: 'portcullis-operator' });
    const pid = await eventually(async () => Number((await lease()).spec?.holderIdentity?.split('-').at(-2)) || Promise.reject(new Error('no holder')), { what: 'a leader' });
    const leader = replicas.find((r) => r.process.child.pid === pid)!;
    const follower = replicas.find((r) => r.process.child.pid !== pid)!;
    expect(leader, 'the lease holder is one of ours').to.not.equal(undefined);

    await kube.core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: LEAD } } });
    const grant = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'lead-admin', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [{ kind: 'ServiceAccount', name: LEAD, namespace: NS }],
    } as k8s.KubernetesObject;
    await kube.objects.create(grant);
    const lead = connect(await serviceAccountKubeConfig(NS, LEAD));
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AdmissionPolicy',
      metadata: { name: POLICY },
      spec: {
        type: 'Mutating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        mutations: [{ patch: [{ op: 'add', path: '/metadata/annotations', value: { 'lead-ran': 'yes' } }] }],
      },
    };
    // The API server records the author once deploy/07's policies are in force, and the lead's rights reach its authorizer.
    await eventually(
      async () => {
        await lead.custom.createNamespacedCustomObject({ ...ref, body }).catch((err) => {
          if (!String((err as { body?: unknown }).body ?? err).includes('AlreadyExists')) throw err;
        });
        const stored = (await kube.custom.getNamespacedCustomObject({ ...ref, name: POLICY })) as { metadata: { annotations?: Record<string, string> } };
        if (stored.metadata.annotations?.[NAMESPACED.authorAnnotation] !== `system:serviceaccount:${NS}:${LEAD}`) {
          await kube.custom.deleteNamespacedCustomObject({ ...ref, name: POLICY });
          throw new Error('the author is not recorded yet');
        }
      },
      { what: 'the policy to be stored with its author recorded' },
    );
    const caPem = await eventually(
      async () => {
        const configuration = await kube.admissionregistration.readMutatingWebhookConfiguration({ name: NAMESPACED.configuration });
        const webhook = configuration.webhooks?.[0];
        expect(webhook?.clientConfig.service?.port, 'registered for the leader').to.equal(leader.servingPort);
        return Buffer.from(webhook!.clientConfig.caBundle!, 'base64').toString();
      },
      { what: "the teams' Mutating configuration to be registered" },
    );
    // Control: served on both replicas while its author may change ConfigMaps.
    for (const [who, replica] of [
      ['leader', leader],
      ['follower', follower],
    ] as const) {
      await eventually(async () => expect(await mutateOn(replica.servingPort, caPem), who).to.deep.equal({ allowed: true, patched: true }), { what: `the ${who} to apply the policy` });
    }

    await kube.objects.delete(grant);
    await eventually(
      async () => {
        const policy = (await kube.custom.getNamespacedCustomObject({ ...ref, name: POLICY })) as { status?: { conditions?: { type: string; reason: string }[] } };
        expect(policy.status?.conditions?.find((c) => c.type === 'Ready')?.reason).to.equal('AuthorForbidden');
      },
      { what: 'the leader to withhold the policy once its author lost the admin role' },
    );
    await eventually(async () => expect(await mutateOn(leader.servingPort, caPem), 'leader').to.deep.equal({ allowed: true, patched: false }), { what: 'the leader not to apply it' });
    await eventually(async () => expect(await mutateOn(follower.servingPort, caPem), 'follower').to.deep.equal({ allowed: true, patched: false }), {
      what: 'the follower not to apply it either',
    });
    // And it stays so: the follower does not serve it again on its own.
    for (let i = 0; i < 5; i++) expect(await mutateOn(follower.servingPort, caPem), 'follower, asked again').to.deep.equal({ allowed: true, patched: false });
  });

  it('does not evaluate, on the follower either, a policy beyond the limit of policies a namespace may have served', async function () {
    const { kube } = cluster();
    const pid = Number((await cluster().kubeConfig.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ namespace: OPERATOR_NAMESPACE, name: 'portcullis-operator' })).spec?.holderIdentity?.split('-').at(-2));
    const follower = replicas.find((r) => r.process.child.pid !== pid)!;
    // Each refuses the ConfigMap of its own name.
    const refusing = (name: string) => ({
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AdmissionPolicy',
      metadata: { name },
      spec: {
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        validations: [{ expression: `object.metadata.name != '${name}'`, message: `no ConfigMap named ${name}` }],
      },
    });
    const ready = async (name: string) => ((await kube.custom.getNamespacedCustomObject({ ...ref, name })) as { status?: { conditions?: { type: string; reason: string }[] } }).status?.conditions?.find((c) => c.type === 'Ready')?.reason;
    const followerAnswer = (name: string) => mutateOn(follower.servingPort, caPem, NAMESPACED.paths.Validating, name);
    // The Mutating policy above was the namespace's one policy; gone, it makes room.
    await kube.custom.deleteNamespacedCustomObject({ ...ref, name: POLICY });
    await kube.custom.createNamespacedCustomObject({ ...ref, body: refusing('first') });
    const caPem = await eventually(
      async () => {
        expect(await ready('first')).to.equal('Served');
        const configuration = await kube.admissionregistration.readValidatingWebhookConfiguration({ name: NAMESPACED.configuration });
        return Buffer.from(configuration.webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
      },
      { what: 'the first policy to be served' },
    );
    await eventually(async () => expect(await followerAnswer('first'), 'follower').to.deep.equal({ allowed: false, patched: false }), { what: 'the follower to evaluate the policy within the limit' });

    await kube.custom.createNamespacedCustomObject({ ...ref, body: refusing('second') });
    await eventually(async () => expect(await ready('second')).to.equal('ExceedsLimits'), { what: 'the leader to withhold the second policy' });
    await eventually(async () => expect(await followerAnswer('second'), 'follower').to.deep.equal({ allowed: true, patched: false }), { what: 'the follower not to evaluate the withheld policy' });
    for (let i = 0; i < 5; i++) {
      expect(await followerAnswer('second'), 'follower, asked again').to.deep.equal({ allowed: true, patched: false });
      expect(await followerAnswer('first'), 'follower, the served policy').to.deep.equal({ allowed: false, patched: false });
    }
    for (const name of ['first', 'second']) await kube.custom.deleteNamespacedCustomObject({ ...ref, name });
  });
});
