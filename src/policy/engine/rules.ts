/**
 * A webhook's declarative rules (variables, validations, mutations) compiled into one pure
 * function of the request. Compiled once per suite generation; evaluating never compiles. Owns
 * the validation path (Deny, Warn, Audit, messages, audit annotations); how mutations compile and
 * apply is mutations.ts': this file must not patch an object itself.
 */
import type { FailurePolicy, Reason, ValidationAction, WebhookSpec } from '../../api/types.ts';
import { allowed, denied, errored, type AdmissionRequest, type Decision } from '../../api/admission-review.ts';
import { compile } from './environment.ts';
import { firstLine, type Program } from '../celjs/program.ts';
import { celErrorText, celTypeName } from './errors.ts';
import { buildActivation, type Activation, type CompiledVariable } from './activation.ts';
import type { MergeSchema } from './apply-configuration.ts';
import { IntsInPlace } from '../values/convert.ts';
import { closeBudget, CostBudgetError, evaluationTotals, openBudget, PER_CALL_LIMIT, remainingBudget, RUNTIME_CEL_COST_BUDGET, type Allowance } from '../cost/meter.ts';
import type { Authorizer } from '../../api/authorization.ts';
import { AuthorizationSession, evaluateAuthorizing } from './authorization.ts';
import { requestAuthorizer } from '../library/authz.ts';
import { ActivationReads } from '../values/reads.ts';
import { readsRequestValue } from '../celjs/equality.ts';
import { evaluateMatchConditions, planMatchConditions, type CompiledMatchCondition } from './match-conditions.ts';
import { allHoldCheck, type AllHold } from '../fast/all-hold.ts';
import { compileMutations, MapMutationError, mutate } from './mutations.ts';

/** (for src/registry/compile.ts, which reads the policy engine through this module and celjs/program.ts only) */
export { Allowance, evaluationTotals } from '../cost/meter.ts';

interface CompiledValidation {
  expression: string;
  program: Program;
  message?: string;
  messageProgram?: Program;
  reason: Reason;
  field: string;
}

interface CompiledAuditAnnotation {
  key: string;
  valueExpression: string;
  program: Program;
}

/** The matchConditions Portcullis evaluates itself (match-conditions.ts), and what they read. */
interface CompiledConditions {
  conditions: CompiledMatchCondition[];
  reads: ActivationReads;
}

interface CompiledValidations {
  suite: string;
  costBudget: number;
  matchConditions: CompiledConditions;
  webhook: string;
  failurePolicy: FailurePolicy;
  actions: ValidationAction[];
  variables: CompiledVariable[];
  /** Some variable names `authorizer` (then messageExpressions get an activation without it). */
  variablesAuthorize: boolean;
  validations: CompiledValidation[];
  /** The common answer, every validation holds, found at once where all of them compile (fast/all-hold.ts). */
  allHold: AllHold | undefined;
  auditAnnotations: CompiledAuditAnnotation[];
  /** What its expressions read of the activation. */
  reads: ActivationReads;
  /** How many validations have a messageExpression. */
  messageExpressions: number;
}

export interface RulesContext {
  params?: unknown;
  namespaceObject?: unknown;
  /**
   * What a team's AdmissionPolicy may spend on this request (registry/policy-webhook.ts): every budget
   * of its evaluation draws from it, so that its matchConditions, validations, messageExpressions
   * and audit annotations share one, within its namespace's (cost/meter.ts).
   */
  allowance?: Allowance;
  /**
   * The validations an AdmissionException lets fail for this request (registry/exceptions.ts): a
   * failure of one it covers is not a denial (Warn and Audit still see it). Suites' webhooks only.
   */
  excuse?: { covers(index: number): boolean };
  /**
   * The schema of the request's kind, for ApplyConfiguration mutations (apply-configuration.ts);
   * absent where none is known (offline): lists are then replaced whole, and the answer warns.
   */
  mergeSchema?: MergeSchema;
}

/** Whether any expression (a variable's, a matchCondition's) reads `namespaceObject`: a caller binds it only then, since finding it costs a lookup per request. */
type ReadsNamespaceObject = { readonly readsNamespaceObject: boolean };
export type RulesAdmit = ((request: AdmissionRequest, context?: RulesContext) => Decision) & ReadsNamespaceObject;
/** Rules that may have to ask `authorizer` checks first: a Promise then, a Decision otherwise. */
export type AuthorizingRulesAdmit = ((request: AdmissionRequest, context?: RulesContext) => Decision | Promise<Decision>) & ReadsNamespaceObject;

