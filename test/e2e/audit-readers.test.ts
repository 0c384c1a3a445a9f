/**
 * The background audit shows an author only what it may see, and reports only what the API server
 * asked about (issue 49, attacks 4 to 6), through the real API server with attackers that are
 * ServiceAccounts with their own tokens and rights:
 * - an AdmissionPolicy author who may not list ConfigMaps in its namespace learns nothing of them
 *   from its policy's status.audit (one bit of a password per policy, before), while an author who
 *   may list them sees the counts;
 * - a Warn webhook whose messageExpression prints `object.data` never puts a Secret's data in the
 *   namespace's Report (readable by `view`) through its live results, while a ConfigMap's shows;
 * - AdmissionReviews POSTed straight to the admission port (no credential asked) for objects that
 *   do not exist, or in a namespace the webhook does not select, leave nothing in any Report, while
 *   a real create through the API server in a selected namespace is recorded.
 */
import { expect } from 'chai';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { cluster, OPERATOR_NAMESPACE, serviceAccountKubeConfig } from '../support/cluster.ts';
import { recordAuthors } from '../support/authors.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { apply, connect, deleteIfExists } from '../../src/apiserver/client.ts';
import { admitPath, defaultServiceName } from '../../src/api/names.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type PolicySpec, type SuiteSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'audit-readers';
const UNSELECTED = 'audit-readers-unselected';
const SUITE = 'audit-readers';
const PASSWORD = 'hunter2';
const SECRET_WORD = 'swordfish';
const configmaps = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

/** One bit of the password: fails (Audit: allowed on write, a failure in the audit) when its first letter is `h`. */
const bitPolicy: PolicySpec = {
  type: 'Validating',
  validationActions: ['Audit'],
  rules: configmaps,
  validations: [{ expression: "!(has(object.data) && 'password' in object.data && object.data.password.startsWith('h'))", message: 'bit set' }],
};

/** Warn-only (shadow mode): whatever it matches is let through, and its message says what the object holds. */
const suite: SuiteSpec = {
  webhooks: [
    {
      name: 'shown',
      type: 'Validating',
      validationActions: ['Warn'],
      namespaceSelector: { matchLabels: { 'audit-readers': 'yes' } },
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'secrets'] }],
      validations: [
        {
          expression: 'false',
          messageExpression: "'it holds ' + (!has(object.data) ? 'nothing' : 'password' in object.data ? object.data.password : 'word' in object.data ? object.data.word : 'something')",
        },
      ],
    },
  ],
};

interface Result {
  policy: string;
  rule: string;
  result: string;
  message?: string;
  resources: { name: string; kind: string; namespace?: string }[];
  properties?: Record<string, string>;
}

async function reports(namespace: string): Promise<{ results?: Result[] }[]> {
  const list = (await cluster().kube.custom.listNamespacedCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'reports', namespace })) as { items: { results?: Result[] }[] };
  return list.items;
}
const resultsOf = async (namespace: string) => (await reports(namespace)).flatMap((r) => r.results ?? []);

async function policyOf(name: string): Promise<AdmissionPolicy> {
  return (await cluster().kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name })) as AdmissionPolicy;
}

