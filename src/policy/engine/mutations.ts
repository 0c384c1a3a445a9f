/**
 * policy/engine: a Mutating webhook's mutations, compiled and applied as the API server applies
 * them: a suite's patch/patchExpression, a MutatingAdmissionPolicy's JSONPatch and ApplyConfiguration.
 * rules.ts owns the webhook's function, its matchConditions and budget; this must not validate.
 */
import jsonpatch from 'fast-json-patch';
import type { FailurePolicy, JsonPatchOperation, WebhookSpec } from '../../api/types.ts';
import { allowed, patched, type AdmissionRequest, type Decision } from '../../api/admission-review.ts';
import { compile, type CompileOptions } from './environment.ts';
import { CompileError, firstLine, type Program } from '../celjs/program.ts';
import { celErrorText, celTypeName } from './errors.ts';
import { buildActivation, type CompiledVariable } from './activation.ts';
import { CopyOnWritePatcher } from './patch.ts';
import { applyMapJsonPatch, asTypedRoundTrip, type MapPatchOperation } from './json-patch.ts';
import { isJsonPatchValue } from '../library/jsonpatch.ts';
import { applyConfiguration, type MergeSchema } from './apply-configuration.ts';
import { applyConfigurationJson, objectTypeName } from '../library/apply-configuration.ts';
import { fromCel, IntsInPlace } from '../values/convert.ts';
import { CostBudgetError, evaluationTotals } from '../cost/meter.ts';
import type { ActivationReads } from '../values/reads.ts';

export interface CompiledMutation {
  condition?: Program;
  patch?: JsonPatchOperation[];
  patchProgram?: Program;
  /** A MutatingAdmissionPolicy entry's `jsonPatch.expression` (patchType JSONPatch). */
  jsonPatchProgram?: Program;
  /** A MutatingAdmissionPolicy entry's `applyConfiguration.expression` (patchType ApplyConfiguration). */
  applyProgram?: Program;
  /** The jsonPatch or applyConfiguration expression, for the API server's words when it fails. */
  expression?: string;
  field: string;
}

/** What a mutation reads of its evaluation besides the request (rules.ts' EvaluationContext is one). */
interface MutationContext {
  params?: unknown;
  namespaceObject?: unknown;
  authorizer?: unknown;
  mergeSchema?: MergeSchema;
}

/** The mutations of `webhook` at `path`, each checked to be one form; `scope`: what their expressions are compiled with. */
export function compileMutations(webhook: WebhookSpec, path: string, scope: CompileOptions): CompiledMutation[] {
  return (webhook.mutations ?? []).map((m, i) => {
    const field = `${path}.mutations[${i}]`;
    if ([m.patch, m.patchExpression, m.patchType].filter((f) => f !== undefined).length !== 1) throw new CompileError(field, 'exactly one of patch, patchExpression and patchType must be set');
    if (m.patchType !== undefined) {
      if (m.patchType === 'ApplyConfiguration') {
        if (typeof m.applyConfiguration?.expression !== 'string') throw new CompileError(`${field}.applyConfiguration`, 'must be specified when patchType is ApplyConfiguration');
        return { field, expression: m.applyConfiguration.expression, applyProgram: compile(m.applyConfiguration.expression, `${field}.applyConfiguration.expression`, [], { ...scope, patchTypes: true }) };
      }
      // Refused rather than ignored: an ignored mutation would let through what its author meant to change.
      if (m.patchType !== 'JSONPatch') throw new CompileError(`${field}.patchType`, 'Unsupported value: must be JSONPatch or ApplyConfiguration');
      if (typeof m.jsonPatch?.expression !== 'string') throw new CompileError(`${field}.jsonPatch`, 'must be specified when patchType is JSONPatch');
      return { field, expression: m.jsonPatch.expression, jsonPatchProgram: compile(m.jsonPatch.expression, `${field}.jsonPatch.expression`, ['list(JSONPatch)'], { ...scope, mixedLiterals: true, patchTypes: true }) };
    }
    return {
      field,
      condition: m.condition ? compile(m.condition, `${field}.condition`, ['bool'], { ...scope, mixedLiterals: true }) : undefined,
      patch: m.patch,
      patchProgram: m.patchExpression ? compile(m.patchExpression, `${field}.patchExpression`, ['list'], { ...scope, mixedLiterals: true }) : undefined,
    };
  });
}

