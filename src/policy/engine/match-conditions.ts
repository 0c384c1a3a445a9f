/**
 * A webhook's matchConditions as ValidatingAdmissionPolicy evaluates them, compiled in VAP's
 * environment (params, `authorizer`, never `variables`) and split: a condition the API server
 * evaluates with provably the same outcome is handed to it; every other is evaluated here before the
 * rules (false skips the policy, an error follows failurePolicy in VAP's words). Owns the split and
 * the evaluation; the webhook configuration is the controller's, what a skipped policy answers rules.ts's.
 */
import type { FailurePolicy, MatchCondition, WebhookSpec } from '../../api/types.ts';
import type { AdmissionRequest } from '../../api/admission-review.ts';
import { compile } from './environment.ts';
import type { Program } from '../celjs/program.ts';
import type { RawNode } from '../celjs/walk.ts';
import { buildActivation } from './activation.ts';
import { celErrorText } from './errors.ts';
import { IntsInPlace } from '../values/convert.ts';
import { ActivationReads } from '../values/reads.ts';
import { closeBudget, CostBudgetError, openBudget, type Allowance } from '../cost/meter.ts';

/** The API server's cost budget for one evaluation of a policy's matchConditions (RuntimeCELCostBudgetMatchConditions). */
const MATCH_CONDITIONS_BUDGET = 2_500_000;

export interface CompiledMatchCondition {
  name: string;
  expression: string;
  program: Program;
}

export interface MatchConditionPlan {
  /** Handed to the API server as webhook matchConditions, in declared order. */
  passedThrough: MatchCondition[];
  /** Evaluated by Portcullis before the webhook's rules. */
  evaluated: CompiledMatchCondition[];
}

/**
 * Compiles the matchConditions of `webhook` (at `path`) and splits them; throws CompileError naming
 * the field. A webhook with a built-in handler is a webhook, not a policy: its conditions all go
 * to the API server, compiled as the API server compiles a webhook's (no params).
 */
/**
 * `evaluateAll`: none is handed to the API server (an AdmissionPolicy's, whose registered webhook is
 * shared); `strictCost`: charged as a team's policy is (cost/instrument.ts).
 */
export function planMatchConditions(webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy, evaluateAll = false, strictCost = false): MatchConditionPlan {
  const plan: MatchConditionPlan = { passedThrough: [], evaluated: [] };
  const params = !webhook.handler && webhook.params !== undefined;
  (webhook.matchConditions ?? []).forEach((condition, i) => {
    // VAP compiles the trimmed expression, with no `variables` declared.
    const program = compile(condition.expression.trim(), `${path}.matchConditions[${i}].expression`, ['bool'], { params, variables: false, strictCost });
    if (!evaluateAll && (webhook.handler || sameOnTheApiServer(program, failurePolicy))) plan.passedThrough.push(condition);
    else plan.evaluated.push({ name: condition.name, expression: condition.expression.trim(), program });
  });
  return plan;
}

const decided = new Map<string, boolean>();

/**
 * The matchConditions of a webhook that its configuration hands to the API server (those of
 * `planMatchConditions`), for a webhook that compiled. Remembered per expression: the controller
 * asks on every reconcile.
 */
export function passedThroughConditions(webhook: WebhookSpec, failurePolicy: FailurePolicy): MatchCondition[] {
  if (webhook.handler) return webhook.matchConditions ?? [];
  const params = webhook.params !== undefined;
  return (webhook.matchConditions ?? []).filter((condition) => {
    const key = `${failurePolicy}/${params}/${condition.expression}`;
    let same = decided.get(key);
    if (same === undefined) {
      if (decided.size > 10_000) decided.clear();
      same = sameOnTheApiServer(compile(condition.expression.trim(), 'matchCondition', ['bool'], { params, variables: false }), failurePolicy);
      decided.set(key, same);
    }
    return same;
  });
}

/**
 * True when the API server, evaluating `program` as a webhook matchCondition, decides as VAP would:
 * it must not read params (webhooks have none), and under failurePolicy Fail it must never error
 * (a webhook's failing condition is a 403 in other words, a policy's a 422). Under Ignore an error
 * skips both. "Never errors" is proved on the syntax: only the always-present string fields of
 * `request`, literals, `has()` on `request`, comparisons with literals and the logical operators.
 */
function sameOnTheApiServer(program: Program, failurePolicy: FailurePolicy): boolean {
  if (new ActivationReads([program]).uses('params')) return false;
  return failurePolicy === 'Ignore' || cannotError(program.ast as RawNode);
}

