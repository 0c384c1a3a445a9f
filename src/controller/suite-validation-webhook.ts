/**
 * The operator's own webhook that refuses invalid AdmissionSuites on apply (field paths in the
 * message), its twin for AdmissionPolicies (both `failurePolicy: Ignore`: a stopped operator never
 * blocks editing suites) and the exceptions' (`Fail`: a security check), all in one configuration
 * owned by the AdmissionSuite CRD, so uninstalling the CRD removes it. Reconciled like a suite:
 * certificate, Service, probe, then registration.
 */
import { DEFAULT_CERTIFICATE_DURATION_MS, GROUP, PLURAL, POLICY_PLURAL, VERSION } from '../api/types.ts';
import { MANAGED_BY_LABELS, NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import { CLUSTER_EXCEPTION_PLURAL, EXCEPTION_PLURAL, EXCEPTIONS } from '../api/exceptions.ts';
import type { OperatorConfig } from '../config.ts';
import { applyOwned, getObject, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';
import type { CaReconciler } from './ca.ts';
import { operatorService, serviceClientConfig, type ObjectMetadata, type OwnerReference, type ServiceRef } from '../desired/objects.ts';
import type { ReconcileResult } from './queue.ts';
import { ensureLeaf, probeEndpointSoon, probeTarget, type ServeCertificate } from './serving-certificates.ts';

/** The work-queue key of the suite-validation webhook; not a DNS label, so no suite can have it. */
export const SELF_KEY = '#self';
/** The certificate-store key of the operator's own serving certificate. */
export const SELF_CERTIFICATE = '#operator';

const SERVICE_PORT = 443;

/** The operator's own Service, which the suite-validation webhook and the AdmissionPolicies' configurations name. */
export function selfServiceRef(config: Pick<OperatorConfig, 'namespace'>): ServiceRef {
  return { namespace: config.namespace, name: SUITE_VALIDATION.service, port: SERVICE_PORT };
}

/** The TLS server name the API server sends to the operator's own Service (its certificate's first name). */
export function selfServerName(config: Pick<OperatorConfig, 'namespace'>): string {
  return `${SUITE_VALIDATION.service}.${config.namespace}.svc`;
}
/** With no CRD there is nothing to validate; no watch tells us when one is installed, so look again. */
const CRD_RETRY_MS = 5_000;

export interface SuiteValidationReconcilerDeps {
  kube: Kube;
  config: OperatorConfig;
  ca: CaReconciler;
  /** The operator's caches of what it made: read there, not from the API server, when they hold it. */
  cached: CacheLookup;
  /** Serves the operator's certificate here at once (serving-certificates.ts); without it, only once its Secret's watch event arrives. */
  serve?: ServeCertificate;
  log: Logger;
  now?: () => Date;
}

export class SuiteValidationReconciler {
  private readonly deps: SuiteValidationReconcilerDeps;
  private readonly now: () => Date;

  constructor(deps: SuiteValidationReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  async reconcile(): Promise<ReconcileResult> {
    const { kube, config } = this.deps;
    const crd = await getObject<KubeObject & { metadata: { uid: string } }>(kube, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: SUITE_VALIDATION.crd },
    });
    if (!crd) return { requeueAfterMs: CRD_RETRY_MS };
    const owner: OwnerReference = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: SUITE_VALIDATION.crd, uid: crd.metadata.uid };
    const metadata = (name: string, namespace?: string): ObjectMetadata => ({
      name,
      ...(namespace ? { namespace } : {}),
      labels: { ...MANAGED_BY_LABELS, [`${GROUP}/component`]: 'suite-validation' },
      ownerReferences: [owner],
    });
    const serverName = selfServerName(config);

    const ca = this.deps.ca.material();
    const serving = await ensureLeaf(
      kube,
      ca,
      {
        metadata: metadata(SUITE_VALIDATION.secret, config.namespace),
        names: [serverName, `${serverName}.cluster.local`, `${SUITE_VALIDATION.service}.${config.namespace}`, SUITE_VALIDATION.service],
        durationMs: DEFAULT_CERTIFICATE_DURATION_MS,
        keyAlgorithm: 'ECDSA',
      },
      this.now(),
      this.deps.cached,
    );
    this.deps.serve?.(SELF_CERTIFICATE, serving.certPem, serving.keyPem);
    const ref = selfServiceRef(config);
    const service = await applyOwned(kube, operatorService(metadata(SUITE_VALIDATION.service, config.namespace), ref, config), this.deps.cached);
    const probe = await probeEndpointSoon(probeTarget(config, service, SERVICE_PORT), serverName, ca.bundle, serving.certPem);
    if (probe !== true) {
      this.deps.log.debug('suite validation not registered yet', { reason: probe });
      return { requeueAfterMs: 250 };
    }
    await applyOwned(
      kube,
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: metadata(SUITE_VALIDATION.configuration),
        webhooks: [
          {
            name: SUITE_VALIDATION.webhook,
            clientConfig: serviceClientConfig(ref, SUITE_VALIDATION.path, config, ca.bundle),
            rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [GROUP], apiVersions: [VERSION], resources: [PLURAL], scope: 'Cluster' }],
            // Ignore: with no operator running, suites can still be created, edited and deleted.
            failurePolicy: 'Ignore',
            sideEffects: 'None',
            timeoutSeconds: 5,
            admissionReviewVersions: ['v1'],
          },
          {
            name: NAMESPACED.validationWebhook,
            clientConfig: serviceClientConfig(ref, NAMESPACED.validationPath, config, ca.bundle),
            rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [GROUP], apiVersions: [VERSION], resources: [POLICY_PLURAL], scope: 'Namespaced' }],
            failurePolicy: 'Ignore',
            sideEffects: 'None',
            timeoutSeconds: 5,
            admissionReviewVersions: ['v1'],
          },
          {
            // Fail, unlike the suites': while no operator answers, a holder of the exception role could
            // otherwise create one letting through writes it may not make itself. CREATE and UPDATE
            // only, so deleting an exception never needs the operator.
            name: EXCEPTIONS.validationWebhook,
            clientConfig: serviceClientConfig(ref, EXCEPTIONS.validationPath, config, ca.bundle),
            rules: [
              { operations: ['CREATE', 'UPDATE'], apiGroups: [GROUP], apiVersions: [VERSION], resources: [EXCEPTION_PLURAL], scope: 'Namespaced' },
              { operations: ['CREATE', 'UPDATE'], apiGroups: [GROUP], apiVersions: [VERSION], resources: [CLUSTER_EXCEPTION_PLURAL], scope: 'Cluster' },
            ],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            timeoutSeconds: 5,
            admissionReviewVersions: ['v1'],
          },
        ],
      },
      this.deps.cached,
    );
    return { requeueAfterMs: Math.max(1000, serving.renewalTime.getTime() - this.now().getTime()) };
  }
}
