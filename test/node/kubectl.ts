/**
 * test/node/kubectl.ts: small kubectl helpers for the node cluster's tests: run and fail with
 * kubectl's own words, read JSON, apply objects. Owns no state; the cluster is hooks.ts's.
 */
import { nodeCluster } from './hooks.ts';
import { eventually } from '../support/wait.ts';

/**
 * The API server's answer for some seconds after the operator's CRDs are installed: the suite
 * guard's admission policies learn the new kinds' schemas later (docs/operating.md). Users apply
 * again; so do the tests, for this answer only.
 */
const CRD_NOT_YET_SERVED = /There can be a delay between when CustomResourceDefinitions are created and when they are available/;

/** kubectl, failing the test with its stderr unless it exits 0 (tried again only while CRD_NOT_YET_SERVED). */
export async function kc(args: string[], input?: string, timeoutMs?: number): Promise<string> {
  let final: { code: number; stdout: string; stderr: string } | undefined;
  await eventually(
    async () => {
      const r = await nodeCluster().kubectl(args, { input, timeoutMs });
      if (r.code !== 0 && CRD_NOT_YET_SERVED.test(r.stderr)) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
      final = r;
    },
    { what: `the API server to serve the operator's kinds to kubectl ${args[0] ?? ''}`, timeoutMs: 120_000, intervalMs: 1000 },
  );
  const r = final!;
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

export async function getJson<T = any>(args: string[]): Promise<T> {
  return JSON.parse(await kc([...args, '-o', 'json'])) as T;
}

/** Applies objects (JSON is YAML) with server-side apply. */
export async function apply(...objects: object[]): Promise<void> {
  await kc(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
}

/** A namespace for one test file, deleted (and waited for) by the returned function. */
export async function namespace(name: string): Promise<() => Promise<void>> {
  await kc(['create', 'namespace', name]);
  return async () => {
    await kc(['delete', 'namespace', name, '--wait=true', '--timeout=90s'], undefined, 100_000);
  };
}

/** A pod spec of the test image: quick to stop (busybox as PID 1 ignores SIGTERM). */
export function testPod(command?: string[]) {
  return {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: 'main',
        image: nodeCluster().images.test,
        imagePullPolicy: 'Never',
        ...(command ? { command } : {}),
      },
    ],
  };
}

/** A Deployment of `replicas` pods labelled app=<name>, running `podSpec`. */
export function deployment(name: string, namespace: string, replicas: number, podSpec: object) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: podSpec } },
  };
}

/** Waits until the Deployment is Available (its replicas Ready). */
export async function waitAvailable(name: string, namespace: string): Promise<void> {
  await kc(['wait', '-n', namespace, `deployment/${name}`, '--for=condition=Available', '--timeout=90s'], undefined, 100_000);
}
