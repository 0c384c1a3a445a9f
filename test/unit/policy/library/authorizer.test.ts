/**
 * CEL's `authorizer` (apiserver pkg/cel/library/authz.go): checks for the request's user, a
 * service account, or the request's own resource, answered by our Authorizer interface (a fake
 * here that records its calls), asked once per request and cached briefly across requests.
 */
import { expect } from 'chai';
import { startTestEndpoint, type TestEndpoint } from '../../../support/endpoint.ts';
import http from 'node:http';
import { SuiteRegistry } from '../../../../src/registry/registry.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import { CompileError } from '../../../../src/policy/celjs/program.ts';
import { COST_LIMIT_MESSAGE } from '../../../../src/policy/cost/meter.ts';
import { CachingAuthorizer, SubjectAccessReviewer, subjectAccessReview } from '../../../../src/apiserver/authorizer.ts';
import { compileSuite } from '../../../../src/registry/compile.ts';
import type { AuthorizationAttributes, AuthorizationDecision, Authorizer } from '../../../../src/api/authorization.ts';
import type { FailurePolicy, WebhookSpec } from '../../../../src/api/types.ts';
import type { AdmissionRequest, Decision } from '../../../../src/api/admission-review.ts';
import { fixtures, requestOf } from '../../../fixtures/reviews.ts';

const rule = [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];
const validating = (spec: Partial<WebhookSpec>): WebhookSpec => ({ name: 'w', type: 'Validating', rules: rule, ...spec });

/** A Deployment CREATE of `web` in `team-a` by `admin` (groups system:authenticated, system:masters). */
const request = (): AdmissionRequest => requestOf(fixtures.deploymentCreate());

