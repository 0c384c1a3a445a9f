/**
 * A GET of the API server's JSON with the kubeconfig's credentials, for what client-node has no
 * call for (OpenAPI documents, metadata-only lists). Owns the request only; what the JSON means
 * is the caller's.
 */
import https from 'node:https';
import type * as k8s from '@kubernetes/client-node';

/** The API server answered 404. */
export class NotFound extends Error {}

/** GETs `path` (which may carry a query) as `accept`; a 404 rejects with NotFound, any other non-2xx with its status and the start of its body. */
export async function getJson<T>(config: k8s.KubeConfig, path: string, accept = 'application/json'): Promise<T> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the kubeconfig');
  const url = new URL(path, cluster.server);
  const options: https.RequestOptions = { method: 'GET', headers: { accept } };
  await config.applyToHTTPSOptions(options);
  return await new Promise<T>((resolve, reject) => {
    const request = https.request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (c: Buffer) => chunks.push(c));
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (response.statusCode === 404) reject(new NotFound(`GET ${url.pathname}: 404`));
        else if ((response.statusCode ?? 0) >= 300) reject(new Error(`GET ${url.pathname}: ${response.statusCode} ${body.slice(0, 256)}`));
        else {
          try {
            resolve(JSON.parse(body) as T);
          } catch (err) {
            reject(err as Error);
          }
        }
      });
      response.on('error', reject);
    });
    request.setTimeout(10_000, () => request.destroy(new Error(`GET ${url.pathname}: timed out`)));
    request.on('error', reject);
    request.end();
  });
}
