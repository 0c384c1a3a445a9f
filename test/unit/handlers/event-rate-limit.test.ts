/**
 * EventRateLimit on a fake clock: upstream's admission_test.go TestEventRateLimiting cases (each
 * limit at qps 1, as there), its config validation, and what a webhook adds: events.k8s.io Events
 * sent converted are not counted, the 429 and its words, config refused on apply naming the field.
 */
import { expect } from 'chai';
import { eventRateLimit, eventRateLimitWithClock, keyOf, TokenBucket, type EventRateLimitConfig } from '../../../src/handlers/event-rate-limit.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { findHandler } from '../../../src/handlers/registry.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';
import { suiteErrors } from '../../fixtures/patch.ts';

interface Rq {
  kind?: string;
  namespace?: string;
  user?: string;
  event?: Record<string, unknown>;
  delay?: number;
  blocked?: boolean;
  dryRun?: boolean;
}

function requestOf(rq: Rq): AdmissionRequest {
  const kind = rq.kind ?? 'Event';
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind },
    resource: { group: '', version: 'v1', resource: kind === 'Event' ? 'events' : 'nonevents' },
    namespace: rq.namespace ?? '',
    name: 'name',
    operation: 'CREATE',
    userInfo: { username: rq.user ?? '' },
    object: rq.event ?? { apiVersion: 'v1', kind },
    dryRun: rq.dryRun ?? false,
  };
}

/** A fake clock (ms) and the handler on it, configured as upstream's cases are. */
function limiter(bursts: { server?: number; namespace?: [number, number]; user?: [number, number]; sourceAndObject?: [number, number] }) {
  let now = 1_000_000;
  const handler = eventRateLimitWithClock(() => now);
  const limits: Record<string, unknown>[] = [];
  if (bursts.server) limits.push({ type: 'Server', qps: 1, burst: bursts.server });
  if (bursts.namespace) limits.push({ type: 'Namespace', qps: 1, burst: bursts.namespace[0], cacheSize: bursts.namespace[1] });
  if (bursts.user) limits.push({ type: 'User', qps: 1, burst: bursts.user[0], cacheSize: bursts.user[1] });
  if (bursts.sourceAndObject) limits.push({ type: 'SourceAndObject', qps: 1, burst: bursts.sourceAndObject[0], cacheSize: bursts.sourceAndObject[1] });
  const parsed = handler.parseConfig({ limits });
  expect(parsed.errors).to.deep.equal([]);
  return {
    config: parsed.config as EventRateLimitConfig,
    step: (ms: number) => (now += ms),
    admit: (request: AdmissionRequest) => handler.validate!(request, parsed.config, EMPTY_VIEW),
  };
}

/** Runs upstream's request list: each admitted or blocked (with a 429) as it says. */
function run(bursts: Parameters<typeof limiter>[0], requests: Rq[]) {
  const { admit, step } = limiter(bursts);
  requests.forEach((rq, i) => {
    if (rq.delay) step(rq.delay * 1000);
    const decision = admit(requestOf(rq));
    expect(decision.allowed, `request ${i} should have been ${rq.blocked ? 'blocked' : 'admitted'}: ${decision.message}`).to.equal(!rq.blocked);
    if (!decision.allowed) expect(decision).to.include({ code: 429, reason: 'TooManyRequests' });
  });
}

const ev: Rq = {};
const blocked = (rq: Rq): Rq => ({ ...rq, blocked: true });
const ns = (namespace: string): Rq => ({ namespace });
const comp = (component: string): Rq => ({ event: { source: { component } } });
const user = (name: string): Rq => ({ user: name });
const keyInclusion = (factory: (label: string) => Record<string, unknown>): Rq[] => [{ event: factory('A') }, blocked({ event: factory('A') }), { event: factory('B') }];