/** The webhook's mutations applied in order to the request's object: allowed, or patched with the difference. */
export function mutate(request: AdmissionRequest, mutations: CompiledMutation[], variables: CompiledVariable[], context: MutationContext, reads: ActivationReads, failurePolicy: FailurePolicy): Decision {
  const original = request.object;
  if (!original) return allowed();
  // Copied where a patch applies and nowhere else: most of a large object never changes.
  const patcher = new CopyOnWritePatcher();
  let working = original;
  let unschemed: string | undefined;
  for (const mutation of mutations) {
    if (mutation.jsonPatchProgram || mutation.applyProgram) {
      try {
        const next = mutation.applyProgram ? mapApplyConfiguration(mutation, request, working, variables, context, reads) : mapJsonPatch(mutation, request, working, variables, context, reads);
        if (mutation.applyProgram && !context.mergeSchema && next !== working) unschemed = mutation.field;
        // the next mutation reads the object as the API server's typed round trip leaves it
        working = next === working ? working : (asTypedRoundTrip(next, request.kind) as typeof working);
      } catch (err) {
        // As the API server's MAP dispatcher: a failed mutation is skipped and the next one runs on
        // the object as it is; under Ignore the others' changes stand, under Fail the request is refused.
        if (!(err instanceof MapMutationError) || failurePolicy === 'Fail') throw err;
        // still an error Ignore answered: the answer is marked so (registry/compile.ts' measure), and counted
        evaluationTotals.errors++;
      }
      continue;
    }
    let ops: JsonPatchOperation[];
    // The patch is applied to (and compared with) JSON, so the numbers go back before it is.
    const ints = new IntsInPlace();
    try {
      const activation = buildActivation(request, working, variables, context, ints, reads);
      if (mutation.condition && mutation.condition(activation) !== true) continue;
      // A literal patch is copied: applied in place, its values would otherwise be shared with the next request.
      ops = mutation.patch ? structuredClone(mutation.patch) : (fromCel(mutation.patchProgram!(activation)) as JsonPatchOperation[]);
    } finally {
      ints.restore();
    }
    try {
      working = patcher.apply(working, ops);
    } catch (err) {
      throw new Error(`${mutation.field}: patch failed: ${firstLine(err)}`);
    }
  }
  if (working === original) return allowed();
  const decision = patched(jsonpatch.compare(original, working) as JsonPatchOperation[]);
  if (unschemed) decision.warnings = [`${unschemed}: no schema of ${request.kind?.kind ?? 'the kind'} is known here: its apply configuration was merged with every list replaced whole and no field checked, as the API server would not`];
  return decision;
}

/**
 * A MutatingAdmissionPolicy ApplyConfiguration mutation on `working`, as the API server's
 * apply-configuration patcher: the expression's `Object{...}` value, its type names checked
 * against their path, merged into the object with structured-merge semantics by the kind's
 * schema (apply-configuration.ts). Returns the new object, or `working` itself when nothing changed.
 */
