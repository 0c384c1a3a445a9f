/**
 * PodSecurity against the in-tree plugin: the reference control plane (test/support/reference.ts)
 * runs kube-apiserver's own PodSecurity; the run's API server has it off and is served by a suite
 * with the PodSecurity handler, configured with the reference's exemptions. The same namespaces
 * (same labels) exist on both, and the same requests go to both:
 *
 * - every fixture of the upstream test data (k8s.io/pod-security-admission test/testdata, each
 *   level, version, pass and fail) as a dry-run create in a namespace labelled enforce=<level>,
 *   enforce-version=<version> (warn and audit the same), and as the template of a dry-run
 *   Deployment there (warnings only), as upstream's own run sends them: status code, the
 *   violation (the message after each side's own prefix), the warnings and the audit annotations
 *   in each API server's audit log must be the same; a count per level and version is printed;
 * - workload templates (warnings only), exempt namespace, user and runtime class, pod updates
 *   (which are judged and which are not), ephemeral containers, and namespace label changes (the
 *   warning listing the existing pods that would violate), with the audit annotations each side
 *   records in its audit log.
 */
import { expect } from 'chai';
import type { KubeConfig } from '@kubernetes/client-node';
import { cluster, kubectl } from '../support/cluster.ts';
import { referenceCluster, REFERENCE_POD_SECURITY_EXEMPTIONS, type ReferenceCluster } from '../support/reference.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequestTo, type RawResponse, type RequestOptions } from '../support/raw.ts';
import { eventually, pool } from '../support/wait.ts';
import { auditEvents } from '../support/audit-log.ts';
import { podSecurityFixtures, type PodSecurityFixture } from '../support/pod-security-fixtures.ts';
import { apply, deleteIfExists, type Kube } from '../../src/apiserver/client.ts';
import { webhookFullName } from '../../src/api/names.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { RuleWithOperations } from '../../src/api/types.ts';

const SUITE = 'psa-diff';
const WEBHOOK = 'pod-security';
const FULL_NAME = webhookFullName(SUITE, WEBHOOK);
const SELECTED = { 'psa-diff': 'true' };
const CONCURRENCY = 12;
const STRATEGIC = { contentType: 'application/strategic-merge-patch+json' };
const EXEMPT_NS = REFERENCE_POD_SECURITY_EXEMPTIONS.namespaces[0]!;
const EXEMPT_USER = REFERENCE_POD_SECURITY_EXEMPTIONS.usernames[0]!;
const EXEMPT_RUNTIME = REFERENCE_POD_SECURITY_EXEMPTIONS.runtimeClasses[0]!;
const WORKLOAD_NS = 'psa-diff-workloads';
const UPDATES_NS = 'psa-diff-updates';
const WARN_NS = 'psa-diff-warn';

const rule = (group: string, resources: string[]): RuleWithOperations => ({ operations: ['CREATE', 'UPDATE'], apiGroups: [group], apiVersions: ['v1'], resources });

const fixtureNamespace = (level: string, version: string) => `psa-${level}-${version.replace('.', '-')}`;
const label = (mode: string) => `pod-security.kubernetes.io/${mode}`;

/** What a user sees of an answer: status, the violation after the side's own prefix, warnings. */
interface Outcome {
  status: number;
  message?: string;
  warnings: string[];
}

/** The in-tree plugin's refusals: `pods "x" is forbidden: violates PodSecurity ...`, `Namespace "x" is invalid: metadata.labels[pod-security...`. */
const REFERENCE_PREFIX = /^[A-Za-z.]+ "[^"]*" is (?:forbidden|invalid): /;
const PLUGIN_REFUSAL = /^[A-Za-z.]+ "[^"]*" is (?:forbidden: violates PodSecurity |invalid: (?:\[?metadata\.labels\[pod-security\.kubernetes\.io\/))/;
const OUR_PREFIX = `admission webhook "${FULL_NAME}" denied the request: `;