/** The fields of VAP's `request` that are always present strings (no omitempty in AdmissionRequest). */
const PRESENT_STRINGS: Record<string, ReadonlySet<string> | true> = {
  operation: true,
  uid: true,
  kind: new Set(['group', 'version', 'kind']),
  resource: new Set(['group', 'version', 'resource']),
  requestKind: new Set(['group', 'version', 'kind']),
  requestResource: new Set(['group', 'version', 'resource']),
};
/** The parts of `request` that are always present maps, so `has()` on them cannot fail. */
const PRESENT_MAPS = new Set(['kind', 'resource', 'requestKind', 'requestResource', 'userInfo']);

function node(value: unknown): RawNode | undefined {
  return typeof value === 'object' && value !== null && typeof (value as RawNode).op === 'string' ? (value as RawNode) : undefined;
}

/** The path of a field selection on `request` (`request.kind.group` -> ['kind', 'group']), or undefined. */
function requestPath(n: RawNode | undefined): string[] | undefined {
  if (!n) return undefined;
  if (n.op === 'id') return n.args === 'request' ? [] : undefined;
  if (n.op !== '.' || !Array.isArray(n.args) || typeof n.args[1] !== 'string') return undefined;
  const base = requestPath(node(n.args[0]));
  return base && [...base, n.args[1]];
}

function isPresentString(n: RawNode | undefined): boolean {
  if (n?.op === 'value') return typeof n.args === 'string';
  const path = requestPath(n);
  if (!path || path.length === 0 || path.length > 2) return false;
  const fields = PRESENT_STRINGS[path[0]!];
  return path.length === 1 ? fields === true : fields !== undefined && fields !== true && fields.has(path[1]!);
}

function cannotError(n: RawNode | undefined): boolean {
  if (!n) return false;
  const args = Array.isArray(n.args) ? (n.args as unknown[]) : [];
  switch (n.op) {
    case 'value':
      return typeof n.args === 'boolean';
    case '!_':
      return cannotError(node(n.args));
    case '&&':
    case '||':
      return args.length === 2 && cannotError(node(args[0])) && cannotError(node(args[1]));
    case '?:':
      return args.length === 3 && args.every((a) => cannotError(node(a)));
    case '==':
    case '!=':
      return args.length === 2 && isPresentString(node(args[0])) && isPresentString(node(args[1]));
    case 'in': {
      const list = node(args[1]);
      return isPresentString(node(args[0])) && list?.op === 'list' && Array.isArray(list.args) && (list.args as unknown[]).every((e) => node(e)?.op === 'value' && typeof node(e)!.args === 'string');
    }
    case 'call': {
      // has(request.x) and has(request.<map>.x): request and those maps are always there.
      if (args[0] !== 'has' || !Array.isArray(args[1]) || args[1].length !== 1) return false;
      const path = requestPath(node(args[1][0]));
      return path !== undefined && (path.length === 1 || (path.length === 2 && PRESENT_MAPS.has(path[0]!)));
    }
    default:
      return false;
  }
}

export type MatchOutcome = { matches: true } | { matches: false } | { error: string };
const MATCHES: MatchOutcome = Object.freeze({ matches: true });
const SKIPS: MatchOutcome = Object.freeze({ matches: false });

/**
 * VAP's matcher: every condition is evaluated, in order, in an activation of its own (object,
 * oldObject, request, params, authorizer; no namespaceObject, no variables); a false one means no
 * match whatever else errored; otherwise the errors, joined as apimachinery aggregates them.
 * Under Ignore an error means no match.
 */
export function evaluateMatchConditions(
  conditions: readonly CompiledMatchCondition[],
  reads: ActivationReads,
  request: AdmissionRequest,
  context: { params?: unknown; authorizer?: unknown; allowance?: Allowance },
  failurePolicy: FailurePolicy,
): MatchOutcome {
  if (conditions.length === 0) return MATCHES;
  const object = request.operation === 'DELETE' ? null : request.object;
  const ints = new IntsInPlace();
  // (a team's policy: from its allowance, which its validations then share)
  const budget = openBudget(MATCH_CONDITIONS_BUDGET, context.allowance);
  const errors: string[] = [];
  try {
    const activation = buildActivation(request, object, [], { params: context.params, authorizer: context.authorizer }, ints, reads);
    for (const condition of conditions) {
      let result: unknown;
      try {
        result = condition.program(activation);
      } catch (err) {
        // Running out of budget stops the matcher at once: the whole evaluation is that error.
        if (err instanceof CostBudgetError) return failurePolicy === 'Ignore' ? SKIPS : { error: err.message };
        errors.push(`expression '${condition.expression}' resulted in error: ${celErrorText(err)}`);
        continue;
      }
      if (result === false) return SKIPS;
    }
  } finally {
    ints.restore();
    closeBudget(budget);
  }
  if (errors.length === 0) return MATCHES;
  if (failurePolicy === 'Ignore') return SKIPS;
  const distinct = [...new Set(errors)];
  return { error: distinct.length === 1 ? distinct[0]! : `[${distinct.join(', ')}]` };
}
