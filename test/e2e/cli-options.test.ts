/**
 * `request.options` as the command fills it (src/cli/resources.ts' optionsOf) against what the API
 * server itself puts there: a native ValidatingAdmissionPolicy prints the options it was given in
 * its denial, for a create, a dry-run create, an update and a delete sent by a client that sets
 * no options of its own; the same rule run offline (OfflineCluster, the command's evaluation) must
 * print the same words.
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, deleteIfExists } from '../../src/apiserver/client.ts';
import { OfflineCluster } from '../../src/cli/evaluate.ts';
import { API_VERSION, KIND, type AdmissionSuite } from '../../src/api/types.ts';

const NS = 'cli-options';
const NAME = 'options-probe';
const DESCRIBE = "request.options.kind + ' ' + request.options.apiVersion + ' dryRun=' + (has(request.options.dryRun) ? string(size(request.options.dryRun)) : 'none') + ' fields=' + string(size(request.options))";
const rules = [{ operations: ['CREATE', 'UPDATE', 'DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
// Denies a write whose data holds `deny`, and the delete of probe-false: nothing else in the namespace.
const validation = { expression: "!((object != null && has(object.data) && 'deny' in object.data) || (object == null && oldObject.metadata.name == 'probe-false'))", messageExpression: DESCRIBE };

describe('portcullis: request.options as the API server fills it', function () {
  before(async function () {
    await ensureNamespace(NS, { 'cli-options': 'yes' });
    const kube = cluster().kube;
    await apply(kube, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: NAME },
      spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: rules }, validations: [validation] },
    });
    await apply(kube, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: NAME },
      spec: { policyName: NAME, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'cli-options': 'yes' } } } },
    });
  });

  after(async function () {
    const kube = cluster().kube;
    await deleteIfExists(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: NAME } });
    await deleteIfExists(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: NAME } });
  });

  it('creates, dry-run creates, updates and deletes: the same options offline as in the API server', async function () {
    const core = cluster().kube.core;
    // The policy in force first (a dry run, which stores nothing, until it is denied).
    await eventually(
      async () => {
        const refused = await refusal(() => core.createNamespacedConfigMap({ namespace: NS, dryRun: 'All', body: { metadata: { name: 'probe-wait' }, data: { deny: '1' } } }));
        if (!refused?.message?.includes('denied request')) throw new Error(`not denied by the policy yet: ${refused?.message}`);
      },
      { what: 'the policy to deny' },
    );
    // The oracle: the API server's own words for each request.
    const denial = async (call: () => Promise<unknown>) => {
      const message = (await refusal(call))?.message ?? 'allowed';
      expect(message).to.contain('denied request: ');
      return message.slice(message.indexOf('denied request: ') + 'denied request: '.length);
    };
    // A create with data `deny` is refused; probe-false is created (no deny), then its update with deny and its delete are refused.
    await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe-false', namespace: NS } });
    const created = await denial(() => core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'probe-true' }, data: { deny: '1' } } }));
    const dryRun = await denial(() => core.createNamespacedConfigMap({ namespace: NS, dryRun: 'All', body: { metadata: { name: 'probe-true' }, data: { deny: '1' } } }));
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'probe-false' }, data: { ok: '1' } } });
    const old = await core.readNamespacedConfigMap({ namespace: NS, name: 'probe-false' });
    const updated = await denial(() => core.replaceNamespacedConfigMap({ namespace: NS, name: 'probe-false', body: { ...old, data: { deny: '1' } } }));
    const deleted = await denial(() => core.deleteNamespacedConfigMap({ namespace: NS, name: 'probe-false' }));
    expect(created).to.equal('CreateOptions meta.k8s.io/v1 dryRun=none fields=2');

    const suite: AdmissionSuite = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'options', uid: '', generation: 1 },
      spec: { webhooks: [{ name: 'w', type: 'Validating', rules: rules as never, validations: [validation] }] },
    };
    const offline = new OfflineCluster([suite]);
    const cm = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data });
    const words = async (scenario: Parameters<OfflineCluster['evaluate']>[0]) => {
      const evaluation = await offline.evaluate(scenario);
      return evaluation.message!.slice(evaluation.message!.indexOf('denied the request: ') + 'denied the request: '.length);
    };
    expect(await words({ object: cm('probe-true', { deny: '1' }) })).to.equal(created);
    expect(await words({ object: cm('probe-true', { deny: '1' }), dryRun: true })).to.equal(dryRun);
    expect(await words({ object: cm('probe-false', { deny: '1' }), oldObject: cm('probe-false', { ok: '1' }) })).to.equal(updated);
    expect(await words({ oldObject: cm('probe-false', { ok: '1' }) })).to.equal(deleted);
  });
});
