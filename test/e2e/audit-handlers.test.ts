/**
 * The background audit of a built-in handler that declares it can judge a stored object
 * (RequiredLabels), and the older wgpolicyk8s.io PolicyReports beside the OpenReports ones
 * (`--policy-reports`, with their CRDs as shipped in crds/): the same results in both.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite } from '../support/suites.ts';
import { createConfigMap, ensureNamespace } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NS = 'audit-handlers';
const SUITE = 'audit-labels';

interface Result {
  policy: string;
  rule: string;
  result: string;
  message?: string;
  resources: { name: string }[];
}

async function results(group: string, version: string, plural: string): Promise<Result[]> {
  const list = (await cluster().kube.custom.listNamespacedCustomObject({ group, version, plural, namespace: NS })) as { items: { results?: Result[] }[] };
  return list.items.flatMap((r) => r.results ?? []);
}

describe('background audit: a built-in handler, and PolicyReports beside OpenReports', function () {
  this.timeout(120_000);
  let operator: Operator;

  before(async function () {
    for (const file of ['crds/wgpolicyk8s.io_policyreports.yaml', 'crds/wgpolicyk8s.io_clusterpolicyreports.yaml']) {
      const applied = await kubectl(['apply', '--server-side', '-f', '-'], fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'));
      expect(applied.code, applied.stderr).to.equal(0);
    }
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/policyreports.wgpolicyk8s.io']);
    await ensureNamespace(NS);
    await createConfigMap(NS, 'unlabelled').catch(() => undefined);
    await createConfigMap(NS, 'labelled', {}, { team: 'a' }).catch(() => undefined);
    operator = await startTestOperator({ audit: true, policyReports: true });
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'team',
          type: 'Validating',
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          handler: { name: 'RequiredLabels', config: { labels: [{ key: 'team' }] } },
        },
      ],
    });
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator.stop();
  });

  it('judges stored objects with the handler, in its words', async function () {
    const found = await eventually(
      async () => {
        const r = await results('openreports.io', 'v1alpha1', 'reports');
        if (r.filter((x) => x.policy === `${SUITE}/team`).length < 2) throw new Error(`not yet: ${JSON.stringify(r)}`);
        return r;
      },
      { what: "the handler's results", timeoutMs: 60_000 },
    );
    const of = (name: string) => found.find((r) => r.policy === `${SUITE}/team` && r.resources[0]?.name === name);
    expect(of('unlabelled')).to.include({ rule: 'RequiredLabels', result: 'fail' });
    expect(of('unlabelled')!.message).to.contain('missing required label team');
    expect(of('labelled')).to.include({ rule: 'RequiredLabels', result: 'pass' });
  });

  it('writes the same results as a wgpolicyk8s.io PolicyReport', async function () {
    const strip = (r: Result[]) => r.map(({ policy, rule, result, message, resources }) => ({ policy, rule, result, message, name: resources[0]?.name })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    await eventually(async () => expect(strip(await results('wgpolicyk8s.io', 'v1alpha2', 'policyreports'))).to.deep.equal(strip(await results('openreports.io', 'v1alpha1', 'reports'))), {
      what: 'the PolicyReport to hold the same results',
      timeoutMs: 60_000,
    });
    const [report] = ((await cluster().kube.custom.listNamespacedCustomObject({ group: 'wgpolicyk8s.io', version: 'v1alpha2', plural: 'policyreports', namespace: NS })) as { items: k8s.KubernetesObject[] }).items;
    expect(report?.metadata?.name).to.equal('portcullis');
  });
});