describe('handlers: EventRateLimit', function () {
  describe("upstream's TestEventRateLimiting", function () {
    const cases: [string, Parameters<typeof limiter>[0], Rq[]][] = [
      ['event not blocked when tokens available', { server: 3 }, [ev]],
      ['non-event not blocked', { server: 3 }, [{ kind: 'NonEvent' }]],
      ['event blocked after tokens exhausted', { server: 3 }, [ev, ev, ev, blocked(ev)]],
      ['event not blocked by dry-run requests', { server: 3 }, [ev, ev, { dryRun: true }, { dryRun: true }, { dryRun: true }, { dryRun: true }, ev, blocked(ev), { dryRun: true }]],
      ['non-event not blocked after tokens exhausted', { server: 3 }, [ev, ev, ev, { kind: 'NonEvent' }]],
      ['non-events should not count against limit', { server: 3 }, [ev, ev, { kind: 'NonEvent' }, ev]],
      ['event accepted after token refill', { server: 3 }, [ev, ev, ev, blocked(ev), { delay: 1 }]],
      ['event blocked by namespace limits', { server: 100, namespace: [3, 10] }, [ns('A'), ns('A'), ns('A'), blocked(ns('A'))]],
      ['event from other namespace not blocked', { server: 100, namespace: [3, 10] }, [ns('A'), ns('A'), ns('A'), ns('B')]],
      ['events from other namespaces should not count against limit', { server: 100, namespace: [3, 10] }, [ns('A'), ns('A'), ns('B'), ns('A')]],
      ['event accepted after namespace token refill', { server: 100, namespace: [3, 10] }, [ns('A'), ns('A'), ns('A'), blocked(ns('A')), { ...ns('A'), delay: 1 }]],
      ['event from other namespaces should not clear namespace limits', { server: 100, namespace: [3, 10] }, [ns('A'), ns('A'), ns('A'), ns('B'), blocked(ns('A'))]],
      [
        'namespace limits from lru namespace should clear when cache size exceeded',
        { server: 100, namespace: [3, 2] },
        // C clears out B, the least recently used
        [ns('A'), ns('A'), ns('B'), ns('B'), ns('B'), ns('A'), blocked(ns('B')), blocked(ns('A')), ns('C'), blocked(ns('A')), ns('B')],
      ],
      ['event blocked by source+object limits', { server: 100, sourceAndObject: [3, 10] }, [comp('A'), comp('A'), comp('A'), blocked(comp('A'))]],
      ['event from other source+object not blocked', { server: 100, sourceAndObject: [3, 10] }, [comp('A'), comp('A'), comp('A'), comp('B')]],
      ['events from other source+object should not count against limit', { server: 100, sourceAndObject: [3, 10] }, [comp('A'), comp('A'), comp('B'), comp('A')]],
      ['event accepted after source+object token refill', { server: 100, sourceAndObject: [3, 10] }, [comp('A'), comp('A'), comp('A'), blocked(comp('A')), { ...comp('A'), delay: 1 }]],
      ['event from other source+object should not clear source+object limits', { server: 100, sourceAndObject: [3, 10] }, [comp('A'), comp('A'), comp('A'), comp('B'), blocked(comp('A'))]],
      [
        'source+object limits from lru source+object should clear when cache size exceeded',
        { server: 100, sourceAndObject: [3, 2] },
        [comp('A'), comp('A'), comp('B'), comp('B'), comp('B'), comp('A'), blocked(comp('B')), blocked(comp('A')), comp('C'), blocked(comp('A')), comp('B')],
      ],
      ['source host should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ source: { host: l } }))],
      ['involved object kind should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ involvedObject: { kind: l } }))],
      ['involved object namespace should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ involvedObject: { namespace: l } }))],
      ['involved object name should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ involvedObject: { name: l } }))],
      ['involved object UID should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ involvedObject: { uid: l } }))],
      ['involved object APIVersion should be included in source+object key', { server: 100, sourceAndObject: [1, 10] }, keyInclusion((l) => ({ involvedObject: { apiVersion: l } }))],
      ['event blocked by user limits', { user: [3, 10] }, [user('A'), user('A'), user('A'), blocked(user('A'))]],
      // upstream's last two cases configure no limit at all (their userBurst is 0), so admit trivially; here with the user limit they name
      ['event from other user not blocked', { user: [3, 10] }, [user('A'), user('A'), user('A'), user('B')]],
      ['events from other user should not count against limit', { user: [3, 10] }, [user('A'), user('A'), user('B'), user('A')]],
    ];
    for (const [name, bursts, requests] of cases) it(name, () => run(bursts, requests));

    it('each check can fail: a blocked request expected admitted, and the reverse, are reported', function () {
      expect(() => run({ server: 3 }, [ev, ev, ev, ev])).to.throw(/request 3 should have been admitted/);
      expect(() => run({ server: 3 }, [ev, blocked(ev)])).to.throw(/request 1 should have been blocked/);
      // without eviction B would still be blocked; with cacheSize 3 nothing is evicted and it is
      expect(() => run({ server: 100, namespace: [3, 3] }, [ns('A'), ns('A'), ns('B'), ns('B'), ns('B'), ns('A'), blocked(ns('B')), blocked(ns('A')), ns('C'), blocked(ns('A')), ns('B')])).to.throw(/request 10 should have been admitted/);
    });
  });

  it("answers 429 TooManyRequests in upstream's words, every limit's refusal aggregated", function () {
    const { admit } = limiter({ server: 2, namespace: [1, 10], user: [1, 10] });
    const rq = { namespace: 'team-a', user: 'alice' };
    expect(admit(requestOf(rq)).allowed).to.equal(true);
    expect(admit(requestOf(rq))).to.deep.equal({
      allowed: false,
      code: 429,
      reason: 'TooManyRequests',
      message: 'Too many requests: [limit reached on type Namespace for key team-a, limit reached on type User for key alice]',
    });
    // every limit took its token on the refused request too, as upstream's enforcers all accept() in turn
    expect(admit(requestOf({ namespace: 'team-b', user: 'bob' }))).to.deep.include({ allowed: false, message: 'Too many requests: limit reached on type Server for key ' });
  });

  it('refills at qps up to burst, as golang.org/x/time/rate does', function () {
    const bucket = new TokenBucket(2, 3, 0);
    expect([0, 0, 0, 0].map(() => bucket.tryAccept(0))).to.deep.equal([true, true, true, false]);
    expect(bucket.tryAccept(499)).to.equal(false); // 0.998 of a token
    expect(bucket.tryAccept(500)).to.equal(true); // one token at 2 a second
    // a long idle fills to burst, no more
    expect([0, 0, 0, 0].map(() => bucket.tryAccept(60_000))).to.deep.equal([true, true, true, false]);
    // a refusal does not spend the fraction accrued
    expect(bucket.tryAccept(60_250)).to.equal(false);
    expect(bucket.tryAccept(60_500)).to.equal(true);
  });

  it('holds at most cacheSize buckets per keyed limit, the default 4096', function () {
    const { admit, config } = limiter({ namespace: [1, 2] });
    for (const name of ['a', 'b', 'c', 'd']) admit(requestOf(ns(name)));
    expect(config.enforcers[0]!.buckets).to.equal(2);
    const parsed = eventRateLimit.parseConfig({ limits: [{ type: 'User', qps: 1, burst: 1 }] });
    for (let i = 0; i < 4100; i++) eventRateLimit.validate!(requestOf(user(`u${i}`)), parsed.config, EMPTY_VIEW);
    expect(parsed.config.enforcers[0]!.buckets).to.equal(4096);
  });

  it("keys as upstream's key functions", function () {
    const request = requestOf({
      namespace: 'team-a',
      user: 'system:serviceaccount:team-a:app',
      event: { source: { component: 'kubelet', host: 'node-1' }, involvedObject: { kind: 'Pod', namespace: 'team-a', name: 'web', uid: '42', apiVersion: 'v1' } },
    });
    expect(keyOf('Server', request)).to.equal('');
    expect(keyOf('Namespace', request)).to.equal('team-a');
    expect(keyOf('User', request)).to.equal('system:serviceaccount:team-a:app');
    expect(keyOf('SourceAndObject', request)).to.equal('kubeletnode-1Podteam-aweb42v1');
  });

  it('counts core Events on CREATE and UPDATE only, not an events.k8s.io Event sent converted, nor DELETE', function () {
    const { admit } = limiter({ server: 1 });
    const converted: AdmissionRequest = {
      ...requestOf(ev),
      requestKind: { group: 'events.k8s.io', version: 'v1', kind: 'Event' },
      requestResource: { group: 'events.k8s.io', version: 'v1', resource: 'events' },
    };
    for (let i = 0; i < 3; i++) expect(admit(converted).allowed).to.equal(true);
    for (let i = 0; i < 3; i++) expect(admit({ ...requestOf(ev), operation: 'DELETE' }).allowed).to.equal(true);
    expect(admit({ ...requestOf(ev), operation: 'UPDATE' }).allowed).to.equal(true);
    expect(admit(requestOf(ev)).allowed).to.equal(false);
  });

  it('is registered, for core events only, and refuses a bad config on apply naming the field', function () {
    expect(findHandler('EventRateLimit')).to.equal(eventRateLimit);
    const rules = [{ operations: ['CREATE' as const, 'UPDATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['events'] }];
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'EventRateLimit', config: { limits: [{ type: 'Namespace', qps: 5, burst: 10 }] } } })).to.deep.equal([]);
    expect(suiteErrors({ type: 'Validating', rules: [{ ...rules[0]!, apiGroups: ['events.k8s.io'] }], handler: { name: 'EventRateLimit', config: { limits: [{ type: 'Server', qps: 1, burst: 1 }] } } })).to.deep.equal([
      { field: 'spec.webhooks[0].rules[0]', message: 'handler EventRateLimit does not serve events.k8s.io/events' },
    ]);
    expect(suiteErrors({ type: 'Mutating', rules, handler: { name: 'EventRateLimit', config: { limits: [{ type: 'Server', qps: 1, burst: 1 }] } } })).to.deep.equal([
      { field: 'spec.webhooks[0].type', message: 'handler EventRateLimit has no mutating side' },
    ]);
    const at = 'spec.webhooks[0].handler.config';
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'EventRateLimit', config: {} } })).to.deep.equal([{ field: `${at}.limits`, message: 'must not be empty' }]);
    expect(
      suiteErrors({
        type: 'Validating',
        rules,
        handler: {
          name: 'EventRateLimit',
          config: {
            limits: [{ type: 'Cluster', qps: 0, burst: 1.5, cacheSize: -1, extra: true }, { type: 'User', burst: 1 }, { type: 'Server', qps: 1, burst: 1, cacheSize: -1 }, 'Server'],
            other: 1,
          },
        },
      }),
    ).to.deep.equal([
      { field: `${at}.other`, message: 'unknown field; EventRateLimit takes limits' },
      { field: `${at}.limits[0].extra`, message: 'unknown field; a limit takes type, qps, burst, cacheSize' },
      { field: `${at}.limits[0].type`, message: 'Unsupported value: "Cluster": supported values: "Server", "Namespace", "User", "SourceAndObject"' },
      { field: `${at}.limits[0].qps`, message: 'must be an integer no less than 1' },
      { field: `${at}.limits[0].burst`, message: 'must be an integer no less than 1' },
      { field: `${at}.limits[0].cacheSize`, message: 'must be an integer no less than 0' },
      { field: `${at}.limits[1].qps`, message: 'must be positive' },
      { field: `${at}.limits[3]`, message: 'must be a limit ({type, qps, burst, cacheSize})' },
    ]);
  });
});
