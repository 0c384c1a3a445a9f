/**
 * The suite reconciler: level-based and idempotent. From a suite's name it reads the suite, the
 * CA and the suite's objects, applies the difference (server-side apply, so an unchanged object
 * is not written), and reports status. Run twice, it changes nothing the second time.
 */
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { AdmissionSuite, SuiteStatus, WebhookType } from '../api/types.ts';
import { configurationName, tlsSecretName, webhookFullName } from '../api/names.ts';
import { GROUP, VERSION, PLURAL } from '../api/types.ts';
import { parseDuration } from '../api/duration.ts';
import type { CaMaterial } from '../certs/authority.ts';
import type { CaReconciler } from './ca.ts';
import { issueLeaf, isSignedBy, readCertificate } from '../certs/x509.ts';
import { renewalTime } from '../certs/renewal.ts';
import type { OperatorConfig } from '../config.ts';
import { apply, deleteIfExists, describeError, getObject, isConflict, NotLeaderError, write, type Kube, type KubeObject } from '../kube/client.ts';
import type { WatchedCache } from '../kube/watch.ts';
import type { Logger } from '../log.ts';
import type { SuiteRegistry } from '../registry/registry.ts';
import { setConditions, type ConditionInput } from './conditions.ts';
import { CONFIGURATION_KINDS, servingNames, service, tlsSecret, webhookConfigurations } from './desired.ts';
import type { EventRecorder } from './events.ts';
import type { ReconcileResult } from './queue.ts';

const DEFAULT_CERT_DURATION_MS = 2160 * 3600_000;
const ENDPOINT_RETRY_MS = 250;
const PROBE_TIMEOUT_MS = 2000;

export interface ReconcilerDeps {
  kube: Kube;
  config: OperatorConfig;
  registry: SuiteRegistry;
  ca: CaReconciler;
  suites: WatchedCache<AdmissionSuite>;
  events: EventRecorder;
  log: Logger;
  now?: () => Date;
}

interface ServingCertificate {
  certPem: string;
  notAfter: Date;
  renewalTime: Date;
}

