/**
 * UniqueIngressHost's decisions, offline: the Ingresses it sees are given here as the operator's
 * cache would give them. Run with `npm test` (node --test; Node 24 runs the TypeScript as is).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdmissionRequest, ClusterView } from 'portcullis/sdk';
import { apiVersion, handlers, hostsOf, uniqueIngressHost } from '../src/index.ts';

const ingress = (namespace: string, name: string, ...hosts: string[]) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { namespace, name },
  spec: { rules: hosts.map((host) => ({ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } })) },
});

const viewOf = (...stored: Record<string, any>[]): ClusterView => ({
  namespace: () => undefined,
  limitRanges: () => [],
  list: (kind) => {
    assert.equal(kind, 'Ingress');
    return stored;
  },
});

const request = (object: Record<string, any>, operation: AdmissionRequest['operation'] = 'CREATE'): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
  resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
  namespace: object.metadata.namespace,
  name: object.metadata.name,
  operation,
  userInfo: { username: 'alice' },
  object,
});

const config = (raw: Record<string, unknown> = {}) => {
  const parsed = uniqueIngressHost.parseConfig(raw);
  assert.deepEqual(parsed.errors, []);
  return parsed.config;
};

test('exports what the operator loads: the API version and the handler, domain-qualified', () => {
  assert.match(apiVersion, /^1\.\d+$/);
  assert.deepEqual(
    handlers.map((h) => h.name),
    ['example.portcullis.dev/UniqueIngressHost'],
  );
  assert.deepEqual(uniqueIngressHost.lookups, ['Ingress']);
});

test('denies a host another Ingress in another namespace already has, naming it', async () => {
  const decision = await uniqueIngressHost.validate!(request(ingress('team-b', 'shop', 'shop.example.com')), config(), viewOf(ingress('team-a', 'web', 'www.example.com', 'shop.example.com')));
  assert.deepEqual(decision, { allowed: false, code: 409, reason: 'Conflict', message: 'host shop.example.com is already used by Ingress team-a/web' });
});

test('allows a unique host, an Ingress without hosts, and an update of the Ingress that has the host', async () => {
  const stored = ingress('team-a', 'web', 'www.example.com');
  assert.equal((await uniqueIngressHost.validate!(request(ingress('team-b', 'shop', 'shop.example.com')), config(), viewOf(stored))).allowed, true);
  assert.equal((await uniqueIngressHost.validate!(request(ingress('team-b', 'default')), config(), viewOf(stored))).allowed, true);
  assert.equal((await uniqueIngressHost.validate!(request(ingress('team-a', 'web', 'www.example.com', 'api.example.com'), 'UPDATE'), config(), viewOf(stored))).allowed, true);
});

test('leaves exempt namespaces out, both ways', async () => {
  const shared = ingress('ingress-shared', 'catch-all', 'www.example.com');
  const exempt = config({ exemptNamespaces: ['ingress-shared'] });
  assert.equal((await uniqueIngressHost.validate!(request(ingress('team-b', 'web', 'www.example.com')), exempt, viewOf(shared))).allowed, true);
  assert.equal((await uniqueIngressHost.validate!(request(ingress('team-b', 'web', 'www.example.com')), config(), viewOf(shared))).allowed, false);
});

test('refuses a config it does not understand, naming the field', () => {
  assert.deepEqual(uniqueIngressHost.parseConfig({ exemptNamespaces: 'kube-system', colour: 1 }).errors, [
    { field: 'colour', message: 'unknown field; UniqueIngressHost takes exemptNamespaces' },
    { field: 'exemptNamespaces', message: 'must be a list of namespace names' },
  ]);
});

test('reads each host of a rule once, skipping rules without one', () => {
  assert.deepEqual(hostsOf(ingress('a', 'b', 'x.example.com', 'x.example.com', '')), ['x.example.com']);
  assert.deepEqual(hostsOf({ spec: {} }), []);
});
