/**
 * certs: PKCS#10 certificate requests (RFC 2986), read and written. Reading gives what Go's
 * `certificates.ParseCSR` gives the CertificateSubjectRestriction plugin (the one block Go's
 * pem.Decode finds, pem.ts: its type must be CERTIFICATE REQUEST, a later block is never looked
 * at; then the subject's organizations); writing makes a signed request with a subject of a
 * common name and organizations (the tests' CertificateSigningRequests). Owns the byte shape only:
 * must not touch suites, handlers or the Kubernetes API; the DER encoding is der.ts'.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import * as der from './der.ts';
import { decodePem } from './pem.ts';

const OID_ORGANIZATION = der.oid('2.5.4.10');
const OID_COMMON_NAME = '2.5.4.3';
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';

/** A directory string's text, of the string types Go's x509 reads (BMPString as UTF-16BE). */
function directoryText(element: der.Element): string {
  if (element.tag === 0x1e) {
    const swapped = Buffer.from(element.content);
    swapped.swap16();
    return swapped.toString('utf16le');
  }
  if (element.tag === 0x14) return element.content.toString('latin1');
  return element.content.toString('utf8');
}

/** The subject's organizations, in order, of a DER CertificationRequest; throws when it is not one. */
function organizationsOf(request: Buffer): string[] {
  const outer = der.read(request);
  if (outer.tag !== 0x30 || outer.raw.length !== request.length) throw new Error('x509: malformed certificate request');
  const [info] = der.children(outer);
  if (info?.tag !== 0x30) throw new Error('x509: malformed certificate request');
  const [version, subject] = der.children(info);
  if (version?.tag !== 0x02 || subject?.tag !== 0x30) throw new Error('x509: malformed certificate request');
  const organizations: string[] = [];
  for (const rdn of der.children(subject)) {
    for (const attribute of der.children(rdn)) {
      const [type, value] = der.children(attribute);
      if (type && value && type.raw.equals(OID_ORGANIZATION)) organizations.push(directoryText(value));
    }
  }
  return organizations;
}

/**
 * The organizations of a PEM certificate request's subject (`pem`: the request's bytes as a binary
 * string), or the error Go's ParseCSR gives (`PEM block type must be CERTIFICATE REQUEST`, or the
 * x509 parser's). As ParseCSR: the block pem.Decode finds first, whatever follows it.
 */
export function requestOrganizations(pem: string): { organizations: string[] } | { error: string } {
  const block = decodePem(pem)?.block;
  if (!block || block.type !== 'CERTIFICATE REQUEST') return { error: 'PEM block type must be CERTIFICATE REQUEST' };
  try {
    return { organizations: organizationsOf(block.bytes) };
  } catch (err) {
    return { error: err instanceof Error && err.message.startsWith('x509:') ? err.message : 'x509: malformed certificate request' };
  }
}

/** A PEM certificate request, signed with a new P-256 key, for `commonName` in `organizations`. */
export function certificateRequestPem(commonName: string, organizations: string[] = []): string {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rdn = (type: Buffer, value: string) => der.set(der.sequence(type, der.directoryString(value)));
  const subject = der.sequence(...organizations.map((o) => rdn(OID_ORGANIZATION, o)), rdn(der.oid(OID_COMMON_NAME), commonName));
  // version 0, subject, the key, no attributes ([0] IMPLICIT SET, empty)
  const info = der.sequence(der.smallInteger(0), subject, publicKey.export({ type: 'spki', format: 'der' }), Buffer.from([0xa0, 0x00]));
  const request = der.sequence(info, der.sequence(der.oid(ECDSA_WITH_SHA256)), der.bitString(sign('sha256', info, privateKey)));
  const lines = request.toString('base64').match(/.{1,64}/g)!;
  return ['-----BEGIN CERTIFICATE REQUEST-----', ...lines, '-----END CERTIFICATE REQUEST-----', ''].join('\n');
}
