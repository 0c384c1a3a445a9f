/** The SNI certificate store (src/certs/store.ts): which suite's certificate a handshake gets, by server name. */
import { expect } from 'chai';
import { CertificateStore } from '../../../src/certs/store.ts';
import { createCA, issueLeaf } from '../../../src/certs/x509.ts';

describe('certs/store', function () {
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000);

  it('serves each suite by its DNS names (case-insensitively), follows a renewal, and forgets a removed suite', async function () {
    const ca = await createCA({ commonName: 'store-ca', notAfter: inDays(10) });
    const a = await issueLeaf(ca, { commonName: 'a', dnsNames: ['a.ns.svc'], usage: 'server', notAfter: inDays(1) });
    const b = await issueLeaf(ca, { commonName: 'b', dnsNames: ['b.ns.svc', 'b.ns.svc.cluster.local'], usage: 'server', notAfter: inDays(1) });
    const store = new CertificateStore();
    store.set('a', a.certPem, a.keyPem);
    store.set('b', b.certPem, b.keyPem);
    expect(store.contextFor('A.NS.SVC')).to.not.equal(undefined);
    expect(store.contextFor('b.ns.svc.cluster.local')).to.equal(store.contextFor('b.ns.svc'));
    expect(store.contextFor('a.ns.svc')).to.not.equal(store.contextFor('b.ns.svc'));
    expect(store.contextFor('c.ns.svc')).to.equal(undefined);

    const before = store.contextFor('a.ns.svc');
    store.set('a', a.certPem, a.keyPem);
    expect(store.contextFor('a.ns.svc'), 'the same PEM again changes nothing').to.equal(before);
    const renewed = await issueLeaf(ca, { commonName: 'a', dnsNames: ['a.ns.svc'], usage: 'server', notAfter: inDays(2) });
    store.set('a', renewed.certPem, renewed.keyPem);
    expect(store.served('a')).to.equal(renewed.certPem);
    expect(store.contextFor('a.ns.svc')).to.not.equal(before);

    store.remove('a');
    expect(store.contextFor('a.ns.svc')).to.equal(undefined);
    expect(store.served('a')).to.equal(undefined);
  });

  it('answers an unknown server name with an error through the SNI callback', async function () {
    const store = new CertificateStore();
    const err = await new Promise<Error | null>((resolve) => store.sniCallback('nobody.ns.svc', (e) => resolve(e)));
    expect(err?.message).to.equal('no certificate for server name "nobody.ns.svc"');
  });
});
