/**
 * NamespaceProtection: no upstream plugin. Cases from Kinitiras' namespace deletion policy (a
 * labelled Namespace may not be deleted), OpenKruise's deletion protection of Namespaces and
 * CustomResourceDefinitions, and Giant Swarm's prevent-deletion label on any object.
 */
import { expect } from 'chai';
import { namespaceProtection, DEFAULT_PROTECTION_LABEL } from '../../../src/handlers/namespace-protection.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { suiteErrors } from '../../fixtures/patch.ts';
import { namespace, viewOf } from '../../fixtures/views.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { protectedNamespaces } from '../../../src/desired/objects.ts';
import type { AdmissionSuite } from '../../../src/api/types.ts';

const config = (c: Record<string, unknown> = {}) => {
  const parsed = namespaceProtection.parseConfig(c);
  expect(parsed.errors).to.deep.equal([]);
  return parsed.config;
};
const crd = (name: string, labels?: Record<string, string>) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name, ...(labels ? { labels } : {}) } });
const configMap = (labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'team-a', ...(labels ? { labels } : {}) } });

describe('handlers: NamespaceProtection', function () {
  const cases: { name: string; request: ReturnType<typeof requestFor>; config?: Record<string, unknown>; view?: ReturnType<typeof viewOf>; denied?: RegExp }[] = [
    {
      name: 'denies DELETE of a configured namespace',
      request: requestFor('namespaces', 'DELETE', { oldObject: namespace('prod') }),
      config: { namespaces: ['prod'] },
      denied: /namespace "prod" is protected from deletion.*to delete it, first remove "prod" from that list/,
    },
    { name: 'allows DELETE of a namespace that is neither configured nor labelled', request: requestFor('namespaces', 'DELETE', { oldObject: namespace('scratch') }), config: { namespaces: ['prod'] } },
    {
      name: 'denies DELETE of a namespace carrying the protection label, saying how to remove it',
      request: requestFor('namespaces', 'DELETE', { oldObject: namespace('billing', undefined, { [DEFAULT_PROTECTION_LABEL]: 'true' }) }),
      denied: new RegExp(`Namespace "billing" carries the label ${DEFAULT_PROTECTION_LABEL}.*kubectl label namespaces billing ${DEFAULT_PROTECTION_LABEL}-$`),
    },
    // Kinitiras' deletens policy: Namespaces labelled kinitiras.kcloudlabs.io/webhook=enabled may not be deleted.
    {
      name: 'Kinitiras: a namespace labelled kinitiras.kcloudlabs.io/webhook is protected',
      request: requestFor('namespaces', 'DELETE', { oldObject: namespace('seeded', undefined, { 'kinitiras.kcloudlabs.io/webhook': 'enabled' }) }),
      config: { protectionLabel: 'kinitiras.kcloudlabs.io/webhook' },
      denied: /carries the label kinitiras.kcloudlabs.io\/webhook/,
    },
    { name: 'Kinitiras: a namespace without the label is not', request: requestFor('namespaces', 'DELETE', { oldObject: namespace('plain', undefined, { team: 'a' }) }), config: { protectionLabel: 'kinitiras.kcloudlabs.io/webhook' } },
    {
      name: "DELETE with no object: a namespace's labels come from the cache",
      request: requestFor('namespaces', 'DELETE', { name: 'billing' }),
      view: viewOf({ namespaces: [namespace('billing', undefined, { [DEFAULT_PROTECTION_LABEL]: '' })] }),
      denied: /carries the label/,
    },
    { name: 'DELETE with no object of a namespace the cache does not know, and not configured, is allowed', request: requestFor('namespaces', 'DELETE', { name: 'billing' }) },
    { name: 'DELETE with no object of a configured namespace is denied by name', request: requestFor('namespaces', 'DELETE', { name: 'prod' }), config: { namespaces: ['prod'] }, denied: /namespace "prod" is protected/ },
    // OpenKruise: CustomResourceDefinitions
    {
      name: 'denies DELETE of any CRD by default',
      request: requestFor('customresourcedefinitions', 'DELETE', { oldObject: crd('widgets.example.com') }),
      denied: /CustomResourceDefinition "widgets.example.com" is protected from deletion \(deleting it would delete every object of its kind\); to delete it, first narrow/,
    },
    {
      name: 'denies DELETE of a listed CRD, saying to remove it from the list',
      request: requestFor('customresourcedefinitions', 'DELETE', { oldObject: crd('widgets.example.com') }),
      config: { customResourceDefinitions: ['widgets.example.com'] },
      denied: /first remove "widgets.example.com" from the customResourceDefinitions/,
    },
    { name: 'allows DELETE of a CRD that is not listed', request: requestFor('customresourcedefinitions', 'DELETE', { oldObject: crd('gadgets.example.com') }), config: { customResourceDefinitions: ['widgets.example.com'] } },
    {
      name: 'a CRD that is not listed but labelled is protected by its label',
      request: requestFor('customresourcedefinitions', 'DELETE', { oldObject: crd('gadgets.example.com', { [DEFAULT_PROTECTION_LABEL]: 'true' }) }),
      config: { customResourceDefinitions: [] },
      denied: /kubectl label customresourcedefinitions.apiextensions.k8s.io gadgets.example.com admission.portcullis.dev\/deletion-protection-/,
    },
    // Giant Swarm's prevent-deletion label: any object, any value
    {
      name: 'denies DELETE of any object carrying the protection label, with the namespace in the kubectl hint',
      request: requestFor('configmaps', 'DELETE', { oldObject: configMap({ 'giantswarm.io/prevent-deletion': 'yes' }) }),
      config: { protectionLabel: 'giantswarm.io/prevent-deletion' },
      denied: /ConfigMap "settings" in namespace "team-a" carries the label giantswarm.io\/prevent-deletion.*kubectl label configmaps settings -n team-a giantswarm.io\/prevent-deletion-$/,
    },
    {
      name: 'names a grouped resource as kubectl does',
      request: requestFor('deployments', 'DELETE', { oldObject: { metadata: { name: 'web', namespace: 'team-a', labels: { [DEFAULT_PROTECTION_LABEL]: 'true' } } } }),
      denied: /kubectl label deployments.apps web -n team-a/,
    },
    { name: 'allows DELETE of an unlabelled object', request: requestFor('configmaps', 'DELETE', { oldObject: configMap({ team: 'a' }) }) },
    { name: 'DELETE with no object of a namespaced object cannot see labels: allowed', request: requestFor('configmaps', 'DELETE', { name: 'settings' }) },
    { name: 'CREATE of a labelled object is allowed', request: requestFor('configmaps', 'CREATE', { object: configMap({ [DEFAULT_PROTECTION_LABEL]: 'true' }) }) },
    { name: 'UPDATE of a protected namespace (nothing relevant) is allowed', request: requestFor('namespaces', 'UPDATE', { object: namespace('prod'), oldObject: namespace('prod') }), config: { namespaces: ['prod'] } },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const decision = namespaceProtection.validate!(c.request, config(c.config), c.view ?? EMPTY_VIEW);
      if (!c.denied) return expect(decision).to.deep.equal({ allowed: true });
      expect(decision).to.include({ allowed: false, code: 403, reason: 'Forbidden' });
      expect(decision.message).to.match(/^NamespaceProtection: /);
      expect(decision.message).to.match(c.denied);
    });
  }

  it('serves namespaces, CRDs and any resource; a suite with a bad config is refused, naming the field', function () {
    const anything = [{ operations: ['DELETE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
    expect(suiteErrors({ type: 'Validating', rules: anything, handler: { name: 'NamespaceProtection' } })).to.deep.equal([]);
    const fields = suiteErrors({
      type: 'Validating',
      rules: anything,
      handler: { name: 'NamespaceProtection', config: { namespaces: 'prod', protectionLabel: 'not a label', customResourceDefinitions: [''], crds: true } },
    }).map((e) => e.field);
    expect(fields).to.have.members(['spec.webhooks[0].handler.config.namespaces', 'spec.webhooks[0].handler.config.protectionLabel', 'spec.webhooks[0].handler.config.customResourceDefinitions[0]', 'spec.webhooks[0].handler.config.crds']);
    expect(suiteErrors({ type: 'Mutating', rules: anything, handler: { name: 'NamespaceProtection' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].type']);
  });

  it("refuses on apply the namespaces no suite webhook ever sees (the operator's, kube-system, kube-node-lease), naming each entry", function () {
    const suite = (namespaces: string[]): AdmissionSuite => ({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'protect', uid: 'u', generation: 1 },
      spec: { webhooks: [{ name: 'w', type: 'Validating', rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }], handler: { name: 'NamespaceProtection', config: { namespaces } } }] },
    });
    const field = (i: number) => `spec.webhooks[0].handler.config.namespaces[${i}]`;
    const errors = compileSuite(suite(['prod', 'kube-system', 'portcullis-system', 'kube-node-lease', 'kube-public']), { operatorNamespace: 'portcullis-system' }).errors;
    expect(errors.map((e) => e.field)).to.deep.equal([field(1), field(2), field(3)]);
    expect(errors[0]!.message).to.equal(
      "kube-system is never sent to a suite's webhooks (every namespaceSelector leaves out the operator's namespace (portcullis-system), kube-system and kube-node-lease, " +
        'so the cluster can always be repaired): NamespaceProtection would protect nothing there; remove "kube-system" from namespaces',
    );
    expect(errors[1]!.message).to.match(/^the operator's own namespace is never sent to a suite's webhooks .*remove "portcullis-system" from namespaces$/);
    // The same list as every namespaceSelector excludes (the check follows the operator's namespace, not a copy of it).
    expect(protectedNamespaces({ namespace: 'portcullis-system' })).to.have.members(['portcullis-system', 'kube-system', 'kube-node-lease']);
    expect(compileSuite(suite(['prod', 'portcullis-system']), { operatorNamespace: 'elsewhere' }).errors).to.deep.equal([]);
    // Where the operator's namespace is not known (the review worker), the system namespaces are still refused.
    expect(compileSuite(suite(['kube-node-lease', 'portcullis-system'])).errors.map((e) => e.field)).to.deep.equal([field(0)]);
    expect(compileSuite(suite(['prod', 'kube-public']), { operatorNamespace: 'portcullis-system' }).errors).to.deep.equal([]);
  });
});
