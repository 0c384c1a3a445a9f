/**
 * The CA reconciler: keeps the `portcullis-ca` Secret and walks its rotation one step at a time
 * (see certs/authority.ts). Level-based like the suite reconciler: it reads the Secret and the
 * cluster facts, takes the one step that is due, and asks to be woken when the next one is.
 */
import { CA_SECRET, MANAGED_BY_LABELS } from '../api/names.ts';
import {
  caFromSecret,
  caToSecret,
  materialOf,
  newCA,
  nextRotationStep,
  type CaMaterial,
  type CaSettings,
  type CaState,
  type RotationFacts,
} from '../certs/authority.ts';
import { apply, getObject, type Kube, type KubeObject } from '../kube/client.ts';
import type { Logger } from '../log.ts';
import type { ReconcileResult } from './queue.ts';

/** The work-queue key of the CA; suite names are DNS labels, so it cannot clash with one. */
export const CA_KEY = '#ca';

type SecretObject = KubeObject & { data?: Record<string, string>; metadata: { annotations?: Record<string, string> } };

export interface CaReconcilerDeps {
  kube: Kube;
  namespace: string;
  settings: CaSettings;
  facts: RotationFacts;
  log: Logger;
  now?: () => Date;
}

export class CaReconciler {
  private readonly deps: CaReconcilerDeps;
  private readonly now: () => Date;

  constructor(deps: CaReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** The CA to sign with and the bundle to trust; creates the first CA when there is none. */
  async material(): Promise<CaMaterial> {
    const state = await this.read();
    if (state) return materialOf(state);
    const created: CaState = { current: await newCA(this.deps.settings, this.now()) };
    await this.write(created);
    this.deps.log.info('issued the operator CA');
    return materialOf(created);
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
    const secret = await getObject<SecretObject>(this.deps.kube, this.header());
    return caFromSecret(secret?.data, secret?.metadata.annotations);
  }

  private async write(state: CaState): Promise<void> {
    const { data, annotations } = caToSecret(state);
    const header = this.header();
    // The CA belongs to no suite: it goes with the operator's namespace.
    await apply(this.deps.kube, { ...header, metadata: { ...header.metadata, labels: { ...MANAGED_BY_LABELS }, annotations }, type: 'Opaque', data });
  }

  private header() {
    return { apiVersion: 'v1', kind: 'Secret', metadata: { name: CA_SECRET, namespace: this.deps.namespace } };
  }
}
