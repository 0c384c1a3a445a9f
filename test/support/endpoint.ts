/**
 * The admission endpoint of one registry, served over real TLS with a certificate for
 * SERVER_NAME from a fresh CA, and a client that verifies it: the unit tests' way to send
 * AdmissionReviews as the API server would, without a control plane.
 */
import https from 'node:https';
import { AdmissionEndpoint, type ServingLimits } from '../../src/admission/endpoint.ts';
import { AdmissionAnswering } from '../../src/admission/answering.ts';
import { Metrics } from '../../src/health/metrics.ts';
import { CertificateStore } from '../../src/certs/store.ts';
import { createCA, issueLeaf } from '../../src/certs/x509.ts';
import type { SuiteRegistry } from '../../src/registry/registry.ts';
import { logger } from '../../src/log.ts';

export const SERVER_NAME = 'portcullis-guards.portcullis-system.svc';

export interface Reply {
  status: number;
  body: any;
  /** When the answer was complete (ms since the epoch). */
  at: number;
}

export interface TestEndpoint {
  port: number;
  caPem: string;
  /** POSTs `body` to `path` (on its own connection, or on `agent`'s, as a client keeping them alive would). */
  post(path: string, body: string, contentType?: string, agent?: https.Agent): Promise<Reply>;
  close(): Promise<void>;
  /** The endpoint itself, for tests that read its connections. */
  server: AdmissionEndpoint;
  /** What answers behind it, for tests that inject a fault into its workers. */
  answering: AdmissionAnswering;
}

/** Serves `registry` (its suites already synced) with a certificate stored for `suite`. */
export async function startTestEndpoint(
  registry: SuiteRegistry,
  suite: string,
  limits?: Partial<ServingLimits>,
  /** The API server's source addresses (EndpointOptions.apiServers); none by default. */
  apiServers?: ReadonlySet<string>,
): Promise<TestEndpoint> {
  const ca = await createCA({ commonName: 'unit-ca', notAfter: new Date(Date.now() + 86_400_000) });
  const leaf = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });
  const certificates = new CertificateStore();
  certificates.set(suite, leaf.certPem, leaf.keyPem);
  const metrics = new Metrics();
  const answering = new AdmissionAnswering({ registry, metrics, log: logger, ...(limits ? { limits } : {}) });
  const app = new AdmissionEndpoint({ answering, certificates, metrics, log: logger, ...(limits ? { limits } : {}), ...(apiServers ? { apiServers } : {}) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const close = async () => {
    await app.close();
    await answering.close();
  };
  return { port, caPem: ca.certPem, post: poster(port, ca.certPem), close, server: app, answering };
}

/** TestEndpoint's `post` to any endpoint on loopback `port` serving SERVER_NAME under the CA `caPem` (the admission thread's, too). */
export function poster(port: number, caPem: string): TestEndpoint['post'] {
  return (path, body, contentType = 'application/json', agent) =>
    new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path, method: 'POST', servername: SERVER_NAME, ca: caPem, ...(agent ? { agent } : {}), headers: { 'content-type': contentType } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, at: Date.now() });
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
      req.end(body);
    });
}
