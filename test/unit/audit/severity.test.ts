/**
 * Reports people can sort (issue 55): a suite's (or one of its webhooks') and an AdmissionPolicy's
 * severity and category annotations are carried into every result of the background audit's
 * reports, OpenReports' and PolicyReport's `severity` and `category` (src/audit/targets.ts,
 * reports.ts). Builds targets and reports in memory; the reports' writes are the e2e audit tests'.
 * Owns nothing but its fixtures.
 */
import { expect } from 'chai';
import { DEFAULTS } from '../../../src/config.ts';
import { GROUP, VERSION, type AdmissionPolicy, type AdmissionSuite } from '../../../src/api/types.ts';
import { policyTarget, suiteTargets, type AuditTarget } from '../../../src/audit/targets.ts';
import { buildReports, type TargetInfo } from '../../../src/audit/reports.ts';
import type { JudgedObject } from '../../../src/audit/results.ts';

const webhook = (name: string) => ({
  name,
  type: 'Validating' as const,
  rules: [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
  validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'needs a team' }],
});

const suite = (annotations: Record<string, string>): AdmissionSuite =>
  ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name: 'labels', uid: 'u', generation: 1, annotations }, spec: { webhooks: [webhook('team'), webhook('owner')] } }) as AdmissionSuite;

const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'unlabelled', namespace: 'shop', uid: 'cm-1' }, data: {} };
const request = {
  uid: 'r',
  kind: { group: '', version: 'v1', kind: 'ConfigMap' },
  resource: { group: '', version: 'v1', resource: 'configmaps' },
  name: 'unlabelled',
  namespace: 'shop',
  operation: 'CREATE',
  userInfo: {},
  object: configMap,
  oldObject: null,
} as never;

/** The report's results for the ConfigMap as `targets` judge it. */
async function reported(targets: AuditTarget[]): Promise<Record<string, unknown>[]> {
  const judged: JudgedObject = { ref: { apiVersion: 'v1', kind: 'ConfigMap', name: 'unlabelled', namespace: 'shop', uid: 'cm-1' }, byTarget: new Map() };
  const infos = new Map<string, TargetInfo>();
  for (const t of targets) {
    judged.byTarget.set(t.key, { results: (await t.judge(request, {}))!, since: 0 });
    infos.set(t.key, { policy: t.policy, action: t.action, sourceKind: t.source.kind, ...(t.severity ? { severity: t.severity } : {}), ...(t.category ? { category: t.category } : {}) });
  }
  const [report] = buildReports('shop', [judged], infos);
  return report!.results as Record<string, unknown>[];
}

describe('audit: severity and category in every report result', function () {
  it("carries a suite's severity and category into each of its webhooks' results, a webhook's own over the suite's", async function () {
    const targets = suiteTargets(suite({ 'portcullis.dev/severity': 'High', 'portcullis.dev/category': 'Best Practices', 'severity.portcullis.dev/owner': 'low', 'category.portcullis.dev/owner': 'Ownership' }), DEFAULTS, {});
    const results = await reported(targets);
    expect(results.map((r) => [r.policy, r.result, r.severity, r.category])).to.deep.equal([
      ['labels/owner', 'fail', 'low', 'Ownership'],
      ['labels/team', 'fail', 'high', 'Best Practices'],
    ]);
  });

  it('leaves out a severity the reports do not know, and both when none is given', async function () {
    const results = await reported(suiteTargets(suite({ 'portcullis.dev/severity': 'urgent' }), DEFAULTS, {}));
    for (const r of results) expect(r).to.not.have.any.keys('severity', 'category');
  });

  it("carries an AdmissionPolicy's annotations into its results", async function () {
    const policy = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AdmissionPolicy',
      metadata: { name: 'team', namespace: 'shop', uid: 'p', generation: 1, annotations: { 'portcullis.dev/severity': 'medium', 'portcullis.dev/category': 'Labels' } },
      spec: { ...webhook('team'), name: undefined },
    } as unknown as AdmissionPolicy;
    const target = policyTarget(policy, { mutations: 0, costBudget: 1e9, namespaceCostBudget: 1e9, deadlineMs: 1000, maxBytes: 1e6 } as never, DEFAULTS, {})!;
    const results = await reported([target]);
    expect(results.map((r) => [r.policy, r.result, r.severity, r.category])).to.deep.equal([['shop/team', 'fail', 'medium', 'Labels']]);
  });
});
