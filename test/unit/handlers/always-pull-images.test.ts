/** Built-in handlers, with the cases of the upstream plugins' own tests. */
import { expect } from 'chai';
import { alwaysPullImages } from '../../../src/handlers/always-pull-images.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';
import { fixtures, requestOf } from '../../fixtures/reviews.ts';

function podUpdate(oldImages: string[], newImages: string[]): AdmissionRequest {
  const request = requestOf(fixtures.podCreate());
  const pod = (images: string[]) => ({ spec: { containers: images.map((image, i) => ({ name: `c${i}`, image, imagePullPolicy: 'IfNotPresent' })) } });
  return { ...request, operation: 'UPDATE', object: pod(newImages), oldObject: pod(oldImages) };
}

describe('handlers: AlwaysPullImages', function () {
  it('sets Always on init, regular and ephemeral containers of a new Pod', function () {
    const request = requestOf(fixtures.podCreate());
    (request.object as any).spec.ephemeralContainers = [{ name: 'debug', image: 'busybox' }];
    expect(alwaysPullImages.mutate!(request, {}, EMPTY_VIEW).patch).to.deep.equal([
      { op: 'replace', path: '/spec/initContainers/0/imagePullPolicy', value: 'Always' },
      { op: 'add', path: '/spec/containers/0/imagePullPolicy', value: 'Always' },
      { op: 'add', path: '/spec/ephemeralContainers/0/imagePullPolicy', value: 'Always' },
    ]);
  });

  it('leaves an UPDATE that brings no new image alone, and mutates one that does', function () {
    expect(alwaysPullImages.mutate!(podUpdate(['a:1'], ['a:1']), {}, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(alwaysPullImages.mutate!(podUpdate(['a:1'], ['a:2']), {}, EMPTY_VIEW).patch).to.have.length(1);
  });

  it('ignores resources other than pods and DELETE with no object', function () {
    const request = requestOf(fixtures.deploymentCreate());
    expect(alwaysPullImages.mutate!(request, {}, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    const del = { ...requestOf(fixtures.podCreate()), operation: 'DELETE' as const, object: null };
    expect(alwaysPullImages.validate!(del, {}, EMPTY_VIEW)).to.deep.equal({ allowed: true });
  });

  // upstream TestValidate: one Forbidden error per container not pulling always; the API server answers with the first
  it('the validating side refuses a container that does not pull always, in the in-tree words (403), naming the first', function () {
    const request = requestOf(fixtures.podCreate());
    const name = (request.object as any).metadata.name;
    (request.object as any).spec.initContainers = [{ name: 'init1', image: 'image' }];
    (request.object as any).spec.containers = [
      { name: 'ctr1', image: 'image', imagePullPolicy: 'Never' },
      { name: 'ctr2', image: 'image', imagePullPolicy: 'Always' },
    ];
    const decision = alwaysPullImages.validate!(request, {}, EMPTY_VIEW);
    expect(decision).to.include({ allowed: false, code: 403, reason: 'Forbidden' });
    expect(decision.message).to.equal(`pods "${name}" is forbidden: spec.initContainers[0].imagePullPolicy: Unsupported value: "": supported values: "Always"`);
    (request.object as any).spec.initContainers = [];
    expect(alwaysPullImages.validate!(request, {}, EMPTY_VIEW).message).to.equal(`pods "${name}" is forbidden: spec.containers[0].imagePullPolicy: Unsupported value: "Never": supported values: "Always"`);
  });

  // upstream TestOtherResources: subresources are left alone (pods/ephemeralcontainers too)
  it('leaves every subresource alone, ephemeralcontainers included', function () {
    const request = { ...podUpdate(['a:1'], ['a:1']), subResource: 'ephemeralcontainers' };
    (request.object as any).spec.ephemeralContainers = [{ name: 'debug', image: 'busybox', imagePullPolicy: 'Never' }];
    expect(alwaysPullImages.mutate!(request, {}, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(alwaysPullImages.validate!(request, {}, EMPTY_VIEW)).to.deep.equal({ allowed: true });
  });
});
