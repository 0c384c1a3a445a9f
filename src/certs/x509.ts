/**
 * certs: issuing CAs and leaf certificates, reading them back, and renewal arithmetic.
 * Owns the X.509 details (serials, key identifiers, usages). Knows nothing of suites or of
 * the Kubernetes API: callers hand in names and lifetimes and get PEM back.
 */
import 'reflect-metadata';
import { webcrypto, randomBytes, X509Certificate as NodeX509 } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);
// Node's webcrypto types and the DOM lib's differ only in newer key usages.
type DomCryptoKey = globalThis.CryptoKey;

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

const ALGORITHMS: Record<KeyAlgorithm, { generate: RsaHashedKeyGenParams | EcKeyGenParams; sign: Algorithm | EcdsaParams }> = {
  ECDSA: { generate: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams },
  RSA: {
    generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    sign: { name: 'RSASSA-PKCS1-v1_5' },
  },
};

/** A positive 16-byte serial: Go refuses negative serials ("x509: negative serial number"). */
function positiveSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

async function generateKeys(algorithm: KeyAlgorithm): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALGORITHMS[algorithm].generate, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyToPem(key: CryptoKey): Promise<string> {
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
}

async function importSigningKey(keyPem: string, algorithm: KeyAlgorithm): Promise<DomCryptoKey> {
  const der = x509.PemConverter.decodeFirst(keyPem);
  return (await webcrypto.subtle.importKey('pkcs8', der, ALGORITHMS[algorithm].generate, false, ['sign'])) as unknown as DomCryptoKey;
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
  const keys = await generateKeys(algorithm);
  const notBefore = req.notBefore ?? backdated(new Date());
  const serial = positiveSerial();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial,
    name: `CN=${req.commonName}`,
    notBefore,
    notAfter: req.notAfter,
    keys,
    signingAlgorithm: ALGORITHMS[algorithm].sign,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await keyToPem(keys.privateKey), ...validity(cert), serial };
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

/** A leaf signed by `ca`. Its lifetime is cut to the CA's: no leaf outlives its issuer. */
export async function issueLeaf(ca: KeyPairPem, req: LeafRequest): Promise<IssuedCertificate> {
  const algorithm = req.keyAlgorithm ?? 'ECDSA';
  const caCert = new x509.X509Certificate(ca.certPem);
  const caAlgorithm: KeyAlgorithm = caCert.publicKey.algorithm.name === 'ECDSA' ? 'ECDSA' : 'RSA';
  const signingKey = await importSigningKey(ca.keyPem, caAlgorithm);
  const keys = await generateKeys(algorithm);
  const notBefore = req.notBefore ?? backdated(new Date());
  const notAfter = new Date(Math.min(req.notAfter.getTime(), caCert.notAfter.getTime()));
  const usages: string[] = [];
  if (req.usage !== 'client') usages.push(x509.ExtendedKeyUsage.serverAuth);
  if (req.usage !== 'server') usages.push(x509.ExtendedKeyUsage.clientAuth);
  const altNames: x509.JsonGeneralName[] = [
    ...(req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(req.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const subject = req.organization ? `CN=${req.commonName}, O=${req.organization}` : `CN=${req.commonName}`;
  const serial = positiveSerial();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject,
    issuer: caCert.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHMS[caAlgorithm].sign,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension(usages),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ...(altNames.length ? [new x509.SubjectAlternativeNameExtension(altNames)] : []),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await keyToPem(keys.privateKey), ...validity(cert), serial };
}

/**
 * The validity as the certificate carries it: whole seconds. The requested dates have
 * milliseconds, and a status written from them differed from every later one read back from the
 * certificate (a second status write per new suite, and one per suite after each restart).
 */
function validity(cert: x509.X509Certificate): { notBefore: Date; notAfter: Date } {
  return { notBefore: cert.notBefore, notAfter: cert.notAfter };
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
