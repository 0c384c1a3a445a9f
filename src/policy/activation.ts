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
  /** Bound only for a webhook whose expressions use it (library/authz.ts). */
  authorizer?: unknown;
}

/**
 * `request` as VAP builds it (apiserver plugin/cel CreateAdmissionRequest, turned into JSON): no
 * object or oldObject, an empty uid, and the omitempty fields (subResource, name, namespace,
 * userInfo's parts, options) absent when empty, so `has()` and errors behave as there.
 */
export function requestAttributes(request: AdmissionRequest): Record<string, unknown> {
  const userInfo = request.userInfo ?? {};
  const attributes: Record<string, unknown> = {
    uid: '',
    kind: request.kind,
    resource: request.resource,
    requestKind: request.requestKind ?? request.kind,
    requestResource: request.requestResource ?? request.resource,
    operation: request.operation,
    userInfo: withoutEmpty({ username: userInfo.username, uid: userInfo.uid, groups: userInfo.groups, extra: userInfo.extra }),
    dryRun: request.dryRun ?? false,
  };
  const subResource = request.subResource ?? '';
  const requestSubResource = request.requestSubResource ?? subResource;
  Object.assign(attributes, withoutEmpty({ subResource, requestSubResource, name: request.name, namespace: request.namespace, options: request.options ?? undefined }));
  return toCel(attributes) as Record<string, unknown>;
}

/** Go's omitempty: no empty strings, lists, maps or nulls. */
function withoutEmpty(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value) ? value.length === 0 : typeof value === 'object' && Object.keys(value as object).length === 0) continue;
    out[key] = value;
  }
  return out;
}

/**
 * `variables` are computed lazily, in declaration order of need, each at most once per
 * activation; a variable whose expression fails rethrows that failure wherever it is read.
 */
export function buildActivation(
  request: AdmissionRequest,
  object: unknown,
  variables: readonly CompiledVariable[],
  extra: { params?: unknown; namespaceObject?: unknown; authorizer?: unknown } = {},
  /** The variables the expressions name (all when absent): the others are left null, unconverted. */
  uses?: ReadonlySet<string>,
): Activation {
  const used = (name: string) => !uses || uses.has(name);
  const activation: Activation = {
    object: object === undefined || object === null || !used('object') ? null : toCel(object),
    oldObject: request.oldObject && used('oldObject') ? toCel(request.oldObject) : null,
    request: used('request') ? requestAttributes(request) : null,
    params: extra.params === undefined || !used('params') ? null : toCel(extra.params),
    namespaceObject: extra.namespaceObject === undefined || !used('namespaceObject') ? null : toCel(extra.namespaceObject),
    variables: {},
  };
  if (extra.authorizer !== undefined) activation.authorizer = extra.authorizer;
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
