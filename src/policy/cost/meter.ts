/**
 * The cost meter of CEL evaluation, as the API server bounds it (apiserver `pkg/apis/cel/config.go`):
 * each expression may spend PER_CALL_LIMIT units (cel-go stops it with "operation cancelled:
 * actual cost limit exceeded"), and one evaluation of a policy RUNTIME_CEL_COST_BUDGET units
 * (validations first, messageExpressions get what is left).
 *
 * The counter is one module-level object (evaluation is synchronous): charging is an add and a
 * compare, nothing is allocated per step. `evaluate` runs one expression under its limit and
 * turns an overrun into CostLimitError, or CostBudgetError when the policy's budget is what ran
 * out. The bottom of cost/: it knows nothing of ASTs (instrument.ts) or of what calls cost
 * (calls.ts), and must not import them.
 *
 * A team's AdmissionPolicies are bounded more tightly than the API server bounds a policy: every
 * budget one of them opens draws from an Allowance, the policy's own for the request (one budget
 * across its matchConditions, validations, messageExpressions and audit annotations, however many
 * the API server would give) within its namespace's for the request; and from the namespace's time
 * on this thread, a deadline. The clock is read every TICKS charges (`tick`), never per step, and
 * only the loops and sized calls of those policies' programs count ticks (instrument.ts's strict
 * instrumentation); once the deadline has passed every later charge fails, and the evaluation ends
 * with DeadlineError, a CostBudgetError in its own words.
 */
/** Per expression (apiserver `PerCallLimit`). */
export const PER_CALL_LIMIT = 1_000_000;
/** Per policy evaluation (apiserver `RuntimeCELCostBudget`). */
export const RUNTIME_CEL_COST_BUDGET = 10_000_000;

/** cel-go's words when an expression passes its cost limit. */
export const COST_LIMIT_MESSAGE = 'operation cancelled: actual cost limit exceeded';
/** The API server's words when a policy evaluation runs out of its budget. */
export const COST_BUDGET_MESSAGE = 'validation failed due to running out of cost budget, no further validation rules will be run';

export class CostLimitError extends Error {
  constructor() {
    super(COST_LIMIT_MESSAGE);
    this.name = 'CostLimitError';
  }
}

export class CostBudgetError extends Error {
  constructor(message = COST_BUDGET_MESSAGE) {
    super(message);
    this.name = 'CostBudgetError';
  }
}

/** An AdmissionPolicy's evaluation cut at its namespace's deadline: answered as a budget run out is (no further rule runs), in its own words. */
export class DeadlineError extends CostBudgetError {
  constructor(timeLimitMs: number) {
    super(deadlineMessage(timeLimitMs));
    this.name = 'DeadlineError';
  }
}

/** The words of a DeadlineError: the time the namespace's policies may take on one request. */
export function deadlineMessage(timeLimitMs: number): string {
  return `operation cancelled: evaluation time limit exceeded (the namespace's AdmissionPolicies may evaluate one request for ${timeLimitMs}ms)`;
}

/**
 * Charges (of loops and sized calls) between two reads of the clock, where there is a deadline; a
 * large charge counts as several (`tickWeight`), so that the clock is read at least every TICKS *
 * TICK_UNITS units too. Why: docs/adr/0015-policy-deadline-and-clock-reads.md
 */
const TICKS = 64;
const TICK_UNITS = 512;

/** How many ticks a charge of `units` counts for: 1, and 1 more per TICK_UNITS. */
export function tickWeight(units: number): number {
  return units > TICK_UNITS ? 1 + Math.floor(units / TICK_UNITS) : 1;
}

/** The clock of one request's evaluation by a namespace's policies, shared by their allowances. */
interface Clock {
  /**
   * When the evaluation must end (performance.now()); moved on by the time spent waiting (`pause`,
   * `resume`). Infinity until the first tick starts the clock: an evaluation with no loop and no
   * sized call never reads it (what runs before is a few steps).
   */
  deadline: number;
  /** The time limit it was set from, for the words of DeadlineError. */
  readonly timeLimit: number;
  /** The meter's ticks to the next read of the clock, carried from one budget to the next. */
  ticks: number;
  /** The deadline has passed: every later budget fails at once. */
  expired: boolean;
  pausedAt: number;
}

