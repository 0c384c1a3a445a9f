/**
 * MutatingAdmissionPolicy's `patchType: ApplyConfiguration` mutations in a suite webhook (rules.ts
 * with engine/apply-configuration.ts, library/apply-configuration.ts and the `Object{...}`
 * rewrite): the object a user gets, or the refusal in the API server's words, merged by a schema
 * shaped as the API server's OpenAPI v3 (fields of named types through allOf/$ref, list types and
 * keys, a key's default, atomic maps); without one, as offline. Owns these unit checks only; the
 * comparison with the API server's own MAP is test/e2e/map-apply-differential.test.ts'.
 */
import { expect } from 'chai';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import { applyConfiguration, type MergeSchema } from '../../../../src/policy/engine/apply-configuration.ts';
import type { Decision } from '../../../../src/api/admission-review.ts';
import type { FailurePolicy, WebhookSpec } from '../../../../src/api/types.ts';
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';
import jsonpatch from 'fast-json-patch';
import { compileWebhook, OFFLINE_SCHEMAS } from '../../../../src/registry/compile.ts';
import { HeldElsewhere } from '../../../../src/handlers/handler.ts';

const ref = (name: string) => ({ allOf: [{ $ref: `#/components/schemas/${name}` }] });
const str = { type: 'string' };
/** A Deployment-like kind as /openapi/v3 publishes one. */
const SCHEMA: MergeSchema = {
  ref: 'Deploy',
  components: {
    Deploy: { type: 'object', properties: { apiVersion: str, kind: str, metadata: ref('Meta'), spec: ref('Spec') }, 'x-kubernetes-group-version-kind': [{ group: 'apps', version: 'v1', kind: 'Deployment' }] },
    Meta: {
      type: 'object',
      properties: {
        name: str,
        labels: { type: 'object', additionalProperties: { type: 'string', default: '' } },
        finalizers: { type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'set' },
      },
    },
    Spec: { type: 'object', properties: { replicas: { type: 'integer' }, paused: { type: 'boolean' }, selector: ref('Selector'), template: ref('Template') } },
    Selector: { type: 'object', properties: { matchLabels: { type: 'object', additionalProperties: str } }, 'x-kubernetes-map-type': 'atomic' },
    Template: { type: 'object', properties: { spec: ref('PodSpec') } },
    PodSpec: {
      type: 'object',
      properties: {
        containers: { type: 'array', items: ref('Container'), 'x-kubernetes-list-map-keys': ['name'], 'x-kubernetes-list-type': 'map', 'x-kubernetes-patch-merge-key': 'name', 'x-kubernetes-patch-strategy': 'merge' },
        tolerations: { type: 'array', items: ref('Toleration'), 'x-kubernetes-list-type': 'atomic' },
      },
    },
    Container: {
      type: 'object',
      properties: {
        name: str,
        image: str,
        args: { type: 'array', items: str, 'x-kubernetes-list-type': 'atomic' },
        ports: { type: 'array', items: ref('Port'), 'x-kubernetes-list-map-keys': ['containerPort', 'protocol'], 'x-kubernetes-list-type': 'map' },
      },
    },
    Port: { type: 'object', properties: { containerPort: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' }, name: str } },
    Toleration: { type: 'object', properties: { key: str } },
  },
};

const inPodSelector = 'Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{nodeSelector: object.spec.selector.matchLabels}}}}';

function webhook(expression: string): WebhookSpec {
  return { name: 'w', type: 'Mutating', rules: [], mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression } }] } as unknown as WebhookSpec;
}
const deployment = () => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web' }, finalizers: ['a.io/one'] },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    template: {
      spec: {
        containers: [
          { name: 'app', image: 'nginx', args: ['-x'], ports: [{ containerPort: 80, protocol: 'TCP' }] },
          { name: 'side', image: 'busybox' },
        ],
      },
    },
  },
});
const request = () => ({ uid: 'u', operation: 'CREATE', kind: { group: 'apps', version: 'v1', kind: 'Deployment' }, object: deployment() }) as unknown as AdmissionRequest;
/** `schema` null: none known (offline). */
const admit = (expression: string, schema: MergeSchema | null = SCHEMA, failurePolicy: FailurePolicy = 'Fail') => compileRules('s', webhook(expression), 'spec.webhooks[0]', failurePolicy)(request(), { mergeSchema: schema ?? undefined });
/** The object the decision's patch makes of the request's. */
function patchedObject(decision: Decision): unknown {
  expect(decision.allowed, JSON.stringify(decision)).to.equal(true);
  return jsonpatch.applyPatch(deployment(), (decision.patch ?? []) as jsonpatch.Operation[]).newDocument;
}

