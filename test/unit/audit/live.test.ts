/**
 * The live results of a request a webhook allowed with Warn or Audit failures (src/audit/live.ts):
 * which validation failed when the audit annotation says, each failure once when both actions
 * report it, nothing for a dry run, a plain allow, a denial or a subresource.
 */
import { expect } from 'chai';
import { liveResults, shadowed } from '../../../src/audit/live.ts';
import type { AdmissionRequest, Decision } from '../../../src/api/admission-review.ts';

const request = (extra: Partial<AdmissionRequest> = {}): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  name: 'web',
  namespace: 'shop',
  operation: 'CREATE',
  userInfo: { username: 'alice' },
  object: { metadata: { name: 'web', namespace: 'shop', uid: 'uid-1' } },
  ...extra,
});
const audited = (entries: { message: string; expressionIndex: number }[]): Decision => ({
  allowed: true,
  auditAnnotations: { validation_failure: JSON.stringify(entries.map((e) => ({ ...e, policy: 's', binding: 'w', validationActions: ['Audit'] }))) },
});

describe('audit: live results of rules in shadow mode', function () {
  it('names the validations the audit annotation lists, on the object the request wrote', function () {
    const live = liveResults(request(), { ...audited([{ message: 'no team', expressionIndex: 1 }]), warnings: ['no team'] });
    expect(live).to.deep.equal({
      ref: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'shop', uid: 'uid-1' },
      results: [{ rule: 'validations[1]', result: 'fail', message: 'no team' }],
    });
  });

  it('keeps Warn-only failures as warnings, and names an object without a uid by namespace and name', function () {
    const live = liveResults(request({ object: { metadata: { name: 'web' } } }), { allowed: true, warnings: ['a', 'b'] });
    expect(live!.ref.uid).to.equal('shop/web');
    expect(live!.results).to.deep.equal([
      { rule: 'warning', result: 'warn', message: 'a' },
      { rule: 'warning', result: 'warn', message: 'b' },
    ]);
  });

  it('takes nothing from a dry run, a plain allow, a denial or a subresource', function () {
    expect(shadowed(request({ dryRun: true }), { allowed: true, warnings: ['x'] })).to.equal(false);
    expect(shadowed(request(), { allowed: true })).to.equal(false);
    expect(shadowed(request(), { allowed: false, message: 'no', warnings: ['x'] })).to.equal(false);
    expect(shadowed(request(), { allowed: true, warnings: ['x'] })).to.equal(true);
    expect(liveResults(request({ subResource: 'scale' }), { allowed: true, warnings: ['x'] })).to.equal(undefined);
  });
});
