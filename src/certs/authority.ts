/**
 * The operator CA: one for all suites, kept in the `portcullis-ca` Secret. This module decides,
 * from what the Secret holds and the clock, whether the CA can be used as it is or a new one is
 * needed, and what the caBundle is. Reading and writing the Secret is the controller's job.
 */
import { createCA, readCertificate, type IssuedCertificate, type KeyPairPem } from './x509.ts';
import { needsRenewal } from './renewal.ts';

export interface CaSettings {
  durationMs: number;
  renewBeforeMs?: number;
}

export interface CaMaterial extends KeyPairPem {
  notAfter: Date;
  /** What every suite's caBundle carries. */
  bundle: string;
}

export const CA_KEYS = { cert: 'tls.crt', key: 'tls.key', bundle: 'ca-bundle.crt' } as const;

export function caFromSecretData(data: Record<string, string> | undefined): CaMaterial | undefined {
  const decode = (key: string) => (data?.[key] ? Buffer.from(data[key], 'base64').toString() : undefined);
  const certPem = decode(CA_KEYS.cert);
  const keyPem = decode(CA_KEYS.key);
  if (!certPem || !keyPem) return undefined;
  return { certPem, keyPem, bundle: decode(CA_KEYS.bundle) ?? certPem, notAfter: readCertificate(certPem).notAfter };
}

export function caToSecretData(ca: CaMaterial): Record<string, string> {
  const encode = (text: string) => Buffer.from(text).toString('base64');
  return { [CA_KEYS.cert]: encode(ca.certPem), [CA_KEYS.key]: encode(ca.keyPem), [CA_KEYS.bundle]: encode(ca.bundle) };
}

export function caIsUsable(ca: CaMaterial | undefined, settings: CaSettings, now: Date): ca is CaMaterial {
  if (!ca) return false;
  const facts = readCertificate(ca.certPem);
  return !needsRenewal(facts.notBefore, facts.notAfter, now, settings.renewBeforeMs);
}

export async function newCA(settings: CaSettings, now: Date): Promise<CaMaterial> {
  // A distinct subject per CA: with two same-named CAs in one bundle, chain building can pick the wrong one.
  const issued: IssuedCertificate = await createCA({
    commonName: `portcullis-ca-${now.getTime().toString(36)}`,
    notAfter: new Date(now.getTime() + settings.durationMs),
  });
  return { certPem: issued.certPem, keyPem: issued.keyPem, notAfter: issued.notAfter, bundle: issued.certPem };
}
