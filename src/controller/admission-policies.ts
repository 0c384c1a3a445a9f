/**
 * The AdmissionPolicies' reconciler, level-based on one key: brings the policy registry up to date,
 * keeps the two `portcullis--namespaced` configurations (one per type while one is served; owned by the
 * CRD, so uninstalling removes them; registered only once suite-validation-webhook.ts' endpoint answers with a trusted
 * certificate), and writes each policy's status. A policy with params is served only once its recorded
 * author may read them (suite-author.ts). Run twice, it changes nothing the second time.
 */
import { isDeepStrictEqual } from 'node:util';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type AuditStatus, type PolicyStatus, type WebhookType } from '../api/types.ts';
import { MANAGED_BY_LABELS, NAMESPACED, SUITE_VALIDATION } from '../api/names.ts';
import type { OperatorConfig } from '../config.ts';
import type { CertificateStore } from '../certs/store.ts';
import { applyOwned, deleteIfExists, describeError, getObject, isConflict, isNotFound, write, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { WatchedCache } from '../apiserver/watch.ts';
import type { Logger } from '../log.ts';
import { policyKey, type CompiledPolicy, type PolicyRegistry } from '../registry/policies.ts';
import { CLEARED, type AuthorGate, type Clearance } from './suite-author.ts';
import { recordedAuthor } from '../api/authorization.ts';
import type { PolicyAuthorRights } from '../apiserver/policy-author.ts';
import { withheldPolicies, type ServingLimits } from '../registry/withheld.ts';
import type { FieldError } from '../api/validate.ts';
import { typeCheckPolicy, TypeCheckMemo, type SchemaSource } from '../registry/typecheck.ts';
import type { CaReconciler } from './ca.ts';
import { setConditions, type ConditionInput } from './conditions.ts';
import { CONFIGURATION_KINDS, namespacedConfiguration, type ObjectMetadata } from '../desired/objects.ts';
import type { ReconcileResult } from './queue.ts';
import { probeEndpointSoon, probeTarget } from './serving-certificates.ts';
import { SELF_CERTIFICATE, selfServerName, selfServiceRef } from './suite-validation-webhook.ts';

/** The work-queue key of the AdmissionPolicies; not a DNS label, so no suite can have it. */
export const NAMESPACED_KEY = '#namespaced';

const ENDPOINT_RETRY_MS = 250;
/** An author the API server could not be asked about is asked again after this long. */
const AUTHOR_RETRY_MS = 2_000;
/** With no CRD (or its cache not listed yet) there is nothing to serve; no watch tells us when one is installed, so look again. */
const CRD_RETRY_MS = 5_000;

export interface AdmissionPolicyReconcilerDeps {
  kube: Kube;
  config: OperatorConfig;
  ca: CaReconciler;
  policies: WatchedCache<AdmissionPolicy>;
  /** Whether the policy cache has listed (before that, an empty cache would unregister every policy). */
  synced: () => boolean;
  registry: PolicyRegistry;
  /** The API server's schemas, for status.typeChecking (absent: not type-checked, as in unit tests). */
  schemas?: SchemaSource & { epoch(): number };
  /** The operator's own serving certificate, as served now (suite-validation-webhook.ts keeps it). */
  certificates: Pick<CertificateStore, 'served'>;
  cached: CacheLookup;
  /** Asks again whether a Mutating policy's author may still change what it changes (absent: never asked again, as in unit tests). */
  authorRights?: Pick<PolicyAuthorRights, 'check'>;
  /**
   * Whether a policy's recorded author may read its params (suite-author.ts), asked before it is
   * compiled and served; it also brings the registry in line. Absent: served as it compiles.
   */
  author?: Pick<AuthorGate<AdmissionPolicy>, 'clear' | 'gates'>;
  /** status.audit: what the background audit found in the policy's namespace (src/audit); absent, nothing is said. */
  audit?(namespace: string, name: string): AuditStatus | undefined;
  /**
   * Why this generation of the policy is not evaluated: it kept stopping a tenant worker
   * (src/workers/restarts.ts), so the requests it matches are refused by failurePolicy; undefined when it is.
   */
  quarantined?(policy: AdmissionPolicy): string | undefined;
  log: Logger;
  now?: () => Date;
}

/** The last answer about a policy's author: for which generation and author, when, and what they may not do. */
interface AuthorCheck {
  key: string;
  at: number;
  refused: string[];
}

export class AdmissionPolicyReconciler {
  private readonly deps: AdmissionPolicyReconcilerDeps;
  private readonly now: () => Date;
  /** The last type check of each policy, by namespace/name. */
  private readonly typeChecks = new TypeCheckMemo();
  /** The last answer about each Mutating policy's author, by namespace/name. */
  private readonly authorChecks = new Map<string, AuthorCheck>();

  constructor(deps: AdmissionPolicyReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  async reconcile(): Promise<ReconcileResult> {
    const { registry } = this.deps;
    if (!this.deps.synced()) return { requeueAfterMs: CRD_RETRY_MS };
    const { entries, gated, unknown, valid } = await this.judge();
    const served = valid.filter((p) => !registry.withheldBecause(p));

    let waiting: string | undefined;
    let failed: unknown;
    const legacy = this.ours('Mutating', NAMESPACED.legacyConfiguration) || this.ours('Validating', NAMESPACED.legacyConfiguration);
    if (served.length > 0 || this.ours('Mutating') || this.ours('Validating') || legacy) {
      try {
        waiting = await this.configure(served);
      } catch (err) {
        // Every policy's status still says so: one that cannot be registered is not silently left out.
        failed = err;
        waiting = `could not register ${NAMESPACED.configuration}: ${describeError(err)}`;
      }
      if (waiting === CRD_MISSING) return { requeueAfterMs: CRD_RETRY_MS };
    }
    for (const { policy, compiled: c, clearance } of entries) {
      const ready = clearance.state !== 'cleared' ? notCleared(clearance) : readiness(c!, registry.withheldBecause(c!), waiting, this.deps.quarantined?.(policy));
      await this.writeStatus(policy, ready, await this.typeChecking(policy));
    }
    if (failed) throw failed;
    if (waiting) return { requeueAfterMs: ENDPOINT_RETRY_MS };
    if (unknown) return { requeueAfterMs: AUTHOR_RETRY_MS };
    // Level-based: the authors are asked again when their answers grow old.
    return this.authorChecks.size > 0 || gated ? { requeueAfterMs: this.deps.config.namespacedPolicyAuthorRecheckMs } : undefined;
  }

  /**
   * What this replica serves, decided alike on every replica (the leader in `reconcile`, the others
   * in `follow`): each policy compiled as its author gate allows, and the valid ones withheld that
   * exceed the limits no team may break for the others or whose author may no longer change what
   * they change, before anything is registered. A replica that only followed the leader's status
   * would serve a new generation before the leader had judged it, or stop serving the old one.
   */
  private async judge() {
    const { registry } = this.deps;
    const policies = this.deps.policies.list();
    this.typeChecks.keepOnly(new Set(policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)));
    const { entries, gated, unknown } = await this.cleared(policies);
    // What each policy has compiled and served: none for one whose author may not read its params.
    const compiled = entries.flatMap(({ policy, compiled: c }) => (c ? [{ policy, compiled: c }] : []));
    const valid = compiled.filter((c) => c.compiled.webhook !== undefined).map((c) => c.compiled);
    const withheld = withheldPolicies(valid, this.servingLimits(), (type, kept) => this.configurationBytes(type, kept));
    const authorRefusals = await this.authorRefusals(compiled);
    for (const [key, refusal] of authorRefusals) withheld.set(key, refusal);
    registry.withhold(withheld);
    return { entries, gated, unknown, valid };
  }

  /**
   * A replica that does not lead withholds what the leader withholds, judged here alike (`judge`),
   * writing nothing; when to look again.
   */
  async follow(): Promise<ReconcileResult> {
    if (!this.deps.synced()) return { requeueAfterMs: CRD_RETRY_MS };
    const { gated, unknown } = await this.judge();
    if (unknown) return { requeueAfterMs: AUTHOR_RETRY_MS };
    return this.authorChecks.size > 0 || gated ? { requeueAfterMs: this.deps.config.namespacedPolicyAuthorRecheckMs } : undefined;
  }

  /**
   * Each policy with what it has compiled: cleared (its author may read its params, or it names
   * none), compiled for its generation; refused, nothing (the gate took it out of the registry); not
   * known yet, the earlier generation that was cleared, if one is served. Whether any was asked
   * about, and whether any answer is still to come.
   */
  private async cleared(policies: AdmissionPolicy[]): Promise<{ entries: { policy: AdmissionPolicy; compiled?: CompiledPolicy; clearance: Clearance }[]; gated: boolean; unknown: boolean }> {
    const { registry, author } = this.deps;
    const clearances = await Promise.all(policies.map((policy) => (author ? author.clear(policy) : CLEARED)));
    const entries = policies.map((policy, i) => {
      const clearance = clearances[i]!;
      const { namespace, name } = policy.metadata;
      if (clearance.state === 'cleared') return { policy, clearance, compiled: registry.sync(policy) };
      const earlier = clearance.state === 'unknown' ? registry.get(namespace, name) : undefined;
      return { policy, clearance, ...(earlier ? { compiled: earlier } : {}) };
    });
    return { entries, gated: author !== undefined && policies.some((p) => author.gates(p)), unknown: clearances.some((c) => c.state === 'unknown') };
  }

  /**
   * The Mutating policies whose author (the API server records the last writer in the policy's
   * annotations, deploy/07) may no longer update and patch what they change: asked again at most
   * every `namespacedPolicyAuthorRecheckMs` and whenever the policy or its author changes. A
   * policy without the annotations (written before them, or with the guard turned off) was
   * checked on apply only. An answer the API server could not give keeps the last one.
   */
  private async authorRefusals(compiled: { policy: AdmissionPolicy; compiled: CompiledPolicy }[]): Promise<Map<string, FieldError>> {
    const out = new Map<string, FieldError>();
    const rights = this.deps.authorRights;
    const seen = new Set<string>();
    const now = this.now().getTime();
    for (const { policy, compiled: c } of compiled) {
      const user = recordedAuthor(policy.metadata);
      if (!rights || c.type !== 'Mutating' || !c.webhook || !user) continue;
      const id = policyKey(c);
      seen.add(id);
      const key = JSON.stringify([c.generation, user.username, user.groups ?? []]);
      let last = this.authorChecks.get(id);
      if (!last || last.key !== key || now - last.at >= this.deps.config.namespacedPolicyAuthorRecheckMs) {
        try {
          const answer = await rights.check(user, c.namespace, c.rules);
          if (answer.unknown.length === 0 || !last || last.key !== key) last = { key, at: now, refused: [...answer.refused, ...answer.unknown] };
        } catch (err) {
          this.deps.log.warn('could not ask again about the author of an AdmissionPolicy', { namespace: c.namespace, policy: c.name, error: describeError(err) });
        }
        if (last) this.authorChecks.set(id, last);
      }
      if (last && last.refused.length > 0) {
        out.set(id, { field: `metadata.annotations[${NAMESPACED.authorAnnotation}]`, message: `its author may no longer change what it changes: ${last.refused.join('; ')}`, authorForbidden: true });
      }
    }
    for (const id of this.authorChecks.keys()) if (!seen.has(id)) this.authorChecks.delete(id);
    return out;
  }

  private servingLimits(): ServingLimits {
    return { perNamespace: this.deps.config.namespacedPoliciesPerNamespace, configurationBytes: CONFIGURATION_BYTES };
  }

  /** The size of the configuration of `type` for `kept`, as it would be written. */
  private configurationBytes(type: WebhookType, kept: CompiledPolicy[]): number {
    const { config } = this.deps;
    // The owner reference is left out: a few hundred bytes, the same whatever is kept.
    const metadata: ObjectMetadata = { name: NAMESPACED.configuration, labels: { ...MANAGED_BY_LABELS, [`${GROUP}/component`]: 'namespaced-policies' }, ownerReferences: [] };
    const configuration = namespacedConfiguration(type, kept, metadata, selfServiceRef(config), config, this.deps.ca.material().bundle);
    return configuration ? JSON.stringify(configuration).length : 0;
  }

  /** Applies (or removes) the two configurations; returns why they are not registered yet, if they are not. */
  private async configure(served: CompiledPolicy[]): Promise<string | undefined> {
    const { kube, config } = this.deps;
    const crd = await getObject<KubeObject & { metadata: { uid: string } }>(kube, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: NAMESPACED.crd },
    });
    if (!crd) return CRD_MISSING;
    const metadata: ObjectMetadata = {
      name: NAMESPACED.configuration,
      labels: { ...MANAGED_BY_LABELS, [`${GROUP}/component`]: 'namespaced-policies' },
      ownerReferences: [{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: NAMESPACED.crd, uid: crd.metadata.uid }],
    };
    const ca = this.deps.ca.material();
    const ref = selfServiceRef(config);
    const wanted = (['Mutating', 'Validating'] as const).map((type) => ({
      type,
      configuration: namespacedConfiguration(
        type,
        served.filter((p) => p.type === type),
        metadata,
        ref,
        config,
        ca.bundle,
      ),
    }));
    if (wanted.some((w) => w.configuration)) {
      // Registered only once the operator's endpoint answers, on the API server's own path, with the certificate the bundle trusts.
      const certPem = this.deps.certificates.served(SELF_CERTIFICATE);
      if (!certPem) return "the operator's serving certificate is not issued yet";
      const service = this.deps.cached({ apiVersion: 'v1', kind: 'Service', metadata: { name: SUITE_VALIDATION.service, namespace: config.namespace } });
      if (config.mode === 'cluster' && !service) return "the operator's Service is not there yet";
      const target = probeTarget(config, service, ref.port);
      const probe = await probeEndpointSoon(target, selfServerName(config), ca.bundle, certPem);
      if (probe !== true) return probe;
    }
    for (const { type, configuration } of wanted) {
      if (configuration) await applyOwned(kube, configuration, this.deps.cached);
      else if (this.ours(type)) await deleteIfExists(kube, header(type));
      // Left by an earlier version, it would run the teams' mutations a second time, after the suites'.
      if (this.ours(type, NAMESPACED.legacyConfiguration)) await deleteIfExists(kube, header(type, NAMESPACED.legacyConfiguration));
    }
    return undefined;
  }

  /** Whether a configuration of this type that we made exists (never one someone else made under the name). */
  private ours(type: WebhookType, name: string = NAMESPACED.configuration): boolean {
    const existing = this.deps.cached(header(type, name)) as (KubeObject & { metadata: { labels?: Record<string, string> } }) | undefined;
    return existing?.metadata.labels?.[`${GROUP}/component`] === 'namespaced-policies';
  }

  /** status.typeChecking, as a suite's (reconciler.ts). */
  private async typeChecking(policy: AdmissionPolicy): Promise<Pick<PolicyStatus, 'typeChecking'>> {
    const schemas = this.deps.schemas;
    if (!schemas || !policy.spec) return {};
    const { namespace, name } = policy.metadata;
    try {
      return await this.typeChecks.status(`${namespace}/${name}`, policy, schemas.epoch(), () => typeCheckPolicy(policy, schemas));
    } catch (err) {
      this.deps.log.warn('type checking failed', { namespace, policy: name, error: describeError(err) });
      return {};
    }
  }

  private async writeStatus(policy: AdmissionPolicy, ready: ConditionInput, typeChecking: Pick<PolicyStatus, 'typeChecking'>): Promise<void> {
    const generation = policy.metadata.generation ?? 0;
    const current = policy.status ?? {};
    const audit = this.deps.audit?.(policy.metadata.namespace, policy.metadata.name);
    const { audit: _old, ...kept } = current;
    const status: PolicyStatus = { ...kept, ...typeChecking, ...(audit ? { audit } : {}), observedGeneration: generation, conditions: setConditions(current.conditions, [ready], generation, this.now()) };
    // The API server hands status back with its keys sorted: compared as JSON values, not as text
    // (which rewrote an unchanged status on every reconcile).
    if (isDeepStrictEqual(JSON.parse(JSON.stringify(status)), current)) return;
    const { kube } = this.deps;
    const { name, namespace } = policy.metadata;
    const ref = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace, name };
    const replace = (base: AdmissionPolicy) => write(kube, () => kube.custom.replaceNamespacedCustomObjectStatus({ ...ref, body: { ...base, status } }));
    try {
      await replace(policy);
    } catch (err) {
      if (isNotFound(err)) return;
      if (!isConflict(err)) {
        this.deps.log.warn('could not write the status of an AdmissionPolicy', { namespace, policy: name, error: describeError(err) });
        throw err;
      }
      // The cache was behind: the next event of that policy wakes this reconcile again.
      const fresh = (await kube.custom.getNamespacedCustomObject(ref)) as AdmissionPolicy;
      if (fresh.metadata.generation === policy.metadata.generation) await replace(fresh);
    }
  }
}

