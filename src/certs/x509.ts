/**
 * certs: issuing CAs and leaf certificates, reading them back, and renewal arithmetic.
 * Owns the X.509 details (serials, key identifiers, usages). Knows nothing of suites or of
 * the Kubernetes API: callers hand in names and lifetimes and get PEM back.
 */
import { createHash, createPrivateKey, generateKeyPair, randomBytes, sign, X509Certificate as NodeX509, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { parseAddr } from '../go/netip.ts';
import * as der from './der.ts';

export type KeyAlgorithm = 'ECDSA' | 'RSA';

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface IssuedCertificate extends KeyPairPem {
  notBefore: Date;
  notAfter: Date;
  serial: string;
}

const generateKeys = promisify(generateKeyPair);
const signAsync = promisify(sign);

/** Key generation runs on libuv's pool, off the event loop (an RSA key takes tens of milliseconds). */
function newKeys(algorithm: KeyAlgorithm): Promise<{ publicKey: KeyObject; privateKey: KeyObject }> {
  return algorithm === 'ECDSA' ? generateKeys('ec', { namedCurve: 'P-256' }) : generateKeys('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
}

/** SHA-256 with the issuer's key: ecdsa-with-SHA256, or sha256WithRSAEncryption (whose parameters are NULL). */
const SIGNATURE_ALGORITHM: Record<KeyAlgorithm, Buffer> = {
  ECDSA: der.sequence(der.oid('1.2.840.10045.4.3.2')),
  RSA: der.sequence(der.oid('1.2.840.113549.1.1.11'), der.nullValue()),
};

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** KeyUsage bits (RFC 5280 4.2.1.3). */
const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

/** A positive 16-byte serial: Go refuses negative serials ("x509: negative serial number"). */
function positiveSerial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes;
}

function distinguishedName(commonName: string, organization?: string): Buffer {
  const rdn = (type: string, value: string) => der.set(der.sequence(der.oid(type), der.directoryString(value)));
  return der.sequence(rdn(OID.commonName, commonName), ...(organization ? [rdn(OID.organization, organization)] : []));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return der.sequence(der.oid(id), ...(critical ? [der.boolean(true)] : []), der.octetString(value));
}

function spkiOf(publicKey: KeyObject): Buffer {
  return publicKey.export({ type: 'spki', format: 'der' });
}

/** RFC 5280 4.2.1.2 method 1: the SHA-1 of the subjectPublicKey bits. */
function keyIdentifier(spki: Buffer): Buffer {
  const bits = der.children(der.read(spki))[1]!;
  return createHash('sha1').update(bits.content.subarray(1)).digest();
}

function keyPem(privateKey: KeyObject): string {
  return (privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).trimEnd();
}

function certificatePem(certificate: Buffer): string {
  const lines = certificate.toString('base64').match(/.{1,64}/g)!;
  return ['-----BEGIN CERTIFICATE-----', ...lines, '-----END CERTIFICATE-----'].join('\n');
}

/** A certificate's dates as DER carries them: whole seconds. */
function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

interface Template {
  serial: Buffer;
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  notAfter: Date;
  spki: Buffer;
  extensions: Buffer[];
  signingKey: KeyObject;
  signingAlgorithm: KeyAlgorithm;
}

/** The certificate of `t`, signed; with the validity it carries. */
async function signed(t: Template): Promise<{ certPem: string; notBefore: Date; notAfter: Date; serial: string }> {
  const notBefore = wholeSeconds(t.notBefore);
  const notAfter = wholeSeconds(t.notAfter);
  const algorithm = SIGNATURE_ALGORITHM[t.signingAlgorithm];
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)), // v3
    der.unsignedInteger(t.serial),
    algorithm,
    t.issuer,
    der.sequence(der.time(notBefore), der.time(notAfter)),
    t.subject,
    t.spki,
    der.explicit(3, der.sequence(...t.extensions)),
  );
  // (ECDSA signatures come DER-encoded, as X.509 wants them)
  const signature = await signAsync('sha256', tbs, t.signingKey);
  return { certPem: certificatePem(der.sequence(tbs, algorithm, der.bitString(signature))), notBefore, notAfter, serial: t.serial.toString('hex') };
}

export interface CaRequest {
  commonName: string;
  notBefore?: Date;
  notAfter: Date;
  keyAlgorithm?: KeyAlgorithm;
}

/** A self-signed CA. Every call makes a new key, so each CA has its own key identifiers. */
export async function createCA(req: CaRequest): Promise<IssuedCertificate> {
  const algorithm = req.keyAlgorithm ?? 'ECDSA';
  const keys = await newKeys(algorithm);
  const spki = spkiOf(keys.publicKey);
  const id = keyIdentifier(spki);
  const name = distinguishedName(req.commonName);
  const cert = await signed({
    serial: positiveSerial(),
    issuer: name,
    subject: name,
    notBefore: req.notBefore ?? backdated(new Date()),
    notAfter: req.notAfter,
    spki,
    extensions: [
      extension(OID.basicConstraints, true, der.sequence(der.boolean(true), der.smallInteger(0))),
      extension(OID.keyUsage, true, der.namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign])),
      extension(OID.subjectKeyIdentifier, false, der.octetString(id)),
      extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicit(0, id))),
    ],
    signingKey: keys.privateKey,
    signingAlgorithm: algorithm,
  });
  return { ...cert, keyPem: keyPem(keys.privateKey) };
}

