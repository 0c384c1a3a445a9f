/**
 * EventRateLimit, after the in-tree admission plugin of that name (plugin/pkg/admission/eventratelimit,
 * config eventratelimit.admission.k8s.io/v1alpha1 Configuration). Validating side: core Events, CREATE
 * and UPDATE (the plugin's handler; an event recorder's PATCH of a repeated event is an UPDATE),
 * never a dry run (it writes nothing to etcd, so upstream does not count it). Each of `limits` is a
 * token bucket per key, as client-go's flowcontrol token bucket (golang.org/x/time/rate) keeps one:
 * `burst` tokens to start with, refilled at `qps` a second up to `burst`, one taken per request.
 * Keys: Server, one bucket for all; Namespace, the request's namespace; User, the requesting user's
 * name; SourceAndObject, the event's source component and host and its involvedObject's kind,
 * namespace, name, uid and apiVersion, joined as upstream joins them (with nothing between). The
 * keyed types hold at most `cacheSize` buckets (default 4096), least recently used evicted, so an
 * evicted key comes back with a full bucket, as upstream's LRU. Every limit takes its token, even
 * when another refuses; a request any refuses is answered 429 TooManyRequests in upstream's words
 * (`Too many requests: limit reached on type Namespace for key team-a`, several as `[a, b]`).
 *
 * Only core Events: upstream compares the request's kind with core's Event, so an events.k8s.io
 * Event is not counted. The API server does send one to a core `events` webhook, converted (the two
 * share storage, so matchPolicy Equivalent, the default, matches it; seen in the e2e): its
 * `requestKind` tells it apart.
 *
 * Not a pure function of the request, unlike every other handler: the buckets are state. They live
 * in the parsed config, so one compiled webhook (a suite at one generation) on one thread holds
 * them: a new generation of the suite, or a restarted operator, starts with full buckets. Per
 * replica, said as such: the in-tree plugin counts per API server process, so with N API servers
 * its limit is already up to N times the configured one; here it is per operator replica (the
 * thread that answers reviews), so with N replicas behind the Service the effective limit is up to
 * N times the configured one. A review of 256 KiB or more is judged in a review worker, whose
 * buckets are its own: an Event that large is counted apart. Never audited (`audits` unset): a
 * stored Event says nothing of a rate. Owns the buckets and the keys; how a Decision is sent is the
 * admission server's.
 */
import { allowed, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { aggregate } from './errors.ts';

export const LIMIT_TYPES = ['Server', 'Namespace', 'User', 'SourceAndObject'] as const;
export type LimitType = (typeof LIMIT_TYPES)[number];

/** upstream's defaultCacheSize, for a keyed limit whose cacheSize is unset or 0. */
export const DEFAULT_CACHE_SIZE = 4096;

/** A clock in milliseconds; monotonic in use (performance.now), injectable for tests. */
export type Clock = () => number;

/**
 * golang.org/x/time/rate's Limiter as AllowN(now, 1) uses it: tokens refill with the time since
 * the last accepted request, capped at burst; a refusal changes nothing. Starts full.
 */
export class TokenBucket {
  private readonly qps: number;
  private readonly burst: number;
  private tokens: number;
  private last: number;
  constructor(qps: number, burst: number, now: number) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
    this.last = now;
  }

  tryAccept(now: number): boolean {
    const elapsed = Math.max(0, now - this.last);
    const tokens = Math.min(this.burst, this.tokens + (elapsed / 1000) * this.qps) - 1;
    // rate waits a whole number of nanoseconds for a deficit: one shorter than 1 ns is none
    if (tokens < 0 && Math.trunc((-tokens / this.qps) * 1e9) > 0) return false;
    this.tokens = tokens;
    this.last = now;
    return true;
  }
}

/** hashicorp/golang-lru as upstream's lruCache uses it: a get makes a key the most recent, adding beyond size evicts the least. */
class BucketCache {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly size: number;
  private readonly create: () => TokenBucket;
  constructor(size: number, create: () => TokenBucket) {
    this.size = size;
    this.create = create;
  }

  get(key: string): TokenBucket {
    let bucket = this.buckets.get(key);
    if (bucket) this.buckets.delete(key);
    else bucket = this.create();
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.size) this.buckets.delete(this.buckets.keys().next().value!);
    return bucket;
  }

  get count(): number {
    return this.buckets.size;
  }
}

export interface Limit {
  type: LimitType;
  qps: number;
  burst: number;
  /** Ignored for Server, as upstream. */
  cacheSize: number;
}

/** One limit's buckets (upstream's limitEnforcer). */
export class LimitEnforcer {
  readonly limit: Limit;
  private readonly clock: Clock;
  private readonly single?: TokenBucket;
  private readonly cache?: BucketCache;
  constructor(limit: Limit, clock: Clock) {
    this.limit = limit;
    this.clock = clock;
    const create = () => new TokenBucket(limit.qps, limit.burst, clock());
    if (limit.type === 'Server') this.single = create();
    else this.cache = new BucketCache(limit.cacheSize || DEFAULT_CACHE_SIZE, create);
  }

