/**
 * Kubernetes' authorization library (apiserver `pkg/cel/library/authz.go`, with AuthzSelectors):
 * `authorizer.path(p)`, `.group(g).resource(r).subresource(s).namespace(ns).name(n)`, `.fieldSelector(s)`,
 * `.labelSelector(s)`, `.check(verb)`, the decision's `allowed()`, `reason()`, `errored()`, `error()`;
 * `authorizer.serviceAccount(ns, name)` and `authorizer.requestResource` (for the request's user).
 * No I/O: the values hold the request's answers (see AuthorizerValue).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { authorizationUser, type AuthorizationAttributes, type AuthorizationDecision, type AuthorizationUser } from '../../api/authorization.ts';
import type { AdmissionRequest } from '../../api/admission-review.ts';
import { charge, CostLimitError } from '../cost/meter.ts';
import { celError } from '../celjs/values.ts';

/**
 * The request's answers to checks (the engine's AuthorizationSession, engine/authorization.ts):
 * the answer to `attributes`, or a throw that makes the engine ask and evaluate again.
 */
export interface CheckAnswers {
  decide(attributes: AuthorizationAttributes): AuthorizationDecision;
}

export const AUTHORIZER_TYPE = 'kubernetes.authorization.Authorizer';
const PATH_CHECK = 'kubernetes.authorization.PathCheck';
const GROUP_CHECK = 'kubernetes.authorization.GroupCheck';
const RESOURCE_CHECK = 'kubernetes.authorization.ResourceCheck';
const DECISION = 'kubernetes.authorization.Decision';

/**
 * The values hold the request's answers (the engine's AuthorizationSession), which answer a check
 * or record it for the next round; nothing here does I/O. Costs as Kubernetes' cost model: a check
 * 350,000 (charged by cost/calls.ts), the builders and accessors 1, the selectors by their length.
 */
export class AuthorizerValue {
  readonly celTypeName = AUTHORIZER_TYPE;
  readonly user: AuthorizationUser;
  readonly session: CheckAnswers;
  /** `authorizer.requestResource`: only on the request's own authorizer, as only that variable exists in VAP. */
  requestResource?: ResourceCheckValue;
  constructor(user: AuthorizationUser, session: CheckAnswers) {
    this.user = user;
    this.session = session;
  }
}

export class PathCheckValue {
  readonly celTypeName = PATH_CHECK;
  readonly authorizer: AuthorizerValue;
  readonly path: string;
  constructor(authorizer: AuthorizerValue, path: string) {
    this.authorizer = authorizer;
    this.path = path;
  }
}

export class GroupCheckValue {
  readonly celTypeName = GROUP_CHECK;
  readonly authorizer: AuthorizerValue;
  readonly group: string;
  constructor(authorizer: AuthorizerValue, group: string) {
    this.authorizer = authorizer;
    this.group = group;
  }
}

type ResourceFields = Pick<ResourceCheckValue, 'group' | 'resource' | 'subresource' | 'namespace' | 'name' | 'fieldSelector' | 'labelSelector'>;

export class ResourceCheckValue {
  readonly celTypeName = RESOURCE_CHECK;
  readonly authorizer: AuthorizerValue;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  readonly fieldSelector: string;
  readonly labelSelector: string;
  constructor(authorizer: AuthorizerValue, fields: Partial<ResourceFields> & { group: string; resource: string }) {
    this.authorizer = authorizer;
    this.group = fields.group;
    this.resource = fields.resource;
    this.subresource = fields.subresource ?? '';
    this.namespace = fields.namespace ?? '';
    this.name = fields.name ?? '';
    this.fieldSelector = fields.fieldSelector ?? '';
    this.labelSelector = fields.labelSelector ?? '';
  }
  with(change: Partial<ResourceFields>): ResourceCheckValue {
    return new ResourceCheckValue(this.authorizer, { ...this, ...change });
  }
}

export class DecisionValue {
  readonly celTypeName = DECISION;
  readonly allowed: boolean;
  readonly reason: string;
  readonly error: string;
  constructor(allowed: boolean, reason: string, error: string) {
    this.allowed = allowed;
    this.reason = reason;
    this.error = error;
  }
}

/** `authorizer` for `request`'s user, with `authorizer.requestResource` (as apiserver plugin/cel activation.go binds them). */
export function requestAuthorizer(request: AdmissionRequest, session: CheckAnswers): AuthorizerValue {
  const authorizer = new AuthorizerValue(authorizationUser(request.userInfo), session);
  // The request's resource as the API server received it (not the matched version's equivalent).
  const resource = request.requestResource ?? request.resource;
  authorizer.requestResource = new ResourceCheckValue(authorizer, {
    group: resource?.group ?? '',
    resource: resource?.resource ?? '',
    subresource: request.requestSubResource ?? request.subResource ?? '',
    namespace: request.namespace ?? '',
    name: request.name ?? '',
  });
  return authorizer;
}

