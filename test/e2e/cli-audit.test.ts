/**
 * `portcullis audit` and `portcullis test --replay` against real API servers.
 * - audit: with the operator's background audit running on the same suite and AdmissionPolicy
 *   (applied from the very file the command reads), the command finds exactly the (object, rule,
 *   result, message) the Reports say, namespaced and cluster-scoped, Secrets never; it exits 1 on
 *   a denial and 0 for a namespace with none; and it writes nothing: run as a ServiceAccount that
 *   could write anything, that account has not one event in the API server's audit log (which
 *   records every request but reads).
 * - replay: the test run's API server records at Metadata level only (no request objects), so
 *   this file starts a second control plane of its own (src/local/controlplane.ts, as
 *   test/support/reference.ts does), whose audit policy file is rewritten to record configmaps at
 *   RequestResponse level and read by its API server restarted (its stopApiServer/startApiServer),
 *   served by an operator of its own. Real requests made under a suite are replayed from its log:
 *   against that suite nothing differs (exit 0); against a tightened one, exactly the requests it
 *   would now deny (exit 1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl, serviceAccountKubeConfig } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { recordAuthors } from '../support/authors.ts';
import { eventually } from '../support/wait.ts';
import { auditEvents, auditLogBytes } from '../support/audit-log.ts';
import { runCli } from '../support/cli.ts';
import { startControlPlane, type ControlPlane } from '../../src/local/controlplane.ts';
import { installForLocalRun } from '../../src/local/install.ts';
import { apply, connect, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { GROUP, PLURAL, POLICY_PLURAL, VERSION } from '../../src/api/types.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'cli-audit-e2e';
const OTHER = 'cli-audit-e2e-other';
const SUITE = 'cli-audit';
const POLICY = 'cli-audit-size';
const LABEL = { 'cli-audit-e2e': 'yes' };
const configmaps = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];

const SUITE_OBJECT = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionSuite',
  metadata: { name: SUITE },
  spec: {
    webhooks: [
      {
        name: 'owner',
        type: 'Validating',
        namespaceSelector: { matchLabels: LABEL },
        rules: configmaps,
        validations: [
          { expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels", messageExpression: "'configmap ' + object.metadata.name + ' has no owner label'" },
          { expression: "request.userInfo.username != 'mallory'", message: 'mallory may not write configmaps' },
        ],
      },
      {
        name: 'shadow',
        type: 'Validating',
        validationActions: ['Warn'],
        namespaceSelector: { matchLabels: LABEL },
        rules: configmaps,
        validations: [{ expression: "object.metadata.name != 'good'", message: 'good is a name kept for later' }],
      },
      {
        name: 'team',
        type: 'Validating',
        objectSelector: { matchLabels: LABEL },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }],
        validations: [{ expression: "'team' in object.metadata.labels", messageExpression: "'namespace ' + object.metadata.name + ' names no team'" }],
      },
      {
        name: 'secret-words',
        type: 'Validating',
        namespaceSelector: { matchLabels: LABEL },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }],
        validations: [{ expression: 'false', messageExpression: "'the secret holds ' + string(object.data)" }],
      },
    ],
  },
};
const POLICY_OBJECT = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionPolicy',
  metadata: { name: POLICY, namespace: NS },
  spec: { type: 'Validating', rules: configmaps, validations: [{ expression: "object.metadata.name != 'bad'", message: 'no configmap may be called bad' }] },
};

interface ReportResult {
  policy: string;
  rule: string;
  result: string;
  message?: string;
  resources: { kind: string; name: string; namespace?: string }[];
}

/** What both sides are compared on: (policy, object, rule, result, message). */
const key = (policy: string, o: { kind: string; name: string; namespace?: string }, rule: string, result: string, message?: string) =>
  `${policy} | ${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name} | ${rule} | ${result} | ${message ?? ''}`;

async function reportedResults(kube: Kube): Promise<ReportResult[]> {
  const list = async (namespace?: string) =>
    (
      (namespace
        ? await kube.custom.listNamespacedCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'reports', namespace })
        : await kube.custom.listClusterCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'clusterreports' })) as { items: { results?: ReportResult[] }[] }
    ).items.flatMap((r) => r.results ?? []);
  const ours = (r: ReportResult) => r.policy.startsWith(`${SUITE}/`) || r.policy === `${NS}/${POLICY}`;
  return [...(await list(NS)), ...(await list(OTHER)), ...(await list())].filter(ours);
}