/** How an AdmissionPolicy's rules differ from a suite webhook's (registry/policies.ts). */
export interface RulesOptions {
  /** The cost one evaluation may spend (the API server's RUNTIME_CEL_COST_BUDGET unless a cluster admin set less). */
  costBudget?: number;
  /** Evaluate every matchCondition here, none handed to the API server (a policy shares one registered webhook with others). */
  allMatchConditions?: boolean;
  /** Charge every expression as a team's policy is charged: by real sizes whatever the static types, with a deadline (cost/instrument.ts). */
  strictCost?: boolean;
}

/** What one evaluation binds besides the request: the RulesContext, and `authorizer` when used. */
type EvaluationContext = RulesContext & { authorizer?: unknown };

/**
 * Compiles the rules of `webhook` of suite `suite` (at `path`, e.g. `spec.webhooks[0]`); throws
 * CompileError naming the field. With an `authorizer`, a webhook whose expressions use
 * `authorizer` answers asynchronously when it has checks to ask (authorization.ts); without one,
 * such checks are evaluation errors and every answer is synchronous. A webhook whose expressions
 * do not name `authorizer` is always evaluated synchronously and binds nothing for it.
 */
export function compileRules(suite: string, webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy): RulesAdmit;
export function compileRules(suite: string, webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy, authorizer: Authorizer | undefined, options?: RulesOptions): AuthorizingRulesAdmit;
export function compileRules(suite: string, webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy, authorizer?: Authorizer, options: RulesOptions = {}): AuthorizingRulesAdmit {
  const admit = compileSyncRules(suite, webhook, path, failurePolicy, options.costBudget ?? RUNTIME_CEL_COST_BUDGET, options.allMatchConditions ?? false, options.strictCost ?? false);
  if (!admit.authorizing) return admit;
  const { readsNamespaceObject } = admit;
  if (!authorizer) {
    return Object.assign((request: AdmissionRequest, context: RulesContext = {}) => admit(request, { ...context, authorizer: requestAuthorizer(request, new AuthorizationSession({})) }), { readsNamespaceObject });
  }
  return Object.assign(
    (request: AdmissionRequest, context: RulesContext = {}) => {
      // Each round is the same evaluation again, with more answers: only one round's cost counts (the
      // API server evaluates once), so a round gives back what the one before it spent; and the
      // time between rounds, waiting for the answers, is not the policy's.
      const allowance = context.allowance;
      let spent = 0;
      const decision = evaluateAuthorizing({ authorizer }, (session) => {
        if (!allowance) return admit(request, { ...context, authorizer: requestAuthorizer(request, session) });
        allowance.resume();
        allowance.refund(spent);
        const before = allowance.cost;
        try {
          return admit(request, { ...context, authorizer: requestAuthorizer(request, session) });
        } finally {
          spent = before - allowance.cost;
          allowance.pause();
        }
      });
      return decision instanceof Promise ? decision.catch((err: unknown) => errored(firstLine(err), failurePolicy, 'Invalid')) : decision;
    },
    { readsNamespaceObject },
  );
}

/** True when `program` names the variable `authorizer` (or `authorizer.requestResource`). */
function usesAuthorizer(program: Program | undefined): boolean {
  return new ActivationReads([program]).uses('authorizer');
}

type SyncRules = ((request: AdmissionRequest, context?: EvaluationContext) => Decision) & { authorizing: boolean } & ReadsNamespaceObject;

