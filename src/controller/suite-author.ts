/**
 * A suite or an AdmissionPolicy with params is served only once its author may read them, whether
 * or not the validation webhook answered when it was written (that webhook is `failurePolicy:
 * Ignore`, so an operator that is down, or a validator that fails, admits anything). The author is
 * who last wrote the object's spec, recorded by the API server itself in its annotations
 * (config/base/suite-params-guard.yaml for suites, config/base/admission-policy-guard.yaml for
 * policies: a MutatingAdmissionPolicy sets them and a ValidatingAdmissionPolicy refuses any other
 * value, both `failurePolicy: Fail`), so no author can name another. Before a generation is
 * served, the same SubjectAccessReviews the webhook asks on apply (apiserver/params-access.ts) are
 * asked for that author; until they pass, this replica's registry does not serve it (an earlier
 * generation that passed stays served while the answer is on its way, or while the API server
 * cannot give one), and the reconcilers report it (`Ready=False`, `ParamsForbidden`) and register
 * nothing for it. Answers are asked again every `recheckMs`, so an author who loses the access
 * loses the params with it.
 *
 * Every replica runs this for itself (each serves every suite and policy, fed by
 * controller/watches.ts); the leader's reconcilers wait on the same answers. One gate serves
 * either kind through what `ServedKind` says of it. An object without the annotations (written
 * before the guard was installed, or on a cluster without it) was checked on apply only.
 */
import { recordedAuthor, type AuthorizationUser } from '../api/authorization.ts';
import type { AdmissionPolicy, AdmissionSuite } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { describeError } from '../apiserver/client.ts';
import { policyParamsUses, suiteParamsUses, type ParamsUse } from '../apiserver/params-access.ts';
import type { Logger } from '../log.ts';
import { policyKey, type PolicyRegistry } from '../registry/policies.ts';
import type { SuiteRegistry } from '../registry/registry.ts';

/** The access checks, as apiserver/params-access.ts's ParamsAccess makes them. */
export interface ParamsReadCheck {
  check(user: AuthorizationUser, uses: ParamsUse[]): Promise<{ refused: FieldError[]; unknown: FieldError[] }>;
}

/** Whether a suite or policy may be served: its author may read its params (or it has none, or no recorded author); or not, and why; or not known yet. */
export type Clearance = { state: 'cleared' } | { state: 'refused' | 'unknown'; errors: FieldError[] };

export const CLEARED: Clearance = { state: 'cleared' };

/** A check the API server could not answer is asked again after this long. */
const RETRY_MS = 2_000;

/** What the gate needs of the objects of one kind, and of the registry that serves them. */
export interface ServedKind<T> {
  /** How the logs name the kind. */
  what: string;
  /** The object's key in the registry: a suite's name, a policy's `namespace/name`. */
  key(object: T): string;
  /** The params it names, as the author must be allowed to read them. */
  uses(object: T): ParamsUse[];
  serve(object: T): void;
  unserve(key: string): void;
  serves(key: string): boolean;
}

/** Suites, served by the SuiteRegistry. */
export function servedSuites(registry: Pick<SuiteRegistry, 'sync' | 'remove' | 'get'>): ServedKind<AdmissionSuite> {
  return {
    what: 'suite',
    key: (suite) => suite.metadata.name,
    uses: suiteParamsUses,
    serve: (suite) => registry.sync(suite),
    unserve: (name) => registry.remove(name),
    serves: (name) => registry.get(name) !== undefined,
  };
}

/** AdmissionPolicies, served by the PolicyRegistry (whose changes reach the tenant workers). */
export function servedPolicies(registry: Pick<PolicyRegistry, 'sync' | 'remove' | 'get'>): ServedKind<AdmissionPolicy> {
  const split = (key: string) => {
    const slash = key.indexOf('/');
    return [key.slice(0, slash), key.slice(slash + 1)] as const;
  };
  return {
    what: 'AdmissionPolicy',
    key: (policy) => policyKey(policy.metadata),
    uses: policyParamsUses,
    serve: (policy) => registry.sync(policy),
    unserve: (key) => registry.remove(...split(key)),
    serves: (key) => registry.get(...split(key)) !== undefined,
  };
}

export interface AuthorGateDeps<T> {
  served: ServedKind<T>;
  /** Absent: everything is served as it compiles (unit tests without an API server). */
  access?: ParamsReadCheck;
  /** How long an answer holds before it is asked again. */
  recheckMs: number;
  log: Logger;
  now?: () => number;
}

/** The objects a gate serves: anything with the metadata the API server gives. */
type Gated = { metadata: { uid?: string; generation?: number; annotations?: Record<string, string> } };

interface Answer {
  key: string;
  /** When `settled` was given. */
  at: number;
  settled?: Clearance;
  asking?: Promise<Clearance>;
}

export class AuthorGate<T extends Gated> {
  private readonly deps: AuthorGateDeps<T>;
  private readonly served: ServedKind<T>;
  private readonly now: () => number;
  private readonly answers = new Map<string, Answer>();
  /** Each object's newest version seen: only its answer changes what the registry serves. */
  private readonly latest = new Map<string, T>();
  private readonly retries = new Map<string, NodeJS.Timeout>();

  constructor(deps: AuthorGateDeps<T>) {
    this.deps = deps;
    this.served = deps.served;
    this.now = deps.now ?? Date.now;
  }

