/**
 * The common answer of a webhook's validations, "every one holds", in one plain loop over their compiled
 * shortcuts (compiler.ts), without each program's three wrappers (instrument.ts' `run`, meter.ts'
 * `evaluate`, shortcut.ts' body), each charged and limited exactly as `evaluate` does. Says only yes
 * or "not sure" (AllHold), so no denial, error, message or cost comes from here. Must not change an
 * answer; the tests' observer sees every answer it gives.
 */
import type { DirectRun, Program } from '../celjs/program.ts';
import { callLimit, meter } from '../cost/meter.ts';
import { spent } from './runtime.ts';
import { shortcutObserver } from './shortcut.ts';

/**
 * Whether every validation answers `true`, given their activation. Anything but `true` within the
 * limits (false, a value of another type, BAIL, an error, a limit passed) answers false, and the
 * caller evaluates the validations one by one from a fresh budget and activation.
 */
export type AllHold = (activation: unknown) => boolean;

/** The check for `programs`, or undefined when one has no compiled shortcut (it would always be unsure). */
export function allHoldCheck(programs: readonly Program[]): AllHold | undefined {
  if (programs.length === 0 || !programs.every((p) => p.direct)) return undefined;
  const runs: DirectRun[] = programs.map((p) => p.direct!);
  return (activation) => {
    const start = meter.cost;
    const outerLimit = meter.limit;
    try {
      for (let i = 0; i < runs.length; i++) {
        const { run, staticCost } = runs[i]!;
        meter.limit = callLimit();
        meter.cost += staticCost;
        const charged = meter.cost;
        if (run(activation) !== true || meter.cost > meter.limit) return unsure(start, outerLimit);
        const observer = shortcutObserver();
        if (observer) observer.answered(runs[i]!.celjs, activation, charged, true, run, spent.variables);
      }
    } catch {
      return unsure(start, outerLimit);
    }
    meter.limit = outerLimit;
    return true;
  };
}

/** The meter as it was before the check: the caller starts again from there. */
function unsure(start: number, outerLimit: number): false {
  meter.cost = start;
  meter.limit = outerLimit;
  meter.overrunAt = -1;
  return false;
}
