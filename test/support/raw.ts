/**
 * Plain HTTPS requests to the test API server, as the admin of the kubeconfig, returning what a
 * user of kubectl sees: the status code, the body, and the `Warning` headers (which the typed
 * client does not hand back). TLS verified against the control plane's CA.
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { cluster } from './cluster.ts';

export interface RawResponse {
  status: number;
  body: { code?: number; message?: string; [key: string]: unknown };
  warnings: string[];
}

/**
 * `as` impersonates that user (the API server adds system:authenticated), as `kubectl --as`;
 * `kubeConfig` names another API server than the test cluster's (the reference control plane);
 * `contentType` a patch's (application/merge-patch+json).
 */
export async function rawRequest(
  method: string,
  path: string,
  body?: unknown,
  user: { as?: string; kubeConfig?: KubeConfig; contentType?: string } = {},
): Promise<RawResponse> {
  const kubeConfig = user.kubeConfig ?? cluster().kubeConfig;
  const server = new URL(kubeConfig.getCurrentCluster()!.server);
  const options: https.RequestOptions = {
    method,
    host: server.hostname,
    port: server.port,
    path,
    headers: { 'Content-Type': user.contentType ?? 'application/json', Accept: 'application/json', ...(user.as ? { 'Impersonate-User': user.as } : {}) },
  };
  await kubeConfig.applyToHTTPSOptions(options);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: RawResponse['body'];
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = { message: text };
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, warnings: parseWarnings(res.headers.warning) });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `Warning: 299 - "text"` headers (RFC 7234), as the API server writes them, to their texts. */
export function parseWarnings(header: string | string[] | undefined): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const value of Array.isArray(header) ? header : [header]) {
    const pattern = /\d{3} \S+ "((?:[^"\\]|\\.)*)"/g;
    for (let match = pattern.exec(value); match; match = pattern.exec(value)) out.push(match[1]!.replace(/\\(.)/g, '$1'));
  }
  return out;
}
