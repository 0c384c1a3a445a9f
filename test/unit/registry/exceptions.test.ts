/**
 * AdmissionExceptions on the request path (src/registry/exceptions.ts, compile.ts, the Verdict of
 * policy/engine/rules.ts): what a suite's CEL validations let through for an exception, and what
 * they never do (another namespace, after expiry, a suite that does not accept them, a validation
 * it does not name, a request it does not match); and the apply-time checks (api/exceptions.ts).
 * Owns no API server: the e2e test test/e2e/exceptions.test.ts proves the same through one.
 */
import { expect } from 'chai';
import { compileSuite } from '../../../src/registry/compile.ts';
import { ExceptionStore } from '../../../src/registry/exceptions.ts';
import { validateException, type AdmissionException, type ExceptionSpec } from '../../../src/api/exceptions.ts';
import type { ClusterView } from '../../../src/handlers/handler.ts';
import type { AdmissionSuite, SuiteSpec } from '../../../src/api/types.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';

const NOW = Date.parse('2026-11-29T10:00:00Z');
const view: ClusterView = {
  namespace: (name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { tier: name === 'shop' ? 'apps' : 'other' } } }),
  limitRanges: () => [],
  list: () => [],
};

function suiteOf(spec: Partial<SuiteSpec> = {}): AdmissionSuite {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'labels', uid: 'u', generation: 1 },
    spec: {
      exceptions: { allowed: true },
      ...spec,
      webhooks: [
        {
          name: 'team',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          validations: [
            { expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'needs a team label' },
            { expression: "!has(object.data) || !('password' in object.data)", message: 'no passwords' },
          ],
        },
      ],
    },
  };
}

function exceptionOf(namespace: string, spec: Partial<ExceptionSpec> = {}, name = 'legacy'): AdmissionException {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionException',
    metadata: { name, namespace, uid: name },
    spec: { suite: 'labels', webhook: 'team', reason: 'legacy config, migrating by Friday', expires: '2026-11-29T10:00:20Z', ...spec },
  };
}

function served(suite: AdmissionSuite, exceptions: AdmissionException[], clock = () => NOW) {
  const store = new ExceptionStore();
  for (const exception of exceptions) store.set(exception);
  const compiled = compileSuite(suite, { view, exceptions: store, clock, operatorNamespace: 'portcullis-system' });
  expect(compiled.errors).to.deep.equal([]);
  const admit = (namespace: string, options: { name?: string; labels?: Record<string, string>; data?: Record<string, string>; username?: string } = {}) =>
    compiled.webhooks.get('team')!.admit({
      ...requestFor('configmaps', 'CREATE', { namespace, name: options.name ?? 'cm', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: options.name ?? 'cm', namespace, labels: options.labels }, data: options.data } }),
      userInfo: { username: options.username ?? 'alice', groups: ['system:authenticated'] },
    }) as Decision;
  return { admit, store };
}

