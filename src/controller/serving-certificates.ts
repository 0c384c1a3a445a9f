/**
 * Serving certificates and the check that an endpoint serves one: shared by the suites and by the
 * operator's own suite-validation webhook. A leaf is reused while it is signed by the current CA,
 * carries the names and is not due; otherwise a new one is issued and written.
 */
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { CaMaterial } from '../certs/authority.ts';
import { issueLeaf, isSignedBy, readCertificate, type KeyAlgorithm } from '../certs/x509.ts';
import { renewalTime } from '../certs/renewal.ts';
import { apply, applyNew, assertOurs, readOurs, type CacheLookup, type Kube, type KubeObject } from '../apiserver/client.ts';
import { tlsSecret, type ObjectMetadata } from '../desired/objects.ts';
import type { OperatorConfig } from '../config.ts';

const PROBE_TIMEOUT_MS = 2000;

export interface LeafSpec {
  /** The Secret's metadata (name, namespace, labels, owner). */
  metadata: ObjectMetadata;
  names: string[];
  durationMs: number;
  renewBeforeMs?: number;
  keyAlgorithm: KeyAlgorithm;
}

export interface ServingCertificate {
  certPem: string;
  keyPem: string;
  notAfter: Date;
  renewalTime: Date;
  /** The serial of a certificate issued by this call; undefined when the existing one was kept. */
  issuedSerial?: string;
}

export async function ensureLeaf(kube: Kube, ca: CaMaterial, spec: LeafSpec, now: Date, cached?: CacheLookup): Promise<ServingCertificate> {
  const header = { apiVersion: 'v1', kind: 'Secret', metadata: { name: spec.metadata.name, namespace: spec.metadata.namespace } };
  const secret = await readOurs<KubeObject & { data?: Record<string, string> }>(kube, { ...header, metadata: spec.metadata }, cached);
  // Never a Secret someone else keeps under this name: neither its key read nor the Secret overwritten.
  assertOurs(secret, { ...header, metadata: spec.metadata });
  const decode = (key: string) => (secret?.data?.[key] ? Buffer.from(secret.data[key], 'base64').toString() : '');
  const certPem = decode('tls.crt');
  const keyPem = decode('tls.key');
  if (certPem && keyPem && isSignedBy(certPem, ca.certPem)) {
    const facts = readCertificate(certPem);
    const renewal = renewalTime(facts.notBefore, facts.notAfter, spec.renewBeforeMs);
    const namesMatch = spec.names.every((n) => facts.dnsNames.includes(n));
    if (namesMatch && renewal > now) {
      // The bundle changes during a CA rotation; the certificate need not.
      if (decode('ca.crt') !== ca.bundle) await apply(kube, tlsSecret(spec.metadata, certPem, keyPem, ca.bundle));
      return { certPem, keyPem, notAfter: facts.notAfter, renewalTime: renewal };
    }
  }
  const issued = await issueLeaf(ca, {
    commonName: spec.names[0]!,
    dnsNames: spec.names,
    usage: 'server',
    notAfter: new Date(now.getTime() + spec.durationMs),
    keyAlgorithm: spec.keyAlgorithm,
  });
  // Not there (or no one was seen to have the name): written without force, so a Secret made meanwhile is never taken over.
  await (secret ? apply : applyNew)(kube, tlsSecret(spec.metadata, issued.certPem, issued.keyPem, ca.bundle));
  return {
    certPem: issued.certPem,
    keyPem: issued.keyPem,
    notAfter: issued.notAfter,
    renewalTime: renewalTime(issued.notBefore, issued.notAfter, spec.renewBeforeMs),
    issuedSerial: issued.serial,
  };
}

/**
 * Puts a serving certificate in front of this replica's endpoint (the certificate store, under its
 * key) as soon as the reconcile has it, rather than when its Secret's watch event arrives: under a
 * burst of new suites that event took longer than the probe's retries, and each such suite went
 * through WaitingForEndpoint (a status write and a requeue). The watch still serves every other
 * replica, and brings this one the same certificate again.
 */
export type ServeCertificate = (key: string, certPem: string, keyPem: string) => void;

/** Where the API server's calls arrive: this process's own port (local mode), or a Service's ClusterIP. */
export interface ProbeTarget {
  host: string;
  port: number;
}

/**
 * Connections made through a ClusterIP: each lands on one ready endpoint at random, so several
 * are made to reach every replica behind it with good odds before the API server is sent there.
 */
const CLUSTER_IP_PROBES = 4;

/**
 * The path the API server takes to a Service: its ClusterIP, routed by kube-proxy to a ready
 * endpoint. Until the Service has one and kube-proxy has its rules, a call fails with "connection
 * refused" or "no route to host"; a webhook registered before then fails admissions.
 */
export function serviceTarget(service: KubeObject | undefined, port: number): ProbeTarget | string {
  const clusterIP = (service?.spec as { clusterIP?: string } | undefined)?.clusterIP;
  if (!clusterIP || clusterIP === 'None') return 'the Service has no ClusterIP yet';
  return { host: clusterIP, port };
}

/** Where to probe: in a cluster, the Service the API server calls, as it reaches it; otherwise this process's own port. */
export function probeTarget(config: OperatorConfig, service: KubeObject | undefined, servicePort: number): ProbeTarget | string {
  if (config.mode === 'cluster' && service) return serviceTarget(service, servicePort);
  return { host: LOOPBACK, port: config.servingPort };
}

/**
 * true, or why `target` does not yet serve `certPem` verifiably under `bundle` for `servername`.
 * A ClusterIP is probed several times (each connection may reach another replica).
 */
export async function probeEndpoint(target: ProbeTarget | string, servername: string, bundle: string, certPem: string): Promise<true | string> {
  if (typeof target === 'string') return target;
  const times = target.host === LOOPBACK ? 1 : CLUSTER_IP_PROBES;
  for (let i = 0; i < times; i++) {
    const result = await probeOnce(target, servername, bundle, certPem);
    if (result !== true) return result;
  }
  return true;
}

/**
 * A certificate just written reaches the endpoint through the watch of its Secret, a few
 * milliseconds later: probed again for a moment before the caller reports waiting and requeues.
 */
export async function probeEndpointSoon(target: ProbeTarget | string, servername: string, bundle: string, certPem: string): Promise<true | string> {
  let result = await probeEndpoint(target, servername, bundle, certPem);
  for (const delayMs of SOON_RETRIES_MS) {
    if (result === true || typeof target === 'string') return result;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    result = await probeEndpoint(target, servername, bundle, certPem);
  }
  return result;
}

const SOON_RETRIES_MS = [10, 20, 40, 80, 150];

export const LOOPBACK = '127.0.0.1';

/**
 * The probes' TLS client context, trusting `bundle`: every suite's bundle is the operator CA's, so
 * one context serves a burst of new suites (making one per probe parsed the bundle each time).
 */
let probeContext: { bundle: string; context: tls.SecureContext } | undefined;
function trusting(bundle: string): tls.SecureContext {
  if (probeContext?.bundle !== bundle) probeContext = { bundle, context: tls.createSecureContext({ ca: bundle }) };
  return probeContext.context;
}

function probeOnce(target: ProbeTarget, servername: string, bundle: string, certPem: string): Promise<true | string> {
  const expected = new X509Certificate(certPem).raw;
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: target.host,
      port: target.port,
      servername,
      secureContext: trusting(bundle),
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
    socket.once('error', (err) => done(`the admission endpoint is not serving ${servername} at ${target.host}:${target.port} yet: ${err.message}`));
    socket.once('timeout', () => done('the admission endpoint did not answer the TLS handshake'));
  });
}
