/**
 * AdmissionExceptions for Pod Security per control and per image, through the real API server
 * (issue 55): a namespace where a suite's PodSecurity webhook enforces `restricted`; an exception
 * for the `capabilities` control on one image admits a Pod of that image adding NET_ADMIN, with
 * the warning, the audit annotation and the metric that name it, the background audit reports such
 * a Pod stored as a `skip` naming it, and still refuses that Pod
 * running as root (another control) or with another image; and the operator refuses on apply an
 * exception naming an unknown control, one naming a PodSecurity webhook without controls, and
 * podSecurity on a CEL webhook. Owns its namespace (exc-psa), suite (exc-pod-security) and the
 * exceptions it makes there; touches nothing else.
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { recordAuthors } from '../support/authors.ts';
import { auditEvents } from '../support/audit-log.ts';
import { reportResults } from '../support/reports.ts';
import { sampleValue, scrape } from '../support/prometheus.ts';
import { freePort } from '../../src/local/ports.ts';
import { webhookFullName } from '../../src/api/names.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, VERSION } from '../../src/api/types.ts';
import { EXCEPTION_PLURAL, type ExceptionSpec } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'exc-psa';
const LABEL = { 'exceptions-psa-e2e': 'true' };
const SUITE = 'exc-pod-security';
const WEBHOOK = 'pod-security';
const EXCEPTED_IMAGE = 'registry.k8s.io/e2e-test-images/agnhost:2.53';
const OTHER_IMAGE = 'registry.k8s.io/pause:3.10';
const EXCEPTION = 'net-admin-tool';
const REASON = 'the network tool needs NET_ADMIN (TICKET-55)';
const EXCEPTIONS = [EXCEPTION, 'typo-control', 'no-controls', 'cel-with-controls'];
/** The Pod stored (not a dry run) for the background audit to judge. */
const STORED = 'net-tool-stored';

/** A Pod `restricted` admits but for the NET_ADMIN it adds; `root`: it runs as root too (runAsNonRoot false). */
function netAdminPod(image: string, root = false) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'net-tool', namespace: NS },
    spec: {
      securityContext: { runAsNonRoot: !root, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'tool', image, securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } }],
    },
  };
}

/** The Pod created as a dry run by the test's admin: kubectl's exit code and what it printed (warnings and refusals on stderr). */
const createPod = (pod: object) => kubectl(['create', '--dry-run=server', '-f', '-'], JSON.stringify(pod));

const exceptionBody = (name: string, spec: Partial<ExceptionSpec>) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'AdmissionException',
  metadata: { name, namespace: NS },
  spec: { suite: SUITE, webhook: WEBHOOK, reason: REASON, expires: '2099-01-01T00:00:00Z', ...spec },
});
const createException = (name: string, spec: Partial<ExceptionSpec>) => cluster().kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: NS, body: exceptionBody(name, spec) });