describe('registry: AdmissionExceptions on the request path', function () {
  it('admits what an exception covers, in its namespace only, with a warning and an audit annotation naming it', function () {
    const { admit } = served(suiteOf(), [exceptionOf('shop')]);
    const decision = admit('shop');
    expect(decision.allowed).to.equal(true);
    expect(decision.warnings).to.deep.equal(['admitted by exception shop/legacy (expires 2026-11-29T10:00:20Z): legacy config, migrating by Friday']);
    expect(decision.auditAnnotations).to.deep.equal({ exception: 'shop/legacy' });
    expect(admit('other')).to.deep.include({ allowed: false, message: 'needs a team label' });
  });

  it('stops applying at `expires`, to the second, with nothing but the clock changing', function () {
    let now = NOW + 19_999;
    const { admit } = served(suiteOf(), [exceptionOf('shop')], () => now);
    expect(admit('shop').allowed).to.equal(true);
    now = NOW + 20_000;
    expect(admit('shop')).to.deep.include({ allowed: false, message: 'needs a team label' });
  });

  it('applies to no suite that does not accept exceptions, or not from that namespace', function () {
    expect(served(suiteOf({ exceptions: undefined }), [exceptionOf('shop')]).admit('shop').allowed).to.equal(false);
    expect(served(suiteOf({ exceptions: { allowed: false } }), [exceptionOf('shop')]).admit('shop').allowed).to.equal(false);
    expect(served(suiteOf({ exceptions: { allowed: true, namespaces: { matchLabels: { tier: 'other' } } } }), [exceptionOf('shop')]).admit('shop').allowed).to.equal(false);
    expect(served(suiteOf({ exceptions: { allowed: true, namespaces: { matchLabels: { tier: 'apps' } } } }), [exceptionOf('shop')]).admit('shop').allowed).to.equal(true);
  });

  it('never applies in a protected namespace', function () {
    expect(served(suiteOf(), [exceptionOf('kube-system')]).admit('kube-system').allowed).to.equal(false);
    expect(served(suiteOf(), [exceptionOf('portcullis-system')]).admit('portcullis-system').allowed).to.equal(false);
  });

  it('lets only the validations it names fail; the others still deny', function () {
    const { admit } = served(suiteOf(), [exceptionOf('shop', { validations: [0] })]);
    expect(admit('shop').allowed).to.equal(true);
    expect(admit('shop', { data: { password: 'x' } })).to.deep.include({ allowed: false, message: 'no passwords' });
  });

  it('lets through only what its match selects: names, kinds, labels, users, groups', function () {
    const byName = served(suiteOf(), [exceptionOf('shop', { match: { names: ['legacy-cm'] } })]);
    expect(byName.admit('shop', { name: 'legacy-cm' }).allowed).to.equal(true);
    expect(byName.admit('shop', { name: 'other' }).allowed).to.equal(false);
    expect(served(suiteOf(), [exceptionOf('shop', { match: { kinds: ['Secret'] } })]).admit('shop').allowed).to.equal(false);
    const byLabel = served(suiteOf(), [exceptionOf('shop', { match: { objectSelector: { matchLabels: { legacy: 'true' } } } })]);
    expect(byLabel.admit('shop', { labels: { legacy: 'true' } }).allowed).to.equal(true);
    expect(byLabel.admit('shop', { labels: { legacy: 'false' } }).allowed).to.equal(false);
    const byUser = served(suiteOf(), [exceptionOf('shop', { match: { users: ['bob'] } })]);
    expect(byUser.admit('shop', { username: 'bob' }).allowed).to.equal(true);
    expect(byUser.admit('shop', { username: 'alice' }).allowed).to.equal(false);
    expect(served(suiteOf(), [exceptionOf('shop', { match: { groups: ['system:authenticated'] } })]).admit('shop').allowed).to.equal(true);
  });

  it('follows the store: an exception deleted or renamed to another webhook applies no more', function () {
    const { admit, store } = served(suiteOf(), [exceptionOf('shop')]);
    store.set(exceptionOf('shop', { webhook: 'other' }));
    expect(admit('shop').allowed).to.equal(false);
    store.set(exceptionOf('shop'));
    expect(admit('shop').allowed).to.equal(true);
    store.remove('shop', 'legacy');
    expect(admit('shop').allowed).to.equal(false);
  });

  it('adds nothing to a request the rules admit on their own', function () {
    expect(served(suiteOf(), [exceptionOf('shop')]).admit('shop', { labels: { team: 'a' } })).to.deep.equal({ allowed: true });
  });
});

describe('api: an AdmissionException on apply', function () {
  const context = (suite: AdmissionSuite | undefined) => ({ protectedNamespaces: ['portcullis-system', 'kube-system', 'kube-node-lease'], suite, namespaceLabels: { tier: 'apps' } });
  const fields = (exception: AdmissionException, suite?: AdmissionSuite | null) => validateException(exception, context(suite === null ? undefined : (suite ?? suiteOf()))).map((e) => e.field);

  it('accepts a well-formed exception to a suite that takes it', function () {
    expect(validateException(exceptionOf('shop'), context(suiteOf()))).to.deep.equal([]);
  });

  it('refuses a protected namespace, a protected or missing suite, a webhook or validation it does not have', function () {
    expect(fields(exceptionOf('kube-system'))).to.deep.equal(['metadata.namespace']);
    expect(fields(exceptionOf('shop'), suiteOf({ exceptions: undefined }))).to.deep.equal(['spec.suite']);
    expect(fields(exceptionOf('shop'), null)).to.deep.equal(['spec.suite']);
    expect(fields(exceptionOf('shop', { webhook: 'nope' }))).to.deep.equal(['spec.webhook']);
    expect(fields(exceptionOf('shop', { validations: [2] }))).to.deep.equal(['spec.validations[0]']);
  });

  it('refuses one without a reason or an RFC 3339 expiry', function () {
    expect(fields(exceptionOf('shop', { reason: ' ' }))).to.deep.equal(['spec.reason']);
    expect(fields(exceptionOf('shop', { expires: 'next friday' }))).to.deep.equal(['spec.expires']);
    expect(fields(exceptionOf('shop', { expires: undefined as unknown as string }))).to.deep.equal(['spec.expires']);
  });
});