/** POSTs an AdmissionReview to the operator's admission port as any network client can: no credential, the certificate not checked. */
function postReview(port: number, servername: string, path: string, request: Record<string, unknown>): Promise<{ response?: { allowed?: boolean; warnings?: string[] } }> {
  const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
  return new Promise((resolve, reject) => {
    const req = https.request({ host: 'localhost', port, servername, path, method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        try {
          resolve(JSON.parse(text) as { response?: { allowed?: boolean; warnings?: string[] } });
        } catch {
          reject(new Error(`${res.statusCode}: ${text}`));
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A CREATE of a ConfigMap that is not there (a uid of the client's making), as the API server would send it. */
function forgedCreate(namespace: string, name: string): Record<string, unknown> {
  const kind = { group: '', version: 'v1', kind: 'ConfigMap' };
  const resource = { group: '', version: 'v1', resource: 'configmaps' };
  return {
    uid: randomUUID(),
    kind,
    resource,
    requestKind: kind,
    requestResource: resource,
    name,
    namespace,
    operation: 'CREATE',
    userInfo: { username: 'nobody' },
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, uid: randomUUID() }, data: { made: 'up' } },
    oldObject: null,
    dryRun: false,
    options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
  };
}

describe('background audit: an author sees only what it may list, and reports hold only what the API server asked about', function () {
  this.timeout(180_000);
  let operator: Operator;

  before(async function () {
    await recordAuthors();
    await ensureNamespace(NS, { 'audit-readers': 'yes' });
    await ensureNamespace(UNSELECTED);
    const { kube } = cluster();
    for (const name of ['vault', 'note', 'real-one']) await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS } });
    await deleteIfExists(kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: NS } });
    await createConfigMap(NS, 'vault', { password: PASSWORD });
    // blind may write policies and nothing else; sighted may also read ConfigMaps.
    const roles = {
      blind: [{ apiGroups: [GROUP], resources: [POLICY_PLURAL], verbs: ['create', 'update', 'get', 'list', 'delete'] }],
      sighted: [
        { apiGroups: [GROUP], resources: [POLICY_PLURAL], verbs: ['create', 'update', 'get', 'list', 'delete'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
      ],
    };
    for (const [name, rules] of Object.entries(roles)) {
      await apply(kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NS } });
      await apply(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: NS }, rules });
      await apply(kube, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: NS }],
      });
    }
    operator = await startTestOperator({ audit: true });
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    await deleteSuite(SUITE);
    for (const name of ['bit-blind', 'bit-sighted'])
      await cluster()
        .kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name })
        .catch(() => undefined);
    await operator.stop();
  });

  it("tells an AdmissionPolicy's author nothing of ConfigMaps it may not list; an author who may list them sees the counts", async function () {
    for (const author of ['blind', 'sighted']) {
      const as = connect(await serviceAccountKubeConfig(NS, author));
      await as.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: POLICY_PLURAL,
        namespace: NS,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: `bit-${author}` }, spec: bitPolicy },
      });
    }
    // The control: the author who may list ConfigMaps learns that the vault's password starts with h.
    await eventually(async () => expect((await policyOf('bit-sighted')).status?.audit).to.include({ failing: 1 }), { what: "the sighted author's counts", timeoutMs: 90_000 });
    // The attacker's policy was audited too (lastRun), and says why it judged nothing.
    const audit = await eventually(
      async () => {
        const status = (await policyOf('bit-blind')).status?.audit;
        if (!status?.lastRun || !status.message) throw new Error(`not audited yet: ${JSON.stringify(status)}`);
        return status;
      },
      { what: "the blind author's policy to be audited", timeoutMs: 60_000 },
    );
    expect(audit).to.include({ evaluated: 0, failing: 0 });
    expect(audit.message).to.contain('may not list configmaps in namespace audit-readers');
    // Status is written before the reports: the namespace's Report holds the sighted author's result, and nothing of the other's.
    const results = await eventually(
      async () => {
        const found = await resultsOf(NS);
        expect(found.some((r) => r.policy === `${NS}/bit-sighted` && r.resources[0]?.name === 'vault' && r.result === 'fail')).to.equal(true);
        return found;
      },
      { what: "the sighted author's result in the Report", timeoutMs: 60_000 },
    );
    expect(results.filter((r) => r.policy === `${NS}/bit-blind`)).to.deep.equal([]);
  });

  it("never puts a Secret's data in a Report through live Warn results; a ConfigMap's data shows where meant", async function () {
    await createSuite(SUITE, suite);
    const { kube } = cluster();
    // Written once the suite's webhook is in force (its warning says so).
    await eventually(
      async () => {
        await deleteIfExists(kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: NS } });
        await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'note', namespace: NS } });
        await kube.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'db' }, stringData: { password: SECRET_WORD } } });
        const created = await kube.core.createNamespacedConfigMapWithHttpInfo({ namespace: NS, body: { metadata: { name: 'note' }, data: { word: 'visible-word' } } });
        expect(String(created.headers['warning'] ?? '')).to.contain('it holds');
      },
      { what: "the suite's Warn webhook to be called", timeoutMs: 60_000 },
    );
    const live = await eventually(
      async () => {
        const found = (await resultsOf(NS)).find((r) => r.policy === `${SUITE}/shown` && r.resources[0]?.name === 'note' && r.properties?.origin === 'admission');
        if (!found) throw new Error('no live result yet');
        return found;
      },
      { what: "the ConfigMap's live result", timeoutMs: 60_000 },
    );
    expect(live.message).to.contain('visible-word');
    const text = JSON.stringify(await reports(NS));
    expect(text).to.not.contain(SECRET_WORD);
    expect(text).to.not.contain(Buffer.from(SECRET_WORD).toString('base64'));
    expect((await resultsOf(NS)).filter((r) => r.resources[0]?.kind === 'Secret')).to.deep.equal([]);
  });

  it('records nothing of AdmissionReviews POSTed straight to the admission port; a real create through the API server is recorded', async function () {
    const path = admitPath(SUITE, 'shown');
    const forged = [forgedCreate(NS, 'forged-missing'), forgedCreate(UNSELECTED, 'forged-unselected')];
    for (const request of forged) {
      // The suite's Service name, as its webhook configuration says it (the certificate is picked by it).
      const answer = await postReview(operator.servingPort, `${defaultServiceName(SUITE)}.${OPERATOR_NAMESPACE}.svc`, path, request);
      // The webhook answered them (allowed, warned): before, each became a live result.
      expect(answer.response?.allowed).to.equal(true);
      expect(answer.response?.warnings?.join(' ')).to.contain('it holds');
    }
    await createConfigMap(NS, 'real-one', { kind: 'real' });
    await eventually(
      async () => {
        const found = (await resultsOf(NS)).find((r) => r.policy === `${SUITE}/shown` && r.resources[0]?.name === 'real-one' && r.properties?.origin === 'admission');
        if (!found) throw new Error('no live result for the real create yet');
      },
      { what: "the real create's live result", timeoutMs: 60_000 },
    );
    const everywhere = [...(await resultsOf(NS)), ...(await resultsOf(UNSELECTED))];
    expect(everywhere.filter((r) => r.resources[0]?.name?.startsWith('forged-')).map((r) => r.resources[0])).to.deep.equal([]);
  });

  it("keeps no word of a request that names a real object's uid right after its write: a live result says what the stored object says", async function () {
    const { kube } = cluster();
    await createConfigMap(NS, 'real-two', { word: 'stored-word' });
    const stored = await kube.core.readNamespacedConfigMap({ name: 'real-two', namespace: NS });
    // Within the seconds the watch's sighting of the write matches a live result: the same object, the client's content.
    const request = forgedCreate(NS, 'real-two');
    request.object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'real-two', namespace: NS, uid: stored.metadata!.uid }, data: { word: 'forged-word' } };
    const answer = await postReview(operator.servingPort, `${defaultServiceName(SUITE)}.${OPERATOR_NAMESPACE}.svc`, admitPath(SUITE, 'shown'), request);
    expect(answer.response?.warnings?.join(' ')).to.contain('it holds forged-word');
    // A later real create's live result comes after the forged one's (the admission thread sends them in order).
    await createConfigMap(NS, 'real-three', { word: 'later-word' });
    await eventually(
      async () => {
        const found = (await resultsOf(NS)).find((r) => r.policy === `${SUITE}/shown` && r.resources[0]?.name === 'real-three' && r.properties?.origin === 'admission');
        if (!found) throw new Error('no live result for the later create yet');
      },
      { what: "the later create's live result" },
    );
    const ofRealTwo = (await resultsOf(NS)).filter((r) => r.resources[0]?.name === 'real-two');
    expect(ofRealTwo.map((r) => r.message).join(' | '))
      .to.contain('it holds stored-word')
      .and.not.contain('forged-word');
  });
});
