/**
 * What wakes each reconciler, declared in one place (controller-runtime's For/Owns/Watches): for
 * each watched kind, the pure map from an event to the work-queue keys it adds, and `Watches`,
 * which the operator hands to its caches as their onChange callbacks. Besides adding keys, the
 * callbacks keep what every replica needs whether or not it leads: the registries compiled from the
 * suites and the AdmissionPolicies, and the certificate store filled from the serving Secrets. Creates no cache and talks to
 * no API server: operator.ts makes the caches and connects them here.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CA_SECRET, NAMESPACED, SUITE_LABEL, SUITE_VALIDATION, tlsSecretName } from '../api/names.ts';
import type { AdmissionPolicy, AdmissionSuite } from '../api/types.ts';
import { caFromSecret } from '../certs/authority.ts';
import type { CertificateStore } from '../certs/store.ts';
import type { Logger } from '../log.ts';
import { NAMESPACED_KEY } from './admission-policies.ts';
import { CA_KEY } from './ca.ts';
import { ORPHANS_KEY } from './orphans.ts';
import { SELF_CERTIFICATE, SELF_KEY } from './suite-validation-webhook.ts';

export type SecretObject = KubernetesObject & { data?: Record<string, string> };

/** A key to add now, or after a delay. */
export type Wake = { key: string; afterMs?: number };

/** What the event maps read of the operator's state (its caches and the CA's). */
export interface WatchState {
  /** Whether a CA rotation is under way: only then do other objects' changes concern the CA. */
  rotating(): boolean;
  /** Whether the suite cache holds a suite of this name. */
  hasSuite(name: string): boolean;
  /** Every suite's name, in the cache's order. */
  suiteNames(): string[];
}

/** Past the garbage collector's discovery period: by then it has removed what it can. */
export const ORPHAN_SWEEP_AFTER_DELETE_MS = 45_000;

const now = (key: string): Wake => ({ key });

/** A suite changed (For): it is reconciled; deleted, the CA may go on and the orphans are swept later. */
export function suiteWakes(name: string, deleted: boolean, state: WatchState): Wake[] {
  if (!deleted) return [now(name)];
  return [
    // A rotation step may have waited on this suite's bundle or leaf.
    ...(state.rotating() ? [now(CA_KEY)] : []),
    // Garbage collection removes its objects; if it cannot (its CRD just removed), the sweep does.
    { key: ORPHANS_KEY, afterMs: ORPHAN_SWEEP_AFTER_DELETE_MS },
  ];
}

/** A Secret we made changed (Owns): the CA's wakes the CA and everyone it signs for; a leaf, its owner. */
export function secretWakes(secret: SecretObject, state: WatchState): Wake[] {
  const name = secret.metadata?.name;
  // A leaf re-signed by the new CA is what a rotation's last step waits for.
  const wakes = state.rotating() ? [now(CA_KEY)] : [];
  if (name === CA_SECRET) return [...wakes, now(CA_KEY), now(SELF_KEY), now(NAMESPACED_KEY), ...state.suiteNames().map(now)];
  const owner = servedCertificateKey(secret);
  // The AdmissionPolicies are served with the operator's own certificate.
  if (owner === SELF_CERTIFICATE) return [...wakes, now(SELF_KEY), now(NAMESPACED_KEY)];
  if (owner !== undefined) return [...wakes, now(owner)];
  return wakes;
}

/** A Service we made changed (Owns): one deleted or edited by hand is put back by its owner. */
export function serviceWakes(service: KubernetesObject, state: WatchState): Wake[] {
  return [...(service.metadata?.name === SUITE_VALIDATION.service ? [now(SELF_KEY)] : []), ...ownerWake(service, state)];
}

/** A webhook configuration we made changed (Owns): put back by its owner; the CA's promotion waits on the bundles. */
export function configurationWakes(configuration: KubernetesObject, state: WatchState): Wake[] {
  return [
    // A bundle carrying the successor is what a rotation's promotion waits for.
    ...(state.rotating() ? [now(CA_KEY)] : []),
    ...(configuration.metadata?.name === SUITE_VALIDATION.configuration ? [now(SELF_KEY)] : []),
    ...(configuration.metadata?.name === NAMESPACED.configuration || configuration.metadata?.name === NAMESPACED.legacyConfiguration ? [now(NAMESPACED_KEY)] : []),
    ...ownerWake(configuration, state),
  ];
}

/** A native policy or binding changed (written by the native process): its suite's hand-over looks again. */
export function nativeWakes(object: KubernetesObject, state: WatchState): Wake[] {
  return ownerWake(object, state);
}

