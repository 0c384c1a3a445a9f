/**
 * One HTTPS server for the load benchmark, run as its own process (pinned to one core by
 * bench/run.ts): `portcullis` is the real admission server with the bench suite, listening on the
 * process' main thread; `threaded` the same served as the operator serves it, from an admission
 * thread of its own (src/admission/threads/thread.ts), the main thread answering what it hands over
 * (large reviews, given to the review worker); `e2e` the same
 * server with the end-to-end bench's suite (bench/e2e.ts' `server`: the admission server without the
 * operator around it); `floor` is a bare Node HTTPS server that reads and parses the same body and
 * answers an allow with its uid.
 * Prints "listening <port>" when ready.
 */
import fs from 'node:fs';
import https from 'node:https';
import { AdmissionAnswering } from '../src/admission/answering.ts';
import { AdmissionEndpoint } from '../src/admission/endpoint.ts';
import { AdmissionThread } from '../src/admission/threads/thread.ts';
import { tuneHeapForAdmission } from '../src/admission/v8-tuning.ts';
import { CertificateStore } from '../src/certs/store.ts';
import { Metrics } from '../src/health/metrics.ts';
import { logger } from '../src/log.ts';
import { SuiteRegistry } from '../src/registry/registry.ts';
import { benchSuite, e2eSuite } from './fixtures.ts';

const [kind, certFile, keyFile] = process.argv.slice(2);
const cert = fs.readFileSync(certFile!, 'utf8');
const key = fs.readFileSync(keyFile!, 'utf8');

if (kind === 'floor') {
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString());
      const body = JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => console.log(`listening ${(server.address() as { port: number }).port}`));
} else {
  tuneHeapForAdmission(); // as the operator's entry point does
  // Counted as the operator counts, so the metrics' cost is in the figures.
  const metrics = new Metrics();
  const registry = new SuiteRegistry({ observers: metrics });
  registry.sync(kind === 'e2e' ? e2eSuite() : benchSuite());
  const certificates = new CertificateStore();
  certificates.set('bench', cert, key);
  logger.level = 'error';
  const answering = new AdmissionAnswering({ registry, metrics, log: logger });
  if (kind === 'threaded') {
    const thread = new AdmissionThread({ answering, registry, certificates, metrics, mirrors: { Namespace: { list: () => [] }, LimitRange: { list: () => [] } }, log: logger });
    metrics.attach({ collect: () => thread.flushMetrics() });
    await thread.listen({ port: 0, host: '127.0.0.1' });
    console.log(`listening ${thread.port}`);
  } else {
    const endpoint = new AdmissionEndpoint({ answering, certificates, metrics, log: logger });
    await endpoint.listen({ port: 0, host: '127.0.0.1' });
    console.log(`listening ${(endpoint.server.address() as { port: number }).port}`);
  }
}
process.on('SIGINT', () => process.exit(0));
