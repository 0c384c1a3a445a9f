/**
 * The review's answer as text (src/admission/review-codec.ts encodeReviewText): a plain allow is written
 * from a template, every other decision through encodeReview and JSON.stringify. The API server
 * reads either; here both must be the same text, whatever the uid holds.
 */
import { expect } from 'chai';
import { denied, errored, type Decision } from '../../src/api/admission-review.ts';
import { encodeReview, encodeReviewText } from '../../src/admission/review-codec.ts';
import { seededRandom } from '../support/random.ts';

const VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'];

/** Decisions that are a plain allow, and some that are nearly one (each differs by one field). */
const DECISIONS: Record<string, Decision> = {
  'a plain allow': { allowed: true },
  'an allow with empty patch and warnings': { allowed: true, patch: [], warnings: [] },
  'an allow with a warning': { allowed: true, warnings: ['deprecated field'] },
  'an allow with a patch': { allowed: true, patch: [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }] },
  'an allow with audit annotations, even none': { allowed: true, auditAnnotations: {} },
  'an allow by failurePolicy Ignore': errored('boom', 'Ignore'),
  'a denial': denied('no', 'Forbidden'),
  'an error under failurePolicy Fail': errored('boom', 'Fail'),
};

/** A uid with what JSON must escape: quotes, backslashes, control characters, lone surrogates, non-ASCII. */
function awkwardUid(random: () => number): string {
  const pieces = ['"', '\\', '\n', '\u0000', '\u001f', '\ud800', '\udfff', '😀', 'é', '/', '<', 'a', '0', '-', '\u2028'];
  let uid = '';
  const length = Math.floor(random() * 12);
  for (let i = 0; i < length; i++) uid += pieces[Math.floor(random() * pieces.length)];
  return uid;
}

describe('admission: the review answered as text', function () {
  for (const [what, decision] of Object.entries(DECISIONS)) {
    it(`writes ${what} as JSON.stringify writes the review`, function () {
      const random = seededRandom(7);
      for (let i = 0; i < 500; i++) {
        const uid = i === 0 ? '5f0c7a52-6a0c-4b8e-9d1e-2b8e7c1d3f40' : awkwardUid(random);
        for (const apiVersion of VERSIONS) {
          const text = encodeReviewText(apiVersion, uid, decision);
          expect(text, `uid ${JSON.stringify(uid)}`).to.equal(JSON.stringify(encodeReview(apiVersion, uid, decision)));
          expect(JSON.parse(text).response.uid).to.equal(uid);
        }
      }
    });
  }

  it('answers a plain allow with the uid and allowed only', function () {
    expect(JSON.parse(encodeReviewText('admission.k8s.io/v1', 'u-1', { allowed: true }))).to.deep.equal({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true },
    });
  });
});
