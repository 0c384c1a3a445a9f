/**
 * A suite with params is served only once its author may read them, whether or not the
 * suite-validation webhook answered when it was written (that webhook is `failurePolicy: Ignore`,
 * so an operator that is down, or a validator that fails, admits anything). The author is who last
 * wrote the suite's spec, recorded by the API server itself in the suite's annotations
 * (config/base/suite-params-guard.yaml: a MutatingAdmissionPolicy sets them and a
 * ValidatingAdmissionPolicy refuses any other value, both `failurePolicy: Fail`), so no author can
 * name another. Before a generation is served, the same SubjectAccessReviews the webhook asks on
 * apply (apiserver/params-access.ts) are asked for that author; until they pass, this replica's
 * registry does not serve it (an earlier generation that passed stays served while the answer is
 * on its way, or while the API server cannot give one), and the reconciler reports it
 * (`Ready=False`, `ParamsForbidden`) and registers nothing. Answers are asked again every
 * `recheckMs`, so an author who loses the access loses the suite's params with it.
 *
 * Every replica runs this for itself (each serves every suite, fed by controller/watches.ts); the
 * leader's reconciler waits on the same answers. A suite without the annotations (written before
 * the guard was installed, or on a cluster without it) was checked on apply only.
 */
import type { AuthorizationUser } from '../api/authorization.ts';
import { NAMESPACED } from '../api/names.ts';
import type { AdmissionSuite } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { describeError } from '../apiserver/client.ts';
import { suiteParamsUses, type ParamsUse } from '../apiserver/params-access.ts';
import type { Logger } from '../log.ts';
import type { SuiteRegistry } from '../registry/registry.ts';

/** The access checks, as apiserver/params-access.ts's ParamsAccess makes them. */
export interface ParamsReadCheck {
  check(user: AuthorizationUser, uses: ParamsUse[]): Promise<{ refused: FieldError[]; unknown: FieldError[] }>;
}

/** Whether a suite may be served: its author may read its params (or it has none, or no recorded author); or not, and why; or not known yet. */
export type Clearance = { state: 'cleared' } | { state: 'refused' | 'unknown'; errors: FieldError[] };

export const CLEARED: Clearance = { state: 'cleared' };

/** A check the API server could not answer is asked again after this long. */
const RETRY_MS = 2_000;

/** The author the API server recorded for the suite's spec, with their groups; undefined when none is recorded. */
export function recordedAuthor(suite: AdmissionSuite): AuthorizationUser | undefined {
  const annotations = suite.metadata.annotations ?? {};
  const username = annotations[NAMESPACED.authorAnnotation];
  if (!username) return undefined;
  const groups = (annotations[NAMESPACED.authorGroupsAnnotation] ?? '').split(',').filter((g) => g !== '');
  return { username, ...(groups.length ? { groups } : {}) };
}

export interface SuiteAuthorDeps {
  registry: Pick<SuiteRegistry, 'sync' | 'remove' | 'get'>;
  /** Absent: every suite is served as it compiles (unit tests without an API server). */
  access?: ParamsReadCheck;
  /** How long an answer holds before it is asked again. */
  recheckMs: number;
  log: Logger;
  now?: () => number;
}

interface Answer {
  key: string;
  /** When `settled` was given. */
  at: number;
  settled?: Clearance;
  asking?: Promise<Clearance>;
}

export class SuiteAuthorGate {
  private readonly deps: SuiteAuthorDeps;
  private readonly now: () => number;
  private readonly answers = new Map<string, Answer>();
  /** Each suite's newest version seen: only its answer changes what the registry serves. */
  private readonly latest = new Map<string, AdmissionSuite>();
  private readonly retries = new Map<string, NodeJS.Timeout>();

  constructor(deps: SuiteAuthorDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
  }

  /** A suite changed (the Watches, on every replica): served once cleared. */
  sync(suite: AdmissionSuite): void {
    this.clear(suite).catch((err) => this.deps.log.warn('could not check the author of a suite', { suite: suite.metadata.name, error: describeError(err) }));
  }

  /** A suite deleted. */
  remove(name: string): void {
    this.latest.delete(name);
    this.answers.delete(name);
    clearTimeout(this.retries.get(name));
    this.retries.delete(name);
    this.deps.registry.remove(name);
  }

  /**
   * Whether `suite` may be served, asked (or remembered) for its recorded author; the registry is
   * brought in line with the answer when `suite` is still the newest version seen.
   */
  async clear(suite: AdmissionSuite): Promise<Clearance> {
    const name = suite.metadata.name;
    this.note(suite);
    const uses = suiteParamsUses(suite);
    const author = recordedAuthor(suite);
    if (!this.deps.access || uses.length === 0 || !author) {
      this.apply(suite, CLEARED);
      return CLEARED;
    }
    const key = JSON.stringify([suite.metadata.uid, suite.metadata.generation ?? 0, author, uses.map((u) => u.ref)]);
    let answer = this.answers.get(name);
    if (answer?.key !== key) this.answers.set(name, (answer = { key, at: 0 }));
    const fresh = answer.settled && answer.settled.state !== 'unknown' && this.now() - answer.at < this.deps.recheckMs;
    if (!fresh) {
      if (!answer.asking) {
        const asked = answer;
        asked.asking = this.ask(author, uses).then((result) => {
          asked.asking = undefined;
          // A passing error keeps the answer this very suite and author were given before (asked again soon).
          if (result.state !== 'unknown' || !asked.settled || asked.settled.state === 'unknown') asked.settled = result;
          if (result.state !== 'unknown') asked.at = this.now();
          return asked.settled;
        });
      }
      await answer.asking;
    }
    const clearance = answer.settled ?? { state: 'unknown', errors: [] };
    this.apply(suite, clearance);
    return clearance;
  }

  private async ask(author: AuthorizationUser, uses: ParamsUse[]): Promise<Clearance> {
    try {
      const { refused, unknown } = await this.deps.access!.check(author, uses);
      if (refused.length > 0) return { state: 'refused', errors: [...refused, ...unknown] };
      if (unknown.length > 0) return { state: 'unknown', errors: unknown };
      return CLEARED;
    } catch (err) {
      return { state: 'unknown', errors: [{ field: 'spec.webhooks[].params', message: `cannot check whether its author may read its params: ${describeError(err)}` }] };
    }
  }

  private note(suite: AdmissionSuite): void {
    const name = suite.metadata.name;
    const seen = this.latest.get(name);
    if (!seen || seen.metadata.uid !== suite.metadata.uid || (suite.metadata.generation ?? 0) >= (seen.metadata.generation ?? 0)) this.latest.set(name, suite);
  }

  private apply(suite: AdmissionSuite, clearance: Clearance): void {
    const name = suite.metadata.name;
    const latest = this.latest.get(name);
    if (!latest || latest.metadata.uid !== suite.metadata.uid || (latest.metadata.generation ?? 0) !== (suite.metadata.generation ?? 0)) return;
    if (clearance.state === 'cleared') {
      this.deps.registry.sync(latest);
    } else if (clearance.state === 'refused') {
      if (this.deps.registry.get(name)) {
        this.deps.log.warn('suite not served: its author may not read its params', { suite: name, errors: clearance.errors.map((e) => `${e.field}: ${e.message}`).join('; ') });
        this.deps.registry.remove(name);
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
