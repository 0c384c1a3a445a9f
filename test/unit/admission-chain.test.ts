/**
 * The per-request chain (src/admission/chain.ts) as the API server meets it over verified TLS:
 * the operator's own suite validation answered through the same chain as a suite's webhook, and
 * the order of its steps (a review is decoded before its webhook is looked up).
 */
import { expect } from 'chai';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import { REVIEW_ERRORS } from '../../src/admission/errors.ts';
import { LARGE_BODY } from '../../src/admission/threads/offload.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { guardsSuite } from '../fixtures/suites.ts';
import { startTestEndpoint, type TestEndpoint } from '../support/endpoint.ts';

function suiteReview(suite: AdmissionSuite, uid = 'a1b2c3') {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'admission.portcullis.dev', version: 'v1alpha1', kind: 'AdmissionSuite' },
      resource: { group: 'admission.portcullis.dev', version: 'v1alpha1', resource: 'admissionsuites' },
      name: suite.metadata.name,
      operation: 'CREATE',
      userInfo: { username: 'admin' },
      object: suite,
    },
  };
}

function broken(): AdmissionSuite {
  const suite = guardsSuite();
  suite.spec.webhooks[0]!.validations = [{ expression: 'object.spec.replicas <=', message: 'x' }];
  return suite;
}

describe('admission: the per-request chain', function () {
  let endpoint: TestEndpoint;

  before(async function () {
    const registry = new SuiteRegistry();
    registry.sync(guardsSuite());
    endpoint = await startTestEndpoint(registry, 'guards');
  });

  after(() => endpoint.close());

  it('answers suite validation in the AdmissionReview shape: a valid suite allowed, a broken one refused naming the field', async function () {
    const ok = await endpoint.post(SUITE_VALIDATION.path, JSON.stringify(suiteReview(guardsSuite(), 'ok-1')));
    expect(ok.status).to.equal(200);
    expect(ok.body).to.deep.equal({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'ok-1', allowed: true } });
    const refused = await endpoint.post(SUITE_VALIDATION.path, JSON.stringify(suiteReview(broken(), 'bad-1')));
    expect(refused.body.response).to.include({ uid: 'bad-1', allowed: false });
    expect(refused.body.response.status).to.include({ code: 422, reason: 'Invalid' });
    expect(refused.body.response.status.message).to.match(/^AdmissionSuite "guards" is invalid: spec\.webhooks\[0\]\.validations\[0\]\.expression: /);
  });

  it("decides a large suite-validation body here (the review worker holds only the suites' webhooks)", async function () {
    const suite = broken();
    suite.metadata.annotations = { padding: 'x'.repeat(LARGE_BODY) };
    const reply = await endpoint.post(SUITE_VALIDATION.path, JSON.stringify(suiteReview(suite, 'large-1')));
    expect(reply.status).to.equal(200);
    expect(reply.body.response).to.include({ uid: 'large-1', allowed: false });
  });

  it('decodes before it routes: a body that is no review is refused as such, whatever webhook it names', async function () {
    const reply = await endpoint.post('/admit/guards/nope', '{"kind":"Pod"}');
    expect(reply.status).to.equal(400);
    expect(reply.body.response.status.reason).to.equal(REVIEW_ERRORS.NOT_A_REVIEW.code);
  });
});