function outcome(res: RawResponse, side: 'reference' | 'ours'): Outcome {
  const out: Outcome = { status: res.status, warnings: res.warnings };
  if (res.status >= 300) {
    const message = res.body.message ?? '';
    // Refusals before admission (the API server's validation) are the same text on both sides.
    if (side === 'reference') out.message = PLUGIN_REFUSAL.test(message) ? message.replace(REFERENCE_PREFIX, '') : message;
    else out.message = message.startsWith(OUR_PREFIX) ? message.slice(OUR_PREFIX.length) : message;
  }
  return out;
}

/** The ways two outcomes differ, in words; empty when they agree. */
function differences(reference: Outcome, ours: Outcome): string[] {
  const out: string[] = [];
  if (reference.status !== ours.status) out.push(`status ${reference.status} (in-tree) vs ${ours.status} (Portcullis)`);
  if ((reference.message ?? '') !== (ours.message ?? '')) out.push(`message ${JSON.stringify(reference.message)} vs ${JSON.stringify(ours.message)}`);
  if (JSON.stringify(reference.warnings) !== JSON.stringify(ours.warnings)) out.push(`warnings ${JSON.stringify(reference.warnings)} vs ${JSON.stringify(ours.warnings)}`);
  return out;
}

interface Sides {
  reference: ReferenceCluster;
  ours: { kube: Kube; kubeConfig: KubeConfig };
}

/** The same request to both API servers, and what each answered. */
async function both(sides: Sides, method: string, path: string, body?: unknown, user: RequestOptions = {}): Promise<{ reference: Outcome; ours: Outcome }> {
  const [reference, ours] = await Promise.all([rawRequestTo(sides.reference.kubeConfig, method, path, body, user), rawRequestTo(sides.ours.kubeConfig, method, path, body, user)]);
  return { reference: outcome(reference, 'reference'), ours: outcome(ours, 'ours') };
}

async function onBoth(sides: Sides, what: (kube: Kube) => Promise<unknown>): Promise<void> {
  await Promise.all([what(sides.reference.kube), what(sides.ours.kube)]);
}

/** A fixture as upstream's own run sends it: named "test" (some fixture names are not valid object names). */
function fixturePod(fixture: PodSecurityFixture) {
  return { ...fixture.pod, metadata: { ...fixture.pod.metadata, name: 'test' } };
}
/** A fixture as the template of a Deployment, as upstream's run makes it. */
function fixtureDeployment(fixture: PodSecurityFixture) {
  const { name: _name, ...metadata } = fixture.pod.metadata ?? {};
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'test' },
    spec: { selector: { matchLabels: { test: 'true' } }, template: { metadata: { ...metadata, labels: { ...metadata.labels, test: 'true' } }, spec: fixture.pod.spec } },
  };
}

const namespaceObject = (name: string, labels: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ...SELECTED, ...labels } } });

function pod(name: string, spec: Record<string, unknown> = {}, container: Record<string, unknown> = {}) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause', ...container }], ...spec } };
}
const PRIVILEGED = { securityContext: { privileged: true } };
const RESTRICTED_CONTAINER = { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } } };

interface AuditEvent {
  auditID: string;
  verb: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  annotations?: Record<string, string>;
  requestURI: string;
}

/** An event's PodSecurity annotations, keyed as upstream names them (each side's prefix taken off). */
function annotationsOf(event: AuditEvent, prefix: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(event.annotations ?? {})
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, v]) => [k.slice(prefix.length), v]),
  );
}

/** The PodSecurity annotations of the audit events for one object. */
function podSecurityAnnotations(auditLogPath: string, namespace: string, name: string, prefix: string): Record<string, string>[] {
  return auditEvents<AuditEvent>(auditLogPath)
    .filter((e) => e.objectRef?.namespace === namespace && e.objectRef?.name === name && e.verb !== 'get')
    .map((e) => annotationsOf(e, prefix));
}

/** A ceiling only: the API server writes an event once its response is sent; a whole test run's log is read on each try. */
const AUDIT_LOG_CEILING_MS = 180_000;
const IN_TREE_PREFIX = 'pod-security.kubernetes.io/';
const OUR_AUDIT_PREFIX = `${FULL_NAME}/`;