/** Level-based: a new leader looks at everything, adopting what exists; the CA first. */
export function leadingWakes(state: WatchState): Wake[] {
  return [now(CA_KEY), now(SELF_KEY), now(ORPHANS_KEY), now(NAMESPACED_KEY), ...state.suiteNames().map(now)];
}

/** The suite an object of ours belongs to, if that suite is there. */
function ownerWake(object: KubernetesObject, state: WatchState): Wake[] {
  const suite = object.metadata?.labels?.[SUITE_LABEL];
  return suite && state.hasSuite(suite) ? [now(suite)] : [];
}

/**
 * The certificate-store key a Secret's certificate is served under: the operator's own for the
 * suite-validation Secret, a suite's name for that suite's serving Secret; none for any other (the CA's).
 */
export function servedCertificateKey(secret: SecretObject): string | undefined {
  const name = secret.metadata?.name;
  if (name === SUITE_VALIDATION.secret) return SELF_CERTIFICATE;
  const suite = secret.metadata?.labels?.[SUITE_LABEL];
  return suite && name === tlsSecretName(suite) ? suite : undefined;
}

export interface WatchesDeps {
  queue: { add(key: string): void; addAfter(key: string, delayMs: number): void };
  state: WatchState;
  /** What serves the suites on this replica: the registry, behind the check of their authors (suite-author.ts). */
  registry: { sync(suite: AdmissionSuite): unknown; remove(name: string): void };
  /** What serves the AdmissionPolicies on this replica: their registry, behind the same check (suite-author.ts). */
  policies: { sync(policy: AdmissionPolicy): unknown; remove(namespace: string, name: string): void };
  certificates: CertificateStore;
  /** A served certificate replaced by another, or the CA that signs replaced. */
  rotated(kind: 'serving' | 'ca'): void;
  log: Logger;
}

/** The caches' onChange callbacks: first keep the registry and the store, then add the keys. */
export class Watches {
  private readonly deps: WatchesDeps;
  private lastSigningCa?: string;

  constructor(deps: WatchesDeps) {
    this.deps = deps;
  }

  readonly suite = (suite: AdmissionSuite, deleted: boolean): void => {
    const name = suite.metadata!.name!;
    if (deleted) {
      this.deps.log.info('suite deleted; no longer served', { suite: name });
      this.deps.registry.remove(name);
      this.deps.certificates.remove(name);
    } else {
      // Every replica compiles every suite, once per generation, so every replica can serve it.
      this.deps.registry.sync(suite);
    }
    this.wake(suiteWakes(name, deleted, this.deps.state));
  };

  /** Any AdmissionPolicy changed: every replica compiles it (to serve it); the leader reconciles them all under one key. */
  readonly policy = (policy: AdmissionPolicy, deleted: boolean): void => {
    const { namespace, name } = policy.metadata;
    if (deleted) this.deps.policies.remove(namespace, name);
    else this.deps.policies.sync(policy);
    this.wake([now(NAMESPACED_KEY)]);
  };

  readonly secret = (secret: SecretObject, deleted: boolean): void => {
    if (secret.metadata?.name === CA_SECRET) {
      const signing = deleted ? undefined : caFromSecret(secret.data, secret.metadata?.annotations)?.current.certPem;
      if (signing && this.lastSigningCa && signing !== this.lastSigningCa) this.deps.rotated('ca');
      this.lastSigningCa = signing ?? this.lastSigningCa;
    }
    const key = servedCertificateKey(secret);
    if (key !== undefined && this.deps.certificates.setFromSecret(key, deleted ? undefined : secret.data)) this.deps.rotated('serving');
    this.wake(secretWakes(secret, this.deps.state));
  };

  /**
   * The API server's OpenAPI schemas changed (a CRD created, edited or removed): every suite, and
   * the AdmissionPolicies, are reconciled again, so status.typeChecking is checked against what is
   * served now.
   */
  readonly schemas = (): void => this.wake([now(NAMESPACED_KEY), ...this.deps.state.suiteNames().map(now)]);

  readonly service = (service: KubernetesObject): void => this.wake(serviceWakes(service, this.deps.state));

  readonly configuration = (configuration: KubernetesObject): void => this.wake(configurationWakes(configuration, this.deps.state));

  readonly native = (object: KubernetesObject): void => this.wake(nativeWakes(object, this.deps.state));

  /** This replica starts leading. */
  leading(): void {
    this.wake(leadingWakes(this.deps.state));
  }

  private wake(wakes: Wake[]): void {
    for (const { key, afterMs } of wakes) {
      if (afterMs === undefined) this.deps.queue.add(key);
      else this.deps.queue.addAfter(key, afterMs);
    }
  }
}