function compileSyncRules(suite: string, webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy, costBudget: number, allMatchConditions: boolean, strictCost: boolean): SyncRules {
  // The variables whose expressions compile (policy/fast) can be read by compiled expressions after them.
  const compiledVariables = new Set<string>();
  // The variables that are a part of the request as it is: compared across kinds, they raise as the request's values do.
  const requestVariables = new Set<string>();
  const scope = { params: webhook.params !== undefined, compiledVariables, requestVariables, strictCost };
  const conditions = planMatchConditions(webhook, path, failurePolicy, allMatchConditions, strictCost).evaluated;
  const matchConditions: CompiledConditions = { conditions, reads: new ActivationReads(conditions.map((c) => c.program)) };
  const variables: CompiledVariable[] = (webhook.variables ?? []).map((v, i) => {
    const program = compile(v.expression, `${path}.variables[${i}].expression`, [], { ...scope, compiledVariables: new Set(compiledVariables), requestVariables: new Set(requestVariables) });
    if (program.compiled) compiledVariables.add(v.name);
    if (readsRequestValue(program.ast, requestVariables)) requestVariables.add(v.name);
    return { name: v.name, program };
  });

  if (webhook.type === 'Mutating') {
    const mutations = compileMutations(webhook, path, scope);
    const reads = new ActivationReads([...variables.map((v) => v.program), ...mutations.flatMap((m) => [m.condition, m.patchProgram, m.jsonPatchProgram, m.applyProgram])]);
    const authorizing = reads.uses('authorizer') || matchConditions.reads.uses('authorizer');
    const mapForm = mutations.some((m) => m.jsonPatchProgram || m.applyProgram);
    const admit = (request: AdmissionRequest, context: EvaluationContext = {}) => {
      const match = evaluateMatchConditions(matchConditions.conditions, matchConditions.reads, request, context, failurePolicy);
      // A MAP's failed matchCondition is its admission error too: 403 (reason Invalid), kube-apiserver 1.37 tried
      if ('error' in match) return errored(match.error, failurePolicy, mapForm ? 'Forbidden' : 'Invalid');
      if (!match.matches) return allowed();
      const budget = openBudget(costBudget, context.allowance);
      try {
        return mutate(request, mutations, variables, context, reads, failurePolicy);
      } catch (err) {
        // A MAP mutation's error is the API server's admission error (403 Forbidden), not an invalid object.
        return errored(firstLine(err), failurePolicy, err instanceof MapMutationError ? 'Forbidden' : 'Invalid');
      } finally {
        closeBudget(budget);
      }
    };
    return Object.assign(admit, { authorizing, readsNamespaceObject: reads.binds.namespaceObject || matchConditions.reads.binds.namespaceObject });
  }

  const validations: CompiledValidation[] = (webhook.validations ?? []).map((v, i) => {
    const field = `${path}.validations[${i}]`;
    return {
      expression: v.expression,
      program: compile(v.expression, `${field}.expression`, ['bool'], scope),
      message: v.message,
      // As VAP: `authorizer` is not declared for messageExpressions (a variable may still use it).
      messageProgram: v.messageExpression ? compile(v.messageExpression, `${field}.messageExpression`, ['string'], { ...scope, authorizer: false }) : undefined,
      reason: v.reason ?? 'Invalid',
      field,
    };
  });
  const auditAnnotations: CompiledAuditAnnotation[] = (webhook.auditAnnotations ?? []).map((a, i) => ({
    key: a.key,
    valueExpression: a.valueExpression,
    program: compile(a.valueExpression, `${path}.auditAnnotations[${i}].valueExpression`, ['string', 'null'], scope),
  }));
  const compiled: CompiledValidations = {
    suite,
    costBudget,
    matchConditions,
    webhook: webhook.name,
    failurePolicy,
    actions: webhook.validationActions ?? ['Deny'],
    variables,
    variablesAuthorize: variables.some((v) => usesAuthorizer(v.program)),
    validations,
    allHold: allHoldCheck(validations.map((v) => v.program)),
    auditAnnotations,
    reads: new ActivationReads([...variables.map((v) => v.program), ...validations.flatMap((v) => [v.program, v.messageProgram]), ...auditAnnotations.map((a) => a.program)]),
    messageExpressions: validations.filter((v) => v.messageProgram).length,
  };
  const authorizing = compiled.variablesAuthorize || matchConditions.reads.uses('authorizer') || [...compiled.validations.map((v) => v.program), ...compiled.auditAnnotations.map((a) => a.program)].some(usesAuthorizer);
  const readsNamespaceObject = compiled.reads.binds.namespaceObject || matchConditions.reads.binds.namespaceObject;
  return Object.assign((request: AdmissionRequest, context: EvaluationContext = {}) => validate(request, compiled, context), { authorizing, readsNamespaceObject });
}

/**
 * As the API server's validator and dispatcher do it: every validation is evaluated; a failure
 * (or, under failurePolicy Fail, an error) goes to each validationAction: Deny collects it and the
 * first one collected is the answer, Warn adds a warning, Audit adds it to `validation_failure`.
 */