/** Per fixture namespace, the sorted annotations of every create of an object named "test" (requests ran concurrently, so as multisets). */
function fixtureAudit(auditLogPath: string, prefix: string, namespaces: Set<string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of auditEvents<AuditEvent>(auditLogPath)) {
    const ns = e.objectRef?.namespace;
    if (e.verb !== 'create' || e.objectRef?.name !== 'test' || !ns || !namespaces.has(ns)) continue;
    const list = out.get(ns) ?? [];
    list.push(JSON.stringify([e.objectRef?.resource, Object.entries(annotationsOf(e, prefix)).sort()]));
    out.set(ns, list);
  }
  for (const list of out.values()) list.sort();
  return out;
}

describe('PodSecurity against the in-tree plugin', function () {
  this.timeout(600_000);
  let operator: Operator;
  let sides: Sides;
  const fixtures = podSecurityFixtures();
  const versions = [...new Set(fixtures.map((f) => `${f.level}/${f.version}`))].map((key) => {
    const [level, version] = key.split('/') as [string, string];
    return { level, version, namespace: fixtureNamespace(level, version) };
  });

  before(async function () {
    this.timeout(300_000);
    const reference = await referenceCluster();
    sides = { reference, ours: { kube: cluster().kube, kubeConfig: cluster().kubeConfig } };
    const namespaces = [
      ...versions.map(({ level, version, namespace }) =>
        namespaceObject(namespace, { [label('enforce')]: level, [label('enforce-version')]: version, [label('warn')]: level, [label('warn-version')]: version, [label('audit')]: level, [label('audit-version')]: version }),
      ),
      namespaceObject(EXEMPT_NS, { [label('enforce')]: 'restricted' }),
      namespaceObject(WORKLOAD_NS, { [label('enforce')]: 'restricted', [label('warn')]: 'baseline', [label('warn-version')]: 'v1.30', [label('audit')]: 'restricted' }),
      namespaceObject(UPDATES_NS, {}),
      namespaceObject(WARN_NS, {}),
    ];
    await pool(namespaces, 8, (ns) => onBoth(sides, (kube) => apply(kube, ns)));
    // The exempt user may create pods on both; the exempt runtime class exists on both (the reference's RuntimeClass plugin reads it).
    for (const run of [kubectl, reference.kubectl]) {
      const bound = await run(['create', 'clusterrolebinding', 'psa-exempt-user', '--clusterrole=cluster-admin', `--user=${EXEMPT_USER}`, '--dry-run=client', '-o', 'json']);
      expect(bound.code, bound.stderr).to.equal(0);
      const applied = await run(['apply', '-f', '-'], bound.stdout);
      expect(applied.code, applied.stderr).to.equal(0);
    }
    await onBoth(sides, (kube) => apply(kube, { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: EXEMPT_RUNTIME }, handler: 'runc' }));

    operator = await startTestOperator();
    await createSuite(SUITE, {
      webhooks: [
        {
          name: WEBHOOK,
          type: 'Validating',
          failurePolicy: 'Fail',
          rules: [rule('', ['pods', 'pods/ephemeralcontainers', 'namespaces', 'replicationcontrollers', 'podtemplates']), rule('apps', ['deployments', 'replicasets', 'statefulsets', 'daemonsets']), rule('batch', ['jobs', 'cronjobs'])],
          namespaceSelector: { matchLabels: SELECTED },
          handler: { name: 'PodSecurity', config: { exemptions: REFERENCE_POD_SECURITY_EXEMPTIONS } },
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True', 60_000);
    // Registered, and every namespace's labels in the operator's cache: a host-network pod is refused everywhere.
    await pool(versions, 8, async ({ namespace }) => {
      await eventually(
        async () => {
          const res = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod('probe', { hostNetwork: true }));
          if (res.status !== 403) throw new Error(`${namespace}: ${res.status} ${res.body.message ?? ''}`);
        },
        { what: `the webhook to judge pods in ${namespace}`, timeoutMs: 60_000 },
      );
    });
  });

  after(async function () {
    this.timeout(120_000);
    await deleteSuite(SUITE);
    await operator?.stop();
    if (!sides) return;
    const names = [...versions.map((v) => v.namespace), EXEMPT_NS, WORKLOAD_NS, UPDATES_NS, WARN_NS];
    await pool(names, 8, (name) => onBoth(sides, (kube) => deleteIfExists(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } })));
    await onBoth(sides, (kube) => deleteIfExists(kube, { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: EXEMPT_RUNTIME } }));
    await onBoth(sides, (kube) => deleteIfExists(kube, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'psa-exempt-user' } }));
  });

  it('answers every upstream fixture as the in-tree plugin does, as a Pod and as a Deployment (dry-run creates; enforce, warn and audit labels), audit annotations included', async function () {
    const counts = new Map<string, { run: number; agreed: number; differing: number; oracleOff: number }>();
    const differing: string[] = [];
    let judgedPods = 0;
    const cases = fixtures.flatMap((fixture) => (['Pod', 'Deployment'] as const).map((kind) => ({ fixture, kind })));
    await pool(cases, CONCURRENCY, async ({ fixture, kind }) => {
      const key = `${fixture.level}/${fixture.version}`;
      const count = counts.get(key) ?? { run: 0, agreed: 0, differing: 0, oracleOff: 0 };
      counts.set(key, count);
      const namespace = fixtureNamespace(fixture.level, fixture.version);
      const answers =
        kind === 'Pod'
          ? await both(sides, 'POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, fixturePod(fixture))
          : await both(sides, 'POST', `/apis/apps/v1/namespaces/${namespace}/deployments?dryRun=All`, fixtureDeployment(fixture));
      count.run++;
      // Pods the API server's validation refused (422) never reached admission.
      if (kind === 'Pod' && answers.reference.status !== 422) judgedPods++;
      // The oracle itself must answer as the fixture says: a Pod created or refused, a Deployment created with or without warnings.
      // (The API server's own warnings, such as deprecated AppArmor annotations, are not the plugin's.)
      const passed = kind === 'Pod' ? answers.reference.status === 201 : answers.reference.status === 201 && !answers.reference.warnings.some((w) => w.startsWith('would violate PodSecurity'));
      if (passed !== (fixture.expect === 'pass')) {
        count.oracleOff++;
        if (process.env.PORTCULLIS_DIFF_VERBOSE) console.log(`        in-tree against ${key}/${fixture.expect}/${fixture.file} (${kind}): ${answers.reference.status} ${answers.reference.message ?? ''}`);
      }
      const diff = differences(answers.reference, answers.ours);
      if (diff.length === 0) count.agreed++;
      else {
        count.differing++;
        differing.push(`${key}/${fixture.expect}/${fixture.file} (${kind}): ${diff.join('; ')}`);
      }
    });
    const rows = [...counts].map(([key, c]) => `${key.padEnd(18)} run ${String(c.run).padStart(4)}  agreed ${String(c.agreed).padStart(4)}  differing ${c.differing}${c.oracleOff ? `  (in-tree against the fixture: ${c.oracleOff})` : ''}`);
    const total = [...counts.values()].reduce((a, c) => ({ run: a.run + c.run, agreed: a.agreed + c.agreed, differing: a.differing + c.differing, oracleOff: a.oracleOff + c.oracleOff }), { run: 0, agreed: 0, differing: 0, oracleOff: 0 });
    console.log(
      `      PodSecurity fixtures (${fixtures.length}, each as a Pod and as a Deployment), per level/version:\n${rows.map((r) => `        ${r}`).join('\n')}\n` +
        `      total: run ${total.run}, agreed ${total.agreed}, differing ${total.differing}`,
    );
    if (process.env.PORTCULLIS_DIFF_VERBOSE) console.log(differing.map((d) => `        ${d}`).join('\n'));
    expect(total.run).to.equal(cases.length);
    expect(total.oracleOff, 'fixtures the in-tree plugin itself answers otherwise than the test data says').to.equal(0);
    expect(differing.slice(0, 20), `${differing.length} fixtures answered differently`).to.deep.equal([]);

    // The audit annotations (enforce-policy, audit-violations) of every one of those creates, per namespace.
    const namespaces = new Set(versions.map((v) => v.namespace));
    const perNamespace = cases.length / namespaces.size;
    await eventually(
      async () => {
        const inTree = fixtureAudit(sides.reference.controlPlane.auditLogPath, IN_TREE_PREFIX, namespaces);
        const ours = fixtureAudit(cluster().controlPlane.auditLogPath, OUR_AUDIT_PREFIX, namespaces);
        const audited = [...inTree.values()].reduce((n, list) => n + list.length, 0);
        expect(audited, 'creates in the in-tree audit log').to.equal(cases.length);
        const entries = [...inTree.values()].flat();
        expect(entries.filter((e) => e.includes('"audit-violations"')).length, 'in-tree audit violations').to.be.greaterThan(1000);
        expect(entries.filter((e) => e.startsWith('["pods"') && e.includes('"enforce-policy"')).length, 'pods with enforce-policy').to.equal(judgedPods);
        const unlike = [...namespaces].filter((ns) => JSON.stringify(inTree.get(ns)) !== JSON.stringify(ours.get(ns)));
        // The progress, and the first difference in full: what the in-tree log holds that ours does not, and the reverse.
        const first = unlike[0];
        const only = (a: string[] = [], b: string[] = []) => a.filter((e) => !b.includes(e)).slice(0, 3);
        const sample = first
          ? `; in ${first}: ${inTree.get(first)?.length ?? 0} in-tree events, ${ours.get(first)?.length ?? 0} ours; in-tree only ${JSON.stringify(only(inTree.get(first), ours.get(first)))}, ours only ${JSON.stringify(only(ours.get(first), inTree.get(first)))}`
          : '';
        expect(unlike, `namespaces whose creates were audited differently (${unlike.length} of ${namespaces.size})${sample}`).to.deep.equal([]);
        console.log(`      audit annotations of the ${audited} creates (about ${Math.round(perNamespace)} a namespace): the same on both sides`);
      },
      { what: 'both audit logs to hold every fixture create alike', timeoutMs: AUDIT_LOG_CEILING_MS, intervalMs: 2000 },
    );
  });

  it('warns, never denies, for workload templates, and audits them the same', async function () {
    const deployment = (name: string, container: Record<string, unknown>) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause', ...container }] } } },
    });
    for (const [name, container] of [
      ['psa-privileged', PRIVILEGED],
      ['psa-plain', {}],
      ['psa-restricted', RESTRICTED_CONTAINER],
    ] as const) {
      const answers = await both(sides, 'POST', `/apis/apps/v1/namespaces/${WORKLOAD_NS}/deployments`, deployment(name, container));
      expect(answers.ours, name).to.deep.equal(answers.reference);
      expect(answers.reference.status, name).to.equal(201);
    }
    const privileged = await both(sides, 'POST', `/apis/apps/v1/namespaces/${WORKLOAD_NS}/deployments?dryRun=All`, deployment('psa-privileged-2', PRIVILEGED));
    expect(privileged.reference.warnings).to.deep.equal(['would violate PodSecurity "baseline:v1.30": privileged (container "app" must not set securityContext.privileged=true)']);
    // A Pod of the same template is refused by the namespace's enforce level, on both.
    const refused = await both(sides, 'POST', `/api/v1/namespaces/${WORKLOAD_NS}/pods?dryRun=All`, pod('psa-pod', {}, PRIVILEGED));
    expect(refused.ours).to.deep.equal(refused.reference);
    expect(refused.reference.status).to.equal(403);
    // The audit annotations (enforce-policy for pods only; audit-violations at restricted) are recorded alike.
    await eventually(
      async () => {
        for (const name of ['psa-privileged', 'psa-plain', 'psa-restricted']) {
          const inTree = podSecurityAnnotations(sides.reference.controlPlane.auditLogPath, WORKLOAD_NS, name, IN_TREE_PREFIX);
          const ours = podSecurityAnnotations(cluster().controlPlane.auditLogPath, WORKLOAD_NS, name, OUR_AUDIT_PREFIX);
          expect(inTree.length, `${name}: audited creates`).to.be.greaterThan(0);
          expect(ours, name).to.deep.equal(inTree);
        }
        const inTree = podSecurityAnnotations(sides.reference.controlPlane.auditLogPath, WORKLOAD_NS, 'psa-privileged', IN_TREE_PREFIX);
        expect(inTree[0]!['audit-violations']).to.match(/^would violate PodSecurity "restricted:latest": /);
      },
      { what: 'both audit logs to hold the deployments', timeoutMs: AUDIT_LOG_CEILING_MS, intervalMs: 2000 },
    );
  });

  it('exempts the same namespace, user and runtime class', async function () {
    const inExempt = await both(sides, 'POST', `/api/v1/namespaces/${EXEMPT_NS}/pods?dryRun=All`, pod('psa-exempt-ns', {}, PRIVILEGED));
    expect(inExempt.ours).to.deep.equal(inExempt.reference);
    expect(inExempt.reference.status).to.equal(201);
    const restricted = fixtureNamespace('restricted', 'v1.37');
    const byUser = await both(sides, 'POST', `/api/v1/namespaces/${restricted}/pods?dryRun=All`, pod('psa-exempt-user', {}, PRIVILEGED), { as: EXEMPT_USER });
    expect(byUser.ours).to.deep.equal(byUser.reference);
    expect(byUser.reference.status).to.equal(201);
    const byRuntime = await both(sides, 'POST', `/api/v1/namespaces/${restricted}/pods?dryRun=All`, pod('psa-exempt-rc', { runtimeClassName: EXEMPT_RUNTIME }, PRIVILEGED));
    expect(byRuntime.ours).to.deep.equal(byRuntime.reference);
    expect(byRuntime.reference.status).to.equal(201);
    await eventually(
      async () => {
        for (const [namespace, name, reason] of [
          [EXEMPT_NS, 'psa-exempt-ns', 'namespace'],
          [restricted, 'psa-exempt-user', 'user'],
          [restricted, 'psa-exempt-rc', 'runtimeClass'],
        ] as const) {
          const inTree = podSecurityAnnotations(sides.reference.controlPlane.auditLogPath, namespace, name, IN_TREE_PREFIX);
          expect(inTree, name).to.deep.equal([{ exempt: reason }]);
          expect(podSecurityAnnotations(cluster().controlPlane.auditLogPath, namespace, name, OUR_AUDIT_PREFIX), name).to.deep.equal(inTree);
        }
      },
      { what: 'both audit logs to hold the exempt creates', timeoutMs: AUDIT_LOG_CEILING_MS, intervalMs: 2000 },
    );
    // A label change on the exempt namespace is answered with the same warning.
    // (A change that only relaxes enforce is not looked at; a new version is.)
    const labelled = await bothPatch(sides, `/api/v1/namespaces/${EXEMPT_NS}?dryRun=All`, { metadata: { labels: { [label('enforce-version')]: 'v1.30', [label('warn')]: 'baseline' } } });
    expect(labelled.ours).to.deep.equal(labelled.reference);
    expect(labelled.reference.warnings.join()).to.contain(`namespace "${EXEMPT_NS}" is exempt from Pod Security`);
  });

  it('warns of the existing pods a tightened enforce level would refuse, as the in-tree plugin does', async function () {
    // Pods stored while the namespace is privileged: two with the same violation (one warning, named by the first by name), one with another.
    const pods = [pod('psa-warn-b', {}, PRIVILEGED), pod('psa-warn-a', {}, PRIVILEGED), pod('psa-warn-host', { hostNetwork: true }), pod('psa-warn-fine', {}, RESTRICTED_CONTAINER)];
    for (const body of pods) {
      const created = await both(sides, 'POST', `/api/v1/namespaces/${WARN_NS}/pods`, body);
      expect(created.reference.status, body.metadata.name).to.equal(201);
      expect(created.ours, body.metadata.name).to.deep.equal(created.reference);
    }
    const tightened = await bothPatch(sides, `/api/v1/namespaces/${WARN_NS}?dryRun=All`, { metadata: { labels: { [label('enforce')]: 'baseline', [label('enforce-version')]: 'v1.37' } } });
    expect(tightened.reference.warnings).to.deep.equal([`existing pods in namespace "${WARN_NS}" violate the new PodSecurity enforce level "baseline:v1.37"`, 'psa-warn-a (and 1 other pod): privileged', 'psa-warn-host: host namespaces']);
    // Portcullis reads the namespace's pods from the operator's Pod cache (the shared lookup caches).
    expect(tightened.ours, 'the namespace change warning').to.deep.equal(tightened.reference);
  });

  it('judges pod updates that change images or add ephemeral containers, and no others; refuses bad labels on namespaces', async function () {
    // Pods stored while the namespace is privileged, then the namespace made restricted.
    for (const name of ['psa-update-a', 'psa-update-b']) {
      const created = await both(sides, 'POST', `/api/v1/namespaces/${UPDATES_NS}/pods`, pod(name, {}, PRIVILEGED));
      expect(created.ours, name).to.deep.equal(created.reference);
      expect(created.reference.status, name).to.equal(201);
    }
    const tightened = await bothPatch(sides, `/api/v1/namespaces/${UPDATES_NS}`, { metadata: { labels: { [label('enforce')]: 'restricted', [label('enforce-version')]: 'v1.37' } } });
    expect([tightened.reference.status, tightened.ours.status]).to.deep.equal([200, 200]);
    await eventually(
      async () => {
        const res = await rawRequestTo(cluster().kubeConfig, 'POST', `/api/v1/namespaces/${UPDATES_NS}/pods?dryRun=All`, pod('probe', {}, PRIVILEGED));
        if (res.status !== 403) throw new Error(`${res.status}`);
      },
      { what: 'the operator to see the new labels' },
    );
    const labelOnly = await bothPatch(sides, `/api/v1/namespaces/${UPDATES_NS}/pods/psa-update-a`, { metadata: { labels: { touched: 'yes' } } });
    expect(labelOnly.ours).to.deep.equal(labelOnly.reference);
    expect(labelOnly.reference.status).to.equal(200);
    const image = await both(sides, 'PATCH', `/api/v1/namespaces/${UPDATES_NS}/pods/psa-update-a`, { spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } }, STRATEGIC);
    expect(image.ours).to.deep.equal(image.reference);
    expect(image.reference.status).to.equal(403);
    const ephemeral = await both(
      sides,
      'PATCH',
      `/api/v1/namespaces/${UPDATES_NS}/pods/psa-update-b/ephemeralcontainers`,
      { spec: { ephemeralContainers: [{ name: 'debug', image: 'registry.k8s.io/pause', targetContainerName: 'app', ...RESTRICTED_CONTAINER }] } },
      STRATEGIC,
    );
    expect(ephemeral.ours).to.deep.equal(ephemeral.reference);
    expect(ephemeral.reference.status).to.equal(403);
    const badLabel = await bothPatch(sides, `/api/v1/namespaces/${UPDATES_NS}?dryRun=All`, { metadata: { labels: { [label('enforce')]: 'strict', [label('audit-version')]: '1.30' } } });
    expect(badLabel.ours).to.deep.equal(badLabel.reference);
    expect(badLabel.reference.status).to.equal(422);
    const badNew = await both(sides, 'POST', '/api/v1/namespaces?dryRun=All', namespaceObject('psa-diff-bad', { [label('warn')]: 'loose', [label('enforce-version')]: 'v2.0' }));
    expect(badNew.ours).to.deep.equal(badNew.reference);
    expect(badNew.reference.status).to.equal(422);
  });
});

/** A merge patch sent to both (the typed clients hide warnings, so raw requests). */
function bothPatch(sides: Sides, path: string, patch: unknown): Promise<{ reference: Outcome; ours: Outcome }> {
  return both(sides, 'PATCH', path, patch, { contentType: 'application/merge-patch+json' });
}
