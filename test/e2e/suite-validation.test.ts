/**
 * The operator's own webhook refuses a suite that cannot work, on apply, naming the field; it is
 * owned by the AdmissionSuite CRD, so uninstalling the CRD removes it.
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite } from '../support/suites.ts';
import { refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { SuiteSpec } from '../../src/api/types.ts';

const configmaps = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const broken: SuiteSpec = {
  webhooks: [{ name: 'bad', type: 'Validating', rules: configmaps, validations: [{ expression: 'true' }, { expression: 'object.metadata.name.startsWith(' }] }],
};

describe('suite validation on apply', function () {
  let operator: Operator;

  before(async function () {
    operator = await startTestOperator();
    // Test operators each serve on a port of their own: wait until the registration points at this one.
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of ['refused', 'valid-then-broken', 'elsewhere', 'protect-unseen']) await deleteSuite(name);
    await operator.stop();
  });

  it('refuses a suite whose expression does not compile, naming the field path', async function () {
    const refused = await eventually(async () => (await refusal(() => createSuite('refused', broken))) ?? Promise.reject(new Error('admitted')), {
      what: 'the refusal',
    });
    expect(refused.code).to.equal(422);
    expect(refused.message).to.contain('admissionsuites.admission.portcullis.dev');
    expect(refused.message).to.contain('spec.webhooks[0].validations[1].expression');
    expect(await getSuite('refused')).to.equal(undefined);
  });

  it('refuses through kubectl, and refuses an edit that breaks a valid suite', async function () {
    const manifest = JSON.stringify({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 'refused' }, spec: { ...broken, url: 'https://a.example', service: { name: 'x' } } });
    const result = await kubectl(['apply', '-f', '-'], manifest);
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain('exactly one of service and url');
    await createSuite('valid-then-broken', { webhooks: [{ name: 'ok', type: 'Validating', rules: configmaps, objectSelector: { matchLabels: { never: 'matches' } }, validations: [{ expression: 'true' }] }] });
    const edit = await kubectl(['patch', 'asuite', 'valid-then-broken', '--type=json', '-p', '[{"op":"replace","path":"/spec/webhooks/0/validations/0/expression","value":"1 + "}]']);
    expect(edit.code).to.not.equal(0);
    expect(edit.stderr).to.contain('spec.webhooks[0].validations[0].expression');
  });

  it("refuses a suite whose Service is outside the operator's namespace, which the operator may not manage", async function () {
    const manifest = JSON.stringify({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'elsewhere' },
      spec: { service: { namespace: 'default', name: 'hooks' }, webhooks: [{ name: 'ok', type: 'Validating', rules: configmaps, validations: [{ expression: 'true' }] }] },
    });
    const result = await kubectl(['apply', '-f', '-'], manifest);
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain("spec.service.namespace: must be the operator's namespace (portcullis-system)");
    expect(await getSuite('elsewhere')).to.equal(undefined);
  });

  it("refuses a NamespaceProtection of the namespaces no suite webhook ever sees (the operator's, kube-system), naming each entry", async function () {
    const namespaces = [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }];
    const manifest = JSON.stringify({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'protect-unseen' },
      spec: { webhooks: [{ name: 'protect', type: 'Validating', rules: namespaces, handler: { name: 'NamespaceProtection', config: { namespaces: ['team-a', 'portcullis-system', 'kube-system'] } } }] },
    });
    const result = await kubectl(['apply', '-f', '-'], manifest);
    expect(result.code).to.not.equal(0);
    expect(result.stderr).to.contain("spec.webhooks[0].handler.config.namespaces[1]: the operator's own namespace is never sent to a suite's webhooks");
    expect(result.stderr).to.contain("spec.webhooks[0].handler.config.namespaces[2]: kube-system is never sent to a suite's webhooks");
    expect(result.stderr).to.not.contain('namespaces[0]');
    expect(await getSuite('protect-unseen')).to.equal(undefined);
  });

  it('refuses params with both name and selector, or neither, and a bad selector or resourceName, naming each field', async function () {
    const params = (extra: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', ...extra });
    const manifest = JSON.stringify({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'refused' },
      spec: {
        webhooks: [
          { name: 'both', type: 'Validating', rules: configmaps, params: params({ name: 'limits', selector: {} }), validations: [{ expression: 'true' }] },
          { name: 'neither', type: 'Validating', rules: configmaps, params: params({}), validations: [{ expression: 'true' }] },
          { name: 'bad-selector', type: 'Validating', rules: configmaps, params: params({ selector: { matchExpressions: [{ key: 'tier', operator: 'In' }] } }), validations: [{ expression: 'true' }] },
          { name: 'bad-names', type: 'Validating', rules: [{ ...configmaps[0], resourceNames: ['a/b'] }], validations: [{ expression: 'true' }] },
        ],
      },
    });
    const result = await kubectl(['apply', '-f', '-'], manifest);
    expect(result.code).to.not.equal(0);
    for (const problem of [
      'spec.webhooks[0].params.name: Forbidden: name and selector are mutually exclusive',
      'spec.webhooks[1].params: Required value: one of name or selector must be specified',
      "spec.webhooks[2].params.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      "spec.webhooks[3].rules[0].resourceNames[0]: may not contain '/'",
    ]) {
      expect(result.stderr, result.stderr).to.contain(problem);
    }
    expect(await getSuite('refused')).to.equal(undefined);
  });

  it('is owned by the AdmissionSuite CRD and fails open', async function () {
    const crd = await cluster().kube.objects.read({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'admissionsuites.admission.portcullis.dev' } });
    const configuration = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: 'portcullis-admissionsuites' });
    expect(configuration.metadata?.ownerReferences).to.deep.include({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: 'admissionsuites.admission.portcullis.dev', uid: crd.metadata!.uid });
    expect(configuration.webhooks![0]!.failurePolicy).to.equal('Ignore');
  });
});
