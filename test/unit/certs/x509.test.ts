/** Certificates as the API server's Go TLS stack needs them: positive serials, distinct CAs, leaves within their CA's life. */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { createCA, issueLeaf, isSignedBy, readCertificate } from '../../../src/certs/x509.ts';

const inDays = (days: number) => new Date(Date.now() + days * 86_400_000);

describe('certs/x509', function () {
  it('issues positive serial numbers (Go refuses negative ones)', async function () {
    const ca = await createCA({ commonName: 'test-ca', notAfter: inDays(10) });
    for (let i = 0; i < 20; i++) {
      const leaf = await issueLeaf(ca, { commonName: 'x', dnsNames: ['x.svc'], usage: 'server', notAfter: inDays(1) });
      const firstByte = parseInt(new X509Certificate(leaf.certPem).serialNumber.slice(0, 2), 16);
      expect(firstByte).to.be.below(0x80);
    }
  });

  it('gives each CA its own key identifiers and signs leaves that verify against it only', async function () {
    const a = await createCA({ commonName: 'ca-a', notAfter: inDays(10) });
    const b = await createCA({ commonName: 'ca-b', notAfter: inDays(10) });
    const leaf = await issueLeaf(a, { commonName: 'svc', dnsNames: ['svc.ns.svc'], usage: 'server', notAfter: inDays(1) });
    expect(isSignedBy(leaf.certPem, a.certPem)).to.equal(true);
    expect(isSignedBy(leaf.certPem, b.certPem)).to.equal(false);
    expect(new X509Certificate(a.certPem).fingerprint256).to.not.equal(new X509Certificate(b.certPem).fingerprint256);
    expect(readCertificate(leaf.certPem).dnsNames).to.deep.equal(['svc.ns.svc']);
    expect(new X509Certificate(a.certPem).ca).to.equal(true);
  });

  it('never lets a leaf outlive the CA that signed it', async function () {
    const ca = await createCA({ commonName: 'short-ca', notAfter: inDays(2) });
    const leaf = await issueLeaf(ca, { commonName: 'svc', usage: 'server', notAfter: inDays(90) });
    expect(leaf.notAfter.getTime()).to.be.at.most(readCertificate(ca.certPem).notAfter.getTime());
  });

  it('reports the validity a certificate carries (whole seconds), the same as reading it back gives', async function () {
    const notAfter = new Date(Math.floor(Date.now() / 1000) * 1000 + 10 * 86_400_000 + 328);
    const ca = await createCA({ commonName: 'ca', notAfter });
    const leaf = await issueLeaf(ca, { commonName: 'svc', dnsNames: ['svc.ns.svc'], usage: 'server', notAfter: new Date(notAfter.getTime() - 86_400_000) });
    for (const issued of [ca, leaf]) {
      const read = readCertificate(issued.certPem);
      expect(issued.notAfter.toISOString()).to.equal(read.notAfter.toISOString());
      expect(issued.notBefore.toISOString()).to.equal(read.notBefore.toISOString());
      expect(issued.notAfter.getMilliseconds()).to.equal(0);
    }
  });

  it('issues RSA 2048 leaves as well as ECDSA P-256', async function () {
    const ca = await createCA({ commonName: 'ca', notAfter: inDays(10) });
    const rsa = await issueLeaf(ca, { commonName: 'svc', usage: 'server', notAfter: inDays(1), keyAlgorithm: 'RSA' });
    const key = new X509Certificate(rsa.certPem).publicKey;
    expect(key.asymmetricKeyType).to.equal('rsa');
    expect(key.asymmetricKeyDetails?.modulusLength).to.equal(2048);
    expect(isSignedBy(rsa.certPem, ca.certPem)).to.equal(true);
  });
});