describe('portcullis audit: the background audit, from the command line', function () {
  this.timeout(180_000);
  let operator: Operator;
  let dir: string;
  let file: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-cli-audit-'));
    file = path.join(dir, 'suite.yaml');
    fs.writeFileSync(file, [SUITE_OBJECT, POLICY_OBJECT].map((o) => yaml.dump(o)).join('---\n'));
    await ensureNamespace(NS, { ...LABEL });
    await ensureNamespace(OTHER, { ...LABEL, team: 'blue' });
    for (const [namespace, name] of [
      [NS, 'bad'],
      [NS, 'good'],
      [NS, 'owned'],
      [OTHER, 'elsewhere'],
    ] as const) {
      await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } });
    }
    await createConfigMap(NS, 'bad');
    await createConfigMap(NS, 'good', {}, { owner: 'team-a' });
    await createConfigMap(NS, 'owned', {}, { owner: 'team-a' });
    await createConfigMap(OTHER, 'elsewhere', {}, { owner: 'team-b' });
    await cluster()
      .kube.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'cli-audit-secret' }, stringData: { password: 'hunter2' } } })
      .catch(() => undefined);
    // The background audit judges a suite or policy only for an author it may ask about: the install's guards record them.
    await recordAuthors();
    operator = await startTestOperator({ audit: true });
    await waitForSuiteValidation(operator);
    const applied = await eventually(
      async () => {
        const result = await kubectl(['apply', '-f', file]);
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: 'the suite and policy to be applied' },
    );
    expect(applied.code).to.equal(0);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await cluster()
      .kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: NS, name: POLICY })
      .catch(() => undefined);
    await deleteIfExists(cluster().kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'cli-audit-admin' } });
    await operator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds exactly what the background audit reports: (object, rule, result, message), Secrets never', async function () {
    // Every object the audit judges, as the Reports say once all are in.
    const expected = [
      key(`${SUITE}/owner`, { kind: 'ConfigMap', namespace: NS, name: 'bad' }, 'validations[0]', 'fail', 'configmap bad has no owner label'),
      key(`${SUITE}/shadow`, { kind: 'ConfigMap', namespace: NS, name: 'good' }, 'validations[0]', 'warn', 'good is a name kept for later'),
      key(`${SUITE}/team`, { kind: 'Namespace', name: NS }, 'validations[0]', 'fail', `namespace ${NS} names no team`),
      key(`${SUITE}/team`, { kind: 'Namespace', name: OTHER }, 'validations[0]', 'pass'),
      key(`${NS}/${POLICY}`, { kind: 'ConfigMap', namespace: NS, name: 'bad' }, 'validations[0]', 'fail', 'no configmap may be called bad'),
      key(`${NS}/${POLICY}`, { kind: 'ConfigMap', namespace: NS, name: 'owned' }, 'validations[0]', 'pass'),
    ];
    const reported = await eventually(
      async () => {
        const results = (await reportedResults(cluster().kube)).map((r) => key(r.policy, r.resources[0]!, r.rule, r.result, r.message));
        const missing = expected.filter((e) => !results.includes(e));
        if (missing.length) throw new Error(`not reported yet: ${missing.join('; ')}`);
        return new Set(results);
      },
      { what: 'the background audit to report every object', timeoutMs: 90_000 },
    );

    // The command as a ServiceAccount bound to cluster-admin: anything it wrote would be allowed, and logged.
    await apply(cluster().kube, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'cli-auditor', namespace: NS } });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'cli-audit-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'cli-auditor', namespace: NS }],
    });
    const kubeconfig = path.join(dir, 'auditor.kubeconfig');
    fs.writeFileSync(kubeconfig, (await serviceAccountKubeConfig(NS, 'cli-auditor')).exportConfig());

    const run = await runCli(['audit', '--kubeconfig', kubeconfig, '-o', 'json', file]);
    expect(run.code, run.stdout + run.stderr).to.equal(1);
    const output = JSON.parse(run.stdout) as {
      webhooks: { policy: string; evaluated: number; denied: number; objects: { kind: string; name: string; namespace?: string; results: { rule: string; result: string; message?: string }[] }[] }[];
      problems: string[];
    };
    expect(output.problems).to.deep.equal([]);
    const found = new Set(output.webhooks.flatMap((w) => w.objects.flatMap((o) => o.results.map((r) => key(w.policy, o, r.rule, r.result, r.message)))));
    expect([...found].sort()).to.deep.equal([...reported].sort());
    for (const e of expected) expect(found).to.include(e);
    // A check that reads the request's user is skipped, with the reason; Secrets are never listed.
    expect([...found].filter((k) => k.includes('| validations[1] | skip |'))).to.have.length(4);
    expect(output.webhooks.find((w) => w.policy === `${SUITE}/secret-words`)).to.include({ evaluated: 0 });
    expect(run.stdout).to.not.contain('hunter2');
    expect(output.webhooks.find((w) => w.policy === `${SUITE}/owner`)).to.include({ evaluated: 4, denied: 1 });

    // Nothing written: the API server logs every request it gets but reads (test/support's control plane).
    const events = auditEvents<{ user?: { username?: string }; verb: string; requestURI: string }>(cluster().controlPlane.auditLogPath);
    expect(events.filter((e) => e.user?.username === `system:serviceaccount:${NS}:cli-auditor`).map((e) => `${e.verb} ${e.requestURI}`)).to.deep.equal([]);
  });

  it('prints per webhook what it evaluated and each denial with its message; exit 0 for a namespace where nothing would be denied', async function () {
    const kubeconfig = cluster().controlPlane.kubeconfigPath;
    const text = await runCli(['audit', '--kubeconfig', kubeconfig, file]);
    expect(text.code, text.stdout + text.stderr).to.equal(1);
    expect(text.stdout).to.contain(`AdmissionSuite ${SUITE}/owner (Deny): 4 evaluated, 1 would be denied\n  ConfigMap ${NS}/bad: validations[0] fail: configmap bad has no owner label\n`);
    expect(text.stdout).to.contain(`AdmissionSuite ${SUITE}/shadow (Warn): 4 evaluated, 0 would be denied, 1 warned\n`);
    expect(text.stdout).to.contain(`  Namespace ${NS}: validations[0] fail: namespace ${NS} names no team\n`);
    expect(text.stdout).to.contain(`AdmissionPolicy ${NS}/${POLICY} (Deny): 3 evaluated, 1 would be denied\n`);
    expect(text.stdout).to.match(/\n2 of \d+ objects would be denied\n$/);

    const other = await runCli(['audit', '--kubeconfig', kubeconfig, '--namespace', OTHER, file]);
    expect(other.code, other.stdout + other.stderr).to.equal(0);
    expect(other.stdout).to.contain(`AdmissionSuite ${SUITE}/owner (Deny): 1 evaluated, 0 would be denied\n`);
    expect(other.stdout).to.contain(`AdmissionSuite ${SUITE}/team (Deny): 0 evaluated, 0 would be denied\n`);
    expect(other.stdout).to.match(/\n0 of 1 objects would be denied\n$/);
  });
});

