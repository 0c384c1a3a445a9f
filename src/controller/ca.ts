/**
 * The CA reconciler: keeps the `portcullis-ca` Secret and walks its rotation one step at a time
 * (see certs/authority.ts). Level-based like the suite reconciler: it reads the Secret and the
 * cluster facts, takes the one step that is due, and asks to be woken when the next one is.
 * It runs alone (an exclusive key of the work queue), and returns only once the watch cache shows
 * what it wrote, so the suite reconcilers, which read the CA from that cache, never see an older one.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CA_SECRET, MANAGED_BY_LABELS, NAMESPACED, SUITE_LABEL, SUITE_VALIDATION } from '../api/names.ts';
import { caFromSecret, caToSecret, materialOf, newCA, nextRotationStep, type CaMaterial, type CaSettings, type CaState, type RotationFacts } from '../certs/authority.ts';
import { isSignedBy } from '../certs/x509.ts';
import type { CertificateStore } from '../certs/store.ts';
import { apply, getObject, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';
import type { ReconcileResult } from './queue.ts';

/** The work-queue key of the CA; suite names are DNS labels, so it cannot clash with one. */
export const CA_KEY = '#ca';

/** How long a write waits to show in the watch cache before the reconcile returns anyway. */
const CACHE_CATCH_UP_MS = 5_000;

/** No CA yet: the CA's own reconcile, which the queue runs first, issues it. */
export class CaNotIssuedError extends Error {
  constructor() {
    super('the operator CA is not issued yet');
  }
}

export type CaSecret = KubeObject & { data?: Record<string, string>; metadata: { annotations?: Record<string, string> } };

export interface CaReconcilerDeps {
  kube: Kube;
  /** The CA Secret as the operator's watch cache holds it. */
  cached: () => CaSecret | undefined;
  namespace: string;
  settings: CaSettings;
  facts: RotationFacts;
  log: Logger;
  now?: () => Date;
}

export type ConfigurationObject = KubernetesObject & { webhooks?: { clientConfig?: { caBundle?: string } }[] };

/** The operator's caches a rotation step looks at. */
export interface RotationCaches {
  secrets: { list(): (KubernetesObject & { data?: Record<string, string> })[] };
  suites: { get(name: string): unknown; list(): KubernetesObject[] };
  /** The mutating and the validating webhook configurations we made. */
  configurations: { list(): ConfigurationObject[] }[];
  certificates: Pick<CertificateStore, 'served'>;
}

/** The cluster facts a rotation step waits on, read from the caches (no API call). */
export function cachedRotationFacts({ secrets, suites, configurations, certificates }: RotationCaches): RotationFacts {
  return {
    // Only configurations the API server may still call: one whose suite is gone waits only for
    // garbage collection, and no reconcile will ever update its bundle.
    allBundlesCarry: (certPem) =>
      configurations.every((cache) =>
        cache
          .list()
          .filter((c) => c.metadata?.name === SUITE_VALIDATION.configuration || c.metadata?.name === NAMESPACED.configuration || suites.get(c.metadata?.labels?.[SUITE_LABEL] ?? '') !== undefined)
          .every((c) =>
            (c.webhooks ?? []).every((w) =>
              Buffer.from(w.clientConfig?.caBundle ?? '', 'base64')
                .toString()
                .includes(certPem.trim()),
            ),
          ),
      ),
    anyLeafSignedBy: (certPem) =>
      secrets.list().some((s) => s.metadata?.name !== CA_SECRET && s.data?.['tls.crt'] && isSignedBy(Buffer.from(s.data['tls.crt'], 'base64').toString(), certPem)) ||
      suites.list().some((s) => {
        const served = certificates.served(s.metadata!.name!);
        return served !== undefined && isSignedBy(served, certPem);
      }),
  };
}

export class CaReconciler {
  private readonly deps: CaReconcilerDeps;
  private readonly now: () => Date;
  /** The parsed material of the cached Secret, by its resourceVersion: parsed once per CA change. */
  private loaded?: { resourceVersion: string; material: CaMaterial; rotating: boolean };

  constructor(deps: CaReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** The CA to sign with and the bundle to trust, from the watch cache (no API call per suite). */
  material(): CaMaterial {
    const loaded = this.load();
    if (!loaded) throw new CaNotIssuedError();
    return loaded.material;
  }

  /** Whether a rotation is under way (a successor or a predecessor in the bundle): only then do other objects' changes concern the CA. */
  rotating(): boolean {
    return this.load()?.rotating ?? false;
  }

  private load(): { material: CaMaterial; rotating: boolean } | undefined {
    const secret = this.deps.cached();
    const resourceVersion = secret?.metadata.resourceVersion as string | undefined;
    if (!secret || !resourceVersion) return undefined;
    if (this.loaded?.resourceVersion === resourceVersion) return this.loaded;
    const state = caFromSecret(secret.data, secret.metadata.annotations);
    if (!state) return undefined;
    this.loaded = { resourceVersion, material: materialOf(state), rotating: Boolean(state.next || state.previousCertPem) };
    return this.loaded;
  }

  async reconcile(): Promise<ReconcileResult> {
    const state = await this.read();
    const now = this.now();
    const step = nextRotationStep(state, this.deps.settings, this.deps.facts, now);
    switch (step.kind) {
      case 'create':
        await this.write({ current: await newCA(this.deps.settings, now), previousCertPem: state?.current.certPem, previousSince: state ? now : undefined });
        this.deps.log.info('issued the operator CA');
        return { requeueAfterMs: 1000 };
      case 'add-next':
        await this.write({ ...state!, next: await newCA(this.deps.settings, now), nextSince: now });
        this.deps.log.info('added the successor CA to every caBundle; it signs nothing yet');
        return { requeueAfterMs: 1000 };
      case 'promote':
        await this.write({ current: state!.next!, previousCertPem: state!.current.certPem, previousSince: now });
        this.deps.log.info('the successor CA now signs; the previous CA stays trusted until nothing it signed is served');
        return { requeueAfterMs: 1000 };
      case 'drop-previous':
        await this.write({ ...state!, previousCertPem: undefined, previousSince: undefined });
        this.deps.log.info('removed the previous CA from every caBundle');
        return { requeueAfterMs: 1000 };
      case 'wait':
        return { requeueAfterMs: step.untilMs };
    }
  }

  private async read(): Promise<CaState | undefined> {
    const secret = await getObject<CaSecret>(this.deps.kube, this.header());
    return caFromSecret(secret?.data, secret?.metadata.annotations);
  }

  private async write(state: CaState): Promise<void> {
    const { data, annotations } = caToSecret(state);
    const header = this.header();
    // The CA belongs to no suite: it goes with the operator's namespace.
    const written = await apply(this.deps.kube, { ...header, metadata: { ...header.metadata, labels: { ...MANAGED_BY_LABELS }, annotations }, type: 'Opaque', data });
    const resourceVersion = (written.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    const deadline = Date.now() + CACHE_CATCH_UP_MS;
    while (resourceVersion && this.deps.cached()?.metadata.resourceVersion !== resourceVersion && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private header() {
    return { apiVersion: 'v1', kind: 'Secret', metadata: { name: CA_SECRET, namespace: this.deps.namespace } };
  }
}