describe('AdmissionExceptions for PodSecurity: per control and per image', function () {
  let operator: Operator;
  let metricsPort: number;

  before(async function () {
    await recordAuthors();
    await ensureNamespace(NS, { ...LABEL, 'pod-security.kubernetes.io/enforce': 'restricted' });
    metricsPort = await freePort();
    // The audit on, scanning every few seconds: a stored Pod the exception covers is reported.
    operator = await startTestOperator({ metricsPort, audit: true, auditIntervalMs: 5_000 });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, {
      exceptions: { allowed: true },
      webhooks: [
        {
          name: WEBHOOK,
          type: 'Validating',
          failurePolicy: 'Fail',
          rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          // Only this file's namespace: no other test's Pods are judged.
          namespaceSelector: { matchLabels: LABEL },
          handler: { name: 'PodSecurity' },
        },
        {
          // Judges nothing here (no ConfigMap is created): a CEL webhook for podSecurity to be refused on.
          name: 'team-label',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: LABEL },
          validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'ConfigMaps need a team label' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
    // Registered, and the namespace's labels in the operator's cache: the NET_ADMIN Pod is refused before any exception.
    await eventually(
      async () => {
        const result = await createPod(netAdminPod(EXCEPTED_IMAGE));
        if (result.code === 0 || !result.stderr.includes('unrestricted capabilities')) throw new Error(`not refused by the webhook yet: ${result.code} ${result.stderr}`);
      },
      { what: `the PodSecurity webhook to enforce restricted in ${NS}` },
    );
  });

  after(async function () {
    const { kube } = cluster();
    for (const name of EXCEPTIONS) await deleteIfExists(kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name, namespace: NS } });
    await deleteSuite(SUITE);
    await operator?.stop();
    await deleteIfExists(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  });

  it('admits a Pod of the listed image adding NET_ADMIN, with the warning, audit annotation and use count naming the exception', async function () {
    await createException(EXCEPTION, { podSecurity: { controls: ['capabilities'], images: ['registry.k8s.io/e2e-test-images/agnhost:*'] } });
    // The exception reaches the operator through its watch.
    const admitted = await eventually(
      async () => {
        const result = await createPod(netAdminPod(EXCEPTED_IMAGE));
        if (result.code !== 0) throw new Error(result.stderr);
        return result;
      },
      { what: 'the exception to admit the NET_ADMIN Pod' },
    );
    expect(admitted.stderr).to.contain(`Warning: admitted by exception ${NS}/${EXCEPTION} (expires 2099-01-01T00:00:00Z): ${REASON}`);
    const uses = sampleValue(await scrape(metricsPort), 'portcullis_exception_uses_total', { namespace: NS, exception: EXCEPTION, suite: SUITE, webhook: WEBHOOK });
    expect(uses, 'portcullis_exception_uses_total of the exception').to.be.at.least(1);
    const annotation = `${webhookFullName(SUITE, WEBHOOK)}/exception`;
    await eventually(
      async () => {
        const events = auditEvents<{ stage: string; verb: string; objectRef?: { namespace?: string; resource?: string }; annotations?: Record<string, string> }>(cluster().controlPlane.auditLogPath);
        const named = events.filter((e) => e.stage === 'ResponseComplete' && e.verb === 'create' && e.objectRef?.namespace === NS && e.objectRef?.resource === 'pods' && e.annotations?.[annotation] !== undefined);
        expect(named.map((e) => e.annotations![annotation])).to.include(`${NS}/${EXCEPTION}`);
      },
      { what: `the audit log to record ${annotation}` },
    );
  });

  it('shows in the background audit: a stored Pod it lets through is a skip naming it, not a fail', async function () {
    const stored = { ...netAdminPod(EXCEPTED_IMAGE), metadata: { name: STORED, namespace: NS } };
    await eventually(
      async () => {
        const result = await kubectl(['create', '-f', '-'], JSON.stringify(stored));
        if (result.code !== 0 && !result.stderr.includes('AlreadyExists')) throw new Error(result.stderr);
      },
      { what: `the Pod ${STORED} to be stored` },
    );
    const found = await eventually(
      async () => {
        const results = (await reportResults(NS)).filter((r) => r.resources[0]?.name === STORED && r.policy === `${SUITE}/${WEBHOOK}`);
        if (results.length === 0) throw new Error(`${STORED} not reported yet`);
        return results;
      },
      { what: `the Report of ${NS} to show ${STORED}` },
    );
    expect(found.map((r) => [r.rule, r.result])).to.deep.equal([['PodSecurity', 'skip']]);
    expect(found[0]!.message).to.equal(`admitted by exception ${NS}/${EXCEPTION} (expires 2099-01-01T00:00:00Z): ${REASON}`);
  });

  it('still refuses that Pod running as root: every other control of the level applies', async function () {
    const result = await createPod(netAdminPod(EXCEPTED_IMAGE, true));
    expect(result.code, 'the root Pod').to.not.equal(0);
    // Refused for running as root alone: the capabilities the exception lets through are not named.
    expect(result.stderr).to.contain('violates PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)');
    expect(result.stderr).to.not.contain('unrestricted capabilities').and.not.contain('admitted by exception');
  });

  it('refuses the same Pod with an image the exception does not list', async function () {
    const result = await createPod(netAdminPod(OTHER_IMAGE));
    expect(result.code, 'the Pod of another image').to.not.equal(0);
    expect(result.stderr).to.contain('violates PodSecurity "restricted:latest": unrestricted capabilities (container "tool" must not include "NET_ADMIN" in securityContext.capabilities.add)');
    expect(result.stderr).to.not.contain('admitted by exception');
  });

  it('is refused on apply naming an unknown control, a PodSecurity webhook without controls, or podSecurity on a CEL webhook', async function () {
    const typo = await refusal(() => createException('typo-control', { podSecurity: { controls: ['capabilites'] } }));
    expect(typo?.message).to.contain('spec.podSecurity.controls[0]: Unsupported value: "capabilites"').and.contain('capabilities');
    const none = await refusal(() => createException('no-controls', {}));
    expect(none?.message).to.contain(`spec.podSecurity: Required value: webhook ${WEBHOOK} is a PodSecurity webhook`);
    const cel = await refusal(() => createException('cel-with-controls', { webhook: 'team-label', podSecurity: { controls: ['capabilities'] } }));
    expect(cel?.message).to.contain("spec.podSecurity: webhook team-label's handler is not PodSecurity");
    const { kube } = cluster();
    for (const name of ['typo-control', 'no-controls', 'cel-with-controls']) {
      expect(await refusal(() => kube.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: NS, name })), name).to.deep.include({ code: 404 });
    }
  });
});
