/**
 * `authorizer` checks on the request path, keeping evaluation synchronous: two phases.
 *
 * An evaluation is a pure function of the request and the request's AuthorizationSession (its
 * answers so far). A check whose answer is not there records its attributes and throws
 * NEEDS_AUTHORIZATION; the evaluation is finished (its result thrown away), the recorded checks
 * are asked in parallel, and the evaluation runs again with the answers, until it records nothing
 * (at most MAX_ROUNDS times; cost limits allow few checks per evaluation anyway). The same check
 * asked twice in one request is asked once. A webhook whose expressions never name `authorizer`
 * never gets here (rules.ts decides from the AST at compile time).
 *
 * Why not cel-js's async functions: the cost meter (cost/meter.ts), lazily computed variables and the
 * cel-go logic overrides are synchronous, module-level or getter-based; async evaluation would
 * interleave requests on the one meter and make every step of every webhook Promise-aware. The
 * two-phase loop costs a re-evaluation only for the few webhooks that use `authorizer`.
 */
import { authorizationKey, type AuthorizationAttributes, type AuthorizationDecision, type Authorizer } from '../../api/authorization.ts';
import { celError } from '../celjs/values.ts';

/** Evaluations per request at most: every round but the last adds at least one new check. */
export const MAX_ROUNDS = 32;

/** Thrown by a check that has no answer yet; never seen outside this module's loop. */
class NeedsAuthorization extends Error {
  constructor() {
    super('authorization check pending');
    this.name = 'NeedsAuthorization';
  }
}
const NEEDS_AUTHORIZATION = new NeedsAuthorization();

/** One request's checks: answers by key, and those the last evaluation asked for that have none. */
export class AuthorizationSession {
  private readonly answers = new Map<string, AuthorizationDecision>();
  private pending: Map<string, AuthorizationAttributes> | undefined;
  private readonly authorizer: Authorizer | undefined;

  constructor(authorizer: Authorizer | undefined) {
    this.authorizer = authorizer;
  }

  /** The answer to `attributes`; throws NEEDS_AUTHORIZATION until it has one, or an evaluation error with no Authorizer at all. */
  decide(attributes: AuthorizationAttributes): AuthorizationDecision {
    const key = authorizationKey(attributes);
    const answer = this.answers.get(key);
    if (answer) return answer;
    if (!this.authorizer) throw celError('authorization checks are not available here');
    (this.pending ??= new Map()).set(key, attributes);
    throw NEEDS_AUTHORIZATION;
  }

  /** The checks recorded since the last call, or undefined. */
  takePending(): Map<string, AuthorizationAttributes> | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }

  /** Asks every check in `pending` at once; a check that cannot be asked is answered as errored. */
  async ask(pending: Map<string, AuthorizationAttributes>): Promise<void> {
    const authorizer = this.authorizer!;
    await Promise.all(
      [...pending].map(async ([key, attributes]) => {
        try {
          const decision = await authorizer.check(attributes);
          this.answers.set(key, { allowed: decision.allowed === true, reason: decision.reason ?? '', evaluationError: decision.evaluationError ?? '' });
        } catch (err) {
          // As the API server's authorizer answers a check it could not make: not allowed, errored,
          // with the error; the expression decides what that means (`errored()`, `error()`).
          this.answers.set(key, { allowed: false, reason: '', evaluationError: `authorization check failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` });
        }
      }),
    );
  }
}

/**
 * Runs `evaluate` until its checks are all answered. Synchronous when the first evaluation asks
 * for nothing new (no check taken, or no authorizer configured: then checks are evaluation errors).
 */
export function evaluateAuthorizing<T>(authorizer: Authorizer | undefined, evaluate: (session: AuthorizationSession) => T): T | Promise<T> {
  const session = new AuthorizationSession(authorizer);
  const first = evaluate(session);
  const pending = session.takePending();
  return pending ? rounds(session, pending, evaluate) : first;
}

async function rounds<T>(session: AuthorizationSession, pending: Map<string, AuthorizationAttributes>, evaluate: (session: AuthorizationSession) => T): Promise<T> {
  for (let round = 1; ; round++) {
    if (round >= MAX_ROUNDS) throw new Error(`more than ${MAX_ROUNDS} rounds of authorization checks`);
    await session.ask(pending);
    const result = evaluate(session);
    const next = session.takePending();
    if (!next) return result;
    pending = next;
  }
}
