/**
 * ImagePolicyWebhook against a real ImageReview backend on loopback HTTPS
 * (test/support/image-review-backend.ts; the same backend behind the in-tree plugin is the e2e's):
 * the review upstream builds (containers then init containers, the image-policy annotations, the
 * namespace), the backend's verdict in upstream's words, caching by allowTTL/denyTTL, defaultAllow
 * when the backend fails, the break-glass annotation passed to the backend, and a backend that
 * hangs answered within timeoutSeconds. Where it differs from upstream on purpose: only backends the
 * admin allows (handlers/backends.ts), and a failing backend answered with a fixed message.
 */
import { expect } from 'chai';
import type { AdmissionSuite, WebhookType } from '../../../src/api/types.ts';
import type { AdmissionRequest, Decision } from '../../../src/api/admission-review.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { BACKEND_FAILED, FAILED_OPEN_ANNOTATION } from '../../../src/handlers/image-policy-webhook.ts';
import { failureDetail, followedFailurePolicy } from '../../../src/api/admission-review.ts';
import { handlerBackends, setHandlerBackends } from '../../../src/handlers/backends.ts';
import { requestFor, pod } from '../../fixtures/reviews.ts';
import { BREAK_GLASS, startImageReviewBackend, type ImageReviewBackend } from '../../support/image-review-backend.ts';

function compiled(config: Record<string, unknown>, type: WebhookType = 'Validating') {
  const suite: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'images', uid: 'u' },
    spec: { webhooks: [{ name: 'images', type, rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'pods/ephemeralcontainers'] }], handler: { name: 'ImagePolicyWebhook', config } }] },
  };
  return compileSuite(suite, {});
}

function admitFor(config: Record<string, unknown>, type: WebhookType = 'Validating'): (request: AdmissionRequest) => Promise<Decision> {
  const suite = compiled(config, type);
  expect(suite.errors).to.deep.equal([]);
  const admit = suite.webhooks.get('images')!.admit;
  return async (request) => admit(request);
}

const create = (images: string[], annotations: Record<string, string> = {}, initImages: string[] = []) =>
  requestFor('pods', 'CREATE', {
    object: pod(
      { containers: images.map((image, i) => ({ name: `c${i}`, image })), ...(initImages.length ? { initContainers: initImages.map((image, i) => ({ name: `i${i}`, image })) } : {}) },
      Object.keys(annotations).length ? { annotations } : {},
    ),
  });

