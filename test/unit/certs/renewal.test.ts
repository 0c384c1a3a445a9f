/** Renewal arithmetic (src/certs/renewal.ts): when a certificate is re-issued, by its lifetime and `renewBefore`. */
import { expect } from 'chai';
import { needsRenewal, renewalTime } from '../../../src/certs/renewal.ts';

describe('certs/renewal', function () {
  const start = new Date('2026-01-01T00:00:00Z');
  const end = new Date('2026-01-31T00:00:00Z');

  it('renews when a third of the lifetime remains by default, or at renewBefore', function () {
    expect(renewalTime(start, end).toISOString()).to.equal('2026-01-21T00:00:00.000Z');
    expect(renewalTime(start, end, 24 * 3600_000).toISOString()).to.equal('2026-01-30T00:00:00.000Z');
  });

  it('renews at once when renewBefore is longer than the lifetime (never after expiry)', function () {
    expect(renewalTime(start, end, 90 * 86_400_000).toISOString()).to.equal(start.toISOString());
  });

  it('needs renewal from the renewal time on, not before', function () {
    expect(needsRenewal(start, end, new Date('2026-01-20T23:59:59Z'))).to.equal(false);
    expect(needsRenewal(start, end, new Date('2026-01-21T00:00:00Z'))).to.equal(true);
    expect(needsRenewal(start, end, new Date('2026-01-29T00:00:00Z'), 24 * 3600_000)).to.equal(false);
  });
});
