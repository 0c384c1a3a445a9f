/** Small verbs on plain objects in the test cluster: namespaces, ConfigMaps, errors as the API server returned them. */
import * as k8s from '@kubernetes/client-node';
import { apply } from '../../src/apiserver/client.ts';
import { cluster } from './cluster.ts';

export async function ensureNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  await apply(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
}

/** The API server's Status from a failed call (code, message). */
export function errorStatus(err: unknown): { code?: number; message?: string } {
  let body = (err as { body?: unknown }).body;
  for (let i = 0; i < 2 && typeof body === 'string'; i++) body = JSON.parse(body);
  return (body ?? { message: String(err) }) as { code?: number; message?: string };
}

export async function createConfigMap(namespace: string, name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}): Promise<k8s.V1ConfigMap> {
  return cluster().kube.core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels }, data } });
}

/** Runs `call` and returns the API server's refusal, or undefined when it succeeded. */
export async function refusal(call: () => Promise<unknown>): Promise<{ code?: number; message?: string } | undefined> {
  try {
    await call();
    return undefined;
  } catch (err) {
    return errorStatus(err);
  }
}

/** A small Deployment of the pause image; pods are never scheduled here, only stored. */
export function deployment(name: string, replicas: number, namespace?: string): k8s.V1Deployment {
  return {
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } },
    },
  };
}
