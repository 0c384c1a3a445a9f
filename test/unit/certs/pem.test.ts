/**
 * certs/pem: Go's pem.Decode as ported, on the texts where a reader that is not Go's takes another
 * block (junk on the BEGIN line, a candidate Go skips, a later block); each expected answer is what
 * Go 1.26's encoding/pem gives for the same bytes (and 80,000 generated texts agreed with it when
 * the port was written). Then what CertificateSubjectRestriction reads of a request through it.
 */
import { expect } from 'chai';
import { decodePem } from '../../../src/certs/pem.ts';
import { certificateRequestPem, requestOrganizations } from '../../../src/certs/csr.ts';

const block = (type: string, body: string, end = type) => `-----BEGIN ${type}-----\n${body}\n-----END ${end}-----\n`;
const REQ = 'CERTIFICATE REQUEST';
// 'QUJD' is "ABC", 'REVG' is "DEF".
const ROWS: { name: string; text: string; go: { type: string; bytes: string; headers: number } | undefined }[] = [
  { name: 'junk lines before the block are skipped', text: 'junk\nmore junk\n' + block(REQ, 'QUJD'), go: { type: REQ, bytes: 'ABC', headers: 0 } },
  { name: 'a block whose BEGIN line has junk before it is not one: the next is taken', text: 'junk' + block(REQ, 'QUJD') + block(REQ, 'REVG'), go: { type: REQ, bytes: 'DEF', headers: 0 } },
  { name: 'junk only: no block', text: 'junk, no block\n', go: undefined },
  { name: 'two requests: the first', text: block(REQ, 'QUJD') + block(REQ, 'REVG'), go: { type: REQ, bytes: 'ABC', headers: 0 } },
  { name: 'another type first: that block (ParseCSR then refuses it)', text: block('CERTIFICATE', 'QUJD') + block(REQ, 'REVG'), go: { type: 'CERTIFICATE', bytes: 'ABC', headers: 0 } },
  { name: 'base64 Go refuses (no padding) first: skipped', text: block(REQ, 'QUJ') + block(REQ, 'REVG'), go: { type: REQ, bytes: 'DEF', headers: 0 } },
  { name: 'an END of another type first: skipped', text: block(REQ, 'QUJD', 'CERTIFICATE') + block(REQ, 'REVG'), go: { type: REQ, bytes: 'DEF', headers: 0 } },
  { name: 'an END line with text after it first: skipped', text: block(REQ, 'QUJD').replace(/\n$/, ' x\n') + block(REQ, 'REVG'), go: { type: REQ, bytes: 'DEF', headers: 0 } },
  { name: 'a BEGIN without its END: the last BEGIN before the first END', text: `-----BEGIN ${REQ}-----\nQUJD\n` + block(REQ, 'REVG'), go: { type: REQ, bytes: 'DEF', headers: 0 } },
  {
    name: 'headers, spaces, tabs and CRLF',
    text: `-----BEGIN ${REQ}-----\r\nProc-Type: 4,ENCRYPTED\r\n\r\nQU JD\t\r\n-----END ${REQ}-----  \r\n`,
    go: { type: REQ, bytes: 'ABC', headers: 1 },
  },
  { name: 'a line with a colon after the base64 is not a header: no block', text: `-----BEGIN ${REQ}-----\nQUJD\nnot: a header\n-----END ${REQ}-----\n`, go: undefined },
  { name: 'an empty block', text: `-----BEGIN ${REQ}-----\n-----END ${REQ}-----\n`, go: { type: REQ, bytes: '', headers: 0 } },
];

describe("certs/pem: Go's pem.Decode", function () {
  for (const row of ROWS) {
    it(row.name, function () {
      const found = decodePem(row.text);
      expect(found && { type: found.block.type, bytes: found.block.bytes.toString('latin1'), headers: found.block.headers.size }).to.deep.equal(row.go);
    });
  }
});

describe('certs/csr: a request read as ParseCSR reads it', function () {
  const harmless = certificateRequestPem('alice', ['devs']);
  const masters = certificateRequestPem('mallory', ['system:masters']);

  it("issue 49's request: junk before a harmless block's BEGIN, then a system:masters one: Go's block is the second", function () {
    expect(requestOrganizations('junk' + harmless + masters)).to.deep.equal({ organizations: ['system:masters'] });
    // The control: the harmless request alone, or first on a line of its own, is what is read.
    expect(requestOrganizations(harmless + masters)).to.deep.equal({ organizations: ['devs'] });
    expect(requestOrganizations('junk\n' + harmless + masters)).to.deep.equal({ organizations: ['devs'] });
  });

  it('refuses as ParseCSR does what is not a request first, whatever follows', function () {
    const certificate = harmless.replaceAll(REQ, 'CERTIFICATE');
    expect(requestOrganizations(certificate + masters)).to.deep.equal({ error: 'PEM block type must be CERTIFICATE REQUEST' });
    expect(requestOrganizations('junk only')).to.deep.equal({ error: 'PEM block type must be CERTIFICATE REQUEST' });
  });
});