/**
 * What a namespace's AdmissionPolicies may still spend on one request (registry/policy-webhook.ts
 * opens one per request), and each policy's share of it (`share`): cost in the API server's
 * units, and time until a deadline (the clock started at the first tick, then read every TICKS;
 * time spent waiting for `authorizer` checks does not count: `pause`, `resume`). Every budget
 * opened with an allowance draws from it and from the allowances above it; such budgets are never
 * nested.
 */
export class Allowance {
  cost: number;
  readonly parent: Allowance | undefined;
  readonly clock: Clock;

  constructor(cost: number, timeLimit: number, parent?: Allowance) {
    this.cost = cost;
    this.parent = parent;
    this.clock = parent ? parent.clock : { deadline: Infinity, timeLimit, ticks: 1, expired: false, pausedAt: 0 };
  }

  /** A policy's allowance: `cost` of its own (its budget), within what is left of this one, on the same clock. */
  share(cost: number): Allowance {
    return new Allowance(cost, 0, this);
  }

  costLeft(): number {
    const up = this.parent ? this.parent.costLeft() : Infinity;
    return this.cost < up ? this.cost : up;
  }

  spend(cost: number): void {
    this.cost -= cost;
    this.parent?.spend(cost);
  }

  /**
   * Gives back `cost`: what an evaluation spent that is thrown away and run again with answers it
   * lacked (`authorizer` checks), which the API server runs once. (Its time is not given back.)
   */
  refund(cost: number): void {
    this.cost += cost;
    this.parent?.refund(cost);
  }

  /** The evaluation waits (for `authorizer` checks): the time until `resume` does not count. */
  pause(): void {
    if (this.clock.deadline !== Infinity) this.clock.pausedAt = performance.now();
  }

  resume(): void {
    if (this.clock.pausedAt > 0) this.clock.deadline += performance.now() - this.clock.pausedAt;
    this.clock.pausedAt = 0;
  }
}

/**
 * The running count. `cost` only grows during one policy evaluation; `limit` is the cost at which
 * the expression being evaluated must stop (its start + PER_CALL_LIMIT, or the budget's end if
 * that comes first); `budgetEnd` is the policy's budget (Infinity outside a policy evaluation).
 * `ticks` counts down the charges to the next read of the clock; `deadline` is when the
 * evaluation must end (performance.now(), Infinity but for a budget with an Allowance); `expired`
 * once it has passed (then `limit` and `budgetEnd` are -Infinity: every charge fails).
 */
export const meter = { cost: 0, limit: Infinity, budgetEnd: Infinity, overrunAt: -1, ticks: TICKS, deadline: Infinity, expired: false, allowance: null as Allowance | null };

/** Adds `units`; true while the current expression is still within its limit (and its deadline). For custom looping macros. */
export function charge(units: number): boolean {
  return ((meter.cost += units) <= meter.limit && (meter.ticks -= tickWeight(units)) > 0) || overran();
}

/**
 * Called where a charge passed the limit, or counted the last tick: false when the expression must
 * stop, noting the cost at the first step past the limit (cel-go stops there; our loops wind down
 * after it); true when it was only time to read the clock, and the deadline has not passed.
 */
export function overran(): boolean {
  if (meter.cost <= meter.limit) return tick();
  if (meter.overrunAt < 0) meter.overrunAt = meter.cost;
  return false;
}

/** Reads the clock (every TICKS charges): false, and every later charge fails, once the deadline has passed. */
export function tick(): boolean {
  meter.ticks = TICKS;
  if (meter.deadline === Infinity) {
    // no deadline (a suite's), or the first tick of an AdmissionPolicy's evaluation: it starts the clock
    const clock = meter.allowance?.clock;
    if (clock && clock.deadline === Infinity) meter.deadline = clock.deadline = performance.now() + clock.timeLimit;
    return true;
  }
  if (performance.now() <= meter.deadline) return true;
  expire();
  return false;
}

function expire(): void {
  if (meter.overrunAt < 0) meter.overrunAt = meter.cost;
  meter.expired = true;
  meter.limit = -Infinity;
  meter.budgetEnd = -Infinity;
}

export interface Budget {
  cost: number;
  limit: number;
  budgetEnd: number;
  ticks: number;
  deadline: number;
  expired: boolean;
  allowance: Allowance | null;
}