export interface LeafRequest {
  commonName: string;
  organization?: string;
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
  notBefore?: Date;
  notAfter: Date;
  keyAlgorithm?: KeyAlgorithm;
}

/** What signing with a CA needs of it, read once per CA (every leaf of a burst has the same one). */
interface Issuer {
  subject: Buffer;
  keyIdentifier: Buffer;
  algorithm: KeyAlgorithm;
  notAfter: Date;
  signingKey: KeyObject;
}

const issuers = new Map<string, Issuer>();
/** The current CA, its successor and predecessor, and a test's few. */
const ISSUERS_KEPT = 8;

function issuerOf(ca: KeyPairPem): Issuer {
  const key = `${ca.certPem}\n${ca.keyPem}`;
  let issuer = issuers.get(key);
  if (!issuer) {
    const cert = new NodeX509(ca.certPem);
    // The issuer name is copied as the CA's subject bytes: Go matches a leaf to its CA by them.
    const tbs = der.children(der.children(der.read(cert.raw))[0]!);
    const fields = tbs[0]!.tag === 0xa0 ? tbs.slice(1) : tbs;
    const spki = fields[5]!.raw;
    issuer = {
      subject: fields[4]!.raw,
      keyIdentifier: subjectKeyIdentifier(tbs) ?? keyIdentifier(spki),
      algorithm: cert.publicKey.asymmetricKeyType === 'ec' ? 'ECDSA' : 'RSA',
      notAfter: new Date(cert.validTo),
      signingKey: createPrivateKey(ca.keyPem),
    };
    if (issuers.size >= ISSUERS_KEPT) issuers.delete(issuers.keys().next().value!);
    issuers.set(key, issuer);
  }
  return issuer;
}

/** The SubjectKeyIdentifier extension's value, where the certificate has one. */
function subjectKeyIdentifier(tbs: der.Element[]): Buffer | undefined {
  const extensions = tbs.find((field) => field.tag === 0xa3);
  if (!extensions) return undefined;
  const wanted = der.oid(OID.subjectKeyIdentifier);
  for (const ext of der.children(der.children(extensions)[0]!)) {
    const parts = der.children(ext);
    if (parts[0]!.raw.equals(wanted)) return der.read(parts[parts.length - 1]!.content).content;
  }
  return undefined;
}

/** A leaf signed by `ca`. Its lifetime is cut to the CA's: no leaf outlives its issuer. */
export async function issueLeaf(ca: KeyPairPem, req: LeafRequest): Promise<IssuedCertificate> {
  const issuer = issuerOf(ca);
  const keys = await newKeys(req.keyAlgorithm ?? 'ECDSA');
  const spki = spkiOf(keys.publicKey);
  const usages: string[] = [];
  if (req.usage !== 'client') usages.push(OID.serverAuth);
  if (req.usage !== 'server') usages.push(OID.clientAuth);
  const altNames = [...(req.dnsNames ?? []).map((name) => der.implicit(2, der.ia5Content(name))), ...(req.ipAddresses ?? []).map((ip) => der.implicit(7, parseAddr(ip).bytes))];
  const cert = await signed({
    serial: positiveSerial(),
    issuer: issuer.subject,
    subject: distinguishedName(req.commonName, req.organization),
    notBefore: req.notBefore ?? backdated(new Date()),
    notAfter: new Date(Math.min(req.notAfter.getTime(), issuer.notAfter.getTime())),
    spki,
    extensions: [
      extension(OID.basicConstraints, true, der.sequence()),
      extension(OID.keyUsage, true, der.namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment])),
      extension(OID.extKeyUsage, false, der.sequence(...usages.map(der.oid))),
      extension(OID.subjectKeyIdentifier, false, der.octetString(keyIdentifier(spki))),
      extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicit(0, issuer.keyIdentifier))),
      ...(altNames.length ? [extension(OID.subjectAltName, false, der.sequence(...altNames))] : []),
    ],
    signingKey: issuer.signingKey,
    signingAlgorithm: issuer.algorithm,
  });
  return { ...cert, keyPem: keyPem(keys.privateKey) };
}

/** Clock skew between nodes is common; a certificate valid from a minute ago avoids "not yet valid". */
function backdated(now: Date): Date {
  return new Date(now.getTime() - 60_000);
}

export interface CertificateFacts {
  notBefore: Date;
  notAfter: Date;
  serial: string;
  subject: string;
  issuer: string;
  dnsNames: string[];
}

/** What the reconciler needs to know of a PEM certificate (the first one in the text). */
export function readCertificate(pem: string): CertificateFacts {
  const cert = new NodeX509(pem);
  const dnsNames = (cert.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
  return {
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    serial: cert.serialNumber,
    subject: cert.subject,
    issuer: cert.issuer,
    dnsNames,
  };
}

/** True when `leafPem` carries a valid signature of `caPem`'s key. */
export function isSignedBy(leafPem: string, caPem: string): boolean {
  const leaf = new NodeX509(leafPem);
  const ca = new NodeX509(caPem);
  return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}
