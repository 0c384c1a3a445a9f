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

/**
 * The running count. `cost` only grows during one policy evaluation; `limit` is the cost at which
 * the expression being evaluated must stop (its start + PER_CALL_LIMIT, or the budget's end if
 * that comes first); `budgetEnd` is the policy's budget (Infinity outside a policy evaluation).
 */
export const meter = { cost: 0, limit: Infinity, budgetEnd: Infinity, overrunAt: -1 };

/** Adds `units`; true while the current expression is still within its limit. For custom looping macros. */
export function charge(units: number): boolean {
  return (meter.cost += units) <= meter.limit || overran();
}

/** Notes the cost at the first step past the limit (cel-go stops there; our loops wind down after it). */
export function overran(): false {
  if (meter.overrunAt < 0) meter.overrunAt = meter.cost;
  return false;
}

export interface Budget {
  cost: number;
  limit: number;
  budgetEnd: number;
}

/**
 * What policy evaluations spent, and how many of their expressions failed with an error, summed
 * over the process's life: a caller reads the difference around one synchronous evaluation (the
 * metrics of src/registry/compile.ts). Each budget adds what it spent when it is left.
 */
export const evaluationTotals = { cost: 0, errors: 0 };

/** Starts a policy evaluation with a fresh budget; returns what `closeBudget` restores. */
export function openBudget(budget: number = RUNTIME_CEL_COST_BUDGET): Budget {
  // (a budget opened again inside its evaluation, as for audit annotations; not the cost of a free-standing run)
  if (meter.budgetEnd !== Infinity) evaluationTotals.cost += meter.cost;
  const saved = { cost: meter.cost, limit: meter.limit, budgetEnd: meter.budgetEnd };
  meter.cost = 0;
  meter.limit = Infinity;
  meter.budgetEnd = budget;
  meter.overrunAt = -1;
  return saved;
}

export function closeBudget(saved: Budget): void {
  evaluationTotals.cost += meter.cost;
  meter.cost = saved.cost;
  meter.limit = saved.limit;
  meter.budgetEnd = saved.budgetEnd;
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
  return meter.cost > meter.budgetEnd ? new CostBudgetError() : new CostLimitError();
}