/**
 * What policy evaluations spent, and how many of their expressions failed with an error, summed
 * over the process's life: a caller reads the difference around one synchronous evaluation (the
 * metrics of src/registry/compile.ts). Each budget adds what it spent when it is left.
 */
export const evaluationTotals = { cost: 0, errors: 0 };

/**
 * Starts a policy evaluation with a fresh budget; returns what `closeBudget` restores. With an
 * `allowance` (an AdmissionPolicy's), the budget is what is left of it if that is less, and the
 * evaluation ends at its deadline.
 */
export function openBudget(budget: number = RUNTIME_CEL_COST_BUDGET, allowance?: Allowance): Budget {
  // (a budget opened again inside its evaluation, as for audit annotations; not the cost of a free-standing run)
  if (meter.budgetEnd !== Infinity) evaluationTotals.cost += meter.cost;
  const saved: Budget = { cost: meter.cost, limit: meter.limit, budgetEnd: meter.budgetEnd, ticks: meter.ticks, deadline: meter.deadline, expired: meter.expired, allowance: meter.allowance };
  meter.cost = 0;
  meter.limit = Infinity;
  meter.budgetEnd = budget;
  meter.overrunAt = -1;
  meter.expired = false;
  meter.allowance = allowance ?? null;
  if (allowance) {
    const left = allowance.costLeft();
    if (left < budget) meter.budgetEnd = left;
    const clock = allowance.clock;
    meter.deadline = clock.deadline;
    meter.ticks = clock.ticks;
    if (clock.expired) expire();
  } else meter.deadline = Infinity;
  return saved;
}

export function closeBudget(saved: Budget): void {
  evaluationTotals.cost += meter.cost;
  const allowance = meter.allowance;
  if (allowance) {
    allowance.spend(meter.cost);
    allowance.clock.ticks = meter.ticks;
    if (meter.expired) allowance.clock.expired = true;
  }
  meter.cost = saved.cost;
  meter.limit = saved.limit;
  meter.budgetEnd = saved.budgetEnd;
  meter.ticks = saved.ticks;
  meter.deadline = saved.deadline;
  meter.expired = saved.expired;
  meter.allowance = saved.allowance;
  meter.overrunAt = -1;
}

/** What is left of the current policy evaluation's budget. */
export function remainingBudget(): number {
  return meter.budgetEnd - meter.cost;
}

/**
 * Runs one expression under its own per-call limit. Nested runs (a composited variable read
 * lazily by another expression) have their own limit, and their cost counts against the
 * policy's budget but not against the reading expression's limit, as in the API server.
 */
export function evaluate(program: (activation: never) => unknown, staticCost: number, activation: unknown): unknown {
  const outerLimit = meter.limit;
  if (outerLimit === Infinity && meter.budgetEnd === Infinity) {
    meter.cost = 0; // a free-standing evaluation
    meter.overrunAt = -1;
  }
  const start = meter.cost;
  meter.limit = callLimit();
  try {
    meter.cost += staticCost;
    let result: unknown;
    try {
      result = program(activation as never);
    } catch (err) {
      // (meter.limit, not the limit set above: nested runs move it on by what they spent)
      if (meter.cost > meter.limit) throw overrun();
      throw err;
    }
    if (meter.cost > meter.limit) throw overrun();
    return result;
  } finally {
    if (outerLimit === Infinity) meter.limit = Infinity;
    else {
      const shifted = outerLimit + (meter.cost - start);
      meter.limit = shifted < meter.budgetEnd ? shifted : meter.budgetEnd;
    }
  }
}

/** Where an expression starting now must stop: its per-call limit, or the budget's end if that comes first. */
export function callLimit(): number {
  const callEnd = meter.cost + PER_CALL_LIMIT;
  return callEnd < meter.budgetEnd ? callEnd : meter.budgetEnd;
}

function overrun(): Error {
  // cel-go stops at the first step past the limit; what our loops did while winding down is not charged
  if (meter.overrunAt >= 0) meter.cost = meter.overrunAt;
  meter.overrunAt = -1;
  if (meter.expired) return new DeadlineError(meter.allowance?.clock.timeLimit ?? 0);
  return meter.cost > meter.budgetEnd ? new CostBudgetError() : new CostLimitError();
}
