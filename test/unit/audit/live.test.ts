/**
 * The live results of a request a webhook allowed with Warn or Audit failures (src/audit/live.ts):
 * which validation failed when the audit annotation says, each failure once when both actions
 * report it, nothing for a dry run, a plain allow, a denial, a subresource, an object without a
 * uid, or a Secret.
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

  it('keeps Warn-only failures as warnings', function () {
    const live = liveResults(request(), { allowed: true, warnings: ['a', 'b'] });
    expect(live!.results).to.deep.equal([
      { rule: 'warning', result: 'warn', message: 'a' },
      { rule: 'warning', result: 'warn', message: 'b' },
    ]);
  });

  it('takes nothing from a request that names no object by uid, or from a Secret (never audited)', function () {
    expect(liveResults(request({ object: { metadata: { name: 'web' } } }), { allowed: true, warnings: ['a'] })).to.equal(undefined);
    const secret = request({
      kind: { group: '', version: 'v1', kind: 'Secret' },
      resource: { group: '', version: 'v1', resource: 'secrets' },
      object: { metadata: { name: 'db', namespace: 'shop', uid: 'uid-2' }, data: { password: 'aHVudGVyMg==' } },
    });
    expect(liveResults(secret, { allowed: true, warnings: ['the secret holds aHVudGVyMg=='] })).to.equal(undefined);
  });

  it('takes nothing from a dry run, a plain allow, a denial or a subresource', function () {
    expect(shadowed(request({ dryRun: true }), { allowed: true, warnings: ['x'] })).to.equal(false);
    expect(shadowed(request(), { allowed: true })).to.equal(false);
    expect(shadowed(request(), { allowed: false, message: 'no', warnings: ['x'] })).to.equal(false);
    expect(shadowed(request(), { allowed: true, warnings: ['x'] })).to.equal(true);
    expect(liveResults(request({ subResource: 'scale' }), { allowed: true, warnings: ['x'] })).to.equal(undefined);
  });
});