  /** An object changed (the Watches, on every replica): served once cleared. */
  sync(object: T): void {
    this.clear(object).catch((err) => this.deps.log.warn(`could not check the author of a ${this.served.what}`, { name: this.served.key(object), error: describeError(err) }));
  }

  /** An object deleted, by its key. */
  remove(key: string): void {
    this.latest.delete(key);
    this.answers.delete(key);
    clearTimeout(this.retries.get(key));
    this.retries.delete(key);
    this.served.unserve(key);
  }

  /** Whether `object` names params and has a recorded author: whether its clearance is ever anything but CLEARED. */
  gates(object: T): boolean {
    return this.deps.access !== undefined && this.served.uses(object).length > 0 && recordedAuthor(object.metadata) !== undefined;
  }

  /**
   * Whether `object` may be served, asked (or remembered) for its recorded author; the registry is
   * brought in line with the answer when `object` is still the newest version seen.
   */
  async clear(object: T): Promise<Clearance> {
    const name = this.served.key(object);
    this.note(object);
    const uses = this.served.uses(object);
    const author = recordedAuthor(object.metadata);
    if (!this.deps.access || uses.length === 0 || !author) {
      this.apply(object, CLEARED);
      return CLEARED;
    }
    const key = JSON.stringify([object.metadata.uid, object.metadata.generation ?? 0, author, uses.map((u) => u.ref)]);
    let answer = this.answers.get(name);
    if (answer?.key !== key) this.answers.set(name, (answer = { key, at: 0 }));
    const fresh = answer.settled && answer.settled.state !== 'unknown' && this.now() - answer.at < this.deps.recheckMs;
    if (!fresh) {
      if (!answer.asking) {
        const asked = answer;
        asked.asking = this.ask(author, uses).then((result) => {
          asked.asking = undefined;
          // A passing error keeps the answer this very object and author were given before (asked again soon).
          if (result.state !== 'unknown' || !asked.settled || asked.settled.state === 'unknown') asked.settled = result;
          if (result.state !== 'unknown') asked.at = this.now();
          return asked.settled;
        });
      }
      await answer.asking;
    }
    const clearance = answer.settled ?? { state: 'unknown', errors: [] };
    this.apply(object, clearance);
    return clearance;
  }

  private async ask(author: AuthorizationUser, uses: ParamsUse[]): Promise<Clearance> {
    try {
      const { refused, unknown } = await this.deps.access!.check(author, uses);
      if (refused.length > 0) return { state: 'refused', errors: [...refused, ...unknown] };
      if (unknown.length > 0) return { state: 'unknown', errors: unknown };
      return CLEARED;
    } catch (err) {
      return { state: 'unknown', errors: [{ field: uses[0]?.field ?? 'params', message: `cannot check whether its author may read its params: ${describeError(err)}` }] };
    }
  }

  private note(object: T): void {
    const name = this.served.key(object);
    const seen = this.latest.get(name);
    if (!seen || seen.metadata.uid !== object.metadata.uid || (object.metadata.generation ?? 0) >= (seen.metadata.generation ?? 0)) this.latest.set(name, object);
  }

  /**
   * The same version as `latest`: uid, generation and author (a write that leaves the spec alone
   * keeps the generation but may record another author, whose answer is not the first one's).
   */
  private static same(latest: Gated, object: Gated): boolean {
    return latest.metadata.uid === object.metadata.uid && (latest.metadata.generation ?? 0) === (object.metadata.generation ?? 0) && JSON.stringify(recordedAuthor(latest.metadata)) === JSON.stringify(recordedAuthor(object.metadata));
  }

  private apply(object: T, clearance: Clearance): void {
    const name = this.served.key(object);
    const latest = this.latest.get(name);
    if (!latest || !AuthorGate.same(latest, object)) return;
    if (clearance.state === 'cleared') {
      this.served.serve(latest);
    } else if (clearance.state === 'refused') {
      if (this.served.serves(name)) {
        this.deps.log.warn(`${this.served.what} not served: its author may not read its params`, { name, errors: clearance.errors.map((e) => `${e.field}: ${e.message}`).join('; ') });
        this.served.unserve(name);
      }
    } else if (!this.retries.has(name)) {
      // Unknown: what is served stays (an earlier generation, cleared then, or nothing); asked again soon.
      const timer = setTimeout(() => {
        this.retries.delete(name);
        const now = this.latest.get(name);
        if (now) this.sync(now);
      }, RETRY_MS);
      timer.unref();
      this.retries.set(name, timer);
    }
  }
}

/** The suites' gate: the SuiteRegistry behind their authors. */
export class SuiteAuthorGate extends AuthorGate<AdmissionSuite> {
  constructor(deps: Omit<AuthorGateDeps<AdmissionSuite>, 'served'> & { registry: Pick<SuiteRegistry, 'sync' | 'remove' | 'get'> }) {
    const { registry, ...rest } = deps;
    super({ ...rest, served: servedSuites(registry) });
  }
}

/** The AdmissionPolicies' gate: the PolicyRegistry behind their authors; removed by namespace and name, as the Watches remove a policy. */
export class PolicyAuthorGate extends AuthorGate<AdmissionPolicy> {
  constructor(deps: Omit<AuthorGateDeps<AdmissionPolicy>, 'served'> & { registry: Pick<PolicyRegistry, 'sync' | 'remove' | 'get'> }) {
    const { registry, ...rest } = deps;
    super({ ...rest, served: servedPolicies(registry) });
  }

  removePolicy(namespace: string, name: string): void {
    this.remove(policyKey({ namespace, name }));
  }
}
