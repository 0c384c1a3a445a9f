/** OpenAPI schemas as CEL types, with the API server's rules (SchemaDeclType, PopulateRefs, WithTypeAndObjectMeta, Escape). */
import { expect } from 'chai';
import { escapeField, schemaTypes, type OpenApiSchema } from '../../../../src/policy/typecheck/schema.ts';

const ref = (name: string): OpenApiSchema => ({ allOf: [{ $ref: `#/components/schemas/${name}` }], description: 'wrapped as the API server publishes it' });

const components: Record<string, OpenApiSchema> = {
  Meta: { type: 'object', properties: { name: { type: 'string' }, generateName: { type: 'string' }, namespace: { type: 'string' }, labels: { type: 'object', additionalProperties: { type: 'string' } }, creationTimestamp: ref('Time') } },
  Time: { type: 'string', format: 'date-time' },
  Widget: {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: ref('Meta'),
      spec: {
        type: 'object',
        properties: {
          port: { 'x-kubernetes-int-or-string': true },
          ratio: { type: 'number' },
          data: { type: 'string', format: 'byte' },
          timeout: { type: 'string', format: 'duration' },
          free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          untyped: { 'x-kubernetes-preserve-unknown-fields': true },
          items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
          byName: { type: 'object', additionalProperties: { type: 'object', properties: { n: { type: 'integer' } } } },
          'dashed-name': { type: 'boolean' },
          embedded: { type: 'object', 'x-kubernetes-embedded-resource': true },
          self: ref('Widget'),
        },
      },
    },
  },
};

describe('policy/typecheck: OpenAPI schemas as CEL types', function () {
  const types = schemaTypes('Widget', '#/components/schemas/Widget', components)!;

  it('types fields as the API server: int-or-string dyn, number double, byte/duration/date-time, maps and lists with element types named .@elem/.@idx', function () {
    expect(types.root).to.equal('Widget');
    expect(types.objects.get('Widget.spec')).to.deep.equal({
      port: 'dyn',
      ratio: 'double',
      data: 'bytes',
      timeout: 'google.protobuf.Duration',
      free: 'Widget.spec.free',
      items: 'list<Widget.spec.items.__idx__>',
      byName: 'map<string, Widget.spec.byName.__elem__>',
      dashed__dash__name: 'bool',
      embedded: 'Widget.spec.embedded',
      self: 'Widget.spec.self',
    });
    expect(types.objects.get('Widget.metadata')).to.include({ creationTimestamp: 'google.protobuf.Timestamp', labels: 'map<string, string>', namespace: 'string' });
  });

  it('exposes no undeclared field of a preserve-unknown-fields object, and no untyped property; a reference back to itself is an object with no fields', function () {
    expect(types.objects.get('Widget.spec.free')).to.deep.equal({});
    expect(types.objects.get('Widget.spec')).to.not.have.property('untyped');
    expect(types.objects.get('Widget.spec.self')).to.deep.equal({});
  });

  it('gives an embedded resource apiVersion, kind and metadata.name/generateName', function () {
    expect(types.objects.get('Widget.spec.embedded')).to.deep.equal({ kind: 'string', apiVersion: 'string', metadata: 'Widget.spec.embedded.metadata' });
    expect(types.objects.get('Widget.spec.embedded.metadata')).to.deep.equal({ name: 'string', generateName: 'string' });
  });

  it('escapes property names as cel.Escape, and refuses the ones it cannot', function () {
    expect(escapeField('a.b-c/d')).to.equal('a__dot__b__dash__c__slash__d');
    expect(escapeField('a__b')).to.equal('a__underscores__b');
    expect(escapeField('if')).to.equal('__if__');
    expect(escapeField('1abc')).to.equal(undefined);
    expect(escapeField('a b')).to.equal(undefined);
  });

  it('has no types for a kind whose schema is missing', function () {
    expect(schemaTypes('Gone', '#/components/schemas/Gone', components)).to.equal(undefined);
  });
});
