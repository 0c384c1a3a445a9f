/**
 * A webhook's declarative rules (variables, validations, mutations) compiled into one pure
 * function of the request. Compiled once per suite generation; evaluating never compiles.
 */
import jsonpatch from 'fast-json-patch';
import type { FailurePolicy, JsonPatchOperation, Reason, ValidationAction, WebhookSpec } from '../api/types.ts';
import { allowed, denied, errored, patched, type AdmissionRequest, type Decision } from '../api/review.ts';
import { compile, CompileError, firstLine, type Program } from './cel.ts';
import { buildActivation, type CompiledVariable } from './activation.ts';
import { fromCel } from './values.ts';

interface CompiledValidation {
  expression: string;
  program: Program;
  message?: string;
  messageProgram?: Program;
  reason: Reason;
  field: string;
}

interface CompiledMutation {
  condition?: Program;
  patch?: JsonPatchOperation[];
  patchProgram?: Program;
  field: string;
}

export interface RulesContext {
  params?: unknown;
  namespaceObject?: unknown;
}

export type RulesAdmit = (request: AdmissionRequest, context?: RulesContext) => Decision;

/** Compiles the rules of `webhook` (at `path`, e.g. `spec.webhooks[0]`); throws CompileError naming the field. */
export function compileRules(webhook: WebhookSpec, path: string, failurePolicy: FailurePolicy): RulesAdmit {
  const variables: CompiledVariable[] = (webhook.variables ?? []).map((v, i) => ({
    name: v.name,
    program: compile(v.expression, `${path}.variables[${i}].expression`),
  }));
  const validations: CompiledValidation[] = (webhook.validations ?? []).map((v, i) => {
    const field = `${path}.validations[${i}]`;
    return {
      expression: v.expression,
      program: compile(v.expression, `${field}.expression`, 'bool'),
      message: v.message,
      messageProgram: v.messageExpression ? compile(v.messageExpression, `${field}.messageExpression`, 'string') : undefined,
      reason: v.reason ?? 'Invalid',
      field,
    };
  });
  const mutations: CompiledMutation[] = (webhook.mutations ?? []).map((m, i) => {
    const field = `${path}.mutations[${i}]`;
    if (!m.patch === !m.patchExpression) throw new CompileError(field, 'exactly one of patch and patchExpression must be set');
    return {
      field,
      condition: m.condition ? compile(m.condition, `${field}.condition`, 'bool') : undefined,
      patch: m.patch,
      patchProgram: m.patchExpression ? compile(m.patchExpression, `${field}.patchExpression`, 'list') : undefined,
    };
  });
  const actions = new Set<ValidationAction>(webhook.validationActions ?? ['Deny']);

  if (webhook.type === 'Mutating') {
    return (request, context = {}) => {
      try {
        return mutate(request, mutations, variables, context);
      } catch (err) {
        return errored(firstLine(err), failurePolicy);
      }
    };
  }
  return (request, context = {}) => {
    try {
      return validate(request, validations, variables, actions, context);
    } catch (err) {
      return errored(firstLine(err), failurePolicy);
    }
  };
}

function validate(
  request: AdmissionRequest,
  validations: CompiledValidation[],
  variables: CompiledVariable[],
  actions: Set<ValidationAction>,
  context: RulesContext,
): Decision {
  const object = request.operation === 'DELETE' ? null : request.object;
  const activation = buildActivation(request, object, variables, context);
  const failures: string[] = [];
  for (const validation of validations) {
    let result: unknown;
    try {
      result = validation.program(activation);
    } catch (err) {
      throw new Error(`expression '${validation.expression}' resulted in error: ${firstLine(err)}`);
    }
    if (result === true) continue;
    if (result !== false) throw new Error(`expression '${validation.expression}' did not evaluate to a bool`);
    const message = failureMessage(validation, activation);
    if (actions.has('Deny')) return withAudit(denied(message, validation.reason), actions, [message]);
    failures.push(message);
  }
  const decision = allowed();
  if (failures.length && actions.has('Warn')) decision.warnings = failures;
  return withAudit(decision, actions, failures);
}

function withAudit(decision: Decision, actions: Set<ValidationAction>, failures: string[]): Decision {
  if (failures.length && actions.has('Audit')) decision.auditAnnotations = { 'validation-failure': JSON.stringify(failures) };
  return decision;
}

/** VAP's order: messageExpression if it yields a non-empty string, then message, then the expression. */
function failureMessage(validation: CompiledValidation, activation: object): string {
  if (validation.messageProgram) {
    try {
      const text = validation.messageProgram(activation);
      if (typeof text === 'string' && text.trim() !== '') return text;
    } catch {
      // VAP falls back to the static message when messageExpression fails.
    }
  }
  return validation.message ?? `failed expression: ${validation.expression}`;
}

function mutate(request: AdmissionRequest, mutations: CompiledMutation[], variables: CompiledVariable[], context: RulesContext): Decision {
  const original = request.object;
  if (!original) return allowed();
  let working = structuredClone(original);
  for (const mutation of mutations) {
    const activation = buildActivation(request, working, variables, context);
    if (mutation.condition && mutation.condition(activation) !== true) continue;
    const ops = mutation.patch ?? (fromCel(mutation.patchProgram!(activation)) as JsonPatchOperation[]);
    try {
      working = jsonpatch.applyPatch(working, ops as jsonpatch.Operation[], true, false).newDocument;
    } catch (err) {
      throw new Error(`${mutation.field}: patch failed: ${firstLine(err)}`);
    }
  }
  return patched(jsonpatch.compare(original, working) as JsonPatchOperation[]);
}