function mapApplyConfiguration(
  mutation: CompiledMutation,
  request: AdmissionRequest,
  working: NonNullable<AdmissionRequest['object']>,
  variables: CompiledVariable[],
  context: MutationContext,
  reads: ActivationReads,
): NonNullable<AdmissionRequest['object']> {
  const ints = new IntsInPlace();
  let patch: Record<string, unknown>;
  try {
    const result = evaluateMapExpression(mutation, mutation.applyProgram!, buildActivation(request, working, variables, context, ints, reads));
    if (objectTypeName(result) === undefined) throw new MapMutationError(`unsupported return type from ApplyConfiguration expression: ${celTypeName(result)}`);
    const { json, mismatches } = applyConfigurationJson(result, reachableFrom([working, request.oldObject, context.params, context.namespaceObject]));
    if (mismatches.length) throw new MapMutationError(`type mismatch: ${mismatches.join('\n')}`);
    patch = json;
  } finally {
    ints.restore();
  }
  let merged: Record<string, unknown>;
  try {
    merged = applyConfiguration(working as Record<string, unknown>, patch, context.mergeSchema);
  } catch (err) {
    throw new MapMutationError((err as Error).message);
  }
  return (jsonEqual(merged, working) ? working : merged) as NonNullable<AdmissionRequest['object']>;
}

/** A MAP-form expression's value; an error in it in the API server's words (the cost budget's passes through). */
function evaluateMapExpression<A>(mutation: CompiledMutation, program: (activation: A) => unknown, activation: A): unknown {
  try {
    return program(activation);
  } catch (err) {
    if (err instanceof CostBudgetError) throw err;
    throw new MapMutationError(`expression '${mutation.expression}' resulted in error: ${celErrorText(err)}`);
  }
}

/** Whether a value is one of `roots`' own (found once, when first asked). */
function reachableFrom(roots: unknown[]): (v: object) => boolean {
  let seen: WeakSet<object> | undefined;
  return (v) => {
    if (!seen) {
      seen = new WeakSet();
      const stack = roots.filter((r): r is object => typeof r === 'object' && r !== null);
      while (stack.length) {
        const next = stack.pop()!;
        if (seen.has(next)) continue;
        seen.add(next);
        for (const child of Object.values(next)) if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
    return seen.has(v);
  };
}

function jsonEqual(a: unknown, b: unknown): boolean {
  return jsonpatch.compare(a as object, b as object).length === 0;
}

/**
 * A MutatingAdmissionPolicy JSONPatch mutation on `working`, as the API server's JSONPatch
 * mutator: the expression's list of JSONPatch values applied with its library's semantics
 * (json-patch.ts); a failed test leaves the object as it was; anything else that does not apply
 * throws in its words. Returns the new object, or `working` itself when nothing changed.
 */
function mapJsonPatch(
  mutation: CompiledMutation,
  request: AdmissionRequest,
  working: NonNullable<AdmissionRequest['object']>,
  variables: CompiledVariable[],
  context: MutationContext,
  reads: ActivationReads,
): NonNullable<AdmissionRequest['object']> {
  const ints = new IntsInPlace();
  const ops: MapPatchOperation[] = [];
  try {
    const result = evaluateMapExpression(mutation, mutation.jsonPatchProgram!, buildActivation(request, working, variables, context, ints, reads));
    if (!Array.isArray(result)) throw new MapMutationError('type mismatch: JSONPatchType.expression should evaluate to array');
    for (const value of result) {
      if (!isJsonPatchValue(value)) throw new MapMutationError(`type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of ${celTypeName(value)}`);
      const fields = fromCel(value) as Record<string, unknown>;
      ops.push({
        op: typeof fields.op === 'string' ? fields.op : '',
        path: typeof fields.path === 'string' ? fields.path : '',
        from: typeof fields.from === 'string' && fields.from !== '' ? fields.from : undefined,
        value: fields.value,
        hasValue: Object.hasOwn(fields, 'value'),
      });
    }
  } finally {
    ints.restore();
  }
  if (!ops.length) return working;
  let patched: NonNullable<AdmissionRequest['object']> | undefined;
  try {
    patched = applyMapJsonPatch(working, ops) as NonNullable<AdmissionRequest['object']> | undefined;
  } catch (err) {
    throw new MapMutationError(firstLine(err));
  }
  return patched === undefined ? working : patched;
}

/** A MAP-form mutation that failed, in the API server's words (answered 403, and skipped under Ignore). */
export class MapMutationError extends Error {}