/** The user of service account `name` in `namespace` (apiserver serviceaccount.ServiceAccountInfo.UserInfo). */
export function serviceAccountUser(namespace: string, name: string): AuthorizationUser {
  return { username: `system:serviceaccount:${namespace}:${name}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`] };
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const isServiceAccountName = (s: string) => s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
const isNamespaceName = (s: string) => s.length <= 63 && DNS1123_LABEL.test(s);

function decide(session: CheckAnswers, attributes: AuthorizationAttributes): DecisionValue {
  const decision = session.decide(attributes);
  return new DecisionValue(decision.allowed, decision.reason, decision.evaluationError);
}

/** Kubernetes' selectorCostEstimate: a list, the parse, and a struct and list per likely requirement. */
function chargeSelector(selector: string): void {
  const length = selector.length;
  const cost = 10 + Math.ceil(length * 0.1) + Math.ceil(Math.ceil(length * 0.5) * 50);
  if (!charge(cost - 1)) throw new CostLimitError();
}

export function registerAuthz(env: Environment): void {
  env.registerType(DECISION, DecisionValue);
  env.registerType(RESOURCE_CHECK, ResourceCheckValue);
  env.registerType(GROUP_CHECK, GroupCheckValue);
  env.registerType(PATH_CHECK, PathCheckValue);
  // `authorizer.requestResource` is a variable of its own in cel-go; a field of the Authorizer type here.
  env.registerType(AUTHORIZER_TYPE, { ctor: AuthorizerValue, fields: { requestResource: RESOURCE_CHECK } });

  env.registerFunction(`${AUTHORIZER_TYPE}.path(string): ${PATH_CHECK}`, (a: AuthorizerValue, path: string) => {
    if (path.trim() === '') throw celError('path must not be empty');
    return new PathCheckValue(a, path);
  });
  env.registerFunction(`${AUTHORIZER_TYPE}.group(string): ${GROUP_CHECK}`, (a: AuthorizerValue, group: string) => new GroupCheckValue(a, group));
  env.registerFunction(`${AUTHORIZER_TYPE}.serviceAccount(string, string): ${AUTHORIZER_TYPE}`, (a: AuthorizerValue, namespace: string, name: string) => {
    if (!isServiceAccountName(name)) throw celError('Invalid service account name');
    if (!isNamespaceName(namespace)) throw celError('Invalid service account namespace');
    return new AuthorizerValue(serviceAccountUser(namespace, name), a.session);
  });
  env.registerFunction(`${GROUP_CHECK}.resource(string): ${RESOURCE_CHECK}`, (g: GroupCheckValue, resource: string) => {
    if (resource.trim() === '') throw celError('resource must not be empty');
    return new ResourceCheckValue(g.authorizer, { group: g.group, resource });
  });
  env.registerFunction(`${RESOURCE_CHECK}.subresource(string): ${RESOURCE_CHECK}`, (r: ResourceCheckValue, subresource: string) => r.with({ subresource }));
  env.registerFunction(`${RESOURCE_CHECK}.namespace(string): ${RESOURCE_CHECK}`, (r: ResourceCheckValue, namespace: string) => r.with({ namespace }));
  env.registerFunction(`${RESOURCE_CHECK}.name(string): ${RESOURCE_CHECK}`, (r: ResourceCheckValue, name: string) => r.with({ name }));
  env.registerFunction(`${RESOURCE_CHECK}.fieldSelector(string): ${RESOURCE_CHECK}`, (r: ResourceCheckValue, fieldSelector: string) => {
    chargeSelector(fieldSelector);
    return r.with({ fieldSelector });
  });
  env.registerFunction(`${RESOURCE_CHECK}.labelSelector(string): ${RESOURCE_CHECK}`, (r: ResourceCheckValue, labelSelector: string) => {
    chargeSelector(labelSelector);
    return r.with({ labelSelector });
  });

  env.registerFunction(`${PATH_CHECK}.check(string): ${DECISION}`, (p: PathCheckValue, verb: string) => decide(p.authorizer.session, { user: p.authorizer.user, nonResource: { verb, path: p.path } }));
  env.registerFunction(`${RESOURCE_CHECK}.check(string): ${DECISION}`, (r: ResourceCheckValue, verb: string) => {
    const resource: AuthorizationAttributes['resource'] = { verb, group: r.group, resource: r.resource, subresource: r.subresource, namespace: r.namespace, name: r.name };
    if (r.fieldSelector) resource.fieldSelector = r.fieldSelector;
    if (r.labelSelector) resource.labelSelector = r.labelSelector;
    return decide(r.authorizer.session, { user: r.authorizer.user, resource });
  });

  env.registerFunction(`${DECISION}.allowed(): bool`, (d: DecisionValue) => d.allowed);
  env.registerFunction(`${DECISION}.reason(): string`, (d: DecisionValue) => d.reason);
  env.registerFunction(`${DECISION}.errored(): bool`, (d: DecisionValue) => d.error !== '');
  env.registerFunction(`${DECISION}.error(): string`, (d: DecisionValue) => d.error);
}
