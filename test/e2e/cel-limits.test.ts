/**
 * CEL bounded as the API server bounds it, through the real API server (issue 49, attack 1): a
 * namespace admin (a ServiceAccount with a TokenRequest token, Kubernetes' `admin` role in its
 * namespace only) writes AdmissionPolicies with a chain of `+` at the API server's depth limit, one
 * past it, and thousands deep. The API server's own words for the same expressions are taken from
 * a ValidatingAdmissionPolicy's server-side dry run. The operator runs as a process of its own, so
 * that an expression that stops it shows as its exit. Scoped to this file's namespace (cel-limits).
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type PolicySpec } from '../../src/api/types.ts';
import { NAMESPACED } from '../../src/api/names.ts';
import { freePort } from '../../src/local/ports.ts';

const TEAM = 'cel-limits';
const MEMBER = 'member';
const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
/** `object.metadata.name + 'x' + ... != '<name>xx...'`: 2 selections, `n` additions and a relation, 3 + n counted. */
const chain = (n: number, name: string) => `object.metadata.name${" + 'x'".repeat(n)} != '${name}${'x'.repeat(n)}'`;
const AT_LIMIT = 247;
const DEPTH_WORDS = 'compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded';

const ref = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: TEAM };
const policy = (name: string, expression: string): PolicySpec => ({ type: 'Validating', rules: configMaps, validations: [{ expression, message: `refused by ${name}` }] });

/** The API server's answer to the expression as a ValidatingAdmissionPolicy's (a dry run: nothing is stored). */
async function apiServerWords(expression: string): Promise<string | undefined> {
  const vap = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'cel-limits-probe' },
    spec: { matchConstraints: { resourceRules: configMaps }, validations: [{ expression }] },
  };
  const result = await kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'name'], JSON.stringify(vap));
  return result.code === 0 ? undefined : result.stderr;
}

describe('CEL at the API server limits: a namespace admin cannot stop the operator', function () {
  this.timeout(300_000);
  let operator: OperatorProcess;
  let member: Kube;
  let serial = 0;

  const alive = () => {
    if (operator.child.exitCode !== null || operator.child.signalCode !== null) throw new Error(`the operator exited (${operator.child.exitCode ?? operator.child.signalCode}): ${operator.output().slice(-2000)}`);
  };
  const create = (name: string, expression: string) => member.custom.createNamespacedCustomObject({ ...ref, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name }, spec: policy(name, expression) } });
  /** A policy that refuses ConfigMaps named `name`, served: the operator is up and compiles what it admitted. */
  const servedAndRefusing = async (policyName: string, configMapName: string) =>
    eventually(
      async () => {
        alive();
        const answer = await refusal(() => createConfigMap(TEAM, `${configMapName}`));
        if (!answer) {
          await cluster().kube.core.deleteNamespacedConfigMap({ namespace: TEAM, name: configMapName });
          throw new Error(`${configMapName} admitted: ${policyName} not served yet`);
        }
        expect(answer.message).to.contain(`refused by ${policyName}`);
      },
      { what: `AdmissionPolicy ${policyName} to be served`, timeoutMs: 120_000 },
    );

  before(async function () {
    for (const file of ['deploy/00-namespace.yaml', 'deploy/02-rbac.yaml']) {
      const result = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]);
      expect(result.code, result.stderr).to.equal(0);
    }
    await ensureNamespace(TEAM);
    const { kube } = cluster();
    await kube.core.createNamespacedServiceAccount({ namespace: TEAM, body: { metadata: { name: MEMBER } } }).catch(() => undefined);
    await kube.objects
      .create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'member-admin', namespace: TEAM },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
        subjects: [{ kind: 'ServiceAccount', name: MEMBER, namespace: TEAM }],
      } as k8s.KubernetesObject)
      .catch(() => undefined);
    await eventually(
      async () => {
        const answer = (await kubectl(['auth', 'can-i', 'create', `${POLICY_PLURAL}.${GROUP}`, '-n', TEAM, '--as', `system:serviceaccount:${TEAM}:${MEMBER}`])).stdout.trim();
        if (answer !== 'yes') throw new Error(`can-i create: ${answer}`);
      },
      { what: 'the admin role to carry the policy verbs' },
    );
    member = connect(await serviceAccountKubeConfig(TEAM, MEMBER));
    operator = await spawnOperator({ servingPort: await freePort(), metricsPort: await freePort() });
  });

  after(async function () {
    const { kube } = cluster();
    const policies = ((await kube.custom.listNamespacedCustomObject(ref).catch(() => ({ items: [] }))) as { items: AdmissionPolicy[] }).items;
    for (const p of policies) await kube.custom.deleteNamespacedCustomObject({ ...ref, name: p.metadata.name }).catch(() => undefined);
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      await deleteIfExists(kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: NAMESPACED.configuration } });
    }
    await operator?.kill();
    await kube.core.deleteNamespace({ name: TEAM }).catch(() => undefined);
  });

  it('takes the chain the API server takes at its limit, and refuses one past it in the API server words', async function () {
    expect(await apiServerWords(chain(AT_LIMIT, 'a'))).to.equal(undefined);
    expect(await apiServerWords(chain(AT_LIMIT + 1, 'a')))
      .to.contain(`spec.validations[0].expression`)
      .and.contain(DEPTH_WORDS);

    await eventually(() => create('at-limit', chain(AT_LIMIT, 'refuse-me')), { what: 'the policy at the limit to be admitted', timeoutMs: 120_000 });
    await servedAndRefusing('at-limit', 'refuse-me');
    // and the policy lets the others through
    await createConfigMap(TEAM, 'welcome');

    const past = await refusal(() => create('past-limit', chain(AT_LIMIT + 1, 'refuse-me')));
    expect(past?.message ?? 'admitted')
      .to.contain('spec.validations[0].expression')
      .and.contain(DEPTH_WORDS);
    alive();
  });

  it('refuses chains thousands deep on apply, and the operator keeps running and serving', async function () {
    const answers = new Map<number, string>();
    for (const depth of [1_700, 5_050]) answers.set(depth, (await refusal(() => create(`deep-${depth}`, chain(depth, 'x'))))?.message ?? 'admitted');
    // what the operator admits next is compiled and served: the process never stopped (whatever
    // became of the deep chains: were they admitted, each replica would compile them)
    const name = `after-${++serial}`;
    await eventually(() => create(name, `object.metadata.name != 'refuse-${name}'`), { what: `${name} to be admitted` });
    await servedAndRefusing(name, `refuse-${name}`);
    alive();
    for (const [depth, message] of answers) expect(message, `a chain ${depth} deep`).to.contain(DEPTH_WORDS);
  });
});