describe('policy: MutatingAdmissionPolicy ApplyConfiguration mutations', function () {
  it('replaces a scalar and keeps every field the apply configuration does not name', function () {
    const after = deployment();
    after.spec.replicas = 3;
    expect(patchedObject(admit('Object{spec: Object.spec{replicas: 3}}'))).to.deep.equal(after);
  });
  it('merges a map key by key (labels added beside those there)', function () {
    const after = deployment();
    Object.assign(after.metadata.labels, { team: 'blue' });
    expect(patchedObject(admit("Object{metadata: Object.metadata{labels: {'team': 'blue'}}}"))).to.deep.equal(after);
  });
  it('merges containers by name: a named one changed in place, a new one appended', function () {
    const after = deployment();
    after.spec.template.spec.containers[1]!.image = 'busybox:2';
    after.spec.template.spec.containers.push({ name: 'log', image: 'fluent' });
    const expression =
      "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'side', image: 'busybox:2'}, Object.spec.template.spec.containers{name: 'log', image: 'fluent'}]}}}}";
    expect(patchedObject(admit(expression))).to.deep.equal(after);
  });
  it('merges ports by containerPort and protocol, an omitted protocol keyed by its default TCP', function () {
    const after = deployment();
    (after.spec.template.spec.containers[0]!.ports![0] as Record<string, unknown>).name = 'http';
    const c = 'Object.spec.template.spec.containers';
    const expression = `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [${c}{name: 'app', ports: [${c}.ports{containerPort: 80, name: 'http'}]}]}}}}`;
    expect(patchedObject(admit(expression))).to.deep.equal(after);
  });
  it('adds to a set list only what it does not hold', function () {
    const after = deployment();
    after.metadata.finalizers.push('b.io/two');
    expect(patchedObject(admit("Object{metadata: Object.metadata{finalizers: ['a.io/one', 'b.io/two']}}"))).to.deep.equal(after);
  });
  it("refuses an atomic list, an atomic map and a struct's unknown field, and a wrong type, in the API server's words", function () {
    const c = 'Object.spec.template.spec.containers';
    expect(admit(`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [${c}{name: 'app', args: ['-y']}]}}}}`)).to.deep.include({
      allowed: false,
      message: 'error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.template.spec.containers[0].args',
    });
    expect(admit("Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'app': 'x'}}}}")).to.deep.include({
      allowed: false,
      message: 'error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector',
    });
    expect(admit('Object{spec: Object.spec{bogus: 1}}')).to.deep.include({ allowed: false, message: 'error applying patch: failed to convert patch object to typed object: .spec.bogus: field not declared in schema' });
    expect(admit("Object{spec: Object.spec{replicas: 'three'}}")).to.deep.include({
      allowed: false,
      message: 'error applying patch: failed to convert patch object to typed object: .spec.replicas: expected numeric (int or float), got string',
    });
  });
  it('refuses an Object type name that does not match its path', function () {
    expect(admit('Object{spec: Object.spec{template: Object.spec.wrong{}}}')).to.deep.include({
      allowed: false,
      message: 'type mismatch: unexpected type name "Object.spec.wrong", expected "Object.spec.template", which matches field name path from root Object type',
    });
  });
  it('reads the object, variables and conditions as any MAP expression, and admits unchanged under Ignore', function () {
    const after = deployment();
    after.spec.replicas = 2;
    expect(patchedObject(admit('Object{spec: Object.spec{replicas: object.spec.replicas + 1}}'))).to.deep.equal(after);
    expect(admit('Object{spec: Object.spec{bogus: 1}}', SCHEMA, 'Ignore')).to.deep.include({ allowed: true });
    expect(admit('object.spec.replicas > 5 ? Object{spec: Object.spec{replicas: 5}} : Object{}')).to.deep.equal({ allowed: true });
  });
  it('merges offline without a schema: maps key by key, lists whole, with a warning saying so', function () {
    const decision = admit("Object{metadata: Object.metadata{labels: {'team': 'blue'}, finalizers: ['b.io/two']}}", null);
    const after = deployment();
    Object.assign(after.metadata.labels, { team: 'blue' });
    after.metadata.finalizers = ['b.io/two'];
    expect(patchedObject(decision)).to.deep.equal(after);
    expect(decision.warnings?.[0]).to.contain('no schema of Deployment is known here');
  });
  it("refuses a map literal in a map literal as the API server converts it (shallowly), and takes the request's own maps whole", function () {
    expect(admit("Object{spec: Object.spec{extra: {'m': {'deep': 'x', 'a': 'y'}}}}", null)).to.deep.include({
      allowed: false,
      message: 'error applying patch: failed to convert patch object to typed object: .spec.extra.m: expected map, got &{map[a:y deep:x]}',
    });
    const after = deployment();
    (after.spec.template.spec as Record<string, unknown>).nodeSelector = { app: 'web' };
    expect(patchedObject(admit(inPodSelector, null))).to.deep.equal(after);
  });
  it('charges the expression to the cost budget, as a JSONPatch one is: out of budget refuses under Fail', function () {
    const spec = webhook("Object{metadata: Object.metadata{labels: object.items.map(i, string(i)).filter(s, s.startsWith('9')).map(s, s).exists(s, s == '999') ? {'seen': 'yes'} : {}}}");
    const many = { uid: 'u', operation: 'CREATE', kind: { group: '', version: 'v1', kind: 'ConfigMap' }, object: { metadata: { name: 'a' }, items: Array.from({ length: 1000 }, (_, i) => i) } } as unknown as AdmissionRequest;
    expect(compileRules('s', spec, 'spec', 'Fail', undefined, { costBudget: 1000, strictCost: true })(many, {})).to.deep.include({
      allowed: false,
      message: 'validation failed due to running out of cost budget, no further validation rules will be run',
    });
    expect(compileRules('s', spec, 'spec', 'Fail', undefined, { costBudget: 10_000_000, strictCost: true })(many, {})).to.have.property('allowed', true);
  });
  it('is answered where a schema is held: never by the review worker, and forwarded from where none is set (the admission thread)', async function () {
    const compiled = compileWebhook('s', webhook('Object{spec: Object.spec{replicas: 3}}'), 'spec.webhooks[0]', 'Fail', {});
    if ('errors' in compiled) throw new Error(JSON.stringify(compiled.errors));
    expect(compiled.offload).to.equal(false);
    expect(() => compiled.admit(request())).to.throw(HeldElsewhere);
    const held = compileWebhook('s', webhook('Object{spec: Object.spec{replicas: 3}}'), 'spec.webhooks[0]', 'Fail', { mergeSchemas: { schema: async () => SCHEMA } });
    if ('errors' in held) throw new Error(JSON.stringify(held.errors));
    expect(patchedObject(await held.admit(request()))).to.have.nested.property('spec.replicas', 3);
    const offline = compileWebhook('s', webhook('Object{spec: Object.spec{replicas: 3}}'), 'spec.webhooks[0]', 'Fail', { mergeSchemas: OFFLINE_SCHEMAS });
    if ('errors' in offline) throw new Error(JSON.stringify(offline.errors));
    expect((await offline.admit(request())).warnings?.[0]).to.contain('no schema of Deployment is known here');
  });
  it("orders keyed items as structured-merge-diff does: the object's order, the patch's shared items in its order, new ones after the object's that precede them", function () {
    const lhs = { apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: { spec: { containers: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] } } } };
    const rhs = { spec: { template: { spec: { containers: [{ name: 'b' }, { name: 'new' }, { name: 'a' }] } } } };
    const merged = applyConfiguration(lhs, rhs, SCHEMA) as typeof lhs;
    expect(merged.spec.template.spec.containers.map((c) => c.name)).to.deep.equal(['b', 'c', 'new', 'a']);
  });
});