function validate(request: AdmissionRequest, compiled: CompiledValidations, context: EvaluationContext): Decision {
  // As VAP's validator: matchConditions first; a false one skips the policy, an error is its one decision.
  const match = evaluateMatchConditions(compiled.matchConditions.conditions, compiled.matchConditions.reads, request, context, compiled.failurePolicy);
  if ('error' in match) return singleError(compiled, match.error);
  if (!match.matches) return allowed();
  const object = request.operation === 'DELETE' ? null : request.object;
  const { failurePolicy } = compiled;
  // One cost budget (cost/meter.ts) for the validations, then their messageExpressions from what is left,
  // as the API server spends it; running out answers for the whole webhook. A team's policy draws
  // every budget from its allowance (the matchConditions' above too).
  const budget = openBudget(compiled.costBudget, context.allowance);
  const ints = new IntsInPlace();
  try {
    let activation = buildActivation(request, object, compiled.variables, context, ints, compiled.reads, true);
    const { validations, allHold } = compiled;
    const held = allHold !== undefined && allHold(activation);
    // Not sure: evaluated one by one from the start, in a new activation (the check's charges were undone, and the variables it read are evaluated again).
    if (allHold && !held) activation = buildActivation(request, object, compiled.variables, context, ints, compiled.reads, true);
    // undefined: holds; a message: an error (failurePolicy Fail); null: fails, its message comes later.
    // Made at the first outcome that is not "holds": the common answer allocates nothing here.
    let outcomes: (Failure | null | undefined)[] | undefined;
    for (let index = 0; !held && index < validations.length; index++) {
      const validation = validations[index]!;
      let outcome: Failure | null | undefined;
      try {
        // Anything but true denies, as in the API server (a non-bool is not an error there).
        outcome = validation.program(activation) === true ? undefined : null;
      } catch (err) {
        if (err instanceof CostBudgetError) return singleError(compiled, err.message);
        evaluationTotals.errors++;
        outcome = failurePolicy === 'Ignore' ? undefined : { message: `expression '${validation.expression}' resulted in error: ${celErrorText(err)}`, reason: 'Invalid' };
      }
      if (outcome !== undefined) (outcomes ??= allHolding(validations.length))[index] = outcome;
    }
    // The API server evaluates every messageExpression, of holding validations too, from what the
    // validations left, and running out fails the whole webhook. Only failing validations' messages
    // are used, so the others are evaluated only when the budget could run out.
    const everyMessage = remainingBudget() < compiled.messageExpressions * MAX_MESSAGE_COST;
    // The common answer, with nothing to word, route or annotate.
    if (!outcomes && !everyMessage && compiled.auditAnnotations.length === 0) return allowed();
    outcomes ??= allHolding(validations.length);
    const failures: (Failure | undefined)[] = [];
    // The API server evaluates messageExpressions in an activation of their own, without
    // `authorizer`: a variable that asks it fails there, and the message falls back.
    let messageActivation: Activation | undefined;
    for (const [index, outcome] of outcomes.entries()) {
      const validation = compiled.validations[index]!;
      try {
        const evaluated = validation.messageProgram && (outcome === null || everyMessage);
        if (evaluated && compiled.variablesAuthorize) messageActivation ??= buildActivation(request, object, compiled.variables, { ...context, authorizer: undefined }, ints, compiled.reads);
        if (outcome === null) failures.push({ message: failureMessage(validation, messageActivation ?? activation), reason: validation.reason });
        else {
          if (evaluated) spendOnly(validation.messageProgram!, messageActivation ?? activation);
          failures.push(outcome);
        }
      } catch (err) {
        if (!(err instanceof CostBudgetError)) throw err;
        evaluationTotals.errors++;
        // The API server turns every decision that is not already an error into this one.
        const failure = failurePolicy === 'Ignore' ? undefined : { message: `failed messageExpression: ${err.message}`, reason: 'Invalid' as const };
        for (let i = 0; i < outcomes.length; i++) failures[i] = outcomes[i] ?? failure;
        break;
      }
    }
    const verdict = new Verdict(compiled, context.excuse);
    failures.forEach((failure, index) => verdict.add(failure, index));

    // audit annotations get a budget of their own, as in the API server; a team's policy goes on with the one it has
    if (!context.allowance) openBudget(compiled.costBudget);
    for (const annotation of compiled.auditAnnotations) {
      let value: unknown;
      try {
        value = annotation.program(activation);
      } catch (err) {
        if (err instanceof CostBudgetError) return singleError(compiled, err.message);
        evaluationTotals.errors++;
        if (failurePolicy === 'Fail') verdict.denials.push({ message: `expression '${annotation.valueExpression}' resulted in error: ${celErrorText(err)}`, reason: 'Invalid' });
        continue;
      }
      if (typeof value === 'string' && value.trim() !== '') verdict.annotations[annotation.key] = value.trim().slice(0, MAX_AUDIT_VALUE);
      else if (value !== null && typeof value !== 'string') {
        evaluationTotals.errors++;
        if (failurePolicy === 'Fail')
          verdict.denials.push({ message: `valueExpression '${annotation.valueExpression}' resulted in unsupported return type: ${celTypeName(value)}. Return type must be either string or null.`, reason: 'Invalid' });
      }
    }
    return verdict.decision();
  } finally {
    ints.restore();
    closeBudget(budget);
  }
}

