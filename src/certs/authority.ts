/**
 * The operator CA: one for all suites, kept in the `portcullis-ca` Secret, rotated with an
 * overlap. The Secret holds the current CA (signs leaves), at times its successor (trusted, signs
 * nothing yet) and its predecessor (trusted while a leaf it signed may still be served); the
 * caBundle is all of them. This module is the pure part: what the Secret holds, what the next
 * step of a rotation is, and the bundle. Reading and writing the Secret is the controller's job.
 */
import { createCA, readCertificate, type KeyPairPem } from './x509.ts';
import { renewalTime } from './renewal.ts';

export interface CaSettings {
  durationMs: number;
  renewBeforeMs?: number;
  /** How long a new CA is trusted before it signs, and an old one after it stopped signing. */
  overlapMs: number;
}

export interface CaState {
  current: KeyPairPem;
  next?: KeyPairPem;
  previousCertPem?: string;
  /** When the successor entered the bundle. */
  nextSince?: Date;
  /** When the predecessor stopped signing. */
  previousSince?: Date;
}

export interface CaMaterial extends KeyPairPem {
  notAfter: Date;
  /** What every suite's caBundle carries: current, then successor, then predecessor. */
  bundle: string;
}

const KEYS = { cert: 'tls.crt', key: 'tls.key', nextCert: 'next.crt', nextKey: 'next.key', previousCert: 'previous.crt', bundle: 'ca-bundle.crt' } as const;
export const CA_ANNOTATIONS = { nextSince: 'admission.portcullis.dev/next-ca-since', previousSince: 'admission.portcullis.dev/previous-ca-since' } as const;

export function bundleOf(state: CaState): string {
  return (
    [state.current.certPem, state.next?.certPem, state.previousCertPem]
      .filter(Boolean)
      .map((pem) => pem!.trim())
      .join('\n') + '\n'
  );
}

export function materialOf(state: CaState): CaMaterial {
  return { ...state.current, notAfter: readCertificate(state.current.certPem).notAfter, bundle: bundleOf(state) };
}

export function caFromSecret(data: Record<string, string> | undefined, annotations: Record<string, string> | undefined): CaState | undefined {
  const decode = (key: string) => (data?.[key] ? Buffer.from(data[key], 'base64').toString() : undefined);
  const certPem = decode(KEYS.cert);
  const keyPem = decode(KEYS.key);
  if (!certPem || !keyPem) return undefined;
  const nextCert = decode(KEYS.nextCert);
  const nextKey = decode(KEYS.nextKey);
  const date = (text: string | undefined) => (text ? new Date(text) : undefined);
  return {
    current: { certPem, keyPem },
    next: nextCert && nextKey ? { certPem: nextCert, keyPem: nextKey } : undefined,
    previousCertPem: decode(KEYS.previousCert),
    nextSince: date(annotations?.[CA_ANNOTATIONS.nextSince]),
    previousSince: date(annotations?.[CA_ANNOTATIONS.previousSince]),
  };
}

export function caToSecret(state: CaState): { data: Record<string, string>; annotations: Record<string, string> } {
  const data: Record<string, string> = {};
  const put = (key: string, text: string | undefined) => {
    if (text) data[key] = Buffer.from(text).toString('base64');
  };
  put(KEYS.cert, state.current.certPem);
  put(KEYS.key, state.current.keyPem);
  put(KEYS.nextCert, state.next?.certPem);
  put(KEYS.nextKey, state.next?.keyPem);
  put(KEYS.previousCert, state.previousCertPem);
  put(KEYS.bundle, bundleOf(state));
  const annotations: Record<string, string> = {};
  if (state.next && state.nextSince) annotations[CA_ANNOTATIONS.nextSince] = state.nextSince.toISOString();
  if (state.previousCertPem && state.previousSince) annotations[CA_ANNOTATIONS.previousSince] = state.previousSince.toISOString();
  return { data, annotations };
}

export async function newCA(settings: CaSettings, now: Date): Promise<KeyPairPem> {
  // A distinct subject per CA: with two same-named CAs in one bundle, chain building can pick the wrong one.
  const { certPem, keyPem } = await createCA({
    commonName: `portcullis-ca-${now.getTime().toString(36)}`,
    notAfter: new Date(now.getTime() + settings.durationMs),
  });
  return { certPem, keyPem };
}

export function caRenewalTime(ca: KeyPairPem, settings: CaSettings): Date {
  const facts = readCertificate(ca.certPem);
  return renewalTime(facts.notBefore, facts.notAfter, settings.renewBeforeMs);
}

/** What the cluster tells the rotation: whether every caBundle carries the successor, whether the predecessor still signs a served leaf. */
export interface RotationFacts {
  allBundlesCarry(certPem: string): boolean;
  anyLeafSignedBy(certPem: string): boolean;
}

export type RotationStep = { kind: 'create' } | { kind: 'add-next' } | { kind: 'promote' } | { kind: 'drop-previous' } | { kind: 'wait'; untilMs: number };

/**
 * The next step of the CA's life: create; when the current CA is due, add a successor to the
 * bundles; once every bundle has carried it for the overlap, let it sign (promote); once no
 * served leaf is signed by the predecessor and the overlap has passed, drop it.
 */
export function nextRotationStep(state: CaState | undefined, settings: CaSettings, facts: RotationFacts, now: Date): RotationStep {
  if (!state) return { kind: 'create' };
  const t = now.getTime();
  if (readCertificate(state.current.certPem).notAfter.getTime() <= t) return { kind: 'create' };
  if (state.previousCertPem) {
    const since = state.previousSince?.getTime() ?? 0;
    const expired = readCertificate(state.previousCertPem).notAfter.getTime() <= t;
    if (expired || (t - since >= settings.overlapMs && !facts.anyLeafSignedBy(state.previousCertPem))) return { kind: 'drop-previous' };
    return { kind: 'wait', untilMs: Math.max(1000, Math.min(since + settings.overlapMs - t, 5000)) };
  }
  if (state.next) {
    const since = state.nextSince?.getTime() ?? 0;
    if (t - since >= settings.overlapMs && facts.allBundlesCarry(state.next.certPem)) return { kind: 'promote' };
    return { kind: 'wait', untilMs: Math.max(1000, Math.min(since + settings.overlapMs - t, 5000)) };
  }
  const due = caRenewalTime(state.current, settings).getTime();
  if (due <= t) return { kind: 'add-next' };
  return { kind: 'wait', untilMs: due - t };
}