const CRD_MISSING = '#crd-missing';

function header(type: WebhookType, name: string = NAMESPACED.configuration) {
  return { apiVersion: 'admissionregistration.k8s.io/v1', kind: CONFIGURATION_KINDS[type], metadata: { name } };
}

/**
 * The most the shared configurations may hold, serialized as JSON: the API server stores an object
 * whole in etcd (1.5 MiB by default, smaller in protobuf), so this leaves room. About 15,000
 * namespaces' names, or the rules of 16 policies of the largest size allowed by default.
 */
export const CONFIGURATION_BYTES = 1_048_576;

/**
 * The Ready condition of a policy whose author may not read its params, or could not be asked
 * about them: not served (an answer still to come leaves an earlier generation that was cleared
 * served, as for a suite).
 */
function notCleared(clearance: Exclude<Clearance, { state: 'cleared' }>): ConditionInput {
  const message = clearance.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  if (clearance.state === 'unknown') return { type: 'Ready', status: 'False', reason: 'ParamsForbidden', message: `not served until its author is checked: ${message}` };
  return { type: 'Ready', status: 'False', reason: 'ParamsForbidden', message: `not served: ${message}` };
}

/** The policy's Ready condition: why it is not served, or that it is. */
function readiness(policy: CompiledPolicy, withheld: FieldError | undefined, waiting: string | undefined, quarantined?: string): ConditionInput {
  const errors = withheld ? [withheld] : policy.errors;
  if (withheld?.authorForbidden) return { type: 'Ready', status: 'False', reason: 'AuthorForbidden', message: `not served: ${withheld.field}: ${withheld.message}` };
  if (errors.length > 0) {
    const message = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    const limited = errors.some((e) => e.limit);
    return { type: 'Ready', status: 'False', reason: limited ? 'ExceedsLimits' : 'InvalidSpec', message: limited ? `not served: ${message}` : message };
  }
  if (quarantined) return { type: 'Ready', status: 'False', reason: 'Quarantined', message: `quarantined, the requests it matches refused by failurePolicy: ${quarantined}` };
  if (waiting) return { type: 'Ready', status: 'False', reason: 'WaitingForEndpoint', message: waiting };
  return { type: 'Ready', status: 'True', reason: 'Served', message: `served for objects in namespace ${policy.namespace} through ${NAMESPACED.configuration}` };
}
