/**
 * manager: the reconcilers, each given what it reads (the caches of owned.ts, the registries,
 * what the endpoint serves) and what it writes with: the CA, the suite-validation webhook, the
 * orphan sweep, the AdmissionPolicies' configurations, and the suites (with their native
 * policies' hand-over), registered in one record keyed by kind, each with the key it runs under
 * (controller/dispatch.ts); they run only on the leader, through the work queue (leading.ts).
 */
import type { Kube } from '../apiserver/client.ts';
import { CA_KEY, CaReconciler, cachedRotationFacts, type CaSecret } from '../controller/ca.ts';
import type { Registrations } from '../controller/dispatch.ts';
import type { EventRecorder } from '../controller/events.ts';
import { NAMESPACED_KEY, AdmissionPolicyReconciler } from '../controller/admission-policies.ts';
import { NativeHandover } from '../controller/native.ts';
import { ORPHANS_KEY, OrphanSweeper } from '../controller/orphans.ts';
import { SuiteReconciler } from '../controller/reconciler.ts';
import { SELF_KEY, SuiteValidationReconciler } from '../controller/suite-validation-webhook.ts';
import type { ServeCertificate } from '../controller/serving-certificates.ts';
import { CA_SECRET } from '../api/names.ts';
import type { CertificateStore } from '../certs/store.ts';
import type { OperatorConfig } from '../config.ts';
import type { Metrics } from '../health/metrics.ts';
import { componentLogger } from '../log.ts';
import type { ClusterState } from './cluster-state.ts';
import type { Owned } from './owned.ts';
import type { Registries } from './registries.ts';
import type { Serving } from './serving.ts';

export interface Parts {
  kube: Kube;
  /** The operator's settings, with the port it really serves on. */
  config: OperatorConfig;
  state: ClusterState;
  registries: Registries;
  serving: Serving;
  owned: Owned;
  certificates: CertificateStore;
  metrics: Metrics;
  events: EventRecorder;
}

export interface Reconcilers {
  /** What the work queue runs, by kind. */
  registrations: Registrations;
  /** Read by the Watches: whether a rotation is under way. */
  ca: CaReconciler;
  /** Run by the queue of a replica that does not lead too (`follow`). */
  namespaced: AdmissionPolicyReconciler;
}

export function makeReconcilers(parts: Parts): Reconcilers {
  const { kube, config, state, serving, owned, certificates, metrics, events } = parts;
  const { registry, policyRegistry, auditor } = parts.registries;
  const { cached } = owned;
  const ca = new CaReconciler({
    kube,
    cached: () => owned.secrets.get(CA_SECRET, config.namespace) as CaSecret | undefined,
    namespace: config.namespace,
    settings: { durationMs: config.caDurationMs, renewBeforeMs: config.caRenewBeforeMs, overlapMs: config.caOverlapMs },
    log: componentLogger('ca'),
    // What the endpoint serves: with the admission thread, what it acknowledged as well as what the store holds.
    facts: cachedRotationFacts({ secrets: owned.secrets, suites: owned.suites, configurations: owned.configurations, certificates: serving.thread ?? certificates }),
  });
  // A rotation is counted once, by whichever of the reconcile and the Secret's watch event installs the new certificate first.
  const serve: ServeCertificate = (key, certPem, keyPem) => {
    if (certificates.install(key, certPem, keyPem)) metrics.rotated('serving');
  };
  const thread = serving.thread;
  const self = new SuiteValidationReconciler({ kube, config, ca, cached, serve, log: componentLogger('suite-validation') });
  const orphans = new OrphanSweeper({ kube, suites: owned.suites, made: owned.made, log: componentLogger('orphans') });
  const namespaced = new AdmissionPolicyReconciler({
    kube,
    config,
    ca,
    policies: owned.policies,
    synced: () => owned.policiesSynced(),
    registry: policyRegistry,
    certificates,
    cached,
    schemas: serving.schemas,
    authorRights: serving.authorRights,
    author: serving.policyAuthors,
    ...(auditor ? { audit: (namespace: string, name: string) => auditor.policyStatus(namespace, name) } : {}),
    // A policy that kept stopping a tenant worker.
    quarantined: (policy) => serving.admission.tenants?.quarantined(policy),
    log: componentLogger('namespaced'),
  });
  const suiteReconciler = new SuiteReconciler({
    kube,
    config,
    registry,
    ca,
    suites: owned.suites,
    cached,
    events,
    params: state.params,
    schemas: serving.schemas,
    serve,
    native: new NativeHandover({ kube, config, cached, now: () => Date.now() }),
    servesGeneration: thread && ((name, uid, generation) => thread.whenServing(name, uid, generation)),
    // What kept stopping a worker: this generation in the admission thread or the review workers, or a handler module's handler with the config it is given.
    quarantined: (suite) => {
      const { name, uid, generation = 0 } = suite.metadata;
      const held = [thread?.quarantined(name, uid, generation), serving.admission.offload.quarantined(name, uid, generation)];
      return held.filter(Boolean).join('; ') || undefined;
    },
    author: serving.suiteAuthors,
    authorRecheckMs: config.namespacedPolicyAuthorRecheckMs,
    ...(auditor ? { audit: (name: string) => auditor.suiteStatus(name) } : {}),
    log: componentLogger('reconciler'),
  });
  return {
    registrations: {
      // Alone, and before anything queued after it: every other reconcile signs with it.
      ca: { key: CA_KEY, alone: true, reconcile: () => ca.reconcile() },
      'suite-validation': { key: SELF_KEY, reconcile: () => self.reconcile() },
      orphans: { key: ORPHANS_KEY, reconcile: () => orphans.reconcile() },
      namespaced: { key: NAMESPACED_KEY, reconcile: () => namespaced.reconcile() },
      // Every other key is a suite's name.
      suite: { reconcile: (name) => suiteReconciler.reconcile(name) },
    },
    ca,
    namespaced,
  };
}
