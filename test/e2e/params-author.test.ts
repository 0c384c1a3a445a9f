/**
 * Issue 49, attack 3: a suite author reads what it may not read, through params, when the
 * suite-validation webhook (failurePolicy Ignore) did not answer. Owns the checks that cannot fail
 * open: deploy/06's guard records who last wrote a suite's spec (a MutatingAdmissionPolicy the
 * author cannot forge) and refuses any write whose writer may not read every params the suite
 * names, whatever the write changed; the operator asks again, for the recorded author, before it
 * serves a suite with params, so a suite admitted while nothing checked it (no operator running,
 * the guard's validating half not bound) is not served (Ready=False, ParamsForbidden) and no
 * denial ever shows the params. Attackers are ServiceAccounts with TokenRequest tokens and only
 * their own rights; each attack has a control, an author who may read the Pod, whose suite is
 * served and whose denials do show it (so the channel is real). The operator runs with the test's
 * admin credentials: an operator granted Pods as params (config/samples/params-rbac.yaml's way).
 */
import { expect } from 'chai';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { condition, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { eventually } from '../support/wait.ts';
import { apply, connect, deleteIfExists, getObject, type Kube } from '../../src/apiserver/client.ts';
import { configurationName, NAMESPACED, SUITE_VALIDATION } from '../../src/api/names.ts';
import { GROUP, PLURAL, VERSION, type AdmissionSuite } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const VICTIM = 'params-author-victim';
const ATTACK = 'params-author-attack';
const READ = 'params-author-read';
const GUARD = 'portcullis-suite-params-guard';
const ref = { group: GROUP, version: VERSION, plural: PLURAL };
/** The Pod's secret: what must never reach the attacker. */
const PASSWORD = `hunter2-${randomName()}`;

function randomName(): string {
  return Math.random().toString(36).slice(2, 10);
}

const user = (name: string) => `system:serviceaccount:${ATTACK}:${name}`;

/** A suite that denies every ConfigMap created in `namespace`, quoting the Pod's password from its params. */
function suite(name: string, namespace: string, message = "'leak: ' + params.spec.containers[0].env[0].value"): AdmissionSuite {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'AdmissionSuite',
    metadata: { name },
    spec: {
      failurePolicy: 'Ignore',
      webhooks: [
        {
          name: 'show',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          params: { apiVersion: 'v1', kind: 'Pod', namespace: VICTIM, name: 'db' },
          validations: [{ expression: 'false', messageExpression: message }],
        },
      ],
    },
  } as unknown as AdmissionSuite;
}

async function grant(name: string, namespace: string | undefined, subject: string, rules: object[]): Promise<void> {
  const kind = namespace ? 'Role' : 'ClusterRole';
  const meta = { name, ...(namespace ? { namespace } : {}) };
  await apply(cluster().kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: meta, rules });
  await apply(cluster().kube, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: `${kind}Binding`,
    metadata: meta,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
    subjects: [{ kind: 'ServiceAccount', name: subject, namespace: ATTACK }],
  });
}

/** What a ConfigMap create in `namespace` by `as` is answered: the denial's message, or undefined when admitted. */
async function createConfigMap(as: Kube, namespace: string): Promise<string | undefined> {
  const refused = await refusal(() => as.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `probe-${randomName()}` } } }));
  return refused?.message;
}

/**
 * The write's refusal, if any. An update is made on the stored version, and made again on a newer
 * one when that moved meanwhile (409: an operator left running by an earlier test may write its
 * status between the read and the write), as a retrying client does: a conflict is no answer.
 */
async function writeSuite(as: Kube, body: AdmissionSuite): Promise<string | undefined> {
  let refused: Awaited<ReturnType<typeof refusal>>;
  for (let attempt = 0; attempt < 10; attempt++) {
    const stored = await getSuite(body.metadata.name);
    refused = await refusal(() =>
      stored
        ? as.custom.replaceClusterCustomObject({ ...ref, name: body.metadata.name, body: { ...body, metadata: { ...stored.metadata, ...body.metadata, annotations: stored.metadata.annotations } } })
        : as.custom.createClusterCustomObject({ ...ref, body }),
    );
    if (refused?.code !== 409) break;
  }
  return refused?.message;
}

