/** The CEL activation of one request, as VAP builds it: object, oldObject, request, params, variables. */
import type { AdmissionRequest } from '../../api/admission-review.ts';
import type { Program } from '../celjs/program.ts';
import { CONVERT, toCel, type IntsInPlace } from '../values/convert.ts';
import { celErrorText } from './errors.ts';
import type { ActivationReads } from '../values/reads.ts';

export interface CompiledVariable {
  name: string;
  program: Program;
}

/**
 * `request` as VAP builds it (apiserver plugin/cel CreateAdmissionRequest, turned into JSON): no
 * object or oldObject, an empty uid, and the omitempty fields (subResource, name, namespace,
 * userInfo's parts, options) absent when empty, so `has()` and errors behave as there. Plain
 * JSON: its parts are the request's own, not copies.
 */
export function requestAttributes(request: AdmissionRequest): Record<string, unknown> {
  // Each field set by name, not through one `target[key]` helper: a store shared by every key goes
  // megamorphic (a hash-table lookup per store), a seventh of the webhook's time in the loaded server.
  const user = request.userInfo ?? {};
  const userInfo: Record<string, unknown> = {};
  if (present(user.username)) userInfo.username = user.username;
  if (present(user.uid)) userInfo.uid = user.uid;
  if (present(user.groups)) userInfo.groups = user.groups;
  if (present(user.extra)) userInfo.extra = user.extra;
  const attributes: Record<string, unknown> = {
    uid: '',
    kind: request.kind,
    resource: request.resource,
    requestKind: request.requestKind ?? request.kind,
    requestResource: request.requestResource ?? request.resource,
    operation: request.operation,
    userInfo,
    dryRun: request.dryRun ?? false,
  };
  const subResource = request.subResource ?? '';
  const requestSubResource = request.requestSubResource ?? subResource;
  if (present(subResource)) attributes.subResource = subResource;
  if (present(requestSubResource)) attributes.requestSubResource = requestSubResource;
  if (present(request.name)) attributes.name = request.name;
  if (present(request.namespace)) attributes.namespace = request.namespace;
  if (present(request.options)) attributes.options = request.options;
  return attributes;
}

/** Go's omitempty: no empty strings, lists, maps or nulls. */
function present(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return false;
  return typeof value !== 'object' || (Array.isArray(value) ? value.length !== 0 : !isEmptyObject(value));
}

function isEmptyObject(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * `params` and `namespaceObject` come from watch caches, shared by every request until the object
 * changes (a change replaces it): converted once per cached object, not once per request.
 */
const converted = new WeakMap<object, unknown>();
function cachedToCel(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return toCel(value);
  let cel = converted.get(value);
  if (cel === undefined) converted.set(value, (cel = toCel(value)));
  return cel;
}

/** The `variables` of a webhook that declares none: shared, since nothing is ever added to it. */
const NO_VARIABLES: Record<string, unknown> = Object.freeze({});

/**
 * One request's activation, one allocation on the hot path (docs/adr/0022-one-activation-object.md).
 * `[CONVERT]` converts the JSON still pending (deferred), once;
 * fields other than the CEL variables are not variables: cel-js reads only declared names.
 */
export class Activation {
  object: unknown;
  oldObject: unknown;
  request: unknown;
  params: unknown;
  namespaceObject: unknown;
  variables: Record<string, unknown>;
  /** Bound only for a webhook whose expressions use it (library/authz.ts). */
  declare authorizer?: unknown;
  /** Set while object, oldObject and request are plain JSON still to be converted. */
  private pending: IntsInPlace | undefined;
  private readonly reads: ActivationReads | undefined;

  constructor(object: unknown, oldObject: unknown, request: unknown, params: unknown, namespaceObject: unknown, variables: Record<string, unknown>, pending: IntsInPlace | undefined, reads: ActivationReads | undefined) {
    this.object = object;
    this.oldObject = oldObject;
    this.request = request;
    this.params = params;
    this.namespaceObject = namespaceObject;
    this.variables = variables;
    this.pending = pending;
    this.reads = reads;
  }

  [CONVERT](): void {
    const ints = this.pending;
    if (!ints) return;
    this.pending = undefined;
    const reads = this.reads;
    ints.convert(this.object, reads?.of('object'));
    ints.convert(this.oldObject, reads?.of('oldObject'));
    ints.convert(this.request, reads?.of('request'));
  }
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
  /** The request's JSON turned to CEL values in place: the caller restores it when evaluation ends. */
  ints: IntsInPlace,
  /** What the expressions read (everything when absent): variables they do not name are left null, fields they do not reach unconverted. */
  reads?: ActivationReads,
  /** Leaves object, oldObject and request as plain JSON until a program that is not compiled needs them converted (`convertActivation`). */
  deferred = false,
): Activation {
  const activation = new Activation(
    object === undefined || object === null || (reads && !reads.binds.object) ? null : object,
    request.oldObject && (!reads || reads.binds.oldObject) ? request.oldObject : null,
    !reads || reads.binds.request ? requestAttributes(request) : null,
    extra.params === undefined || (reads && !reads.binds.params) ? null : cachedToCel(extra.params),
    extra.namespaceObject === undefined || (reads && !reads.binds.namespaceObject) ? null : cachedToCel(extra.namespaceObject),
    variables.length === 0 ? NO_VARIABLES : {},
    ints,
    reads,
  );
  if (extra.authorizer !== undefined) activation.authorizer = extra.authorizer;
  if (!deferred) activation[CONVERT]();
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
