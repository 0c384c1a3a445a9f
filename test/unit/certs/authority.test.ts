/**
 * The operator CA's pure part (src/certs/authority.ts): what the `portcullis-ca` Secret holds and
 * reads back, the caBundle every suite carries, and each step of a rotation with its overlap.
 * Real certificates (x509.ts); the cluster's answers are given as RotationFacts.
 */
import { expect } from 'chai';
import { bundleOf, CA_ANNOTATIONS, caFromSecret, caRenewalTime, caToSecret, materialOf, newCA, nextRotationStep, type CaSettings, type CaState, type RotationFacts } from '../../../src/certs/authority.ts';
import { readCertificate } from '../../../src/certs/x509.ts';

const DAY = 86_400_000;
const settings: CaSettings = { durationMs: 30 * DAY, overlapMs: 60_000 };
const facts = (carry: boolean, signs: boolean): RotationFacts => ({ allBundlesCarry: () => carry, anyLeafSignedBy: () => signs });

describe('certs/authority', function () {
  const now = new Date();
  let current: Awaited<ReturnType<typeof newCA>>;
  let next: Awaited<ReturnType<typeof newCA>>;
  let previous: Awaited<ReturnType<typeof newCA>>;

  before(async function () {
    [current, next, previous] = await Promise.all([newCA(settings, now), newCA(settings, new Date(now.getTime() + 1)), newCA(settings, new Date(now.getTime() + 2))]);
  });

  it('gives each CA its own subject and the configured lifetime', function () {
    const a = readCertificate(current.certPem);
    const b = readCertificate(next.certPem);
    expect(a.subject).to.not.equal(b.subject);
    expect(Math.abs(a.notAfter.getTime() - (now.getTime() + settings.durationMs))).to.be.below(2000);
  });

  it('bundles current, successor, then predecessor, and only those present', function () {
    const full: CaState = { current, next, previousCertPem: previous.certPem };
    expect(bundleOf(full)).to.equal(`${current.certPem.trim()}\n${next.certPem.trim()}\n${previous.certPem.trim()}\n`);
    expect(bundleOf({ current })).to.equal(`${current.certPem.trim()}\n`);
    expect(materialOf(full)).to.include({ certPem: current.certPem, keyPem: current.keyPem, bundle: bundleOf(full) });
  });

  it('writes the Secret and reads back the same state, dates included', function () {
    const state: CaState = { current, next, nextSince: new Date('2026-02-01T10:00:00Z'), previousCertPem: previous.certPem, previousSince: new Date('2026-01-01T10:00:00Z') };
    const { data, annotations } = caToSecret(state);
    expect(Buffer.from(data['ca-bundle.crt']!, 'base64').toString()).to.equal(bundleOf(state));
    expect(annotations).to.deep.equal({ [CA_ANNOTATIONS.nextSince]: '2026-02-01T10:00:00.000Z', [CA_ANNOTATIONS.previousSince]: '2026-01-01T10:00:00.000Z' });
    expect(caFromSecret(data, annotations)).to.deep.equal(state);
  });

  it('reads no CA from a Secret without a certificate and key', function () {
    expect(caFromSecret(undefined, undefined)).to.equal(undefined);
    expect(caFromSecret({ 'tls.crt': Buffer.from(current.certPem).toString('base64') }, {})).to.equal(undefined);
  });

  it('creates a CA when there is none, or when the current one has expired', function () {
    expect(nextRotationStep(undefined, settings, facts(true, false), now)).to.deep.equal({ kind: 'create' });
    expect(nextRotationStep({ current }, settings, facts(true, false), new Date(now.getTime() + 31 * DAY))).to.deep.equal({ kind: 'create' });
  });

  it('waits until the current CA is due, then adds a successor', function () {
    const due = caRenewalTime(current, settings);
    // renewBefore defaults to a third of the lifetime
    const { notBefore, notAfter } = readCertificate(current.certPem);
    expect(due.getTime()).to.be.closeTo(notAfter.getTime() - (notAfter.getTime() - notBefore.getTime()) / 3, 1);
    const step = nextRotationStep({ current }, settings, facts(true, false), now);
    expect(step.kind).to.equal('wait');
    expect(nextRotationStep({ current }, settings, facts(true, false), due)).to.deep.equal({ kind: 'add-next' });
  });

  it('promotes the successor only once every bundle has carried it for the overlap', function () {
    const since = new Date(now.getTime() + 20 * DAY);
    const state: CaState = { current, next, nextSince: since };
    const later = new Date(since.getTime() + settings.overlapMs);
    expect(nextRotationStep(state, settings, facts(true, false), new Date(since.getTime() + 1000))).to.deep.equal({ kind: 'wait', untilMs: 5000 });
    expect(nextRotationStep(state, settings, facts(false, false), later).kind).to.equal('wait');
    expect(nextRotationStep(state, settings, facts(true, false), later)).to.deep.equal({ kind: 'promote' });
  });

  it('drops the predecessor once the overlap has passed and no served leaf is signed by it', function () {
    const since = new Date(now.getTime() + DAY);
    const state: CaState = { current, previousCertPem: previous.certPem, previousSince: since };
    const later = new Date(since.getTime() + settings.overlapMs);
    expect(nextRotationStep(state, settings, facts(true, false), new Date(since.getTime() + 59_500))).to.deep.equal({ kind: 'wait', untilMs: 1000 });
    expect(nextRotationStep(state, settings, facts(true, true), later).kind).to.equal('wait');
    expect(nextRotationStep(state, settings, facts(true, false), later)).to.deep.equal({ kind: 'drop-previous' });
  });
});