async function applyGuard(): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', 'deploy/06-suite-params-guard.yaml']);
  expect(applied.code, applied.stderr).to.equal(0);
}

describe('Issue 49 attack 3: a suite is served only while its recorded author may read its params', function () {
  let attacker: Kube;
  let reader: Kube;
  let operator: Operator | undefined;

  before(async function () {
    for (const namespace of [VICTIM, ATTACK, READ]) await ensureNamespace(namespace);
    await apply(cluster().kube, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db', namespace: VICTIM },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'db', image: 'registry.k8s.io/pause:3.10', env: [{ name: 'PASSWORD', value: PASSWORD }] }] },
    });
    for (const name of ['author', 'reader']) {
      await apply(cluster().kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ATTACK } });
      await grant(`params-author-${name}`, undefined, name, [{ apiGroups: [GROUP], resources: ['admissionsuites'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] }]);
    }
    await grant('params-author-configmaps', ATTACK, 'author', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]);
    await grant('params-author-configmaps', READ, 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }]);
    // The control: this author may read the Pod; the attacker may not.
    await grant('params-author-pods', VICTIM, 'reader', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);
    expect((await kubectl(['auth', 'can-i', 'get', 'pods', '-n', VICTIM, '--as', user('author')])).stdout.trim()).to.equal('no');
    attacker = connect(await serviceAccountKubeConfig(ATTACK, 'author'));
    reader = connect(await serviceAccountKubeConfig(ATTACK, 'reader'));

    // No operator answers: the suite-validation webhook refuses nothing.
    await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: SUITE_VALIDATION.configuration } });
    await applyGuard();
    // The policies take a moment to load: until the author is recorded and the attacker refused.
    await eventually(
      async () => {
        const refused = await writeSuite(attacker, suite('author-probe', ATTACK));
        if (refused === undefined) {
          await deleteSuite('author-probe');
          throw new Error('admitted: the guard is not loaded yet');
        }
        await writeSuite(reader, suite('author-probe', READ));
        const stored = await getSuite('author-probe');
        await deleteSuite('author-probe');
        if (stored?.metadata.annotations?.[NAMESPACED.authorAnnotation] !== user('reader')) throw new Error('the author is not recorded yet');
      },
      { what: "deploy/06's policies to be in force", timeoutMs: 60_000 },
    );
  });

  after(async function () {
    await operator?.stop();
    for (const name of ['author-leak', 'author-ok', 'author-probe']) await deleteSuite(name);
    // Put back as deploy/ has it, for the tests after this one.
    await applyGuard();
    for (const namespace of [VICTIM, ATTACK, READ])
      await cluster()
        .kube.core.deleteNamespace({ name: namespace })
        .catch(() => undefined);
  });

  describe("with no operator answering: deploy/06's guard", function () {
    it('refuses params of any kind its writer may not read, and records the writer as the author (a forged author is replaced)', async function () {
      const refused = await writeSuite(attacker, suite('author-leak', ATTACK));
      expect(refused).to.contain(`ValidatingAdmissionPolicy '${GUARD}'`);
      expect(refused, refused).to.contain(`user "${user('author')}" may not get Pod (v1) db in namespace ${VICTIM}`);

      const forged = suite('author-ok', READ);
      forged.metadata.annotations = { [NAMESPACED.authorAnnotation]: 'system:admin', [NAMESPACED.authorGroupsAnnotation]: 'system:masters' };
      expect(await writeSuite(reader, forged)).to.equal(undefined);
      const stored = await getSuite('author-ok');
      expect(stored?.metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('reader'));
      expect(stored?.metadata.annotations?.[NAMESPACED.authorGroupsAnnotation]).to.contain('system:serviceaccounts');
    });

    it('checks every write whole: an edit that leaves the params alone is refused to a writer who may not read them', async function () {
      // Only the message changes: it would show the attacker the Pod through the reader's suite.
      const refused = await writeSuite(attacker, suite('author-ok', ATTACK));
      expect(refused, refused).to.contain(`user "${user('author')}" may not get Pod (v1) db in namespace ${VICTIM}`);
      const labelled = await refusal(() => attacker.custom.patchClusterCustomObject({ ...ref, name: 'author-ok', body: [{ op: 'add', path: '/metadata/labels', value: { team: 'x' } }] }));
      expect(labelled?.message, labelled?.message).to.contain(`user "${user('author')}" may not get Pod (v1) db`);
      expect((await getSuite('author-ok'))?.metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('reader'));
    });
  });

  describe("admitted while nothing checked it (no operator running, the guard's validating half unbound): the operator asks again before serving", function () {
    before(async function () {
      // A webhook that did not answer, and a cluster without the validating half: the author is still recorded.
      await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: GUARD } });
      await eventually(
        async () => {
          const refused = await writeSuite(attacker, suite('author-leak', ATTACK));
          if (refused !== undefined) throw new Error(refused);
        },
        { what: "the API server to drop the guard's binding", timeoutMs: 60_000 },
      );
      expect((await getSuite('author-leak'))?.metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('author'));
      operator = await startTestOperator({ namespacedPolicyAuthorRecheckMs: 2_000 });
      await waitForSuiteValidation(operator);
    });

    it("is not served (Ready=False, ParamsForbidden), registers nothing, and no denial carries the Pod's data; the control author's suite is served and does", async function () {
      const served = await waitForCondition('author-ok', 'Ready', 'True', 60_000);
      expect(condition(served, 'Ready')?.reason).to.equal('Ready');
      const shown = await eventually(async () => (await createConfigMap(reader, READ)) ?? Promise.reject(new Error('admitted: not served yet')), { what: "the control suite's denial" });
      expect(shown).to.contain(`leak: ${PASSWORD}`);

      const refused = await waitForCondition('author-leak', 'Ready', 'False', 60_000);
      const ready = condition(refused, 'Ready')!;
      expect(ready.reason, ready.message).to.equal('ParamsForbidden');
      expect(ready.message).to.contain(`user "${user('author')}" may not get, list, watch Pod (v1) in namespace ${VICTIM}`);
      expect(condition(refused, 'WebhooksRegistered')?.reason).to.equal('ParamsForbidden');
      expect(JSON.stringify(refused.status)).to.not.contain(PASSWORD);
      expect(await getObject(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: configurationName('author-leak') } })).to.equal(undefined);
      for (let i = 0; i < 3; i++) expect(await createConfigMap(attacker, ATTACK)).to.equal(undefined);
      // Not in this replica's registry either: nothing answers for it even when asked directly.
      expect(operator!.registry.get('author-leak')).to.equal(undefined);
    });

    it('checks an update that changes nothing about params, on apply; and at reconcile when it was admitted unchecked', async function () {
      // The operator answers: the suite-validation webhook refuses an edit of the message alone.
      const refused = await eventually(async () => (await writeSuite(attacker, suite('author-ok', ATTACK))) ?? Promise.reject(new Error('admitted')), { what: 'the webhook to refuse' });
      expect(refused).to.contain(`admission webhook "${SUITE_VALIDATION.webhook}" denied the request`);
      expect(refused).to.contain(`user "${user('author')}" may not get, list, watch Pod (v1) in namespace ${VICTIM}`);

      // No operator answers the same edit: admitted, and the attacker recorded as the author.
      await operator!.stop();
      operator = undefined;
      expect(await writeSuite(attacker, suite('author-ok', ATTACK))).to.equal(undefined);
      const stored = (await getSuite('author-ok'))!;
      expect(stored.metadata.annotations?.[NAMESPACED.authorAnnotation]).to.equal(user('author'));

      operator = await startTestOperator({ namespacedPolicyAuthorRecheckMs: 2_000 });
      const withheld = await waitForCondition('author-ok', 'Ready', 'False', 60_000);
      expect(condition(withheld, 'Ready')?.reason).to.equal('ParamsForbidden');
      await eventually(
        async () => {
          const left = await getObject(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: configurationName('author-ok') } });
          if (left) throw new Error('still registered');
        },
        { what: "the suite's configuration to be removed" },
      );
      for (const [as, namespace] of [
        [attacker, ATTACK],
        [reader, READ],
      ] as [Kube, string][]) {
        const message = await createConfigMap(as, namespace);
        expect(message ?? '').to.not.contain(PASSWORD);
      }
    });
  });
});