/** A configmap suite: owner label required; `tight` also caps data at two keys and freezes the owner. */
function replaySuite(tight: boolean) {
  const validations = [
    { expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels", messageExpression: "'configmap ' + object.metadata.name + ' has no owner label'" },
    ...(tight
      ? [
          { expression: '!has(object.data) || size(object.data) <= 2', messageExpression: "'configmap ' + object.metadata.name + ' has more than two keys'" },
          { expression: "request.operation != 'UPDATE' || oldObject.metadata.labels['owner'] == object.metadata.labels['owner']", message: 'the owner may not change' },
        ]
      : []),
  ];
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'AdmissionSuite',
    metadata: { name: 'replay-guard' },
    spec: { webhooks: [{ name: 'owner', type: 'Validating', namespaceSelector: { matchLabels: { replay: 'yes' } }, rules: configmaps, validations }] },
  };
}

describe('portcullis test --replay: an audit log asked again of a changed suite', function () {
  this.timeout(300_000);
  let controlPlane: ControlPlane;
  let kube: Kube;
  let operator: Operator;
  let dir: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-replay-'));
    controlPlane = await startControlPlane({ log: () => undefined });
    // Configmaps at RequestResponse: the policy file is re-read when the API server starts again.
    fs.writeFileSync(
      path.join(controlPlane.dataDir, 'audit-policy.yaml'),
      `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: RequestResponse
    resources: [{ group: '', resources: [configmaps] }]
  - level: Metadata
`,
    );
    await controlPlane.stopApiServer();
    await controlPlane.startApiServer();
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
    kube = connect(kubeConfig);
    await installForLocalRun(kubeConfig, 'portcullis-system');
    operator = await startTestOperator({}, {}, kubeConfig);
    await eventually(
      async () => {
        const configuration = (await kube.objects.read({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: SUITE_VALIDATION.configuration } })) as k8s.V1ValidatingWebhookConfiguration;
        if (configuration.webhooks?.[0]?.clientConfig.service?.port !== operator.servingPort) throw new Error('not registered for this operator yet');
      },
      { what: "the second control plane's suite validation" },
    );
    await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { replay: 'yes' } } });
    await eventually(() => kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: replaySuite(false) }), { what: 'the suite to be created' });
    const orphan = { metadata: { name: 'orphan', namespace: 'shop' }, data: { a: '1' } };
    await eventually(
      async () => {
        if (!(await refusal(() => kube.core.createNamespacedConfigMap({ namespace: 'shop', body: orphan, dryRun: 'All' })))) throw new Error('admitted: not enforced yet');
      },
      { what: 'the suite to be enforced' },
    );
  });

  after(async function () {
    await operator?.stop();
    await controlPlane?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('replays creates, updates, patches and deletes: none differs under the suite that answered them, the tightened one denies exactly the three it now would', async function () {
    // The log from here on: the requests made while the suite served (not the probes before).
    const from = auditLogBytes(controlPlane.auditLogPath).length;
    const owned = { owner: 'team-a' };
    await kube.core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'small', labels: owned }, data: { a: '1' } } });
    await kube.core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'big', labels: owned }, data: { a: '1', b: '2', c: '3' } } });
    const denied = await refusal(() => kube.core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'orphan' }, data: { a: '1' } } }));
    expect(denied?.message).to.equal('admission webhook "owner.replay-guard.admission.portcullis.dev" denied the request: configmap orphan has no owner label');
    const small = await kube.core.readNamespacedConfigMap({ namespace: 'shop', name: 'small' });
    await kube.core.replaceNamespacedConfigMap({ namespace: 'shop', name: 'small', body: { ...small, data: { a: '1', b: '2', c: '3' } } });
    await kube.core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'moved', labels: owned }, data: { a: '1' } } });
    await kube.core.patchNamespacedConfigMap({ namespace: 'shop', name: 'moved', body: { metadata: { labels: { owner: 'team-b' } } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    await kube.core.deleteNamespacedConfigMap({ namespace: 'shop', name: 'big' });

    const log = path.join(dir, 'audit.log');
    fs.writeFileSync(log, auditLogBytes(controlPlane.auditLogPath).subarray(from));
    // The Namespaces' labels select the webhook: the log does not hold them (Metadata level), so they are given.
    const namespaces = path.join(dir, 'namespaces.yaml');
    fs.writeFileSync(namespaces, yaml.dump({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: (await kube.core.readNamespace({ name: 'shop' })).metadata?.labels } }));
    const loose = path.join(dir, 'loose.yaml');
    const tight = path.join(dir, 'tight.yaml');
    fs.writeFileSync(loose, yaml.dump(replaySuite(false)));
    fs.writeFileSync(tight, yaml.dump(replaySuite(true)));

    const same = await runCli(['test', '--replay', log, loose, '--objects', namespaces, '-o', 'json']);
    expect(same.code, same.stdout + same.stderr).to.equal(0);
    const sameOut = JSON.parse(same.stdout) as { replayed: number; differences: unknown[] };
    expect(sameOut.differences).to.deep.equal([]);
    // small, big, orphan, the update, moved, its patch and the delete
    expect(sameOut.replayed).to.be.at.least(7);

    const changed = await runCli(['test', '--replay', log, tight, '--objects', namespaces, '-o', 'json']);
    expect(changed.code, changed.stdout + changed.stderr).to.equal(1);
    const out = JSON.parse(changed.stdout) as { differences: { request: string; recorded: string; replayed: string }[] };
    const webhook = 'admission webhook "owner.replay-guard.admission.portcullis.dev" denied the request';
    expect(out.differences.map(({ request, recorded, replayed }) => ({ request, recorded, replayed }))).to.deep.equal([
      { request: 'CREATE configmaps shop/big (by portcullis-admin)', recorded: 'allowed', replayed: `denied: ${webhook}: configmap big has more than two keys` },
      { request: 'UPDATE configmaps shop/small (by portcullis-admin)', recorded: 'allowed', replayed: `denied: ${webhook}: configmap small has more than two keys` },
      // a patch: the old object is the one the log recorded at its create
      { request: 'UPDATE configmaps shop/moved (by portcullis-admin)', recorded: 'allowed', replayed: `denied: ${webhook}: the owner may not change` },
    ]);

    const text = await runCli(['test', '--replay', log, tight, '--objects', namespaces]);
    expect(text.code).to.equal(1);
    expect(text.stdout).to.match(new RegExp(`^${log.replace(/[.]/g, '\\.')}:\\d+: CREATE configmaps shop/big \\(by portcullis-admin\\)\\n  recorded: allowed\\n  replayed: denied: `, 'm'));
    expect(text.stdout).to.match(/\n3 of \d+ replayed requests answered otherwise than recorded\n/);
  });
});
