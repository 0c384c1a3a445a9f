/**
 * A suite type-checked against the kinds its rules name, picked as VAP's typesToCheck picks them,
 * and the definite errors that refuse it on apply. The schemas come from a SchemaSource; here a
 * fixed one (the e2e test reads the API server's).
 */
import { expect } from 'chai';
import { typeCheckSuite, type SchemaSource } from '../../../src/registry/typecheck.ts';
import type { AdmissionSuite, RuleWithOperations, SuiteSpec } from '../../../src/api/types.ts';
import type { GroupVersionKind } from '../../../src/policy/typecheck/check.ts';

const object = (fields: Record<string, unknown>) => ({
  type: 'object',
  properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object', properties: { name: { type: 'string' }, generateName: { type: 'string' } } }, ...fields },
});

/** Kinds `Thing0`..`Thing14` in group `g`, resource `thingN`; each has spec.replicas. */
function source(asked: string[]): SchemaSource {
  const components = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`Thing${i}`, object({ spec: { type: 'object', properties: { replicas: { type: 'integer' } } } })]));
  return {
    kindsFor: async (group, version, resource) => {
      asked.push(`${group}/${version}/${resource}`);
      const n = /^thing(\d+)$/.exec(resource)?.[1];
      return n === undefined ? [] : [{ group, version, kind: `Thing${n}` }];
    },
    schema: async (gvk: GroupVersionKind) => (components[gvk.kind] ? { ref: gvk.kind, components, source: 'doc' } : undefined),
  };
}

const suite = (rules: RuleWithOperations[], expression: string, extra: Partial<SuiteSpec> = {}): AdmissionSuite => ({
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: 's', uid: 'u' },
  spec: { ...extra, webhooks: [{ name: 'w', type: 'Validating', rules, validations: [{ expression }] }] },
});
const rule = (resources: string[], groups = ['g'], versions = ['v1']): RuleWithOperations => ({ operations: ['CREATE'], apiGroups: groups, apiVersions: versions, resources });

describe('registry: a suite type-checked against the kinds its webhooks match', function () {
  it("warns by default, as ValidatingAdmissionPolicy; with typeCheckErrors: Deny (or the operator's default Deny) refuses an expression that fails on every kind, naming the field and the kinds", async function () {
    const warnedByDefault = await typeCheckSuite(suite([rule(['thing1', 'thing2'])], 'object.replicas > 1'), source([]));
    expect(warnedByDefault.errors).to.deep.equal([]);
    expect(warnedByDefault.warnings.map((w) => w.fieldRef)).to.deep.equal(['spec.webhooks[0].validations[0].expression']);
    const refused = await typeCheckSuite(suite([rule(['thing1', 'thing2'])], 'object.replicas > 1', { typeCheckErrors: 'Deny' }), source([]));
    expect(refused.errors).to.deep.equal([
      {
        field: 'spec.webhooks[0].validations[0].expression',
        message: "type checking failed on every kind the webhook matches (g/v1, Kind=Thing1; g/v1, Kind=Thing2): undefined field 'replicas' (spec.typeCheckErrors: Deny refuses it; Warn accepts it with warnings)",
      },
    ]);
    expect((await typeCheckSuite(suite([rule(['thing1'])], 'object.replicas > 1', { typeCheckErrors: 'Refuse' }), source([]))).errors, "Deny's earlier name").to.have.length(1);
    expect((await typeCheckSuite(suite([rule(['thing1'])], 'object.replicas > 1'), source([]), 'Deny')).errors, "the operator's default").to.have.length(1);
    const warned = await typeCheckSuite(suite([rule(['thing1'])], 'object.replicas > 1', { typeCheckErrors: 'Warn' }), source([]), 'Deny');
    expect(warned.errors).to.deep.equal([]);
    expect(warned.warnings.map((w) => w.fieldRef)).to.deep.equal(['spec.webhooks[0].validations[0].expression']);
  });

  it('checks nothing for a rule with a wildcard group or version, and skips wildcard resources and subresources', async function () {
    const asked: string[] = [];
    for (const r of [rule(['thing1'], ['*']), rule(['thing1'], ['g'], ['*']), rule(['*', 'thing1/status', 'thing2'])]) {
      await typeCheckSuite(suite([r], 'object.replicas > 1'), source(asked));
    }
    expect(asked).to.deep.equal(['g/v1/thing2']);
  });

  it('checks at most ten kinds per rule, as VAP', async function () {
    const asked: string[] = [];
    const result = await typeCheckSuite(suite([rule(Array.from({ length: 15 }, (_, i) => `thing${i}`))], 'object.replicas > 1'), source(asked));
    expect(asked).to.have.length(10);
    expect(result.warnings[0]!.warning.split('\n\n')).to.have.length(10);
  });

  it('checks a kind the API server publishes no schema for as dyn: no warning', async function () {
    const result = await typeCheckSuite(suite([rule(['other'])], 'object.replicas > 1'), source([]));
    expect(result).to.deep.equal({ warnings: [], errors: [], complete: true });
  });
  it('leaves a kind whose discovery or schema cannot be read unchecked, and says the check is incomplete', async function () {
    const failing: SchemaSource = { kindsFor: async () => Promise.reject(new Error('connection refused')), schema: async () => undefined };
    expect(await typeCheckSuite(suite([rule(['thing1'])], 'object.replicas > 1'), failing)).to.deep.equal({ warnings: [], errors: [], complete: false });
  });
});
