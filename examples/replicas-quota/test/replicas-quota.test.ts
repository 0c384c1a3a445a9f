/**
 * ReplicasQuota's decisions, offline: the Deployments and Namespace it sees are given here as the
 * operator's caches would give them. Run with `npm test` (node --test; Node 24 runs the TypeScript as is).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdmissionRequest, ClusterView } from 'portcullis/sdk';
import { handlers, replicasOf, replicasQuota } from '../src/index.ts';

const deployment = (namespace: string, name: string, replicas?: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { namespace, name },
  spec: { ...(replicas === undefined ? {} : { replicas }), selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'app' }] } } },
});

const viewOf = (stored: Record<string, any>[], annotations: Record<string, string> = {}): ClusterView => ({
  namespace: (name) => ({ metadata: { name, annotations } }),
  limitRanges: () => [],
  list: (kind, namespace) => {
    assert.equal(kind, 'Deployment');
    return stored.filter((d) => d.metadata.namespace === namespace);
  },
});

const request = (object: Record<string, any>, operation: AdmissionRequest['operation'] = 'CREATE', oldObject?: Record<string, any>): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace: object.metadata.namespace,
  name: object.metadata.name,
  operation,
  userInfo: { username: 'alice' },
  object,
  ...(oldObject ? { oldObject } : {}),
});

const config = (raw: Record<string, unknown>) => {
  const parsed = replicasQuota.parseConfig(raw);
  assert.deepEqual(parsed.errors, []);
  return parsed.config;
};

test('exports one domain-qualified handler that reads the Deployment cache', () => {
  assert.deepEqual(
    handlers.map((h) => h.name),
    ['example.portcullis.dev/ReplicasQuota'],
  );
  assert.deepEqual(replicasQuota.lookups, ['Deployment']);
});

test('admits up to the limit and refuses past it, counting only its own namespace, unset replicas as 1', async () => {
  const stored = [deployment('team-a', 'web', 3), deployment('team-a', 'worker'), deployment('team-b', 'big', 50)];
  const limit = config({ maxReplicas: 6 });
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'api', 2)), limit, viewOf(stored))).allowed, true);
  assert.deepEqual(await replicasQuota.validate!(request(deployment('team-a', 'api', 3)), limit, viewOf(stored)), {
    allowed: false,
    code: 403,
    reason: 'Forbidden',
    message: 'exceeded quota: the Deployments of namespace team-a may have 6 replicas in total; 4 are used by 2 other Deployment(s), and api asks for 3',
  });
});

test('counts an update without its old self, and always allows scaling down', async () => {
  const stored = [deployment('team-a', 'web', 3), deployment('team-a', 'api', 3)];
  const limit = config({ maxReplicas: 5 });
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'web', 2), 'UPDATE', stored[0]), limit, viewOf(stored))).allowed, true);
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'web', 4), 'UPDATE', stored[0]), limit, viewOf(stored))).allowed, false);
  // Over the limit already (it was lowered): a scale down still passes.
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'web', 1), 'UPDATE', stored[0]), config({ maxReplicas: 1 }), viewOf(stored))).allowed, true);
});

test("takes a namespace's own limit from its annotation when it is a whole number", async () => {
  const stored = [deployment('team-a', 'web', 3)];
  const withAnnotation = config({ maxReplicas: 4, namespaceAnnotation: 'quota.example.dev/max-replicas' });
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'api', 5)), withAnnotation, viewOf(stored, { 'quota.example.dev/max-replicas': '10' }))).allowed, true);
  assert.equal((await replicasQuota.validate!(request(deployment('team-a', 'api', 5)), withAnnotation, viewOf(stored, { 'quota.example.dev/max-replicas': 'lots' }))).allowed, false);
});

test('refuses a config without a limit, or with fields it does not know or of the wrong type, naming them', () => {
  assert.deepEqual(replicasQuota.parseConfig({ max: 3, namespaceAnnotation: 7 }).errors, [
    { field: 'max', message: 'unknown field; ReplicasQuota takes maxReplicas, namespaceAnnotation' },
    { field: 'maxReplicas', message: 'required: the most replicas the Deployments of a namespace may have together' },
    { field: 'namespaceAnnotation', message: 'must be a string' },
  ]);
  assert.deepEqual(replicasQuota.parseConfig({ maxReplicas: -1 }).errors, [{ field: 'maxReplicas', message: 'must be an integer no less than 0' }]);
});

test('reads replicas as the API server defaults them', () => {
  assert.equal(replicasOf(deployment('a', 'b')), 1);
  assert.equal(replicasOf(deployment('a', 'b', 0)), 0);
});
