/**
 * EventRateLimit end to end through the real API server: a suite with small bursts, core Events
 * created until the API server refuses one with the handler's 429 and upstream's words, while the
 * bucket of another key (another namespace for the Namespace limit, another user for the User
 * limit) still admits; a refused bucket admits again once it refilled; events.k8s.io Events and dry
 * runs are not counted, as in-tree. Every webhook is scoped to this file's own namespaces (erl-*).
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest, type RawResponse } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { apply, isNotFound } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { LabelSelector, RuleWithOperations } from '../../src/api/types.ts';

const NS = { a: 'erl-a', b: 'erl-b', users: 'erl-users' };
const SUITE = 'erl';
const USERS = ['erl-alice', 'erl-bob'];
const BURST = 3;

const only = (...namespaces: string[]): LabelSelector => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] });
const events: RuleWithOperations[] = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['events'] }];

let serial = 0;
function coreEvent(namespace: string): Record<string, unknown> {
  const name = `erl-${Date.now()}-${++serial}`;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: { kind: 'ConfigMap', namespace, name: 'subject', apiVersion: 'v1' },
    reason: 'Testing',
    message: 'an event of the EventRateLimit test',
    type: 'Normal',
    source: { component: 'erl-test' },
  };
}
const createEvent = (namespace: string, as?: string, query = ''): Promise<RawResponse> => rawRequest('POST', `/api/v1/namespaces/${namespace}/events${query}`, coreEvent(namespace), as ? { as } : {});

/** Creates core Events in `namespace` (as `as`) until one is refused; the refusal, and how many were admitted in a row before it. */
async function untilRefused(namespace: string, as?: string): Promise<{ refusal: RawResponse; admitted: number }> {
  // eventually: the webhook may not be registered yet, and the bucket refills at qps while we go
  return eventually(
    async () => {
      for (let admitted = 0; admitted < 20 * BURST; admitted++) {
        const response = await createEvent(namespace, as);
        if (response.status !== 201) return { refusal: response, admitted };
      }
      throw new Error(`${20 * BURST} events in ${namespace} were admitted`);
    },
    { what: `an event in ${namespace}${as ? ` by ${as}` : ''} to be refused`, timeoutMs: 60_000 },
  );
}

const message = (webhook: string, type: string, key: string) => `admission webhook "${webhook}.${SUITE}.admission.portcullis.dev" denied the request: Too many requests: limit reached on type ${type} for key ${key}`;

describe('EventRateLimit through the real API server', function () {
  let operator: Operator;

  before(async function () {
    for (const name of Object.values(NS)) await ensureNamespace(name);
    // the impersonated users may create events in their namespace, and nothing else
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'erl-events', namespace: NS.users },
      rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }],
    });
    await apply(cluster().kube, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'erl-events', namespace: NS.users },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'erl-events' },
      subjects: USERS.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
    });
    operator = await startTestOperator();
    await createSuite(SUITE, {
      webhooks: [
        {
          name: 'per-namespace',
          type: 'Validating',
          rules: events,
          namespaceSelector: only(NS.a, NS.b),
          handler: { name: 'EventRateLimit', config: { limits: [{ type: 'Namespace', qps: 1, burst: BURST }] } },
        },
        {
          name: 'per-user',
          type: 'Validating',
          rules: events,
          namespaceSelector: only(NS.users),
          handler: { name: 'EventRateLimit', config: { limits: [{ type: 'User', qps: 1, burst: BURST }] } },
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    this.timeout(120_000);
    await deleteSuite(SUITE);
    await eventually(
      async () => {
        for (const name of Object.values(NS)) {
          try {
            await cluster().kube.core.deleteNamespace({ name });
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
        }
      },
      { what: 'cleanup of the erl namespaces', timeoutMs: 60_000 },
    );
    await operator?.stop();
  });

  it("Namespace: refuses with 429 in upstream's words once a namespace's burst is spent, another namespace unaffected, refilled after a second", async function () {
    this.timeout(120_000);
    const { refusal, admitted } = await untilRefused(NS.a);
    expect(refusal.status, JSON.stringify(refusal.body)).to.equal(429);
    expect(refusal.body).to.include({ code: 429, reason: 'TooManyRequests', message: message('per-namespace', 'Namespace', NS.a) });
    expect(admitted, 'admitted in a row before the refusal: the burst, and what refilled meanwhile').to.be.at.least(1);
    // the other namespace has a bucket of its own, full
    for (let i = 0; i < BURST; i++) expect((await createEvent(NS.b)).status, `event ${i} in ${NS.b}`).to.equal(201);
    // not counted, as in-tree: a dry run, and an events.k8s.io Event (sent to a core events webhook converted)
    expect((await createEvent(NS.a, undefined, '?dryRun=All')).status).to.equal(201);
    const modern = await rawRequest('POST', `/apis/events.k8s.io/v1/namespaces/${NS.a}/events`, {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `erl-modern-${++serial}` },
      eventTime: new Date().toISOString().replace('Z', '000Z'),
      reportingController: 'portcullis.dev/erl-test',
      reportingInstance: 'erl-test',
      action: 'Testing',
      reason: 'Testing',
      regarding: { kind: 'ConfigMap', namespace: NS.a, name: 'subject', apiVersion: 'v1' },
      type: 'Normal',
    });
    expect(modern.status, JSON.stringify(modern.body)).to.equal(201);
    // a token a second: after a little more than one, the emptied bucket admits again (how many
    // more depends on how long the requests above took), until it is spent again
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await createEvent(NS.a)).status).to.equal(201);
    expect((await untilRefused(NS.a)).refusal.status).to.equal(429);
  });

  it("User: refuses one user's events with 429 once their burst is spent, another user's in the same namespace admitted", async function () {
    this.timeout(120_000);
    const [alice, bob] = USERS as [string, string];
    const { refusal } = await untilRefused(NS.users, alice);
    expect(refusal.status, JSON.stringify(refusal.body)).to.equal(429);
    expect(refusal.body).to.include({ code: 429, reason: 'TooManyRequests', message: message('per-user', 'User', alice) });
    for (let i = 0; i < BURST; i++) expect((await createEvent(NS.users, bob)).status, `event ${i} by ${bob}`).to.equal(201);
  });
});