const ALLOW: AuthorizationDecision = { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "x"', evaluationError: '' };
const DENY: AuthorizationDecision = { allowed: false, reason: '', evaluationError: '' };

/** An in-memory Authorizer: answers with `answer`, and records every call. */
class FakeAuthorizer implements Authorizer {
  readonly calls: AuthorizationAttributes[] = [];
  private readonly answer: (attributes: AuthorizationAttributes) => AuthorizationDecision | Error;
  constructor(answer: (attributes: AuthorizationAttributes) => AuthorizationDecision | Error = () => ALLOW) {
    this.answer = answer;
  }
  async check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
    this.calls.push(attributes);
    await new Promise((resolve) => setImmediate(resolve));
    const answer = this.answer(attributes);
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

const ADMIN = { username: 'admin', uid: '014fbff9a07c', groups: ['system:authenticated', 'system:masters'] };

function admitWith(authorizer: Authorizer | undefined, spec: Partial<WebhookSpec>, failurePolicy: FailurePolicy = 'Fail') {
  return compileRules('s', validating(spec), 'spec.webhooks[0]', failurePolicy, authorizer);
}

/** The decision of one validation `expression` (with `message`) for `request()`. */
async function decide(authorizer: Authorizer | undefined, expression: string, failurePolicy: FailurePolicy = 'Fail'): Promise<Decision> {
  return admitWith(authorizer, { validations: [{ expression, message: 'denied' }] }, failurePolicy)(request());
}

describe('policy library: authorizer', function () {
  it('checks a resource for the request user and exposes allowed(), reason(), errored() and error()', async function () {
    const fake = new FakeAuthorizer((a) => (a.resource?.verb === 'create' ? ALLOW : DENY));
    const check = "authorizer.group('apps').resource('deployments').subresource('scale').namespace('team-b').name('api').check";
    expect(await decide(fake, `${check}('create').allowed()`)).to.deep.equal({ allowed: true });
    expect(fake.calls).to.deep.equal([{ user: ADMIN, resource: { verb: 'create', group: 'apps', resource: 'deployments', subresource: 'scale', namespace: 'team-b', name: 'api' } }]);
    expect(await decide(fake, `${check}('delete').allowed()`)).to.include({ allowed: false, message: 'denied' });
    expect(await decide(fake, `${check}('create').reason() == 'RBAC: allowed by ClusterRoleBinding "x"'`)).to.deep.equal({ allowed: true });
    expect(await decide(fake, `!${check}('create').errored() && ${check}('create').error() == ''`)).to.deep.equal({ allowed: true });

    const erring = new FakeAuthorizer(() => ({ allowed: false, reason: 'no opinion', evaluationError: 'clusterrole.rbac.authorization.k8s.io "gone" not found' }));
    // (a variable: three checks in one expression would pass its cost limit, as in the API server)
    const admit = admitWith(erring, {
      variables: [{ name: 'd', expression: "authorizer.group('').resource('pods').check('get')" }],
      validations: [{ expression: `variables.d.errored() && !variables.d.allowed() && variables.d.error() == 'clusterrole.rbac.authorization.k8s.io "gone" not found'` }],
    });
    expect(await admit(request())).to.deep.equal({ allowed: true });
    expect(erring.calls).to.have.length(1);
  });

  it('checks a non-resource path, and refuses an empty path or resource as the API server does', async function () {
    const fake = new FakeAuthorizer();
    expect(await decide(fake, "authorizer.path('/healthz').check('get').allowed()")).to.deep.equal({ allowed: true });
    expect(fake.calls).to.deep.equal([{ user: ADMIN, nonResource: { verb: 'get', path: '/healthz' } }]);
    expect((await decide(fake, "authorizer.path('  ').check('get').allowed()")).message).to.equal("expression 'authorizer.path('  ').check('get').allowed()' resulted in error: path must not be empty");
    expect((await decide(fake, "authorizer.group('apps').resource('').check('get').allowed()")).message).to.contain('resulted in error: resource must not be empty');
    expect(fake.calls).to.have.length(1);
  });

  it('passes field and label selectors through as raw selectors', async function () {
    const fake = new FakeAuthorizer();
    await decide(fake, "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1').labelSelector('app=web').check('list').allowed()");
    expect(fake.calls[0]!.resource).to.deep.equal({ verb: 'list', group: '', resource: 'pods', subresource: '', namespace: '', name: '', fieldSelector: 'spec.nodeName=n1', labelSelector: 'app=web' });
    expect(subjectAccessReview(fake.calls[0]!).spec.resourceAttributes).to.deep.include({ version: '*', fieldSelector: { rawSelector: 'spec.nodeName=n1' }, labelSelector: { rawSelector: 'app=web' } });
  });

  it('authorizer.requestResource is the request’s own resource, subresource, namespace and name, for the request’s user', async function () {
    const fake = new FakeAuthorizer();
    const scale: AdmissionRequest = {
      ...request(),
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      requestResource: { group: 'extensions', version: 'v1beta1', resource: 'deployments' },
      subResource: 'scale',
      requestSubResource: 'scale',
    };
    const admit = admitWith(fake, { validations: [{ expression: "authorizer.requestResource.check('update').allowed()" }] });
    expect(await admit(scale)).to.deep.equal({ allowed: true });
    expect(fake.calls).to.deep.equal([{ user: ADMIN, resource: { verb: 'update', group: 'extensions', resource: 'deployments', subresource: 'scale', namespace: 'team-a', name: 'web' } }]);
  });

  it('authorizer.serviceAccount(ns, name) checks for system:serviceaccount:<ns>:<name> with its groups', async function () {
    const fake = new FakeAuthorizer();
    expect(await decide(fake, "authorizer.serviceAccount('team-a', 'deployer').group('').resource('secrets').namespace('team-a').check('get').allowed()")).to.deep.equal({ allowed: true });
    expect(fake.calls[0]!.user).to.deep.equal({ username: 'system:serviceaccount:team-a:deployer', groups: ['system:serviceaccounts', 'system:serviceaccounts:team-a'] });
    expect(subjectAccessReview(fake.calls[0]!).spec).to.deep.include({ user: 'system:serviceaccount:team-a:deployer', groups: ['system:serviceaccounts', 'system:serviceaccounts:team-a'] });
    expect((await decide(fake, "authorizer.serviceAccount('team-a', 'Not_Valid').path('/x').check('get').allowed()")).message).to.contain('resulted in error: Invalid service account name');
    expect((await decide(fake, "authorizer.serviceAccount('team.a', 'ok').path('/x').check('get').allowed()")).message).to.contain('resulted in error: Invalid service account namespace');
    expect(fake.calls).to.have.length(1);
  });

  it('asks the same check once per request, however often the expressions ask it', async function () {
    const fake = new FakeAuthorizer();
    const check = "authorizer.group('').resource('configmaps').namespace('team-a').check('create')";
    const admit = admitWith(fake, {
      variables: [{ name: 'can', expression: `${check}.allowed()` }],
      validations: [{ expression: `${check}.allowed() && ${check}.reason() != ''` }, { expression: `variables.can && ${check}.allowed()` }],
      auditAnnotations: [{ key: 'why', valueExpression: `${check}.reason()` }],
    });
    expect(await admit(request())).to.deep.equal({ allowed: true, auditAnnotations: { why: ALLOW.reason } });
    expect(fake.calls).to.have.length(1);
    // different checks of one evaluation are asked together
    const two = new FakeAuthorizer();
    const both = admitWith(two, { validations: [{ expression: "authorizer.path('/a').check('get').allowed()" }, { expression: "authorizer.path('/b').check('get').allowed()" }] });
    const answer = both(request());
    expect(answer).to.be.instanceOf(Promise);
    await new Promise((resolve) => setImmediate(resolve));
    expect(two.calls.map((c) => c.nonResource?.path)).to.deep.equal(['/a', '/b']);
    expect(await answer).to.deep.equal({ allowed: true });
  });

  it('follows a check that depends on another check, round by round', async function () {
    const fake = new FakeAuthorizer((a) => (a.nonResource?.path === '/first' ? DENY : ALLOW));
    const expression = "authorizer.path('/first').check('get').allowed() ? false : authorizer.path('/second').check('get').allowed()";
    expect(await decide(fake, expression)).to.deep.equal({ allowed: true });
    expect(fake.calls.map((c) => c.nonResource?.path)).to.deep.equal(['/first', '/second']);
  });

  it('reuses answers across requests for the TTL, and asks again after it or after a failure', async function () {
    let now = 1_000;
    let fail = true;
    const fake = new FakeAuthorizer(() => (fail ? new Error('connection refused') : ALLOW));
    const cache = new CachingAuthorizer(fake, { ttlMs: 10_000, now: () => now });
    const admit = admitWith(cache, { validations: [{ expression: "authorizer.group('').resource('pods').check('get').allowed()" }] });
    expect((await admit(request())).allowed).to.equal(false);
    fail = false;
    expect(await admit(request())).to.deep.equal({ allowed: true }); // the failure was not kept
    expect(fake.calls).to.have.length(2);
    now += 9_000;
    expect(await admit(request())).to.deep.equal({ allowed: true });
    expect(fake.calls).to.have.length(2);
    now += 2_000;
    expect(await admit(request())).to.deep.equal({ allowed: true });
    expect(fake.calls).to.have.length(3);
    // equal checks of concurrent requests share one call; other users' are their own
    await Promise.all([admit(request()), admit(request()), admit({ ...request(), userInfo: { username: 'someone-else' } })].map(async (d) => d));
    now += 20_000;
    await Promise.all([admit(request()), admit(request())]);
    expect(fake.calls).to.have.length(5);
    expect(fake.calls[3]!.user.username).to.equal('someone-else');
  });

  it('keeps the cache bounded, dropping the oldest answers first', async function () {
    const fake = new FakeAuthorizer();
    const cache = new CachingAuthorizer(fake, { maxEntries: 2 });
    const ask = (path: string) => cache.check({ user: { username: 'u' }, nonResource: { verb: 'get', path } });
    await Promise.all([ask('/a'), ask('/b'), ask('/c')]);
    expect(cache.size).to.equal(2);
    await ask('/c');
    await ask('/a');
    expect(fake.calls.map((c) => c.nonResource!.path)).to.deep.equal(['/a', '/b', '/c', '/a']);
  });

  it('a check the Authorizer cannot make is answered as the API server answers it: not allowed, errored, with the error', async function () {
    const fake = new FakeAuthorizer(() => new Error('SubjectAccessReview failed: 403: forbidden'));
    const check = "authorizer.group('').resource('pods').check('get')";
    for (const failurePolicy of ['Fail', 'Ignore'] as const) {
      expect(await decide(fake, `${check}.allowed()`, failurePolicy), failurePolicy).to.deep.equal({ allowed: false, code: 422, reason: 'Invalid', message: 'denied' });
    }
    expect(await decide(fake, `${check}.errored() && ${check}.error() == 'authorization check failed: SubjectAccessReview failed: 403: forbidden'`)).to.deep.equal({ allowed: true });
  });

  it('a mutation condition may ask a check', async function () {
    const fake = new FakeAuthorizer((a) => (a.resource?.resource === 'secrets' ? DENY : ALLOW));
    const mutate = compileRules(
      's',
      {
        name: 'm',
        type: 'Mutating',
        rules: rule,
        mutations: [
          { condition: "authorizer.group('').resource('secrets').check('get').allowed()", patch: [{ op: 'add', path: '/metadata/labels/secret', value: 'yes' }] },
          { condition: "authorizer.requestResource.check('patch').allowed()", patch: [{ op: 'add', path: '/metadata/labels/patcher', value: 'yes' }] },
        ],
      },
      'p',
      'Fail',
      fake,
    );
    expect(await mutate(request())).to.deep.equal({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels/patcher', value: 'yes' }] });
    expect(fake.calls).to.have.length(2);
  });

  it('never calls the Authorizer for a webhook whose expressions do not use it, and answers synchronously', function () {
    const fake = new FakeAuthorizer();
    const admit = admitWith(fake, { variables: [{ name: 'r', expression: 'object.spec.replicas' }], validations: [{ expression: 'variables.r < 2', messageExpression: "'authorizer'" }] });
    const decision = admit(request());
    expect(decision).not.to.be.instanceOf(Promise);
    expect(decision).to.include({ allowed: false, message: 'authorizer' });
    const suite = compileSuite(
      { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 's', uid: 'u' }, spec: { webhooks: [validating({ validations: [{ expression: 'true' }] })] } },
      { authorizer: fake },
    );
    expect(suite.webhooks.get('w')!.admit(request())).to.deep.equal({ allowed: true });
    expect(fake.calls).to.have.length(0);
  });

  it('answers synchronously when the checks of this request are not reached', function () {
    const fake = new FakeAuthorizer();
    const admit = admitWith(fake, { validations: [{ expression: "object.spec.replicas > 100 && authorizer.path('/x').check('get').allowed()" }] });
    expect(admit(request())).to.include({ allowed: false, message: "failed expression: object.spec.replicas > 100 && authorizer.path('/x').check('get').allowed()" });
    expect(fake.calls).to.have.length(0);
  });

  it('without an Authorizer a check is an evaluation error', function () {
    const admit = compileRules('s', validating({ validations: [{ expression: "authorizer.path('/x').check('get').allowed()" }] }), 'p', 'Fail');
    expect(admit(request()).message).to.equal("expression 'authorizer.path('/x').check('get').allowed()' resulted in error: authorization checks are not available here");
  });

  it('is not declared for messageExpressions, and a variable that asks it fails there, as in VAP (the message falls back)', async function () {
    expect(() => admitWith(undefined, { validations: [{ expression: 'false', messageExpression: "authorizer.path('/x').check('get').reason()" }] }))
      .to.throw(CompileError)
      .with.property('field', 'spec.webhooks[0].validations[0].messageExpression');
    const fake = new FakeAuthorizer();
    const admit = admitWith(fake, {
      variables: [{ name: 'why', expression: "authorizer.path('/x').check('get').reason()" }],
      validations: [{ expression: "variables.why == ''", message: 'static', messageExpression: "'why: ' + variables.why" }],
    });
    expect(await admit(request())).to.include({ allowed: false, message: 'static' });
  });

  it('costs 350,000 a check: a third check passes the per-expression limit', async function () {
    const fake = new FakeAuthorizer();
    const check = (p: string) => `authorizer.path('${p}').check('get').allowed()`;
    expect(await decide(fake, `${check('/a')} && ${check('/b')}`)).to.deep.equal({ allowed: true });
    expect((await decide(fake, `${check('/a')} && ${check('/b')} && ${check('/c')}`)).message).to.contain(COST_LIMIT_MESSAGE);
  });

  it('type-checks as cel-go does', function () {
    expect(() => admitWith(undefined, { validations: [{ expression: "authorizer.group('apps').check('get').allowed()" }] })).to.throw(CompileError);
    expect(() => admitWith(undefined, { validations: [{ expression: "authorizer.path('/x').check('get')" }] })).to.throw(CompileError, 'must evaluate to bool');
    expect(() => admitWith(undefined, { validations: [{ expression: "authorizer.requestResource.name('x').check('get').errored()" }] })).not.to.throw();
  });
});

describe('kube: SubjectAccessReviewer', function () {
  let server: http.Server;
  let received: { path?: string; body?: unknown } = {};
  let reply: { status: number; body: unknown } = { status: 201, body: {} };
  let reviewer: SubjectAccessReviewer;

  before(async function () {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received = { path: req.url, body: JSON.parse(body) };
        res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const config = new KubeConfig();
    const port = (server.address() as { port: number }).port;
    config.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    reviewer = new SubjectAccessReviewer(config, 1_000);
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  it('creates a SubjectAccessReview for the user and resource, and maps its status', async function () {
    reply = { status: 201, body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', status: { allowed: false, reason: 'nope', evaluationError: 'broken role' } } };
    const decision = await reviewer.check({ user: ADMIN, resource: { verb: 'get', group: '', resource: 'pods', subresource: '', namespace: 'team-a', name: 'p' } });
    expect(decision).to.deep.equal({ allowed: false, reason: 'nope', evaluationError: 'broken role' });
    expect(received.path).to.equal('/apis/authorization.k8s.io/v1/subjectaccessreviews');
    expect(received.body).to.deep.equal({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'admin',
        uid: '014fbff9a07c',
        groups: ['system:authenticated', 'system:masters'],
        resourceAttributes: { verb: 'get', group: '', version: '*', resource: 'pods', subresource: '', namespace: 'team-a', name: 'p' },
      },
    });
  });

  it('rejects when the review cannot be made', async function () {
    reply = { status: 403, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'subjectaccessreviews.authorization.k8s.io is forbidden', reason: 'Forbidden', code: 403 } };
    const failure = await reviewer.check({ user: ADMIN, nonResource: { verb: 'get', path: '/x' } }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failure).to.match(/^SubjectAccessReview failed: 403: subjectaccessreviews.authorization.k8s.io is forbidden/);
  });
});

describe('admission server: a webhook that asks authorizer checks', function () {
  let endpoint: TestEndpoint;
  const fake = new FakeAuthorizer((a) => (a.user.username === 'admin' ? ALLOW : DENY));
  const post = async (path: string, body: string) => (await endpoint.post(path, body)).body;

  before(async function () {
    const registry = new SuiteRegistry({ authorizer: fake });
    registry.sync({
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: 'authz', uid: 'u', generation: 1 },
      spec: { webhooks: [validating({ validations: [{ expression: "authorizer.requestResource.check('update').allowed()", message: 'may not update' }] })] },
    });
    endpoint = await startTestEndpoint(registry, 'authz');
  });
  after(() => endpoint.close());

  it('answers once the checks are answered', async function () {
    const review = fixtures.deploymentCreate();
    const allowed = await post('/admit/authz/w', JSON.stringify(review));
    expect(allowed.response).to.deep.equal({ uid: review.request!.uid, allowed: true });
    const other = { ...review, request: { ...review.request!, userInfo: { username: 'jane', groups: ['system:authenticated'] } } };
    const denied = await post('/admit/authz/w', JSON.stringify(other));
    expect(denied.response).to.include({ uid: review.request!.uid, allowed: false });
    expect(denied.response.status.message).to.equal('may not update');
    expect(fake.calls.map((c) => c.user.username)).to.deep.equal(['admin', 'jane']);
  });
});