export class SuiteReconciler {
  private readonly deps: ReconcilerDeps;
  private readonly now: () => Date;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.now = deps.now ?? (() => new Date());
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const suite = this.deps.suites.get(name);
    // A deleted suite's objects go through garbage collection (owner references), even with no operator running.
    if (!suite) return;
    try {
      return await this.converge(suite);
    } catch (err) {
      if (err instanceof NotLeaderError) throw err;
      const message = describeError(err);
      await this.writeStatus(suite, [{ type: 'Ready', status: 'False', reason: 'ReconcileFailed', message }], {}).catch(() => undefined);
      await this.deps.events.record(suite, 'Warning', 'ReconcileFailed', `${message}; retrying with backoff`);
      throw err;
    }
  }

  private async converge(suite: AdmissionSuite): Promise<ReconcileResult> {
    const compiled = this.deps.registry.sync(suite);
    if (compiled.errors.length > 0) {
      // A suite that cannot work registers nothing: remove what an earlier generation registered.
      await this.removeConfigurations(suite, new Set());
      const message = compiled.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
      await this.writeStatus(
        suite,
        [
          { type: 'Ready', status: 'False', reason: 'InvalidSpec', message },
          { type: 'WebhooksRegistered', status: 'False', reason: 'InvalidSpec', message: 'nothing is registered while the spec is invalid' },
        ],
        { webhooks: [] },
      );
      return;
    }

    const ca = await this.deps.ca.material();
    const serving = await this.ensureServingCertificate(suite, ca);
    const certificateStatus = {
      notAfter: serving.notAfter.toISOString(),
      caNotAfter: ca.notAfter.toISOString(),
      renewalTime: serving.renewalTime.toISOString(),
    };
    const certificateReady: ConditionInput = { type: 'CertificateReady', status: 'True', reason: 'Issued', message: `serving certificate valid until ${certificateStatus.notAfter}` };
    const svc = service(suite, this.deps.config);
    if (svc) await apply(this.deps.kube, svc);

    // Register (or repoint) only once the endpoint answers with the certificate the caBundle trusts.
    const probe = await this.probeEndpoint(suite, ca.bundle, serving.certPem);
    if (probe !== true) {
      await this.writeStatus(
        suite,
        [
          certificateReady,
          { type: 'WebhooksRegistered', status: 'False', reason: 'WaitingForEndpoint', message: probe },
          { type: 'Ready', status: 'False', reason: 'WaitingForEndpoint', message: probe },
        ],
        { certificate: certificateStatus },
      );
      return { requeueAfterMs: ENDPOINT_RETRY_MS };
    }

    const configurations = webhookConfigurations(suite, this.deps.config, ca.bundle);
    for (const configuration of configurations.values()) await apply(this.deps.kube, configuration);
    await this.removeConfigurations(suite, new Set(configurations.keys()));

    const webhooks = suite.spec.webhooks.map((w) => ({ name: webhookFullName(suite.metadata.name, w.name), type: w.type }));
    await this.writeStatus(
      suite,
      [
        certificateReady,
        { type: 'WebhooksRegistered', status: 'True', reason: 'Registered', message: `${webhooks.length} webhook(s) registered` },
        { type: 'Ready', status: 'True', reason: 'Ready', message: 'the suite is served and registered' },
      ],
      { certificate: certificateStatus, webhooks },
    );
    return { requeueAfterMs: Math.max(1000, serving.renewalTime.getTime() - this.now().getTime()) };
  }

  private async ensureServingCertificate(suite: AdmissionSuite, ca: CaMaterial): Promise<ServingCertificate> {
    const { kube, config } = this.deps;
    const names = servingNames(suite, config);
    const durationMs = parseDuration(suite.spec.certificate?.duration ?? '') ?? DEFAULT_CERT_DURATION_MS;
    const renewBeforeMs = parseDuration(suite.spec.certificate?.renewBefore ?? '');
    const header = { apiVersion: 'v1', kind: 'Secret', metadata: { name: tlsSecretName(suite.metadata.name), namespace: config.namespace } };
    const secret = await getObject<KubeObject & { data?: Record<string, string> }>(kube, header);
    const decode = (key: string) => (secret?.data?.[key] ? Buffer.from(secret.data[key], 'base64').toString() : '');
    const certPem = decode('tls.crt');
    const keyPem = decode('tls.key');
    if (certPem && keyPem && isSignedBy(certPem, ca.certPem)) {
      const facts = readCertificate(certPem);
      const renewal = renewalTime(facts.notBefore, facts.notAfter, renewBeforeMs);
      const namesMatch = isIpHost(names) || names.every((n) => facts.dnsNames.includes(n));
      if (namesMatch && renewal > this.now()) {
        // The bundle changes during a CA rotation; the certificate need not.
        if (decode('ca.crt') !== ca.bundle) await apply(kube, tlsSecret(suite, config, certPem, keyPem, ca.bundle));
        return { certPem, notAfter: facts.notAfter, renewalTime: renewal };
      }
    }
    const ipHost = isIpHost(names);
    const issued = await issueLeaf(ca, {
      commonName: names[0]!,
      dnsNames: ipHost ? [] : names,
      ipAddresses: ipHost ? names : [],
      usage: 'server',
      notAfter: new Date(this.now().getTime() + durationMs),
      keyAlgorithm: suite.spec.certificate?.keyAlgorithm ?? 'ECDSA',
    });
    await apply(kube, tlsSecret(suite, config, issued.certPem, issued.keyPem, ca.bundle));
    await this.deps.events.record(suite, 'Normal', 'CertificateIssued', `issued serving certificate ${issued.serial} valid until ${issued.notAfter.toISOString()}`);
    return { certPem: issued.certPem, notAfter: issued.notAfter, renewalTime: renewalTime(issued.notBefore, issued.notAfter, renewBeforeMs) };
  }

  /** true, or why the endpoint does not yet serve `certPem` verifiably under `bundle`. */
  private probeEndpoint(suite: AdmissionSuite, bundle: string, certPem: string): Promise<true | string> {
    const servername = servingNames(suite, this.deps.config)[0]!;
    const expected = new X509Certificate(certPem).raw;
    return new Promise((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port: this.deps.config.servingPort,
        ...(isIpHost([servername]) ? {} : { servername }),
        ca: bundle,
        checkServerIdentity: (host, cert) => tls.checkServerIdentity(host, cert),
        timeout: PROBE_TIMEOUT_MS,
      });
      const done = (result: true | string) => {
        socket.destroy();
        resolve(result);
      };
      socket.once('secureConnect', () => {
        const served = socket.getPeerX509Certificate();
        done(served && Buffer.compare(served.raw, expected) === 0 ? true : 'the endpoint does not serve the current certificate yet');
      });
      socket.once('error', (err) => done(`the admission endpoint is not serving ${servername} yet: ${err.message}`));
      socket.once('timeout', () => done('the admission endpoint did not answer the TLS handshake'));
    });
  }

  private async removeConfigurations(suite: AdmissionSuite, keep: Set<WebhookType>): Promise<void> {
    for (const [type, kind] of Object.entries(CONFIGURATION_KINDS) as [WebhookType, string][]) {
      if (keep.has(type)) continue;
      const header = { apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name: configurationName(suite.metadata.name) } };
      const existing = await getObject<KubeObject & { metadata: { ownerReferences?: { uid: string }[] } }>(this.deps.kube, header);
      // Only what this suite owns: never a configuration someone else made under the same name.
      if (existing?.metadata.ownerReferences?.some((o) => o.uid === suite.metadata.uid)) await deleteIfExists(this.deps.kube, header);
    }
  }

  private async writeStatus(suite: AdmissionSuite, conditions: ConditionInput[], fields: Partial<SuiteStatus>): Promise<void> {
    const generation = suite.metadata.generation ?? 0;
    const current = suite.status ?? {};
    const status: SuiteStatus = {
      ...current,
      ...fields,
      observedGeneration: generation,
      conditions: setConditions(current.conditions, conditions, generation, this.now()),
    };
    if (JSON.stringify(status) === JSON.stringify(current)) return;
    const kube = this.deps.kube;
    const replace = (base: AdmissionSuite) =>
      write(kube, () => kube.custom.replaceClusterCustomObjectStatus({ group: GROUP, version: VERSION, plural: PLURAL, name: suite.metadata.name, body: { ...base, status } }));
    try {
      await replace(suite);
    } catch (err) {
      if (!isConflict(err)) throw err;
      // The cache was behind: write over the newest version, whose spec we have just converged only if unchanged.
      const fresh = (await this.deps.kube.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name: suite.metadata.name })) as AdmissionSuite;
      if (fresh.metadata.generation !== suite.metadata.generation) return;
      await replace(fresh);
    }
  }
}

function isIpHost(names: string[]): boolean {
  return names.length === 1 && /^[\d.]+$|:/.test(names[0]!);
}

