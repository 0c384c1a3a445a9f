/**
 * The built-in handlers end to end through the real API server (started with LimitRanger and
 * DefaultTolerationSeconds disabled, as on a managed cluster that does not offer them). Each test
 * first does the action without the suite and sees the API server accept it unchanged, then
 * applies a suite using the handler and asserts what the API server stored or refused. Every
 * webhook is scoped to this file's own namespaces (handlers-*) or labelled objects.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, isNotFound } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { LabelSelector, RuleWithOperations, SuiteSpec } from '../../src/api/types.ts';

const NS = {
  pull: 'handlers-pull',
  pullCheck: 'handlers-pull-check',
  keep: 'handlers-keep',
  protect: 'handlers-protect',
  nodeSelector: 'handlers-nodesel',
  limits: 'handlers-limits',
  more: 'handlers-more',
};
const SUITES = ['handlers-pull', 'handlers-protect', 'handlers-nodesel', 'handlers-limits', 'handlers-more', 'handlers-bad-config'];
const CRD_NAME = 'gizmos.handlers.portcullis.test';
const PROTECTION_LABEL = 'admission.portcullis.dev/deletion-protection';
const IMAGE = 'registry.k8s.io/pause:3.10';

const only = (...namespaces: string[]): LabelSelector => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] });
const rule = (operations: string[], group: string, resources: string[]): RuleWithOperations => ({ operations, apiGroups: [group], apiVersions: ['v1'], resources });
const podCreate = [rule(['CREATE'], '', ['pods'])];

let serial = 0;
const unique = (prefix: string) => `${prefix}-${++serial}`;

function podBody(name: string, spec: Partial<k8s.V1PodSpec> = {}, labels?: Record<string, string>): k8s.V1Pod {
  return { metadata: { name, ...(labels ? { labels } : {}) }, spec: { containers: [{ name: 'app', image: IMAGE }], ...spec } };
}
const createPod = (namespace: string, body: k8s.V1Pod) => cluster().kube.core.createNamespacedPod({ namespace, body });

/** The API server's refusal of `call`; throws while it still accepts (the webhook may not be registered yet). */
async function refused(call: () => Promise<unknown>, what: string): Promise<{ code?: number; message?: string }> {
  return eventually(async () => (await refusal(call)) ?? Promise.reject(new Error(`${what} was accepted`)), { what: `${what} to be refused` });
}

async function namespaceGone(name: string): Promise<void> {
  await eventually(
    async () => {
      try {
        await cluster().kube.core.readNamespace({ name });
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      throw new Error(`namespace ${name} still exists`);
    },
    { what: `namespace ${name} to be gone`, timeoutMs: 180_000, intervalMs: 1000 },
  );
}

async function ensureNamespace(name: string, annotations: Record<string, string> = {}): Promise<void> {
  await apply(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } });
}

function crdBody(): k8s.V1CustomResourceDefinition {
  return {
    metadata: { name: CRD_NAME, labels: { 'portcullis-test': 'handlers' } },
    spec: {
      group: 'handlers.portcullis.test',
      scope: 'Namespaced',
      names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } } }],
    },
  };
}

