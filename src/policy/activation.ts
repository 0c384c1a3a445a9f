/** The CEL activation of one request, as VAP builds it: object, oldObject, request, params, variables. */
import type { AdmissionRequest } from '../api/review.ts';
import { type Program } from './cel.ts';
import { toCel } from './values.ts';
import { celErrorText } from './errors.ts';

export interface CompiledVariable {
  name: string;
  program: Program;
}

export interface Activation {
  object: unknown;
  oldObject: unknown;
  request: unknown;
  params: unknown;
  namespaceObject: unknown;
  variables: Record<string, unknown>;
}

export function requestAttributes(request: AdmissionRequest): Record<string, unknown> {
  return toCel({
    kind: request.kind,
    resource: request.resource,
    subResource: request.subResource ?? '',
    requestKind: request.requestKind ?? request.kind,
    requestResource: request.requestResource ?? request.resource,
    requestSubResource: request.requestSubResource ?? request.subResource ?? '',
    name: request.name ?? '',
    namespace: request.namespace ?? '',
    operation: request.operation,
    userInfo: request.userInfo ?? {},
    dryRun: request.dryRun ?? false,
    options: request.options ?? null,
  }) as Record<string, unknown>;
}

/**
 * `variables` are computed lazily, in declaration order of need, each at most once per
 * activation; a variable whose expression fails rethrows that failure wherever it is read.
 */
export function buildActivation(
  request: AdmissionRequest,
  object: unknown,
  variables: readonly CompiledVariable[],
  extra: { params?: unknown; namespaceObject?: unknown } = {},
): Activation {
  const activation: Activation = {
    object: object === undefined || object === null ? null : toCel(object),
    oldObject: request.oldObject ? toCel(request.oldObject) : null,
    request: requestAttributes(request),
    params: extra.params === undefined ? null : toCel(extra.params),
    namespaceObject: extra.namespaceObject === undefined ? null : toCel(extra.namespaceObject),
    variables: {},
  };
  for (const variable of variables) {
    let computed = false;
    let value: unknown;
    let failure: unknown;
    Object.defineProperty(activation.variables, variable.name, {
      enumerable: true,
      get() {
        if (!computed) {
          computed = true;
          try {
            value = variable.program(activation);
          } catch (err) {
            // Worded as the API server's composition does, so the message names the variable.
            failure = new Error(`composited variable "${variable.name}" fails to evaluate: ${celErrorText(err)}`);
          }
        }
        if (failure) throw failure;
        return value;
      },
    });
  }
  return activation;
}
