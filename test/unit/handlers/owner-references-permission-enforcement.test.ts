/**
 * OwnerReferencesPermissionEnforcement on what the API server would answer (a table of allowed
 * checks and served kinds standing in for SubjectAccessReviews and discovery; the same requests
 * against the in-tree plugin are the plugin differential's): which checks it asks, in how many
 * rounds, and the in-tree plugin's words when one is refused.
 */
import { expect } from 'chai';
import { authorizationKey, type AuthorizationAttributes, type AuthorizationDecision, type Authorizer } from '../../../src/api/authorization.ts';
import type { KindMapper, RestMapping } from '../../../src/api/kind-mapper.ts';
import type { AdmissionSuite } from '../../../src/api/types.ts';
import type { AdmissionRequest, Decision } from '../../../src/api/admission-review.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { requestFor } from '../../fixtures/reviews.ts';

/** Allows the checks whose `verb resource/subresource name` is listed; records every check asked. */
class TableAuthorizer implements Authorizer {
  readonly asked: string[] = [];
  private readonly allowed: Set<string>;
  constructor(allowed: string[]) {
    this.allowed = new Set(allowed);
  }
  async check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
    const r = attributes.resource!;
    const said = `${r.verb} ${r.group ? `${r.group}/` : ''}${r.resource}${r.subresource ? `/${r.subresource}` : ''} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
    this.asked.push(said);
    expect(authorizationKey(attributes)).to.contain('alice');
    return { allowed: this.allowed.has(said), reason: '', evaluationError: '' };
  }
}

const MAPPER: KindMapper & { asked: string[] } = {
  asked: [],
  async restMappings(group, version, kind): Promise<RestMapping[]> {
    this.asked.push(`${group}/${version} ${kind}`);
    const known: Record<string, RestMapping> = { 'apps/v1 Deployment': { resource: 'deployments', namespaced: true }, '/v1 Node': { resource: 'nodes', namespaced: false } };
    const found = known[`${group}/${version} ${kind}`];
    if (!found) throw new Error(`no matches for kind "${kind}" in version "${group ? `${group}/` : ''}${version}"`);
    return [found];
  },
};

function admitFor(authorizer: Authorizer): (request: AdmissionRequest) => Decision | Promise<Decision> {
  const suite: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'gc', uid: 'u' },
    spec: {
      webhooks: [
        {
          name: 'owners',
          type: 'Validating',
          rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }],
          handler: { name: 'OwnerReferencesPermissionEnforcement' },
        },
      ],
    },
  };
  const compiled = compileSuite(suite, { authorizer, mapper: MAPPER });
  expect(compiled.errors).to.deep.equal([]);
  return compiled.webhooks.get('owners')!.admit;
}

const owner = (kind: string, name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: kind === 'Deployment' ? 'apps/v1' : 'v1', kind, name, uid: `${name}-uid`, ...extra });
const configMap = (ownerReferences?: unknown[]) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team-a', ...(ownerReferences ? { ownerReferences } : {}) } });
const as = (request: AdmissionRequest): AdmissionRequest => ({ ...request, userInfo: { username: 'alice', groups: ['system:authenticated'] } });
const create = (refs?: unknown[]) => as(requestFor('configmaps', 'CREATE', { object: configMap(refs) }));
const update = (refs: unknown[] | undefined, oldRefs: unknown[] | undefined) => as(requestFor('configmaps', 'UPDATE', { object: configMap(refs), oldObject: configMap(oldRefs) }));

describe('handlers: OwnerReferencesPermissionEnforcement', function () {
  beforeEach(() => (MAPPER.asked.length = 0));

  it('asks nothing, and answers at once, when ownerReferences do not change', function () {
    const authorizer = new TableAuthorizer([]);
    const admit = admitFor(authorizer);
    expect(admit(create())).to.deep.equal({ allowed: true });
    expect(admit(update([owner('Deployment', 'd')], [owner('Deployment', 'd')]))).to.deep.equal({ allowed: true });
    expect(admit(as(requestFor('pods', 'UPDATE', { subResource: 'status', object: configMap([owner('Deployment', 'd')]), oldObject: configMap() })))).to.deep.equal({ allowed: true });
    expect(authorizer.asked).to.deep.equal([]);
  });

  it('lets a creator set a non-blocking ownerReference without asking; an update needs delete on the object', async function () {
    const refused = new TableAuthorizer([]);
    expect(await admitFor(refused)(create([owner('Deployment', 'd')]))).to.deep.equal({ allowed: true });
    expect(refused.asked).to.deep.equal([]);
    const decision = await admitFor(refused)(update([owner('Deployment', 'd')], undefined));
    expect(decision).to.include({ allowed: false, code: 403, message: `configmaps "cm" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>` });
    expect(refused.asked).to.deep.equal(['delete configmaps team-a/cm']);
    // A change as small as blockOwnerDeletion unset to false is a change.
    const allowed = new TableAuthorizer(['delete configmaps team-a/cm']);
    expect(await admitFor(allowed)(update([owner('Deployment', 'd', { blockOwnerDeletion: false })], [owner('Deployment', 'd')]))).to.deep.equal({ allowed: true });
  });

  it('a newly blocking reference needs update on the owner’s finalizers (namespaced or not), unless the user may finalize anything', async function () {
    const refs = [owner('Deployment', 'd', { blockOwnerDeletion: true }), owner('Node', 'n1', { blockOwnerDeletion: true })];
    const partial = new TableAuthorizer(['update apps/deployments/finalizers team-a/d']);
    expect(await admitFor(partial)(create(refs))).to.include({
      allowed: false,
      message: `configmaps "cm" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>`,
    });
    // Rounds: anything, then both mappings, then both owners' checks together.
    expect(partial.asked).to.deep.equal(['update */*/finalizers *', 'update apps/deployments/finalizers team-a/d', 'update nodes/finalizers n1']);
    expect(MAPPER.asked).to.deep.equal(['apps/v1 Deployment', '/v1 Node']);
    const both = new TableAuthorizer(['update apps/deployments/finalizers team-a/d', 'update nodes/finalizers n1']);
    expect(await admitFor(both)(create(refs))).to.deep.equal({ allowed: true });
    const anything = new TableAuthorizer(['update */*/finalizers *']);
    expect(await admitFor(anything)(create(refs))).to.deep.equal({ allowed: true });
    expect(anything.asked).to.deep.equal(['update */*/finalizers *']);
    // Already blocking before (same uid): nothing new to check.
    const none = new TableAuthorizer(['delete configmaps team-a/cm']);
    expect(await admitFor(none)(update([...refs, owner('Deployment', 'other')], refs))).to.deep.equal({ allowed: true });
    expect(none.asked).to.deep.equal(['delete configmaps team-a/cm']);
  });

  it('refuses a blocking reference to a kind the API server does not serve, in the in-tree words', async function () {
    const decision = await admitFor(new TableAuthorizer([]))(create([owner('Widget', 'w', { apiVersion: 'example.com/v1', blockOwnerDeletion: true })]));
    expect(decision).to.include({
      allowed: false,
      message: `configmaps "cm" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Widget: no matches for kind "Widget" in version "example.com/v1"`,
    });
  });

  it('takes no configuration', function () {
    const suite = compileSuite({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'gc', uid: 'u' },
      spec: {
        webhooks: [{ name: 'o', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], handler: { name: 'OwnerReferencesPermissionEnforcement', config: { x: 1 } } }],
      },
    });
    expect(suite.errors).to.deep.equal([{ field: 'spec.webhooks[0].handler.config.x', message: 'OwnerReferencesPermissionEnforcement takes no configuration' }]);
  });
});
