/**
 * The CEL front end through the real API server (issue 53): validations written with what cel-js
 * does not parse itself (a backtick-quoted field name, optional list and map entries, raw and
 * non-ASCII bytes literals; src/policy/celjs/rewrite.ts) are served by a suite's webhooks (the
 * admission thread) and by a team's AdmissionPolicies (the tenant workers), and each admits or
 * denies each ConfigMap exactly as the API server's own ValidatingAdmissionPolicy with the same
 * expression: the same HTTP code and the same words, the wrappers taken off. The VAP is the
 * oracle; no outcome is typed by hand. Newest Kubernetes only (backticks need cel-go 0.28: the
 * 1.35 API server refuses them; the file is not in test/oldest). Owns its three namespaces, its
 * policies and bindings (cel-front-*), its suite and AdmissionPolicies; must not touch the differential's.
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { apply, deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const VAP_NS = 'cel-front-vap';
const HOOK_NS = 'cel-front-hook';
/** Where the same rows are a team's AdmissionPolicies, one each. */
const TEAM_NS = 'cel-front-team';
const SUITE = 'cel-front';
const ROW_LABEL = 'cel-front-row';
const configmaps = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] };

const ROWS = [
  { name: 'quoted-field', expression: "object.data.`content-type` == 'json' && !has(object.data.`x.y`)", message: 'content-type json, and no x.y' },
  { name: 'optional-entries', expression: "[?object.data.?a, ?object.data.?b].size() < 2 && !{?'c': object.data.?c}.exists(k, k == 'c')", message: 'one of a and b, and no c' },
  // a present value that is no map, selected of after `.?`: none in Kubernetes, as in cel-js (not
  // the error the cel-spec suite expects; cel-conformance.known-failures.json)
  { name: 'optional-present-scalar', expression: "!object.?data.a.b.hasValue() && !('c' in object.data)", message: 'no a.b, and no c' },
  { name: 'bytes-literals', expression: "!(bytes(object.data.?v.orValue('')) in [br'\\x00', b'ÿ', bR'''a\\b'''])", message: 'none of those bytes' },
];

/** Every row judges every one of these ConfigMaps' data. */
const CASES: Record<string, string>[] = [
  { 'content-type': 'json' },
  { 'content-type': 'xml' },
  { 'content-type': 'json', 'x.y': '1' },
  { 'content-type': 'json', a: '1', b: '2' },
  { 'content-type': 'json', a: '1', c: '1' },
  { 'content-type': 'json', v: '\\x00' },
  { 'content-type': 'json', v: 'ÿ' },
  { 'content-type': 'json', v: 'a\\b' },
  // no content-type: the quoted selection's own error, in each side's words
  { a: '1' },
];

const onlyNamespace = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
const policyName = (row: string) => `cel-front-${row}`;

/** Each side's wrapper: the VAP's, the webhook's, and the name of the AdmissionPolicy that denied. */
const WRAPPERS = [/^(?:\S+ "[^"]*" is forbidden: )?ValidatingAdmissionPolicy '[^']*' with binding '[^']*' denied request: /, /^admission webhook "[^"]*" denied the request: /, /^AdmissionPolicy [a-z0-9-]+: /];

/** A dry-run create of a ConfigMap of `data` for `row` in `namespace`: its code and the policy's own words. */
async function create(row: string, data: Record<string, string>, namespace: string): Promise<{ status: number; message: string }> {
  const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: row, labels: { [ROW_LABEL]: row } }, data };
  const response = await rawRequest('POST', `/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, body);
  const message = response.status < 300 ? '' : WRAPPERS.reduce((m, w) => m.replace(w, ''), response.body.message ?? '');
  return { status: response.status, message };
}

describe('CEL front end: what cel-js does not parse, answered as the API server’s own ValidatingAdmissionPolicy', function () {
  this.timeout(180_000);
  let operator: Operator;

  before(async function () {
    const { kube } = cluster();
    await ensureNamespace(VAP_NS);
    await ensureNamespace(HOOK_NS);
    for (const row of ROWS) {
      await apply(kube, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: policyName(row.name) },
        spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [configmaps] }, validations: [{ expression: row.expression, message: row.message }] },
      });
      await apply(kube, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: policyName(row.name) },
        spec: { policyName: policyName(row.name), validationActions: ['Deny'], matchResources: { namespaceSelector: onlyNamespace(VAP_NS), objectSelector: { matchLabels: { [ROW_LABEL]: row.name } } } },
      });
    }
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    const webhooks: WebhookSpec[] = ROWS.map((row) => ({
      name: row.name,
      type: 'Validating',
      rules: [configmaps as WebhookSpec['rules'][number]],
      failurePolicy: 'Fail',
      namespaceSelector: onlyNamespace(HOOK_NS),
      objectSelector: { matchLabels: { [ROW_LABEL]: row.name } },
      validations: [{ expression: row.expression, message: row.message }],
    }));
    await createSuite(SUITE, { webhooks });
    await waitForCondition(SUITE, 'Ready', 'True');
    await ensureNamespace(TEAM_NS);
    const policies = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: TEAM_NS };
    for (const row of ROWS) {
      const spec = { type: 'Validating', rules: [configmaps], objectSelector: { matchLabels: { [ROW_LABEL]: row.name } }, validations: [{ expression: row.expression, message: row.message }] };
      await deleteIfExists(kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: row.name, namespace: TEAM_NS } });
      await kube.custom.createNamespacedCustomObject({ ...policies, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: row.name }, spec } });
      await eventually(
        async () => {
          const policy = (await kube.custom.getNamespacedCustomObject({ ...policies, name: row.name })) as AdmissionPolicy;
          expect(policy.status?.conditions?.find((c) => c.type === 'Ready')?.status, JSON.stringify(policy.status)).to.equal('True');
        },
        { what: `AdmissionPolicy ${row.name} Ready` },
      );
    }
    // both sides enforce each row once each refuses the case every row refuses
    for (const row of ROWS) {
      for (const ns of [VAP_NS, HOOK_NS, TEAM_NS]) {
        await eventually(async () => expect((await create(row.name, { a: '1', b: '2', c: '1', v: '\\x00' }, ns)).status).to.be.at.least(400), { what: `${row.name} enforced in ${ns}` });
      }
    }
  });

  after(async function () {
    await deleteSuite(SUITE);
    for (const row of ROWS) await deleteIfExists(cluster().kube, { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: row.name, namespace: TEAM_NS } });
    await operator?.stop();
    for (const row of ROWS) {
      for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
        await deleteIfExists(cluster().kube, { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: policyName(row.name) } });
      }
    }
  });

  for (const row of ROWS) {
    it(`${row.name}: each ConfigMap admitted or denied as the native policy does, in its words, by a suite and by an AdmissionPolicy`, async function () {
      const vap: { status: number; message: string }[] = [];
      const hook: { status: number; message: string }[] = [];
      const team: { status: number; message: string }[] = [];
      for (const data of CASES) {
        vap.push(await create(row.name, data, VAP_NS));
        hook.push(await create(row.name, data, HOOK_NS));
        team.push(await create(row.name, data, TEAM_NS));
      }
      expect(hook, 'the suite').to.deep.equal(vap);
      expect(team, 'the AdmissionPolicy').to.deep.equal(vap);
      // the row is a real differential: both answers occur
      expect(vap.some((o) => o.status < 300) && vap.some((o) => o.status >= 400), JSON.stringify(vap)).to.equal(true);
    });
  }
});
