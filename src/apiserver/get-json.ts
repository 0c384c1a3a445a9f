/**
 * A GET of the API server's JSON with the kubeconfig's credentials, for what client-node has no
 * call for (OpenAPI documents, metadata-only lists). Sent the way client-node sends its own calls
 * (its fetch over the kubeconfig's dispatcher), so it shares the process' one connection pool
 * (connections.ts): the schema poll every few seconds opened a new TLS connection, a full
 * handshake with the client certificate, each time its idle socket had just been closed. Owns the
 * request only; what the JSON means is the caller's.
 */
import * as k8s from '@kubernetes/client-node';
import { IsomorphicFetchHttpLibrary } from '@kubernetes/client-node/dist/gen/http/isomorphic-fetch.js';

/** The API server answered 404. */
export class NotFound extends Error {}

const TIMEOUT_MS = 10_000;
const http = new IsomorphicFetchHttpLibrary();

/** GETs `path` (which may carry a query) as `accept`; a 404 rejects with NotFound, any other non-2xx with its status and the start of its body. */
export async function getJson<T>(config: k8s.KubeConfig, path: string, accept = 'application/json'): Promise<T> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the kubeconfig');
  const url = new URL(path, cluster.server);
  const request = new k8s.RequestContext(url.toString(), k8s.HttpMethod.GET);
  request.setHeaderParam('Accept', accept);
  await config.applySecurityAuthentication(request);
  request.setSignal(AbortSignal.timeout(TIMEOUT_MS));
  let body: string;
  let status: number;
  try {
    const response = await http.send(request).toPromise();
    status = response.httpStatusCode;
    body = await response.body.text();
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || (err.cause as Error | undefined)?.name === 'TimeoutError');
    throw timedOut ? new Error(`GET ${url.pathname}: timed out`) : err;
  }
  if (status === 404) throw new NotFound(`GET ${url.pathname}: 404`);
  if (status >= 300) throw new Error(`GET ${url.pathname}: ${status} ${body.slice(0, 256)}`);
  return JSON.parse(body) as T;
}
