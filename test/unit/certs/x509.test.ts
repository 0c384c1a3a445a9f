/** Certificates as the API server's Go TLS stack needs them: positive serials, distinct CAs, leaves within their CA's life. */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { createCA, issueLeaf, isSignedBy, readCertificate, type KeyPairPem } from '../../../src/certs/x509.ts';
import { EARLIER_CA } from '../../fixtures/earlier-ca.ts';

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

  it('issues leaves a TLS client accepts for their names and IPs, server and client alike', async function () {
    const ca = await createCA({ commonName: 'portcullis-ca', notAfter: inDays(10) });
    const leaf = await issueLeaf(ca, { commonName: 'admin', organization: 'system:masters', dnsNames: ['svc.ns.svc'], ipAddresses: ['127.0.0.1', '::1'], usage: 'both', notAfter: inDays(1) });
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.subject).to.equal('CN=admin\nO=system:masters');
    expect(cert.issuer).to.equal(new X509Certificate(ca.certPem).subject);
    expect(cert.subjectAltName).to.equal('DNS:svc.ns.svc, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(cert.keyUsage).to.have.members(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(cert.ca).to.equal(false);
    expect(await handshake(ca, leaf, { servername: 'svc.ns.svc' })).to.equal('authorized');
    expect(await handshake(ca, leaf, { host: '127.0.0.1' })).to.equal('authorized');
    expect(await handshake(ca, leaf, { servername: 'other.ns.svc' })).to.match(/not in the cert's altnames/);
    const server = await issueLeaf(ca, { commonName: 'svc', dnsNames: ['svc.ns.svc'], usage: 'server', notAfter: inDays(1) });
    expect(new X509Certificate(server.certPem).keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.1']);
  });

  it('signs with a CA an earlier release wrote (as CA Secrets in clusters hold them)', async function () {
    const leaf = await issueLeaf(EARLIER_CA, { commonName: 'svc', dnsNames: ['svc.ns.svc'], usage: 'server', notAfter: inDays(1) });
    expect(isSignedBy(leaf.certPem, EARLIER_CA.certPem)).to.equal(true);
    expect(new X509Certificate(leaf.certPem).issuer).to.equal(new X509Certificate(EARLIER_CA.certPem).subject);
    expect(await handshake(EARLIER_CA, leaf, { servername: 'svc.ns.svc' })).to.equal('authorized');
  });

  it('writes dates from 2050 on as GeneralizedTime and reads them back the same', async function () {
    const notAfter = new Date('2061-03-04T05:06:07Z');
    const ca = await createCA({ commonName: 'long-ca', notAfter });
    expect(readCertificate(ca.certPem).notAfter.toISOString()).to.equal(notAfter.toISOString());
    const leaf = await issueLeaf(ca, { commonName: 'svc', usage: 'server', notAfter: new Date('2055-01-01T00:00:00Z') });
    expect(readCertificate(leaf.certPem).notAfter.toISOString()).to.equal('2055-01-01T00:00:00.000Z');
  });
});

/** A TLS handshake to a server with `leaf`, verified against `ca`: 'authorized' or the client's reason. */
async function handshake(ca: KeyPairPem, leaf: KeyPairPem, target: { servername?: string; host?: string }): Promise<string> {
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    return await new Promise<string>((resolve) => {
      const socket = tls.connect({ port, host: '127.0.0.1', ca: ca.certPem, ...target, ...(target.host ? { servername: undefined } : {}) }, () => {
        resolve('authorized');
        socket.destroy();
      });
      socket.on('error', (err) => resolve(err.message));
    });
  } finally {
    server.close();
  }
}