describe('built-in handlers through the real API server', function () {
  let operator: Operator;
  const crds = () => cluster().kubeConfig.makeApiClient(k8s.ApiextensionsV1Api);

  before(async function () {
    await Promise.all([NS.pull, NS.pullCheck, NS.keep, NS.protect, NS.more].map((name) => ensureNamespace(name)));
    await ensureNamespace(NS.nodeSelector, { 'scheduler.alpha.kubernetes.io/node-selector': 'env=test' });
    await ensureNamespace(NS.limits);
    operator = await startTestOperator();
  });

  after(async function () {
    this.timeout(120_000);
    for (const name of SUITES) await deleteSuite(name);
    // The suites' webhook configurations go by garbage collection: retry until nothing protects our objects.
    await eventually(
      async () => {
        try {
          await crds().deleteCustomResourceDefinition({ name: CRD_NAME });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        for (const name of Object.values(NS)) {
          try {
            await cluster().kube.core.deleteNamespace({ name });
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
        }
      },
      { what: 'cleanup of the handlers namespaces and CRD', timeoutMs: 60_000 },
    );
    await operator?.stop();
  });

  it('AlwaysPullImages: Pods are stored pulling always; the validating side refuses a Pod that does not', async function () {
    const spec = { initContainers: [{ name: 'init', image: IMAGE, imagePullPolicy: 'IfNotPresent' }] };
    const before = await createPod(NS.pull, podBody('pull-before', spec));
    expect([...before.spec!.initContainers!, ...before.spec!.containers].map((c) => c.imagePullPolicy)).to.deep.equal(['IfNotPresent', 'IfNotPresent']);
    const checkedBefore = await createPod(NS.pullCheck, podBody('check-before'));
    expect(checkedBefore.spec!.containers[0]!.imagePullPolicy).to.equal('IfNotPresent');

    await createSuite('handlers-pull', {
      webhooks: [
        { name: 'pull-always', type: 'Mutating', rules: podCreate, namespaceSelector: only(NS.pull), handler: { name: 'AlwaysPullImages' } },
        { name: 'must-pull-always', type: 'Validating', rules: podCreate, namespaceSelector: only(NS.pull, NS.pullCheck), handler: { name: 'AlwaysPullImages' } },
      ],
    });
    await waitForCondition('handlers-pull', 'Ready', 'True');

    const stored = await eventually(
      async () => {
        const pod = await createPod(NS.pull, podBody(unique('pull'), spec));
        if (pod.spec!.containers[0]!.imagePullPolicy !== 'Always') throw new Error(`stored ${pod.spec!.containers[0]!.imagePullPolicy}`);
        return pod;
      },
      { what: 'the mutation to apply' },
    );
    expect([...stored.spec!.initContainers!, ...stored.spec!.containers].map((c) => c.imagePullPolicy)).to.deep.equal(['Always', 'Always']);

    const denial = await refused(() => createPod(NS.pullCheck, podBody(unique('check'))), 'a Pod pulling IfNotPresent');
    expect(denial.code).to.equal(403);
    expect(denial.message).to.contain('admission webhook "must-pull-always.handlers-pull.admission.portcullis.dev" denied the request: pods "');
    expect(denial.message).to.contain('is forbidden: spec.containers[0].imagePullPolicy: Unsupported value: "IfNotPresent": supported values: "Always"');
    const pulling = await createPod(NS.pullCheck, podBody(unique('check'), { containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'Always' }] }));
    expect(pulling.spec!.containers[0]!.imagePullPolicy).to.equal('Always');
  });

  it('NamespaceProtection: configured namespaces, CRDs and labelled objects cannot be deleted, and the message says how to lift it', async function () {
    this.timeout(420_000);
    const { core } = cluster().kube;
    const labelled = { metadata: { name: 'guarded', labels: { [PROTECTION_LABEL]: 'true' } }, data: { a: 'b' } };

    // Without the suite the API server deletes all three.
    await core.deleteNamespace({ name: NS.keep });
    await core.createNamespacedConfigMap({ namespace: NS.protect, body: labelled });
    await core.deleteNamespacedConfigMap({ namespace: NS.protect, name: 'guarded' });
    await crds().createCustomResourceDefinition({ body: crdBody() });
    await crds().deleteCustomResourceDefinition({ name: CRD_NAME });
    await namespaceGone(NS.keep);
    await ensureNamespace(NS.keep);
    await core.createNamespacedConfigMap({ namespace: NS.protect, body: labelled });
    // A ceiling only: the API server removes a CRD's objects and its serving before the name is free, slowly on a busy machine.
    await eventually(() => crds().createCustomResourceDefinition({ body: crdBody() }), { what: 'the CRD to be created again', timeoutMs: 180_000, intervalMs: 1000 });

    await createSuite('handlers-protect', {
      webhooks: [
        {
          name: 'protect',
          type: 'Validating',
          rules: [rule(['DELETE'], '', ['namespaces', 'configmaps'])],
          namespaceSelector: only(NS.keep, NS.protect),
          handler: { name: 'NamespaceProtection', config: { namespaces: [NS.keep] } },
        },
        {
          name: 'protect-crds',
          type: 'Validating',
          rules: [rule(['DELETE'], 'apiextensions.k8s.io', ['customresourcedefinitions'])],
          objectSelector: { matchLabels: { 'portcullis-test': 'handlers' } },
          handler: { name: 'NamespaceProtection' },
        },
      ],
    });
    await waitForCondition('handlers-protect', 'Ready', 'True');

    const namespace = await refused(() => core.deleteNamespace({ name: NS.keep }), `deleting namespace ${NS.keep}`);
    expect(namespace.code).to.equal(403);
    expect(namespace.message).to.contain('admission webhook "protect.handlers-protect.admission.portcullis.dev" denied the request: NamespaceProtection:');
    expect(namespace.message).to.contain(`to delete it, first remove "${NS.keep}" from that list`);
    expect((await core.readNamespace({ name: NS.keep })).status?.phase).to.equal('Active');

    const configMap = await refused(() => core.deleteNamespacedConfigMap({ namespace: NS.protect, name: 'guarded' }), 'deleting the labelled ConfigMap');
    expect(configMap.code).to.equal(403);
    expect(configMap.message).to.contain(`kubectl label configmaps guarded -n ${NS.protect} ${PROTECTION_LABEL}-`);

    const crd = await refused(() => crds().deleteCustomResourceDefinition({ name: CRD_NAME }), 'deleting the CRD');
    expect(crd.code).to.equal(403);
    expect(crd.message).to.contain(`CustomResourceDefinition "${CRD_NAME}" is protected from deletion`);
    expect((await crds().readCustomResourceDefinition({ name: CRD_NAME })).metadata?.deletionTimestamp).to.equal(undefined);

    // Following the message lifts the protection; an unlabelled object was never protected.
    await core.patchNamespacedConfigMap(
      { namespace: NS.protect, name: 'guarded', body: [{ op: 'remove', path: `/metadata/labels/${PROTECTION_LABEL.replace('/', '~1')}` }] },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    await core.deleteNamespacedConfigMap({ namespace: NS.protect, name: 'guarded' });
    await core.createNamespacedConfigMap({ namespace: NS.protect, body: { metadata: { name: 'plain' } } });
    await core.deleteNamespacedConfigMap({ namespace: NS.protect, name: 'plain' });
  });

  it("PodNodeSelector: the namespace's node selector is merged into new Pods; conflicts and keys outside the allowlist are refused", async function () {
    const before = await createPod(NS.nodeSelector, podBody('nodesel-before'));
    expect(before.spec!.nodeSelector).to.equal(undefined);
    const prodBefore = await createPod(NS.nodeSelector, podBody('nodesel-prod-before', { nodeSelector: { env: 'prod' } }));
    expect(prodBefore.spec!.nodeSelector).to.deep.equal({ env: 'prod' });

    const config = { namespaceAllowlists: { [NS.nodeSelector]: 'env=test,tier=web' } };
    await createSuite('handlers-nodesel', {
      webhooks: [
        { name: 'merge', type: 'Mutating', rules: podCreate, namespaceSelector: only(NS.nodeSelector), handler: { name: 'PodNodeSelector', config } },
        { name: 'check', type: 'Validating', rules: podCreate, namespaceSelector: only(NS.nodeSelector), handler: { name: 'PodNodeSelector', config } },
      ],
    });
    await waitForCondition('handlers-nodesel', 'Ready', 'True');

    const merged = await eventually(
      async () => {
        const pod = await createPod(NS.nodeSelector, podBody(unique('nodesel')));
        if (!pod.spec!.nodeSelector) throw new Error('stored without a nodeSelector');
        return pod;
      },
      { what: 'the node selector to be merged' },
    );
    expect(merged.spec!.nodeSelector).to.deep.equal({ env: 'test' });
    const web = await createPod(NS.nodeSelector, podBody(unique('nodesel'), { nodeSelector: { tier: 'web' } }));
    expect(web.spec!.nodeSelector).to.deep.equal({ env: 'test', tier: 'web' });

    const conflict = await refused(() => createPod(NS.nodeSelector, podBody(unique('nodesel'), { nodeSelector: { env: 'prod' } })), 'a Pod asking for env=prod');
    expect(conflict.code).to.equal(403);
    expect(conflict.message).to.contain('admission webhook "merge.handlers-nodesel.admission.portcullis.dev" denied the request: pods "');
    expect(conflict.message).to.contain('is forbidden: pod node label selector conflicts with its namespace node label selector');
    const outside = await refused(() => createPod(NS.nodeSelector, podBody(unique('nodesel'), { nodeSelector: { disk: 'ssd' } })), 'a Pod asking for disk=ssd');
    expect(outside.code).to.equal(403);
    expect(outside.message).to.contain('is forbidden: pod node label selector labels conflict with its namespace whitelist');
  });

  it("DefaultResources: the namespace's LimitRange defaults requests and limits, and a container over its max is refused", async function () {
    await cluster().kube.core.createNamespacedLimitRange({
      namespace: NS.limits,
      body: {
        metadata: { name: 'limits' },
        spec: { limits: [{ type: 'Container', max: { cpu: '1', memory: '512Mi' }, _default: { cpu: '500m', memory: '256Mi' }, defaultRequest: { cpu: '100m', memory: '128Mi' } }] },
      },
    });
    const bare = await createPod(NS.limits, podBody('limits-before'));
    expect(bare.spec!.containers[0]!.resources ?? {}).to.deep.equal({});
    const big = await createPod(NS.limits, podBody('limits-big-before', { containers: [{ name: 'app', image: IMAGE, resources: { limits: { cpu: '2' } } }] }));
    expect(big.spec!.containers[0]!.resources!.limits).to.deep.equal({ cpu: '2' });

    await createSuite('handlers-limits', {
      webhooks: [
        { name: 'defaults', type: 'Mutating', rules: podCreate, namespaceSelector: only(NS.limits), handler: { name: 'DefaultResources' } },
        { name: 'bounds', type: 'Validating', rules: podCreate, namespaceSelector: only(NS.limits), handler: { name: 'DefaultResources' } },
      ],
    });
    await waitForCondition('handlers-limits', 'Ready', 'True');

    const defaulted = await eventually(
      async () => {
        const pod = await createPod(NS.limits, podBody(unique('limits')));
        if (!pod.spec!.containers[0]!.resources?.limits) throw new Error('stored without limits');
        return pod;
      },
      { what: 'the defaults to apply' },
    );
    expect(defaulted.spec!.containers[0]!.resources).to.deep.equal({ requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } });
    expect(defaulted.metadata!.annotations!['kubernetes.io/limit-ranger']).to.equal('LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app');

    const over = await refused(() => createPod(NS.limits, podBody(unique('limits'), { containers: [{ name: 'app', image: IMAGE, resources: { limits: { cpu: '2' } } }] })), 'a container with a 2 CPU limit');
    expect(over.code).to.equal(403);
    expect(over.message).to.contain('admission webhook "bounds.handlers-limits.admission.portcullis.dev" denied the request: pods "');
    expect(over.message).to.contain('is forbidden: maximum cpu usage per Container is 1, but limit is 2');
  });

  it('DefaultTolerationSeconds, DenyServiceExternalIPs, ImageRegistryAllowlist and RequiredLabels', async function () {
    const { core } = cluster().kube;
    const service = (name: string, externalIPs?: string[]): k8s.V1Service => ({ metadata: { name }, spec: { ports: [{ port: 80 }], ...(externalIPs ? { externalIPs } : {}) } });
    const nginx = (name: string): k8s.V1Deployment => ({
      metadata: { name },
      spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
    });

    const pod = await createPod(NS.more, podBody('tolerations-before'));
    expect(pod.spec!.tolerations).to.equal(undefined);
    expect((await core.createNamespacedService({ namespace: NS.more, body: service('external-before', ['192.0.2.10']) })).spec!.externalIPs).to.deep.equal(['192.0.2.10']);
    await cluster().apps.createNamespacedDeployment({ namespace: NS.more, body: nginx('nginx-before') });
    await core.createNamespacedConfigMap({ namespace: NS.more, body: { metadata: { name: 'unowned-before' } } });

    const scope = only(NS.more);
    const spec: SuiteSpec = {
      webhooks: [
        { name: 'tolerations', type: 'Mutating', rules: podCreate, namespaceSelector: scope, handler: { name: 'DefaultTolerationSeconds', config: { unreachableTolerationSeconds: 60 } } },
        { name: 'external-ips', type: 'Validating', rules: [rule(['CREATE', 'UPDATE'], '', ['services'])], namespaceSelector: scope, handler: { name: 'DenyServiceExternalIPs' } },
        { name: 'registries', type: 'Validating', rules: [rule(['CREATE', 'UPDATE'], 'apps', ['deployments'])], namespaceSelector: scope, handler: { name: 'ImageRegistryAllowlist', config: { registries: ['registry.k8s.io'] } } },
        { name: 'owner', type: 'Validating', rules: [rule(['CREATE', 'UPDATE'], '', ['configmaps'])], namespaceSelector: scope, handler: { name: 'RequiredLabels', config: { labels: [{ key: 'owner', allowedRegex: '^[a-z]+$' }] } } },
      ],
    };
    await createSuite('handlers-more', spec);
    await waitForCondition('handlers-more', 'Ready', 'True');

    const tolerated = await eventually(
      async () => {
        const created = await createPod(NS.more, podBody(unique('tolerations')));
        if (!created.spec!.tolerations) throw new Error('stored without tolerations');
        return created;
      },
      { what: 'the tolerations to be added' },
    );
    expect(tolerated.spec!.tolerations).to.deep.equal([
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
    ]);

    const external = await refused(() => core.createNamespacedService({ namespace: NS.more, body: service(unique('external'), ['192.0.2.10']) }), 'a Service with externalIPs');
    expect(external.code).to.equal(403);
    expect(external.message).to.contain('is forbidden: Use of external IPs is denied by admission control');
    // An UPDATE that keeps the external IPs it had is allowed.
    const kept = await core.patchNamespacedService({ namespace: NS.more, name: 'external-before', body: { metadata: { labels: { touched: 'yes' } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    expect(kept.spec!.externalIPs).to.deep.equal(['192.0.2.10']);

    const registry = await refused(() => cluster().apps.createNamespacedDeployment({ namespace: NS.more, body: nginx(unique('nginx')) }), 'a Deployment of docker.io/library/nginx');
    expect(registry.code).to.equal(403);
    expect(registry.message).to.contain('ImageRegistryAllowlist: container "web" uses image "nginx:1.27" (docker.io/library/nginx): not from an allowed registry (registry.k8s.io)');
    const allowed = await cluster().apps.createNamespacedDeployment({
      namespace: NS.more,
      body: { ...nginx(unique('pause')), spec: { selector: { matchLabels: { app: 'pause' } }, template: { metadata: { labels: { app: 'pause' } }, spec: { containers: [{ name: 'web', image: IMAGE }] } } } },
    });
    expect(allowed.spec!.template.spec!.containers[0]!.image).to.equal(IMAGE);

    const unowned = await refused(() => core.createNamespacedConfigMap({ namespace: NS.more, body: { metadata: { name: unique('unowned') } } }), 'a ConfigMap without an owner label');
    expect(unowned.code).to.equal(403);
    expect(unowned.message).to.contain('RequiredLabels: ConfigMap "unowned-');
    expect(unowned.message).to.contain('missing required label owner');
    const owned = await core.createNamespacedConfigMap({ namespace: NS.more, body: { metadata: { name: unique('owned'), labels: { owner: 'team' } } } });
    expect(owned.metadata!.labels).to.deep.equal({ owner: 'team' });
  });

  it('a suite with a bad handler config is refused on apply, naming the field', async function () {
    await waitForSuiteValidation(operator);
    const bad: SuiteSpec = {
      webhooks: [
        { name: 'registries', type: 'Validating', rules: [rule(['CREATE'], 'apps', ['deployments'])], namespaceSelector: only(NS.more), handler: { name: 'ImageRegistryAllowlist', config: { registries: ['nginx'] } } },
        { name: 'limits', type: 'Mutating', rules: podCreate, namespaceSelector: only(NS.more), handler: { name: 'DefaultResources', config: { limits: [{ type: 'Container', max: { cpu: 'lots' } }] } } },
      ],
    };
    const refusedSuite = await eventually(
      async () => {
        const status = await refusal(() => createSuite('handlers-bad-config', bad));
        if (status) return status;
        await deleteSuite('handlers-bad-config');
        throw new Error('the suite was admitted');
      },
      { what: 'the suite to be refused' },
    );
    expect(refusedSuite.code).to.equal(422);
    expect(refusedSuite.message).to.contain('spec.webhooks[0].handler.config.registries[0]');
    expect(refusedSuite.message).to.contain('does not start with a registry host');
    expect(refusedSuite.message).to.contain('spec.webhooks[1].handler.config.limits[0].max.cpu');
    expect(await getSuite('handlers-bad-config')).to.equal(undefined);
  });
});