describe('handlers: ImagePolicyWebhook', function () {
  let backend: ImageReviewBackend;
  let config: Record<string, unknown>;
  let before: string[];
  beforeEach(async () => {
    backend = await startImageReviewBackend();
    config = { url: backend.url, caBundle: backend.caPem };
    before = handlerBackends();
    // As the admin allows it (--handler-backends): its origin and the paths below.
    setHandlerBackends([new URL(backend.url).origin]);
  });
  afterEach(async () => {
    setHandlerBackends(before);
    await backend.close();
  });

  it("sends upstream's review (containers, then init containers; the image-policy annotations alone; the namespace) and admits what the backend allows", async function () {
    const annotations = { 'team.image-policy.k8s.io/ticket': 'T-1', 'example.com/other': 'x', [BREAK_GLASS]: 'false' };
    expect(await admitFor(config)(create(['registry.k8s.io/pause:3.10'], annotations, ['busybox']))).to.deep.equal({ allowed: true });
    expect(backend.received).to.deep.equal([{ containers: [{ image: 'registry.k8s.io/pause:3.10' }, { image: 'busybox' }], annotations: { [BREAK_GLASS]: 'false', 'team.image-policy.k8s.io/ticket': 'T-1' }, namespace: 'team-a' }]);
  });

  it("refuses what the backend denies, in upstream's words, with and without its reason", async function () {
    const admit = admitFor(config);
    expect(await admit(create(['ok', 'acme/denied:1']))).to.deep.equal({
      allowed: false,
      code: 403,
      reason: 'Forbidden',
      message: 'pods "app" is forbidden: image policy webhook backend denied one or more images: images not allowed: acme/denied:1',
    });
    expect((await admit(create(['silent']))).message).to.equal('pods "app" is forbidden: one or more images rejected by webhook backend');
  });

  it('the break-glass annotation goes to the backend, whose allowance and audit annotation are answered', async function () {
    expect(await admitFor(config)(create(['acme/denied:1'], { [BREAK_GLASS]: 'true' }))).to.deep.equal({ allowed: true, auditAnnotations: { 'break-glass': 'true' } });
  });

  it('keeps answers by review for allowTTL and denyTTL: the same Pod again is not sent; a TTL of -1 keeps nothing', async function () {
    const admit = admitFor(config);
    for (let i = 0; i < 3; i++) await admit(create(['ok']));
    for (let i = 0; i < 2; i++) await admit(create(['acme/denied']));
    await admit(create(['ok'], {}, ['other']));
    expect(backend.received).to.have.length(3);
    const uncached = admitFor({ ...config, allowTTL: -1, denyTTL: -1 });
    backend.received.length = 0;
    for (let i = 0; i < 2; i++) await uncached(create(['ok']));
    for (let i = 0; i < 2; i++) await uncached(create(['acme/denied']));
    expect(backend.received).to.have.length(4);
  });

  it("an unreachable backend: refused with a fixed message (why is the log's: the decision is marked failed, with Go's words beside it), or with defaultAllow admitted, marked failed-open (the Mutating side annotates the Pod)", async function () {
    const url = backend.url;
    await backend.close();
    const request = create(['ok']);
    const refused = await admitFor(config)(request);
    expect(refused.message).to.equal(`pods "app" is forbidden: ${BACKEND_FAILED}`);
    expect(followedFailurePolicy(refused)).to.equal(true);
    expect(failureDetail(refused)).to.equal(`Post "${url}": dial tcp 127.0.0.1:${new URL(url).port}: connect: connection refused`);
    const failedOpen = await admitFor({ ...config, defaultAllow: true })(request);
    expect(failedOpen).to.deep.equal({ allowed: true, auditAnnotations: { 'failed-open': 'true' } });
    expect(failureDetail(failedOpen)).to.contain('connection refused');
    expect(await admitFor({ ...config, defaultAllow: true }, 'Mutating')(request)).to.deep.equal({
      allowed: true,
      auditAnnotations: { 'failed-open': 'true' },
      patch: [{ op: 'add', path: '/metadata/annotations', value: { [FAILED_OPEN_ANNOTATION]: 'true' } }],
    });
  });

  it('a failing backend (500) is tried again with backoff, then refused; a hanging one is answered at timeoutSeconds', async function () {
    backend.mode = 'fail';
    const refused = await admitFor({ ...config, retryBackoff: 10 })(create(['ok']));
    expect(refused.message).to.equal(`pods "app" is forbidden: ${BACKEND_FAILED}`);
    expect(failureDetail(refused)).to.equal('an error on the server ("backend failing on purpose") has prevented the request from succeeding');
    expect(backend.received).to.have.length(5);
    backend.mode = 'hang';
    // The backend never answers: an answer at all is the timeout's (its time is the machine's, not asserted).
    const answer = await admitFor({ ...config, timeoutSeconds: 1, defaultAllow: true })(create(['ok']));
    expect(answer).to.deep.equal({ allowed: true, auditAnnotations: { 'failed-open': 'true' } });
  });

  it('an update of ephemeral containers is reviewed for those alone; other subresources are not sent', async function () {
    const object = pod({ containers: [{ name: 'c', image: 'ok' }], ephemeralContainers: [{ name: 'debug', image: 'acme/denied-debugger' }] });
    const admit = admitFor(config);
    expect((await admit(requestFor('pods', 'UPDATE', { subResource: 'ephemeralcontainers', object, oldObject: object }))).allowed).to.equal(false);
    expect(await admit(requestFor('pods', 'UPDATE', { subResource: 'status', object, oldObject: object }))).to.deep.equal({ allowed: true });
    expect(backend.received).to.deep.equal([{ containers: [{ image: 'acme/denied-debugger' }], namespace: 'team-a' }]);
  });

  it('refuses on apply a config the plugin would not start with, naming the field', function () {
    const errors = compiled({ url: 'http://backend.example', allowTTL: 3600, retryBackoff: 'fast', timeoutSeconds: 60, color: 'blue' }).errors.map((e) => e.field);
    expect(errors).to.include.members([
      'spec.webhooks[0].handler.config.url',
      'spec.webhooks[0].handler.config.allowTTL',
      'spec.webhooks[0].handler.config.retryBackoff',
      'spec.webhooks[0].handler.config.timeoutSeconds',
      'spec.webhooks[0].handler.config.color',
    ]);
  });

  it('refuses on apply a url under no backend the admin allows, naming the list; with none allowed, every url', function () {
    const origin = new URL(backend.url).origin;
    setHandlerBackends([`${origin}/review`]);
    const refusal = (url: string) => compiled({ url }).errors.find((e) => e.field === 'spec.webhooks[0].handler.config.url')?.message;
    expect(refusal(`${origin}/review`)).to.equal(undefined);
    expect(refusal(`${origin}/review/v1?x=1`)).to.equal(undefined);
    for (const url of [`${origin}/reviewer`, `${origin}/`, 'https://127.0.0.2:6443/review', 'https://kubernetes.default.svc/review', `https://localhost:${new URL(origin).port}/review`]) {
      expect(refusal(url), url).to.equal(`must be under one of the backends the cluster admin allows (--handler-backends): ${origin}/review`);
    }
    setHandlerBackends([]);
    expect(refusal(backend.url)).to.equal('no handler backend is allowed: the cluster admin allows backends with --handler-backends (chart: handlerBackends)');
  });

  it('never calls a url off the list, even with a config parsed while it was on', async function () {
    const admit = admitFor(config);
    setHandlerBackends(['https://elsewhere.example']);
    const refused = await admit(create(['ok']));
    expect(refused.message).to.equal(`pods "app" is forbidden: ${BACKEND_FAILED}`);
    expect(backend.received).to.deep.equal([]);
  });
});