interface Failure {
  message: string;
  reason: Reason;
}

/** The outcomes of `count` validations that all hold, to be marked where one does not. */
function allHolding(count: number): (Failure | null | undefined)[] {
  return new Array<Failure | null | undefined>(count).fill(undefined);
}

/**
 * The failures of one webhook routed to its validationActions: Deny collects them and the first
 * one collected is the answer, Warn adds a warning, Audit adds it to `validation_failure`.
 */
class Verdict {
  readonly denials: Failure[] = [];
  readonly warnings: string[] = [];
  readonly audited: AuditedFailure[] = [];
  readonly annotations: Record<string, string> = {};
  private readonly compiled: CompiledValidations;
  private readonly excuse: RulesContext['excuse'];
  constructor(compiled: CompiledValidations, excuse?: RulesContext['excuse']) {
    this.compiled = compiled;
    this.excuse = excuse;
  }

  add(failure: Failure | undefined, index: number): void {
    if (!failure) return;
    const { actions } = this.compiled;
    // Asked only of a failure that would deny: an exception that is not needed is not recorded as used.
    if (actions.includes('Deny') && !this.excuse?.covers(index)) this.denials.push(failure);
    if (actions.includes('Warn')) this.warnings.push(failure.message);
    if (actions.includes('Audit')) this.audited.push({ message: failure.message, policy: this.compiled.suite, binding: this.compiled.webhook, expressionIndex: index, validationActions: actions });
  }

  decision(): Decision {
    const { denials, warnings, audited, annotations } = this;
    if (audited.length) annotations.validation_failure = JSON.stringify(audited.slice(0, MAX_AUDITED_FAILURES));
    const decision = denials.length ? denied(denials[0]!.message, denials[0]!.reason) : allowed();
    if (warnings.length) decision.warnings = warnings;
    if (Object.keys(annotations).length) decision.auditAnnotations = annotations;
    return decision;
  }
}

/**
 * One error as the whole decision, by failurePolicy, routed to the validationActions, and nothing
 * else (as the API server): failing matchConditions, or an evaluation that ran out of cost budget.
 */
function singleError(compiled: CompiledValidations, message: string): Decision {
  evaluationTotals.errors++;
  const verdict = new Verdict(compiled);
  if (compiled.failurePolicy === 'Fail') verdict.add({ message, reason: 'Invalid' }, 0);
  return verdict.decision();
}

/** The JSON of one entry of VAP's `validation_failure` audit annotation; policy and binding are the suite and webhook. */
interface AuditedFailure {
  message: string;
  policy: string;
  binding: string;
  expressionIndex: number;
  validationActions: ValidationAction[];
}

/**
 * The most one messageExpression can spend: its per-expression limit, and the step that crossed it
 * (a single step over anything an admission request can hold costs far less than the limit).
 */
const MAX_MESSAGE_COST = 2 * PER_CALL_LIMIT;

/** Evaluates a message nobody reads, for the budget it spends (as the API server does); only running out of budget matters. */
function spendOnly(program: Program, activation: object): void {
  try {
    program(activation);
  } catch (err) {
    if (err instanceof CostBudgetError) throw err;
  }
}

const MAX_AUDIT_VALUE = 10 * 1024;
const MAX_AUDITED_FAILURES = 50;
const MAX_MESSAGE_BYTES = 5 * 1024;

/**
 * VAP's order: messageExpression if it yields a non-empty single-line string of at most 5 KiB
 * (trimmed), then message (trimmed), then "failed expression: <expression>".
 */
function failureMessage(validation: CompiledValidation, activation: object): string {
  if (validation.messageProgram) {
    try {
      const text = validation.messageProgram(activation);
      if (typeof text === 'string') {
        const trimmed = text.trim();
        if (trimmed !== '' && !trimmed.includes('\n') && Buffer.byteLength(trimmed) <= MAX_MESSAGE_BYTES) return trimmed;
      }
    } catch (err) {
      // VAP falls back to the static message when messageExpression fails, unless the budget ran out.
      if (err instanceof CostBudgetError) throw err;
    }
  }
  const message = validation.message?.trim();
  return message || `failed expression: ${validation.expression.trim()}`;
}