  /** Upstream's refusal words, or undefined when the key's bucket had a token. */
  accept(request: AdmissionRequest): string | undefined {
    const key = keyOf(this.limit.type, request);
    const bucket = this.single ?? this.cache!.get(key);
    return bucket.tryAccept(this.clock()) ? undefined : `limit reached on type ${this.limit.type} for key ${key}`;
  }

  /** How many buckets it holds (for tests: the LRU's bound). */
  get buckets(): number {
    return this.single ? 1 : this.cache!.count;
  }
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** upstream's getServerKey, getNamespaceKey, getUserKey and getSourceAndObjectKey. */
export function keyOf(type: LimitType, request: AdmissionRequest): string {
  switch (type) {
    case 'Server':
      return '';
    case 'Namespace':
      return request.namespace ?? '';
    case 'User':
      return request.userInfo?.username ?? '';
    case 'SourceAndObject': {
      const event = isPlainObject(request.object) ? request.object : undefined;
      if (!event) return '';
      const source = isPlainObject(event.source) ? event.source : {};
      const involved = isPlainObject(event.involvedObject) ? event.involvedObject : {};
      return [source.component, source.host, involved.kind, involved.namespace, involved.name, involved.uid, involved.apiVersion].map(str).join('');
    }
  }
}

export interface EventRateLimitConfig {
  limits: Limit[];
  /** The buckets: state, held by the compiled webhook that parsed this config. */
  enforcers: LimitEnforcer[];
}

/** A core Event as the client asked for it (not an events.k8s.io one the API server converted). */
function isCoreEvent(request: AdmissionRequest): boolean {
  const kind = request.requestKind ?? request.kind;
  const resource = request.requestResource ?? request.resource;
  return kind.group === '' && kind.kind === 'Event' && resource.group === '' && resource.resource === 'events' && !request.subResource;
}

/** upstream's ValidateConfiguration, field by field: limits not empty, a known type, qps and burst positive, cacheSize not negative. */
function parseLimits(read: ConfigReader): Limit[] {
  const raw = read.raw('limits');
  if (!Array.isArray(raw) || raw.length === 0) {
    read.error('limits', Array.isArray(raw) || raw === undefined || raw === null ? 'must not be empty' : 'must be a list of limits ({type, qps, burst, cacheSize})');
    return [];
  }
  const out: Limit[] = [];
  raw.forEach((item: unknown, i) => {
    const at = `limits[${i}]`;
    if (!isPlainObject(item)) return read.error(at, 'must be a limit ({type, qps, burst, cacheSize})');
    const limit = new ConfigReader(item, 'a limit', ['type', 'qps', 'burst', 'cacheSize']);
    const type = limit.string('type', '');
    if (!(LIMIT_TYPES as readonly string[]).includes(type)) limit.error('type', `Unsupported value: "${type}": supported values: "${LIMIT_TYPES.join('", "')}"`);
    // int32 in the v1alpha1 types, as upstream reads them
    const qps = limit.integer('qps', 0, 1);
    const burst = limit.integer('burst', 0, 1);
    // ignored for Server, so not checked there (as upstream's validation)
    const cacheSize = limit.integer('cacheSize', 0, type === 'Server' ? -(2 ** 31) : 0);
    for (const [field, value] of [
      ['qps', qps],
      ['burst', burst],
      ['cacheSize', cacheSize],
    ] as const) {
      if (value > 2 ** 31 - 1) limit.error(field, 'must fit in a 32-bit integer');
    }
    if (!limit.has('qps')) limit.error('qps', 'must be positive');
    if (!limit.has('burst')) limit.error('burst', 'must be positive');
    for (const e of limit.errors) read.error(`${at}.${e.field}`, e.message);
    if (limit.errors.length === 0) out.push({ type: type as LimitType, qps, burst, cacheSize });
  });
  return out;
}

/** The handler with its clock; `eventRateLimit` is it on the process's monotonic clock. */
export function eventRateLimitWithClock(clock: Clock): Handler<EventRateLimitConfig> {
  return {
    name: 'EventRateLimit',
    resources: [{ group: '', resource: 'events' }],
    parseConfig(config) {
      const read = new ConfigReader(config, 'EventRateLimit', ['limits']);
      const limits = parseLimits(read);
      return { config: { limits, enforcers: limits.map((limit) => new LimitEnforcer(limit, clock)) }, errors: read.errors };
    },
    validate(request, config): Decision {
      if (!isCoreEvent(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE') || request.dryRun) return allowed();
      const refusals: string[] = [];
      for (const enforcer of config.enforcers) {
        const refused = enforcer.accept(request);
        if (refused) refusals.push(refused);
      }
      if (refusals.length === 0) return allowed();
      // apierrors.NewTooManyRequestsError: a 429 the API server passes on as the webhook answers it
      return { allowed: false, code: 429, reason: 'TooManyRequests', message: `Too many requests: ${aggregate(refusals)}` };
    },
  };
}

export const eventRateLimit = eventRateLimitWithClock(() => performance.now());
