/**
 * MutatingAdmissionPolicy's `patchType: JSONPatch` mutations in a suite webhook (rules.ts with
 * json-patch.ts, library/jsonpatch.ts and the `JSONPatch{...}` rewrite): the answer a user gets,
 * patch or refusal in the API server's words. Owns these unit checks only; the comparison with the
 * API server's own MAP is test/e2e/map-differential.test.ts's.
 */
import { expect } from 'chai';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { FailurePolicy, WebhookSpec } from '../../../../src/api/types.ts';
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';

function webhook(expression: string): WebhookSpec {
  return { name: 'w', type: 'Mutating', rules: [], mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression } }] } as unknown as WebhookSpec;
}
const request = () => ({ uid: 'u', operation: 'CREATE', object: { metadata: { name: 'a', labels: { x: '1' } }, data: { k: 'v' }, list: [1, 2] } }) as unknown as AdmissionRequest;
const admit = (expression: string, failurePolicy: FailurePolicy = 'Fail') => compileRules('s', webhook(expression), 'spec.webhooks[0]', failurePolicy)(request());

describe('policy: MutatingAdmissionPolicy JSONPatch mutations', function () {
  it('adds a label with a JSONPatch value', function () {
    expect(admit("[JSONPatch{op: 'add', path: '/metadata/labels/team', value: 'a'}]")).to.deep.include({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels/team', value: 'a' }] });
  });
  it('escapes a key with jsonpatch.escapeKey', function () {
    const decision = admit("[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a.io/b~c'), value: 'x'}]");
    expect(decision).to.deep.include({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels/a.io~1b~0c', value: 'x' }] });
  });
  it('leaves the object as it was when a test operation fails, with no error', function () {
    expect(admit("[JSONPatch{op: 'test', path: '/data/k', value: 'no'}, JSONPatch{op: 'add', path: '/data/z', value: 'z'}]")).to.deep.equal({ allowed: true });
  });
  it("refuses a patch that does not apply in the API server's words under Fail, and admits unchanged under Ignore", function () {
    expect(admit("[JSONPatch{op: 'add', path: '/spec/x', value: 1}]")).to.deep.include({ allowed: false, message: 'JSON Patch: add operation does not apply: doc is missing path: "/spec/x": missing value' });
    expect(admit("[JSONPatch{op: 'remove', path: '/data/nope'}]")).to.deep.include({ allowed: false, message: "JSON Patch: error in remove for path: '/data/nope': Unable to remove nonexistent key: nope: missing value" });
    expect(admit("[JSONPatch{op: 'add', path: '/spec/x', value: 1}]", 'Ignore')).to.deep.include({ allowed: true });
  });
  it('fails a test of value null against a missing key (the object unchanged), and passes one without value', function () {
    expect(admit("[JSONPatch{op: 'test', path: '/data/absent', value: null}, JSONPatch{op: 'add', path: '/data/z', value: 'z'}]")).to.deep.equal({ allowed: true });
    expect(admit("[JSONPatch{op: 'test', path: '/data/absent'}, JSONPatch{op: 'add', path: '/data/z', value: 'z'}]")).to.deep.include({ allowed: true, patch: [{ op: 'add', path: '/data/z', value: 'z' }] });
  });
  it("answers a failed matchCondition of a MAP-form webhook 403, as the API server's MAP does", function () {
    const spec = { ...webhook("[JSONPatch{op: 'add', path: '/data/z', value: 'z'}]"), matchConditions: [{ name: 'm', expression: "object.data.missing == 'x'" }] } as WebhookSpec;
    expect(compileRules('s', spec, 'spec.webhooks[0]', 'Fail', undefined, { allMatchConditions: true })(request())).to.deep.include({
      allowed: false,
      code: 403,
      message: "expression 'object.data.missing == 'x'' resulted in error: no such key: missing",
    });
  });
  it("replaces a missing key of an object, as the API server's library does", function () {
    expect(admit("[JSONPatch{op: 'replace', path: '/data/new', value: 'n'}]")).to.deep.include({ allowed: true, patch: [{ op: 'add', path: '/data/new', value: 'n' }] });
  });
  it('refuses a field JSONPatch does not have, on compile', function () {
    expect(() => admit("[JSONPatch{opp: 'add', path: '/x'}]")).to.throw("spec.webhooks[0].mutations[0].jsonPatch.expression: compilation failed: undefined field 'opp'");
  });
  it('refuses a patchType MAP does not have on compile, never ignoring it', function () {
    const spec = { name: 'w', type: 'Mutating', rules: [], mutations: [{ patchType: 'StrategicMerge', applyConfiguration: { expression: 'Object{}' } }] } as unknown as WebhookSpec;
    expect(() => compileRules('s', spec, 'spec.webhooks[0]', 'Fail')).to.throw('spec.webhooks[0].mutations[0].patchType: Unsupported value: must be JSONPatch or ApplyConfiguration');
  });
  it("charges the expression to the policy's cost budget, as a team's validations are charged", function () {
    const spec = webhook("object.items.map(i, JSONPatch{op: 'add', path: '/data/k' + string(i), value: 'x'})");
    const many = { uid: 'u', operation: 'CREATE', object: { metadata: { name: 'a' }, data: {}, items: Array.from({ length: 1000 }, (_, i) => i) } } as unknown as AdmissionRequest;
    expect(compileRules('s', spec, 'spec', 'Fail', undefined, { costBudget: 1000, strictCost: true })(many)).to.deep.include({
      allowed: false,
      message: 'validation failed due to running out of cost budget, no further validation rules will be run',
    });
    expect(compileRules('s', spec, 'spec', 'Fail', undefined, { costBudget: 10_000_000, strictCost: true })(many)).to.have.property('allowed', true);
  });
  it("drops an empty map one mutation added before the next reads it, for a built-in kind, as the API server's typed round trip does", function () {
    const spec = {
      name: 'w',
      type: 'Mutating',
      rules: [],
      mutations: [
        { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]" } },
        { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/annotations/a', value: 'x'}]" } },
      ],
    } as unknown as WebhookSpec;
    const review = (group: string, kind: string) => ({ uid: 'u', operation: 'CREATE', kind: { group, version: 'v1', kind }, object: { metadata: { name: 'a' } } }) as unknown as AdmissionRequest;
    // a ConfigMap: the second mutation finds no annotations (kube-apiserver 1.37's MAP answers the same, map-differential's empty-map-dropped)
    expect(compileRules('s', spec, 'spec.webhooks[0]', 'Fail')(review('', 'ConfigMap'))).to.deep.include({
      allowed: false,
      message: 'JSON Patch: add operation does not apply: doc is missing path: "/metadata/annotations/a": missing value',
    });
    // a custom resource stays unstructured between mutations: the empty map is there to add into
    expect(compileRules('s', spec, 'spec.webhooks[0]', 'Fail')(review('example.com', 'Widget'))).to.deep.include({ allowed: true, patch: [{ op: 'add', path: '/metadata/annotations', value: { a: 'x' } }] });
  });
  it('refuses a list of anything but JSONPatch values on compile, as the API server does (map-write-errors.test.ts holds the words)', function () {
    expect(() => admit("[{'op': 'add', 'path': '/x', 'value': 1}]")).to.throw('spec.webhooks[0].mutations[0].jsonPatch.expression: must evaluate to list(JSONPatch) but got list(map(string, dyn))');
  });
});
