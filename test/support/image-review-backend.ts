/**
 * A test ImageReview backend (imagepolicy.k8s.io/v1alpha1) on loopback HTTPS, its serving
 * certificate issued by a CA of its own (src/certs): what ImagePolicyWebhook, the in-tree plugin
 * and the built-in handler alike, is pointed at. Its policy is upstream's test backend's in
 * spirit: an image whose name holds "denied" is refused with a reason, "silent" without one; the
 * break-glass annotation (`alpha.image-policy.k8s.io/break-glass: "true"`) allows anything and
 * says so in an audit annotation. It records every review it is sent and can be told to fail
 * (answer 500), hang, or stop listening. Owns nothing of the product.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCA, issueLeaf } from '../../src/certs/x509.ts';

export type BackendMode = 'answer' | 'fail' | 'hang';

export interface ImageReviewBackend {
  url: string;
  caPem: string;
  /** The specs of the reviews received, in order. */
  received: Record<string, any>[];
  mode: BackendMode;
  close(): Promise<void>;
}

export const BREAK_GLASS = 'alpha.image-policy.k8s.io/break-glass';

/** The backend's answer to a review spec. */
export function backendStatus(spec: Record<string, any>): Record<string, unknown> {
  if (spec.annotations?.[BREAK_GLASS] === 'true') return { allowed: true, auditAnnotations: { 'break-glass': 'true' } };
  const images: string[] = (spec.containers ?? []).map((c: { image?: string }) => c.image ?? '');
  const denied = images.filter((image) => image.includes('denied'));
  if (denied.length) return { allowed: false, reason: `images not allowed: ${denied.join(', ')}` };
  if (images.some((image) => image.includes('silent'))) return { allowed: false };
  return { allowed: true };
}

/** Starts the backend on 127.0.0.1 (`port` 0: any free one). */
export async function startImageReviewBackend(port = 0): Promise<ImageReviewBackend> {
  const notAfter = new Date(Date.now() + 24 * 3600_000);
  const ca = await createCA({ commonName: 'image-review-test-ca', notAfter });
  const leaf = await issueLeaf(ca, { commonName: 'image-review-backend', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'server', notAfter });
  const hanging = new Set<import('node:http').ServerResponse>();
  const backend: ImageReviewBackend = {
    url: '',
    caPem: ca.certPem,
    received: [],
    mode: 'answer',
    close: () =>
      new Promise((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      backend.received.push(review.spec ?? {});
      if (backend.mode === 'hang') return void hanging.add(response);
      if (backend.mode === 'fail') {
        response.writeHead(500, { 'Content-Type': 'text/plain' });
        return void response.end('backend failing on purpose');
      }
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', status: backendStatus(review.spec ?? {}) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  backend.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/review`;
  return backend;
}
