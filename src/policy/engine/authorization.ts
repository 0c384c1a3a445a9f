/**
 * `authorizer` checks on the request path, keeping evaluation synchronous: two phases. The same
 * loop answers the other question a pure evaluation may have to put to the API server: what a
 * kind is served as (RESTMappings, for OwnerReferencesPermissionEnforcement's owners).
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
import type { KindMapper, MappingAnswer } from '../../api/kind-mapper.ts';
import { celError } from '../celjs/values.ts';
import { firstLine } from '../celjs/program.ts';

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

/** A RESTMappings question: the kind of an ownerReference. */
interface MappingQuestion {
  group: string;
  version: string;
  kind: string;
}

/** What a session's questions are asked of: the authorizer for checks, the mapper for kinds. */
export interface Answerers {
  authorizer?: Authorizer;
  mapper?: KindMapper;
}

type Pending = Map<string, { check: AuthorizationAttributes } | { mapping: MappingQuestion }>;

/** One request's questions: answers by key, and those the last evaluation asked for that have none. */
export class AuthorizationSession {
  private readonly answers = new Map<string, AuthorizationDecision>();
  private readonly mappings = new Map<string, MappingAnswer>();
  private pending: Pending | undefined;
  private readonly authorizer: Authorizer | undefined;
  private readonly mapper: KindMapper | undefined;

  constructor({ authorizer, mapper }: Answerers) {
    this.authorizer = authorizer;
    this.mapper = mapper;
  }

  /** The answer to `attributes`; throws NEEDS_AUTHORIZATION until it has one, or an evaluation error with no Authorizer at all. */
  decide(attributes: AuthorizationAttributes): AuthorizationDecision {
    return this.decideAll([attributes])[0]!;
  }

  /** The answers to all of `checks`, asked together in one round when any is missing. */
  decideAll(checks: AuthorizationAttributes[]): AuthorizationDecision[] {
    let missing = false;
    const answers = checks.map((attributes) => {
      const key = authorizationKey(attributes);
      const answer = this.answers.get(key);
      if (!answer) {
        if (!this.authorizer) throw celError('authorization checks are not available here');
        (this.pending ??= new Map()).set(key, { check: attributes });
        missing = true;
      }
      return answer!;
    });
    if (missing) throw NEEDS_AUTHORIZATION;
    return answers;
  }

  /** The resources each kind is served as (RESTMappings), asked together in one round when any is missing. */
  restMappings(kinds: MappingQuestion[]): MappingAnswer[] {
    let missing = false;
    const answers = kinds.map((question) => {
      const key = JSON.stringify(['m', question.group, question.version, question.kind]);
      const answer = this.mappings.get(key);
      if (answer) return answer;
      if (!this.mapper) return { error: 'API discovery is not available here' };
      (this.pending ??= new Map()).set(key, { mapping: question });
      missing = true;
      return answer!;
    });
    if (missing) throw NEEDS_AUTHORIZATION;
    return answers;
  }

  /** The questions recorded since the last call, or undefined. */
  takePending(): Pending | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }

  /** Asks every question in `pending` at once; a check that cannot be asked is answered as errored. */
  async ask(pending: Pending): Promise<void> {
    await Promise.all(
      [...pending].map(async ([key, question]) => {
        if ('mapping' in question) {
          const { group, version, kind } = question.mapping;
          try {
            this.mappings.set(key, { mappings: await this.mapper!.restMappings(group, version, kind) });
          } catch (err) {
            this.mappings.set(key, { error: firstLine(err) });
          }
          return;
        }
        try {
          const decision = await this.authorizer!.check(question.check);
          this.answers.set(key, { allowed: decision.allowed === true, reason: decision.reason ?? '', evaluationError: decision.evaluationError ?? '' });
        } catch (err) {
          // As the API server's authorizer answers a check it could not make: not allowed, errored,
          // with the error; the expression decides what that means (`errored()`, `error()`).
          this.answers.set(key, { allowed: false, reason: '', evaluationError: `authorization check failed: ${firstLine(err)}` });
        }
      }),
    );
  }
}

/**
 * Runs `evaluate` until its questions are all answered. Synchronous when the first evaluation asks
 * for nothing new (no check taken, or no authorizer configured: then checks are evaluation errors).
 */
export function evaluateAuthorizing<T>(answerers: Answerers, evaluate: (session: AuthorizationSession) => T): T | Promise<T> {
  const session = new AuthorizationSession(answerers);
  const first = attempt(session, evaluate);
  const pending = session.takePending();
  return pending ? rounds(session, pending, evaluate) : (first as T);
}

/** One evaluation; one that stopped at its first unanswered question (a handler does not catch it, as CEL does) has no result. */
function attempt<T>(session: AuthorizationSession, evaluate: (session: AuthorizationSession) => T): T | undefined {
  try {
    return evaluate(session);
  } catch (err) {
    if (err === NEEDS_AUTHORIZATION) return undefined;
    throw err;
  }
}

async function rounds<T>(session: AuthorizationSession, pending: Pending, evaluate: (session: AuthorizationSession) => T): Promise<T> {
  for (let round = 1; ; round++) {
    if (round >= MAX_ROUNDS) throw new Error(`more than ${MAX_ROUNDS} rounds of authorization checks`);
    await session.ask(pending);
    const result = attempt(session, evaluate);
    const next = session.takePending();
    if (!next) return result as T;
    pending = next;
  }
}
