/**
 * The suite reconciler: level-based and idempotent. From a suite's name it reads the suite, the
 * CA and the suite's objects, applies the difference (server-side apply, so an unchanged object
 * is not written), and reports status. Run twice, it changes nothing the second time.
 */
import { isDeepStrictEqual } from 'node:util';
import type { AdmissionSuite, SuiteStatus, WebhookStatus, WebhookType } from '../api/types.ts';
import { requestedEnforcement } from '../api/enforcement.ts';
import type { NativeHandover } from './native.ts';
import { configurationName, tlsSecretName, webhookFullName } from '../api/names.ts';
import { DEFAULT_CERTIFICATE_DURATION_MS, GROUP, VERSION, PLURAL } from '../api/types.ts';
import { parseDuration } from '../kubernetes/duration.ts';
import { CaNotIssuedError, type CaReconciler } from './ca.ts';
import type { OperatorConfig } from '../config.ts';
import { applyOwned, deleteIfExists, describeError, ForeignObjectError, isConflict, isNotFound, NotLeaderError, write, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import type { WatchedCache } from '../apiserver/watch.ts';
import type { Readiness } from '../apiserver/params-watches.ts';
import type { Logger } from '../log.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import { typeCheckSuite, TypeCheckMemo, type SchemaSource } from '../registry/typecheck.ts';
import { setConditions, type ConditionInput } from './conditions.ts';
import { CONFIGURATION_KINDS, metadataFor, serviceRef, servingNames, service, webhookConfigurations } from '../desired/objects.ts';
import { ensureLeaf, probeEndpointSoon, probeTarget, type ServeCertificate } from './serving-certificates.ts';
import type { EventRecorder } from './events.ts';
import type { Clearance } from './suite-author.ts';
import type { ReconcileResult } from './queue.ts';

const ENDPOINT_RETRY_MS = 250;
/** Nothing watches an object that is not ours, so a Conflict is looked at again on this period. */
const CONFLICT_RETRY_MS = 5_000;
/** Params still loading, or not readable (a role not granted yet), are looked at again on this period. */
const PARAMS_RETRY_MS = 2_000;

export interface ReconcilerDeps {
  kube: Kube;
  config: OperatorConfig;
  registry: SuiteRegistry;
  ca: CaReconciler;
  suites: WatchedCache<AdmissionSuite>;
  /** The operator's caches of what it made (Secrets, Services, configurations): read there, not from the API server, when they hold it. */
  cached: CacheLookup;
  events: EventRecorder;
  /** Whether the operator can read each params collection a suite names (its watches). */
  params: { readiness(ref: { apiVersion: string; kind: string; namespace?: string }): Readiness };
  /** The OpenAPI schemas `status.typeChecking` is computed against (and their epoch, which moves when one changes); without them, nothing is reported there. */
  schemas?: SchemaSource & { epoch(): number };
  /** Serves a suite's certificate here at once (serving-certificates.ts); without it, only once its Secret's watch event arrives. */
  serve?: ServeCertificate;
  /**
   * Whether the endpoint serves this generation of the suite (true, or false after a wait), where
   * it is served from a copy of the registry (the admission thread); without it, syncing the registry serves it.
   */
  servesGeneration?(name: string, uid: string | undefined, generation: number): Promise<boolean>;
  /** The native policies of the suites' webhooks enforced by the API server, and the hand-over to and from them. */
  native: NativeHandover;
  /**
   * Why the endpoint does not serve this generation of the suite: it kept stopping a worker
   * (src/workers/restarts.ts), so its webhooks are answered by their failurePolicy; undefined when it serves it.
   */
  quarantined?(suite: AdmissionSuite): string | undefined;
  /**
   * Whether the suite's recorded author may read its params (suite-author.ts), asked before it is
   * served; it also brings the registry in line. Absent: served as it compiles.
   */
  author?: { clear(suite: AdmissionSuite): Promise<Clearance> };
  /** How long a cleared author's answer holds: a suite with params is reconciled again after it. */
  authorRecheckMs?: number;
  /** status.audit: what the background audit found of the suite (src/audit); absent, nothing is said. */
  audit?(name: string): SuiteStatus['audit'] | undefined;
  log: Logger;
  now?: () => Date;
}

export class SuiteReconciler {
  private readonly deps: ReconcilerDeps;
  private readonly now: () => Date;
  /** Each suite's last type check, by generation and schema epoch. */
  private readonly typeChecks = new TypeCheckMemo();
  /**
   * Each suite's version our last status write was made over, while it made a newer one. A
   * reconcile woken before the suite's cache has that write (by its own Secret's or Service's
   * event) would compare against the old status, write again over a stale version, conflict, read
   * the suite and write once more; the write's own watch event wakes the suite again anyway.
   */
  private readonly statusWrittenOver = new Map<string, string>();
  /** Each suite's uid, to forget what the hand-over remembered of it once it is deleted. */
  private readonly uids = new Map<string, string>();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const suite = this.deps.suites.get(name);
    // A deleted suite's objects go through garbage collection (owner references), even with no operator running.
    if (!suite) {
      this.typeChecks.forget(name);
      this.deps.native.forget(this.uids.get(name));
      this.uids.delete(name);
      this.statusWrittenOver.delete(name);
      return;
    }
    this.uids.set(name, suite.metadata.uid);
    try {
      return await this.converge(suite);
    } catch (err) {
      if (err instanceof NotLeaderError || err instanceof CaNotIssuedError) throw err;
      if (err instanceof ForeignObjectError) return await this.conflict(suite, err);
      const message = describeError(err);
      await this.writeStatus(suite, [{ type: 'Ready', status: 'False', reason: 'ReconcileFailed', message }], {}).catch(() => undefined);
      await this.deps.events.record(suite, 'Warning', 'ReconcileFailed', `${message}; retrying with backoff`);
      throw err;
    }
  }

  private async converge(suite: AdmissionSuite): Promise<ReconcileResult> {
    // Before anything is served or registered: the params are read only for an author who may read them.
    const clearance = this.deps.author ? await this.deps.author.clear(suite) : undefined;
    if (clearance && clearance.state !== 'cleared') return this.notCleared(suite, clearance);
    const compiled = this.deps.registry.sync(suite);
    if (compiled.errors.length > 0) {
      // A suite that cannot work registers nothing: remove what an earlier generation registered.
      // (Its native policies go too: the native process removes those this status no longer lists.)
      await this.removeConfigurations(suite, new Set());
      const message = compiled.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
      await this.writeStatus(
        suite,
        [
          { type: 'Ready', status: 'False', reason: 'InvalidSpec', message },
          { type: 'WebhooksRegistered', status: 'False', reason: 'InvalidSpec', message: 'nothing is registered while the spec is invalid' },
        ],
        { webhooks: [], webhookCount: 0 },
      );
      return;
    }

    const typeChecking = await this.typeChecking(suite);
    const ca = this.deps.ca.material();
    const serving = await ensureLeaf(
      this.deps.kube,
      ca,
      {
        metadata: metadataFor(suite, tlsSecretName(suite.metadata.name), this.deps.config.namespace),
        names: servingNames(suite, this.deps.config),
        durationMs: parseDuration(suite.spec.certificate?.duration ?? '') ?? DEFAULT_CERTIFICATE_DURATION_MS,
        renewBeforeMs: parseDuration(suite.spec.certificate?.renewBefore ?? ''),
        keyAlgorithm: suite.spec.certificate?.keyAlgorithm ?? 'ECDSA',
      },
      this.now(),
      this.deps.cached,
    );
    this.deps.serve?.(suite.metadata.name, serving.certPem, serving.keyPem);
    if (serving.issuedSerial) {
      // An Event is a record for people: written beside the reconcile, not in its way.
      void this.deps.events.record(suite, 'Normal', 'CertificateIssued', `issued serving certificate ${serving.issuedSerial} valid until ${serving.notAfter.toISOString()}`);
    }
    const certificateStatus = {
      notAfter: serving.notAfter.toISOString(),
      caNotAfter: ca.notAfter.toISOString(),
      renewalTime: serving.renewalTime.toISOString(),
    };
    const certificateReady: ConditionInput = { type: 'CertificateReady', status: 'True', reason: 'Issued', message: `serving certificate valid until ${certificateStatus.notAfter}` };
    const svc = service(suite, this.deps.config);
    const applied = svc ? await applyOwned(this.deps.kube, svc, this.deps.cached) : undefined;

    // The webhooks enforced natively first: their policies are in force before a webhook goes.
    const { plans, requeueAfterMs: handover } = await this.deps.native.applyNative(suite);
    const registering = new Set(plans.filter((p) => p.register).map((p) => p.webhook.name));

    // Register (or repoint) only once the endpoint serves this generation and answers, on the API
    // server's own path to it, with the certificate the caBundle trusts: when there is a webhook to register.
    const generation = suite.metadata.generation ?? 0;
    const target = probeTarget(this.deps.config, applied, serviceRef(suite, this.deps.config).port);
    const probe =
      registering.size === 0
        ? true
        : this.deps.servesGeneration && !(await this.deps.servesGeneration(suite.metadata.name, suite.metadata.uid, generation))
          ? `the admission endpoint does not serve generation ${generation} of the suite yet`
          : await probeEndpointSoon(target, servingNames(suite, this.deps.config)[0]!, ca.bundle, serving.certPem);
    if (probe !== true) {
      await this.writeStatus(suite, [certificateReady, { type: 'WebhooksRegistered', status: 'False', reason: 'WaitingForEndpoint', message: probe }, { type: 'Ready', status: 'False', reason: 'WaitingForEndpoint', message: probe }], {
        certificate: certificateStatus,
        ...typeChecking,
      });
      return { requeueAfterMs: ENDPOINT_RETRY_MS };
    }

    const configurations = webhookConfigurations(suite, this.deps.config, ca.bundle, (w) => registering.has(w.name));
    for (const configuration of configurations.values()) await applyOwned(this.deps.kube, configuration, this.deps.cached);
    await this.removeConfigurations(suite, new Set(configurations.keys()));

    const webhooks: WebhookStatus[] = plans.map((p) => ({
      name: webhookFullName(suite.metadata.name, p.webhook.name),
      type: p.webhook.type,
      enforcement: p.enforcement,
      ...(p.reason ? { reason: p.reason } : {}),
    }));
    const native = webhooks.filter((w) => w.enforcement === 'Native').length;
    // Params the operator cannot read leave the suite registered (each request then follows its
    // webhook's failurePolicy, as ValidatingAdmissionPolicy does without a binding's params) but
    // not Ready, saying what is missing; looked at again until they can be read. (A native
    // webhook's params are read by the API server, not the operator.)
    const params = plans.flatMap(({ webhook: w, enforcement }) => (w.params && enforcement === 'Webhook' ? [{ webhook: w.name, readiness: this.deps.params.readiness(w.params) }] : []));
    const unreadable = params.flatMap(({ webhook, readiness }) => (readiness.state === 'unreadable' ? [`webhook ${webhook}: ${readiness.reason}`] : []));
    // Asked for Native and served by webhook (native enforcement off, or a policy the API server refused): enforced, but not as asked.
    const notNative = plans.filter((p) => p.enforcement === 'Webhook' && requestedEnforcement(suite, p.webhook) === 'Native');
    const quarantined = this.deps.quarantined?.(suite);
    // Planned Native, and the native process has not written its policy yet (or does not run).
    const awaiting = plans.filter((p) => p.awaitingNative).map((p) => p.webhook.name);
    const ready: ConditionInput = quarantined
      ? { type: 'Ready', status: 'False', reason: 'Quarantined', message: `quarantined, its webhooks answered by their failurePolicy: ${quarantined}` }
      : awaiting.length > 0
        ? {
            type: 'Ready',
            status: 'False',
            reason: 'WaitingForNativePolicy',
            message: `the native enforcement process (the portcullis-native Deployment) has not written the ValidatingAdmissionPolicy and binding of webhook(s) ${awaiting.join(', ')} yet`,
          }
        : notNative.length > 0
          ? { type: 'Ready', status: 'False', reason: 'NotEnforcedNatively', message: `served by webhook instead: ${notNative.map((p) => `webhook ${p.webhook.name}: ${p.reason}`).join('; ')}` }
          : unreadable.length > 0
            ? { type: 'Ready', status: 'False', reason: 'ParamsUnavailable', message: `the operator cannot read the params of ${unreadable.join('; ')}` }
            : { type: 'Ready', status: 'True', reason: 'Ready', message: 'the suite is served and registered' };
    const registered = `${webhooks.length - native} webhook(s) registered${native > 0 ? `, ${native} enforced natively by the API server` : ''}`;
    await this.writeStatus(suite, [certificateReady, { type: 'WebhooksRegistered', status: 'True', reason: 'Registered', message: registered }, ready], {
      certificate: certificateStatus,
      webhooks,
      webhookCount: webhooks.length,
      ...typeChecking,
    });
    if (handover !== undefined) return { requeueAfterMs: handover };
    if (params.some(({ readiness }) => readiness.state !== 'ready')) return { requeueAfterMs: PARAMS_RETRY_MS };
    const renewal = Math.max(1000, serving.renewalTime.getTime() - this.now().getTime());
    // The author is asked again when its answer grows old: one who loses the access loses the suite.
    const recheck = clearance && plans.some((p) => p.webhook.params) ? (this.deps.authorRecheckMs ?? Infinity) : Infinity;
    return { requeueAfterMs: Math.min(renewal, recheck) };
  }

  /**
   * The suite's author may not read its params (or it could not be asked): nothing of it is
   * served (suite-author.ts keeps it out of the registry) and nothing registered, as for an invalid
   * spec; asked again later. An answer the API server could not give leaves what is registered as
   * it is (an earlier generation that passed stays served), and is asked again soon.
   */
  private async notCleared(suite: AdmissionSuite, clearance: Exclude<Clearance, { state: 'cleared' }>): Promise<ReconcileResult> {
    const message = clearance.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    if (clearance.state === 'unknown') {
      await this.writeStatus(suite, [{ type: 'Ready', status: 'False', reason: 'ParamsForbidden', message: `not served until its author is checked: ${message}` }], {});
      return { requeueAfterMs: PARAMS_RETRY_MS };
    }
    await this.removeConfigurations(suite, new Set());
    await this.writeStatus(
      suite,
      [
        { type: 'Ready', status: 'False', reason: 'ParamsForbidden', message: `not served: ${message}` },
        { type: 'WebhooksRegistered', status: 'False', reason: 'ParamsForbidden', message: "nothing is registered while the suite's author may not read its params" },
      ],
      { webhooks: [], webhookCount: 0 },
    );
    return { requeueAfterMs: this.deps.authorRecheckMs ?? CONFLICT_RETRY_MS };
  }

  /**
   * status.typeChecking, as ValidatingAdmissionPolicy's: the expressions that fail to type-check
   * against the kinds their webhook matches. Never changes what the suite does (a suite with
   * definite errors got in with `typeCheckErrors: Warn`, or while no operator checked it, or
   * before a CRD changed); a schema that cannot be read leaves the last report as it is.
   */
  private async typeChecking(suite: AdmissionSuite): Promise<Pick<SuiteStatus, 'typeChecking'>> {
    const schemas = this.deps.schemas;
    if (!schemas) return {};
    try {
      return await this.typeChecks.status(suite.metadata.name, suite, schemas.epoch(), () => typeCheckSuite(suite, schemas));
    } catch (err) {
      this.deps.log.warn('type checking failed', { suite: suite.metadata.name, error: describeError(err) });
      return {};
    }
  }

  /** An object the suite needs is someone else's: reported, never taken over; looked at again later. */
  private async conflict(suite: AdmissionSuite, err: ForeignObjectError): Promise<ReconcileResult> {
    const message = err.message;
    await this.writeStatus(
      suite,
      [
        { type: 'Ready', status: 'False', reason: 'Conflict', message },
        { type: 'WebhooksRegistered', status: 'False', reason: 'Conflict', message: `${err.object} is not ours` },
      ],
      {},
    );
    await this.deps.events.record(suite, 'Warning', 'Conflict', message);
    return { requeueAfterMs: CONFLICT_RETRY_MS };
  }

  private async removeConfigurations(suite: AdmissionSuite, keep: Set<WebhookType>): Promise<void> {
    for (const [type, kind] of Object.entries(CONFIGURATION_KINDS) as [WebhookType, string][]) {
      if (keep.has(type)) continue;
      const header = { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: configurationName(suite.metadata.name) } };
      // What we made carries our labels, so is in the cache; only what this suite owns, never a
      // configuration someone else made under the same name.
      const existing = this.deps.cached(header) as (KubeObject & { metadata: { ownerReferences?: { uid: string }[] } }) | undefined;
      if (existing?.metadata.ownerReferences?.some((o) => o.uid === suite.metadata.uid)) await deleteIfExists(this.deps.kube, header);
    }
  }

  private async writeStatus(suite: AdmissionSuite, conditions: ConditionInput[], fields: Partial<SuiteStatus>): Promise<void> {
    const generation = suite.metadata.generation ?? 0;
    const current = suite.status ?? {};
    const audit = this.deps.audit?.(suite.metadata.name);
    const { audit: _old, ...kept } = current;
    const status: SuiteStatus = {
      ...kept,
      ...fields,
      ...(audit ? { audit } : {}),
      observedGeneration: generation,
      conditions: setConditions(current.conditions, conditions, generation, this.now()),
    };
    // The API server hands status back with its keys sorted: compared as JSON values, not as text
    // (which rewrote an unchanged status on every reconcile).
    if (isDeepStrictEqual(JSON.parse(JSON.stringify(status)), current)) return;
    const name = suite.metadata.name;
    // The cache is behind our own last write: its event will bring the suite back here.
    if (suite.metadata.resourceVersion && this.statusWrittenOver.get(name) === suite.metadata.resourceVersion) return;
    const kube = this.deps.kube;
    const replace = async (base: AdmissionSuite) => {
      const written = (await write(kube, () => kube.custom.replaceClusterCustomObjectStatus({ group: GROUP, version: VERSION, plural: PLURAL, name, body: { ...base, status } }))) as AdmissionSuite;
      const over = base.metadata.resourceVersion;
      if (over && written?.metadata?.resourceVersion && written.metadata.resourceVersion !== over) this.statusWrittenOver.set(name, over);
      else this.statusWrittenOver.delete(name);
    };
    try {
      await replace(suite);
    } catch (err) {
      // Deleted meanwhile: garbage collection takes it from here.
      if (isNotFound(err)) return;
      if (!isConflict(err)) throw err;
      // The cache was behind: write over the newest version, whose spec we have just converged only if unchanged.
      const fresh = (await this.deps.kube.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name })) as AdmissionSuite;
      if (fresh.metadata.generation !== suite.metadata.generation) return;
      await replace(fresh);
    }
  }
}
