/**
 * A webhook's rules evaluated once per selected params object, as ValidatingAdmissionPolicy
 * evaluates a binding whose paramRef selects several: every object is evaluated, the first denial
 * (in the selection's order) answers, every warning is kept, `validation_failure` entries are
 * gathered and an audit annotation's distinct values are joined with ", " (the API server's
 * auditAnnotationCollector). Mutations apply in turn, each params object's on the object the one
 * before patched. Owns only the combining; selecting is api/params.ts's, evaluating rules.ts's.
 */
import jsonpatch from 'fast-json-patch';
import { allowed, followedFailurePolicy, markFailed, patched, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation, WebhookType } from '../api/types.ts';

/** The rules bound to one params object. */
type Evaluate = (request: AdmissionRequest, params: Record<string, unknown>) => Decision | Promise<Decision>;

/** As the API server caps `validation_failure` (publishValidationFailureAnnotations). */
const MAX_AUDITED_FAILURES = 50;

export function evaluateEach(type: WebhookType, request: AdmissionRequest, objects: Record<string, unknown>[], evaluate: Evaluate): Decision | Promise<Decision> {
  if (objects.length === 1) return evaluate(request, objects[0]!);
  return type === 'Mutating' ? mutateEach(request, objects, evaluate) : validateEach(request, objects, evaluate);
}

function validateEach(request: AdmissionRequest, objects: Record<string, unknown>[], evaluate: Evaluate): Decision | Promise<Decision> {
  const decisions = objects.map((params) => evaluate(request, params));
  // Asynchronous only for webhooks that ask `authorizer` checks.
  if (decisions.some((d) => d instanceof Promise)) return Promise.all(decisions).then(combine);
  return combine(decisions as Decision[]);
}

/** Several validating decisions as one, in the API server's way (see the header). */
export function combine(decisions: Decision[]): Decision {
  const denial = decisions.find((d) => !d.allowed);
  const decision: Decision = denial ? { allowed: false, code: denial.code, reason: denial.reason, message: denial.message } : allowed();
  const warnings = decisions.flatMap((d) => d.warnings ?? []);
  if (warnings.length) decision.warnings = warnings;
  const values = new Map<string, string[]>();
  const failures: unknown[] = [];
  for (const d of decisions) {
    for (const [key, value] of Object.entries(d.auditAnnotations ?? {})) {
      if (key === 'validation_failure') failures.push(...(JSON.parse(value) as unknown[]));
      else if (!values.get(key)?.includes(value)) values.set(key, [...(values.get(key) ?? []), value]);
    }
  }
  const annotations: Record<string, string> = {};
  for (const [key, list] of values) annotations[key] = list.join(', ');
  if (failures.length) annotations.validation_failure = JSON.stringify(failures.slice(0, MAX_AUDITED_FAILURES));
  if (Object.keys(annotations).length) decision.auditAnnotations = annotations;
  return decisions.some(followedFailurePolicy) ? markFailed(decision) : decision;
}

/** Each params object's mutations on the object as the ones before left it; a denial or error answers at once. */
function mutateEach(request: AdmissionRequest, objects: Record<string, unknown>[], evaluate: Evaluate): Decision | Promise<Decision> {
  const original = request.object;
  let working = original;
  let failed = false;
  const step = (i: number): Decision | Promise<Decision> => {
    for (; i < objects.length; i++) {
      const decision = evaluate({ ...request, object: working }, objects[i]!);
      if (decision instanceof Promise) return decision.then((d) => apply(d) ?? step(i + 1));
      const answer = apply(decision);
      if (answer) return answer;
    }
    if (working === original || !original || !working) return failed ? markFailed(allowed()) : allowed();
    const decision = patched(jsonpatch.compare(original, working) as JsonPatchOperation[]);
    return failed ? markFailed(decision) : decision;
  };
  // The final answer when `decision` ends the evaluation, undefined when the next params object follows.
  const apply = (decision: Decision): Decision | undefined => {
    if (!decision.allowed) return decision;
    failed ||= followedFailurePolicy(decision);
    if (decision.patch?.length && working) working = jsonpatch.applyPatch(structuredClone(working), structuredClone(decision.patch) as jsonpatch.Operation[]).newDocument;
    return undefined;
  };
  return step(0);
}
