/**
 * health: the plain-HTTP side port with /healthz (the process answers, and can serve admission:
 * a replica whose admission thread is down answers 503, so the kubelet restarts it if it stays
 * so), /readyz (caches synced and the admission endpoint listening) and /metrics. Owns no state of its own.
 */
import http from 'node:http';
import { errorMessage } from '../error-message.ts';

export interface HealthSources {
  ready(): boolean;
  /** False while the process cannot serve admission (nothing listens that did); absent: always live. */
  live?(): boolean;
  metrics(): Promise<string>;
  metricsContentType: string;
}

export function createHealthServer(sources: HealthSources): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return sources.live?.() === false ? reply(res, 503, 'admission is not served\n') : reply(res, 200, 'ok\n');
    if (path === '/readyz') return sources.ready() ? reply(res, 200, 'ok\n') : reply(res, 503, 'not ready\n');
    if (path === '/metrics') {
      return void sources.metrics().then(
        (text) => reply(res, 200, text, sources.metricsContentType),
        (err: unknown) => reply(res, 500, `metrics failed: ${errorMessage(err)}\n`),
      );
    }
    return reply(res, 404, 'not found\n');
  });
}

function reply(res: http.ServerResponse, status: number, body: string, type = 'text/plain'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
