/**
 * The differential table: policies installed both as a native ValidatingAdmissionPolicy (the
 * oracle) and as an AdmissionSuite webhook, with the steps sent to both. Nothing here says what
 * the outcome should be: the API server's own VAP decides, and the suite must agree.
 * Every semantic point of ValidatingAdmissionPolicy that Portcullis promises has a row.
 */
import type { MatchCondition, Reason, ValidationAction, Variable } from '../../../src/api/types.ts';

export interface PolicyValidation {
  expression: string;
  message?: string;
  messageExpression?: string;
  reason?: Reason;
}

export interface Step {
  op: 'create' | 'update' | 'delete';
  /** ConfigMap data, for rows on configmaps. */
  data?: Record<string, string>;
  /** Deployment replicas, for rows on deployments. */
  replicas?: number;
  image?: string;
  labels?: Record<string, string>;
  dryRun?: boolean;
  /** The user making the request (impersonated; see AUTHZ_USER), instead of the admin. */
  as?: string;
  /** The object's name, when not the row's (rows on resourceNames and excludeResourceRules). */
  name?: string;
}

/** A rule of excludeResourceRules, on the row's resource: its operations and names. */
export interface ExcludeRule {
  operations: ('CREATE' | 'UPDATE' | 'DELETE')[];
  resourceNames?: string[];
}

/** A user who may create, update and read ConfigMaps in the policies' namespaces, but not delete them. */
export const AUTHZ_USER = 'diff-alice';

export interface PolicyRow {
  /** A DNS label: the policy's, the webhook's and the object's name. */
  name: string;
  resource: 'configmaps' | 'deployments';
  operations?: ('CREATE' | 'UPDATE' | 'DELETE')[];
  failurePolicy?: 'Fail' | 'Ignore';
  variables?: Variable[];
  validations: PolicyValidation[];
  auditAnnotations?: { key: string; valueExpression: string }[];
  validationActions?: ValidationAction[];
  matchConditions?: MatchCondition[];
  /**
   * ConfigMaps as params. By name: `data` present means it exists; absent means it is missing.
   * `selected`: instead, one ConfigMap per entry, labelled for the row and selected by a label
   * selector (paramRef.selector; an empty list: none exists). `inRequestNamespace`: the params live
   * in the request's own namespace (paramRef.namespace unset), one copy on each side.
   */
  params?: { data?: Record<string, string>; notFoundAction?: 'Deny' | 'Allow'; selected?: Record<string, string>[]; inRequestNamespace?: boolean };
  /** resourceNames of the row's rule: only objects of these names are judged. */
  resourceNames?: string[];
  excludeResourceRules?: ExcludeRule[];
  steps: Step[];
}

const cmLifecycle = (first: Record<string, string>, second: Record<string, string>): Step[] => [{ op: 'create', data: first }, { op: 'create', data: second }, { op: 'update', data: first }, { op: 'delete' }];
const replicasLifecycle = (...counts: number[]): Step[] => [...counts.map((replicas) => ({ op: 'create' as const, replicas })), { op: 'update', replicas: counts[0] }, { op: 'delete' }];

/** The one reason the contract offers beyond VAP's: VAP refuses it on write, a suite answers 401. */
export const UNAUTHORIZED_ROW: PolicyRow = { name: 'reason-unauthorized', resource: 'configmaps', validations: [{ expression: 'false', message: 'no', reason: 'Unauthorized' }], steps: [{ op: 'create', data: { a: '1' } }] };

export const POLICIES: PolicyRow[] = [
  // --- object / oldObject, and the standard macros
  { name: 'has-key', resource: 'configmaps', validations: [{ expression: 'has(object.data.owner)', message: 'owner is required' }], steps: cmLifecycle({ x: '1' }, { owner: 'a' }) },
  // has() of a selection whose operand is not a chain from an identifier (cel-go takes any operand)
  { name: 'has-after-index', resource: 'configmaps', validations: [{ expression: 'has([object.data][0].owner)', message: 'owner is required' }], steps: cmLifecycle({ x: '1' }, { owner: 'a' }) },
  { name: 'has-on-map-literal', resource: 'configmaps', validations: [{ expression: "has({'d': object.data}.d.owner) && !has({'a': 1}.b)", message: 'owner is required' }], steps: cmLifecycle({ x: '1' }, { owner: 'a' }) },
  {
    name: 'has-after-index-deep',
    resource: 'deployments',
    validations: [{ expression: '!has(object.spec.template.spec.containers[0].securityContext) && has(object.spec.template.spec.containers[0].image)', message: 'no securityContext' }],
    steps: replicasLifecycle(1, 2),
  },
  { name: 'all-keys', resource: 'configmaps', validations: [{ expression: "object.data.all(k, k.startsWith('app-'))" }], steps: cmLifecycle({ 'app-a': '1', b: '2' }, { 'app-a': '1' }) },
  {
    name: 'exists-one',
    resource: 'configmaps',
    validations: [{ expression: "object.data.exists_one(k, object.data[k] == 'primary')", message: 'exactly one primary' }],
    steps: cmLifecycle({ a: 'primary', b: 'primary' }, { a: 'primary', b: 'replica' }),
  },
  {
    name: 'filter-map',
    resource: 'configmaps',
    validations: [{ expression: "object.data.filter(k, k.endsWith('-url')).map(k, object.data[k]).all(v, v.startsWith('https://'))", message: 'urls must be https' }],
    steps: cmLifecycle({ 'api-url': 'http://x' }, { 'api-url': 'https://x', other: 'http://y' }),
  },
  {
    name: 'size-message',
    resource: 'configmaps',
    validations: [{ expression: 'size(object.data) <= 2', messageExpression: "'too many keys: ' + string(size(object.data))" }],
    steps: cmLifecycle({ a: '1', b: '2', c: '3' }, { a: '1' }),
  },
  {
    name: 'immutable-data',
    resource: 'configmaps',
    validations: [{ expression: 'oldObject == null || object.data == oldObject.data', message: 'data is immutable' }],
    steps: [{ op: 'create', data: { a: '1' } }, { op: 'update', data: { a: '1' }, labels: { touched: 'yes' } }, { op: 'update', data: { a: '2' } }, { op: 'delete' }],
  },
  {
    name: 'old-object-on-create',
    resource: 'configmaps',
    operations: ['CREATE'],
    validations: [{ expression: "oldObject.data.a == '1'", message: 'never reached' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  { name: 'delete-object-null', resource: 'configmaps', operations: ['DELETE'], validations: [{ expression: 'object != null', message: 'object is null on DELETE' }], steps: [{ op: 'create', data: { a: '1' } }, { op: 'delete' }] },
  {
    name: 'delete-protected',
    resource: 'configmaps',
    operations: ['DELETE'],
    validations: [{ expression: "!(has(oldObject.data.protected) && oldObject.data.protected == 'yes')", messageExpression: "'configmap ' + oldObject.metadata.name + ' is protected'", reason: 'Forbidden' }],
    steps: [{ op: 'create', data: { protected: 'yes' } }, { op: 'delete' }, { op: 'update', data: { protected: 'no' } }, { op: 'delete' }],
  },
  {
    name: 'nested-containers',
    resource: 'deployments',
    validations: [{ expression: "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.k8s.io/'))", message: 'images must come from registry.k8s.io' }],
    steps: [{ op: 'create', replicas: 1, image: 'docker.io/library/nginx:1.27' }, { op: 'create', replicas: 1 }, { op: 'delete' }],
  },
  { name: 'in-list', resource: 'configmaps', validations: [{ expression: "object.data.tier in ['web', 'db']", message: 'tier must be web or db' }], steps: cmLifecycle({ tier: 'cache' }, { tier: 'db' }) },
  {
    name: 'string-functions',
    resource: 'configmaps',
    validations: [{ expression: "object.data.host.endsWith('.example.com') && object.data.host.contains('api') && size(object.data.host) < 30 && object.data.host.matches('^[a-z.]+$')", message: 'bad host' }],
    steps: cmLifecycle({ host: 'www.example.org' }, { host: 'api.example.com' }),
  },

  // --- integers are int64
  { name: 'int-division', resource: 'deployments', validations: [{ expression: 'object.spec.replicas / 2 <= 2', message: 'half the replicas must be at most 2' }], steps: replicasLifecycle(6, 5) },
  { name: 'int-modulo', resource: 'deployments', validations: [{ expression: 'object.spec.replicas % 2 == 1', message: 'replicas must be odd' }], steps: replicasLifecycle(4, 3) },
  { name: 'int-add', resource: 'deployments', validations: [{ expression: 'object.spec.replicas + 1 <= 4', messageExpression: "'replicas+1 is ' + string(object.spec.replicas + 1)" }], steps: replicasLifecycle(4, 3) },
  { name: 'int-type', resource: 'deployments', validations: [{ expression: 'type(object.spec.replicas) != int', message: 'replicas is an int' }], steps: [{ op: 'create', replicas: 2 }] },
  { name: 'double-ratio', resource: 'deployments', validations: [{ expression: 'double(object.spec.replicas) / 4.0 < 1.0', messageExpression: "'ratio ' + string(double(object.spec.replicas) / 4.0)" }], steps: replicasLifecycle(6, 2) },
  {
    name: 'scale-down',
    resource: 'deployments',
    validations: [{ expression: 'oldObject == null || object.spec.replicas >= oldObject.spec.replicas', messageExpression: "'cannot scale down from ' + string(oldObject.spec.replicas)" }],
    steps: [{ op: 'create', replicas: 3 }, { op: 'update', replicas: 4 }, { op: 'update', replicas: 2 }, { op: 'delete' }],
  },

  // --- request attributes
  { name: 'req-operation', resource: 'configmaps', validations: [{ expression: "request.operation != 'UPDATE'", messageExpression: "'operation ' + request.operation + ' is not allowed'" }], steps: cmLifecycle({ a: '1' }, { a: '2' }) },
  {
    name: 'req-userinfo',
    resource: 'configmaps',
    validations: [{ expression: "!('system:masters' in request.userInfo.groups)", messageExpression: "'user ' + request.userInfo.username + ' is a cluster admin'" }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'req-dry-run',
    resource: 'configmaps',
    validations: [{ expression: '!request.dryRun', message: 'dry run seen' }],
    steps: [{ op: 'create', data: { a: '1' }, dryRun: true }, { op: 'create', data: { a: '1' } }, { op: 'delete', dryRun: true }, { op: 'delete' }],
  },
  {
    name: 'req-name',
    resource: 'configmaps',
    validations: [{ expression: "request.name != object.metadata.name || !request.namespace.startsWith('diff-')", messageExpression: "'request names ' + request.name" }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'req-kind-resource',
    resource: 'configmaps',
    validations: [
      {
        expression: "!(request.kind.kind == 'ConfigMap' && request.kind.version == 'v1' && request.kind.group == '' && request.resource.resource == 'configmaps' && request.resource.group == '' && request.subResource == '')",
        message: 'kind and resource as sent',
      },
    ],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'req-options',
    resource: 'configmaps',
    validations: [{ expression: 'request.options == null', messageExpression: "'options of kind ' + request.options.kind" }],
    steps: cmLifecycle({ a: '1' }, { a: '2' }),
  },

  // --- variables
  {
    name: 'vars-composed',
    resource: 'configmaps',
    variables: [
      { name: 'count', expression: 'size(object.data)' },
      { name: 'doubled', expression: 'variables.count * 2' },
    ],
    validations: [{ expression: 'variables.doubled <= 4', messageExpression: "'doubled is ' + string(variables.doubled)" }],
    steps: cmLifecycle({ a: '1', b: '2', c: '3' }, { a: '1' }),
  },
  {
    name: 'vars-lazy',
    resource: 'configmaps',
    variables: [{ name: 'missing', expression: 'object.data.missing' }],
    validations: [{ expression: "has(object.data.ok) || variables.missing == 'x'", message: 'ok or missing' }],
    steps: cmLifecycle({ ok: '1' }, { other: '1' }),
  },
  {
    name: 'vars-int',
    resource: 'configmaps',
    variables: [{ name: 'n', expression: 'int(object.data.n)' }],
    validations: [{ expression: 'type(variables.n) == int && variables.n % 2 == 0', messageExpression: "'n is ' + string(variables.n)" }],
    steps: cmLifecycle({ n: '3' }, { n: '4' }),
  },

  // --- messages
  { name: 'msg-static', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'", message: 'v must be ok' }], steps: cmLifecycle({ v: 'no' }, { v: 'ok' }) },
  { name: 'msg-expression', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'", messageExpression: "'v is ' + object.data.v" }], steps: cmLifecycle({ v: 'no' }, { v: 'ok' }) },
  { name: 'msg-expression-empty', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'", messageExpression: "''", message: 'static fallback' }], steps: cmLifecycle({ v: 'no' }, { v: 'ok' }) },
  {
    name: 'msg-expression-error',
    resource: 'configmaps',
    validations: [{ expression: "object.data.v == 'ok'", messageExpression: "'v is ' + object.data.missing", message: 'static fallback' }],
    steps: cmLifecycle({ v: 'no' }, { v: 'ok' }),
  },
  { name: 'msg-expression-error-bare', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'", messageExpression: 'object.data.missing' }], steps: cmLifecycle({ v: 'no' }, { v: 'ok' }) },
  { name: 'msg-none', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'" }], steps: cmLifecycle({ v: 'no' }, { v: 'ok' }) },
  { name: 'msg-blank', resource: 'configmaps', validations: [{ expression: "object.data.v == 'ok'", messageExpression: "'   '" }], steps: [{ op: 'create', data: { v: 'no' } }] },

  // --- reasons and their HTTP codes (Unauthorized, which the contract offers and VAP refuses, is tested on its own)
  { name: 'reason-forbidden', resource: 'configmaps', validations: [{ expression: 'false', message: 'no', reason: 'Forbidden' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'reason-invalid', resource: 'configmaps', validations: [{ expression: 'false', message: 'no', reason: 'Invalid' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'reason-too-large', resource: 'configmaps', validations: [{ expression: 'false', message: 'no', reason: 'RequestEntityTooLarge' }], steps: [{ op: 'create', data: { a: '1' } }] },

  // --- validationActions
  {
    name: 'action-warn',
    resource: 'configmaps',
    validationActions: ['Warn'],
    validations: [
      { expression: 'has(object.data.a)', message: 'a is missing' },
      { expression: 'has(object.data.b)', messageExpression: "'b is missing among ' + string(size(object.data)) + ' keys'" },
    ],
    steps: cmLifecycle({ c: '1' }, { a: '1' }),
  },
  { name: 'action-audit', resource: 'configmaps', validationActions: ['Audit'], validations: [{ expression: 'has(object.data.a)', message: 'a is missing (audit)' }], steps: cmLifecycle({ c: '1' }, { a: '1' }) },
  { name: 'action-warn-audit', resource: 'configmaps', validationActions: ['Warn', 'Audit'], validations: [{ expression: 'has(object.data.a)', message: 'a is missing (warn, audit)' }], steps: cmLifecycle({ c: '1' }, { a: '1' }) },
  {
    name: 'action-deny-audit',
    resource: 'configmaps',
    validationActions: ['Deny', 'Audit'],
    validations: [
      { expression: 'has(object.data.a)', message: 'a is missing (deny, audit)' },
      { expression: 'has(object.data.b)', message: 'b is missing (deny, audit)' },
    ],
    steps: cmLifecycle({ c: '1' }, { a: '1', b: '2' }),
  },
  {
    name: 'multi-deny',
    resource: 'configmaps',
    validations: [
      { expression: 'has(object.data.a)', message: 'a is missing', reason: 'Forbidden' },
      { expression: 'has(object.data.b)', message: 'b is missing' },
    ],
    steps: [
      { op: 'create', data: { c: '1' } },
      { op: 'create', data: { a: '1' } },
      { op: 'create', data: { a: '1', b: '2' } },
    ],
  },
  {
    name: 'audit-annotations',
    resource: 'configmaps',
    validations: [{ expression: 'true' }],
    auditAnnotations: [
      { key: 'data-keys', valueExpression: "'keys: ' + string(size(object.data))" },
      { key: 'blank', valueExpression: "'  '" },
    ],
    steps: cmLifecycle({ tag: 'blue' }, { a: '1' }),
  },
  { name: 'audit-annotation-null', resource: 'configmaps', auditAnnotations: [{ key: 'tag', valueExpression: "has(object.data.tag) ? 'tag ' + object.data.tag : null" }], validations: [], steps: cmLifecycle({ tag: 'blue' }, { a: '1' }) },

  // --- run-time errors follow failurePolicy
  { name: 'err-no-key-fail', resource: 'configmaps', failurePolicy: 'Fail', validations: [{ expression: "object.data.missing == 'x'", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-no-key-ignore', resource: 'configmaps', failurePolicy: 'Ignore', validations: [{ expression: "object.data.missing == 'x'", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-overload-fail', resource: 'configmaps', failurePolicy: 'Fail', validations: [{ expression: 'object.data.a + 1 > 0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-overload-ignore', resource: 'configmaps', failurePolicy: 'Ignore', validations: [{ expression: 'object.data.a + 1 > 0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-div-zero', resource: 'deployments', validations: [{ expression: 'object.spec.replicas / (object.spec.replicas - 2) > 0', message: 'unreachable' }], steps: replicasLifecycle(2, 3) },
  { name: 'err-not-bool', resource: 'configmaps', validations: [{ expression: 'object.data.v', message: 'unreachable' }], steps: [{ op: 'create', data: { v: 'text' } }] },
  {
    name: 'err-second-of-two',
    resource: 'configmaps',
    validations: [
      { expression: 'has(object.data.a)', message: 'a is missing' },
      { expression: "object.data.b == 'x'", message: 'b must be x' },
    ],
    steps: cmLifecycle({ a: '1' }, { c: '1' }),
  },

  // --- params and namespaceObject
  {
    name: 'params-found',
    resource: 'configmaps',
    params: { data: { max: '2' } },
    validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' keys'" }],
    steps: cmLifecycle({ a: '1', b: '2', c: '3' }, { a: '1' }),
  },
  { name: 'params-missing-deny', resource: 'configmaps', params: { notFoundAction: 'Deny' }, validations: [{ expression: 'true' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'params-missing-deny-ignore', resource: 'configmaps', failurePolicy: 'Ignore', params: { notFoundAction: 'Deny' }, validations: [{ expression: 'true' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'params-missing-allow', resource: 'configmaps', params: { notFoundAction: 'Allow' }, validations: [{ expression: 'false', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  // params by selector: the rules run once per selected ConfigMap, the first denial answers
  {
    name: 'params-selector',
    resource: 'configmaps',
    params: { selected: [{ max: '3' }, { max: '1' }, { max: '5' }] },
    validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' keys'" }],
    steps: cmLifecycle({ a: '1', b: '2' }, { a: '1' }),
  },
  {
    name: 'params-selector-all-hold',
    resource: 'configmaps',
    params: { selected: [{ allowed: 'a' }, { allowed: 'a' }] },
    validations: [{ expression: 'object.data.all(k, k == params.data.allowed)', message: 'only key a' }],
    steps: cmLifecycle({ b: '1' }, { a: '1' }),
  },
  { name: 'params-selector-none-deny', resource: 'configmaps', params: { selected: [], notFoundAction: 'Deny' }, validations: [{ expression: 'true' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'params-selector-none-allow', resource: 'configmaps', params: { selected: [], notFoundAction: 'Allow' }, validations: [{ expression: 'false', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'params-selector-ignore',
    resource: 'configmaps',
    failurePolicy: 'Ignore',
    params: { selected: [{ max: '1' }, { max: 'many' }] },
    validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' keys'" }],
    steps: cmLifecycle({ a: '1', b: '2' }, { a: '1' }),
  },
  // params.namespace unset on a namespaced kind: the request's own namespace
  {
    name: 'params-request-namespace',
    resource: 'configmaps',
    params: { data: { max: '1' }, inRequestNamespace: true },
    validations: [{ expression: 'params.metadata.namespace == request.namespace && size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' key'" }],
    steps: cmLifecycle({ a: '1', b: '2' }, { a: '1' }),
  },
  { name: 'params-request-namespace-deny', resource: 'configmaps', params: { inRequestNamespace: true, notFoundAction: 'Deny' }, validations: [{ expression: 'true' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'params-request-namespace-allow',
    resource: 'configmaps',
    params: { inRequestNamespace: true, notFoundAction: 'Allow' },
    validations: [{ expression: 'false', message: 'unreachable' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'params-request-namespace-selector',
    resource: 'configmaps',
    params: { selected: [{ max: '2' }, { max: '1' }], inRequestNamespace: true },
    validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' keys'" }],
    steps: cmLifecycle({ a: '1', b: '2' }, { a: '1' }),
  },
  { name: 'params-unset', resource: 'configmaps', validations: [{ expression: 'params != null', message: 'params is null without a paramKind' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'namespace-object',
    resource: 'configmaps',
    validations: [{ expression: "namespaceObject.metadata.labels['team'] != 'differential'", messageExpression: "'namespace of team ' + namespaceObject.metadata.labels['team']" }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },

  // --- what VAP refuses when it is written, a suite refuses when it is applied
  { name: 'write-parse-error', resource: 'configmaps', validations: [{ expression: "object.data.a == 'x' &&" }], steps: [] },
  { name: 'write-undeclared', resource: 'configmaps', validations: [{ expression: "undeclared.data.a == 'x'" }], steps: [] },
  { name: 'write-message-int', resource: 'configmaps', validations: [{ expression: 'false', messageExpression: 'size(object.data)' }], steps: [] },
  { name: 'write-audit-int', resource: 'configmaps', validations: [], auditAnnotations: [{ key: 'count', valueExpression: 'size(object.data)' }], steps: [] },
  { name: 'write-variable-error', resource: 'configmaps', variables: [{ name: 'v', expression: 'object.data.a.' }], validations: [{ expression: 'true' }], steps: [] },

  // --- the Kubernetes CEL libraries
  {
    name: 'lib-strings',
    resource: 'configmaps',
    validations: [
      {
        expression: "object.data.name.lowerAscii() == object.data.name && object.data.name.indexOf('-') != 0 && object.data.name.split('-').size() <= 3",
        messageExpression:
          "'bad name ' + object.data.name.upperAscii() + ' ' + object.data.name.replace('-', '_') + ' ' + string(object.data.name.lastIndexOf('-')) + ' ' + object.data.name.charAt(1) + ' ' + object.data.name.split('-').join('/') + ' ' + object.data.name.substring(1, 3) + ' [' + '  x '.trim() + ']'",
      },
    ],
    steps: cmLifecycle({ name: 'Ab-Cd-e-f' }, { name: 'ab-c' }),
  },
  {
    name: 'lib-strings-format',
    resource: 'configmaps',
    validations: [{ expression: 'size(object.data) < 2', messageExpression: "'%s has %d keys, first %s'.format([object.metadata.name, size(object.data), strings.quote(object.data.a)])" }],
    steps: cmLifecycle({ a: 'say "hi"', b: '2' }, { a: '1' }),
  },
  {
    name: 'lib-regex',
    resource: 'configmaps',
    validations: [
      {
        expression: "object.data.version.matches('^v[0-9]+[.][0-9]+$')",
        messageExpression: "'version ' + object.data.version.find('[0-9]+') + ' parts ' + object.data.version.findAll('[0-9]+').join(',') + ' first ' + object.data.version.findAll('[0-9]+', 1).join(',')",
      },
    ],
    steps: cmLifecycle({ version: 'v1.2.3' }, { version: 'v1.2' }),
  },
  {
    name: 'lib-lists',
    resource: 'configmaps',
    validations: [
      {
        expression: "object.data.keys.split(',').isSorted() && object.data.counts.split(',').map(c, int(c)).sum() <= 10",
        messageExpression:
          "'index of a ' + string(object.data.keys.split(',').indexOf('a')) + ', last b ' + string(object.data.keys.split(',').lastIndexOf('b')) + ', sum ' + string(object.data.counts.split(',').map(c, int(c)).sum()) + ', min ' + string(object.data.counts.split(',').map(c, int(c)).min()) + ', max ' + string(object.data.counts.split(',').map(c, int(c)).max())",
      },
    ],
    steps: cmLifecycle({ keys: 'b,a,c,b', counts: '3,9,1' }, { keys: 'a,b', counts: '1,2' }),
  },
  {
    name: 'lib-url',
    resource: 'configmaps',
    validations: [
      {
        expression: "isURL(object.data.endpoint) && url(object.data.endpoint).getScheme() == 'https'",
        message: 'endpoint must be an https URL',
        messageExpression:
          "'host ' + url(object.data.endpoint).getHost() + ' hostname ' + url(object.data.endpoint).getHostname() + ' port ' + url(object.data.endpoint).getPort() + ' path ' + url(object.data.endpoint).getEscapedPath() + ' x ' + url(object.data.endpoint).getQuery()['x'].join(',')",
      },
    ],
    steps: [{ op: 'create', data: { endpoint: 'http://example.com:8080/a%20b?x=1&x=2&y=3' } }, { op: 'create', data: { endpoint: 'not a url' } }, { op: 'create', data: { endpoint: 'https://example.com/' } }, { op: 'delete' }],
  },
  {
    name: 'lib-quantity',
    resource: 'configmaps',
    validations: [
      {
        expression: "isQuantity(object.data.memory) && quantity(object.data.memory).isLessThan(quantity('1Gi'))",
        message: 'memory must be a quantity under 1Gi',
        messageExpression:
          "'memory ' + object.data.memory + ' compares ' + string(quantity(object.data.memory).compareTo(quantity('1Gi'))) + ', plus 1Mi is ' + string(quantity(object.data.memory).add(quantity('1Mi')).asInteger()) + ', integer ' + string(quantity(object.data.memory).isInteger()) + ', sign ' + string(sign(quantity(object.data.memory)))",
      },
    ],
    steps: [{ op: 'create', data: { memory: '2Gi' } }, { op: 'create', data: { memory: 'lots' } }, { op: 'create', data: { memory: '512Mi' } }, { op: 'delete' }],
  },
  { name: 'lib-quantity-error', resource: 'configmaps', validations: [{ expression: 'quantity(object.data.memory).isInteger()', message: 'unreachable' }], steps: [{ op: 'create', data: { memory: 'lots' } }] },
  { name: 'lib-url-error', resource: 'configmaps', validations: [{ expression: "url(object.data.endpoint).getHost() != ''", message: 'unreachable' }], steps: [{ op: 'create', data: { endpoint: 'not a url' } }] },
  {
    name: 'lib-ip-cidr',
    resource: 'configmaps',
    validations: [
      {
        expression: "isIP(object.data.ip) && cidr('10.0.0.0/8').containsIP(ip(object.data.ip))",
        message: 'ip must be in 10.0.0.0/8',
        messageExpression:
          "'family ' + string(ip(object.data.ip).family()) + ' loopback ' + string(ip(object.data.ip).isLoopback()) + ' global ' + string(ip(object.data.ip).isGlobalUnicast()) + ' in 127/8 ' + string(cidr('127.0.0.0/8').containsIP(object.data.ip)) + ' masked ' + string(cidr('10.1.2.3/8').masked()) + ' prefix ' + string(cidr('10.0.0.0/8').prefixLength())",
      },
    ],
    steps: [{ op: 'create', data: { ip: '127.0.0.1' } }, { op: 'create', data: { ip: '::1' } }, { op: 'create', data: { ip: '10.1.2.3' } }, { op: 'delete' }],
  },
  {
    name: 'lib-format',
    resource: 'configmaps',
    validations: [{ expression: '!format.dns1123Label().validate(object.data.label).hasValue()', messageExpression: "'invalid label: ' + format.dns1123Label().validate(object.data.label).value().join('; ')" }],
    steps: cmLifecycle({ label: 'Bad_Label' }, { label: 'good' }),
  },
  {
    name: 'lib-sets',
    resource: 'configmaps',
    validations: [
      {
        expression: "sets.contains(object.data.allowed.split(','), object.data.used.split(','))",
        messageExpression: "'intersects ' + string(sets.intersects(object.data.allowed.split(','), object.data.used.split(','))) + ' equivalent ' + string(sets.equivalent(object.data.allowed.split(','), object.data.used.split(',')))",
      },
    ],
    steps: cmLifecycle({ allowed: 'a,b', used: 'b,c' }, { allowed: 'a,b,c', used: 'c,a' }),
  },
  {
    name: 'lib-optional',
    resource: 'configmaps',
    validations: [
      {
        expression: "object.data.?tier.orValue('standard') != 'forbidden' && !object.?spec.hasValue()",
        messageExpression: "'tier ' + object.data.?tier.orValue('none') + ' ' + string(optional.of(1).hasValue()) + ' ' + string(optional.none().hasValue()) + ' ' + object.data.?tier.value()",
      },
    ],
    steps: cmLifecycle({ tier: 'forbidden' }, { other: '1' }),
  },
  {
    name: 'double-to-string',
    resource: 'deployments',
    validations: [
      {
        expression: 'false',
        messageExpression: "string(double(object.spec.replicas) * 1000000.0) + ' ' + string(double(object.spec.replicas) / 3.0) + ' ' + string(double(object.spec.replicas) / 10000000.0) + ' ' + string(double(object.spec.replicas))",
      },
    ],
    steps: [{ op: 'create', replicas: 3 }],
  },
  {
    name: 'lib-numeric-cross-type',
    resource: 'deployments',
    validations: [{ expression: 'object.spec.replicas < 2.5 && object.spec.replicas != 1.0', messageExpression: "'replicas ' + string(object.spec.replicas)" }],
    steps: replicasLifecycle(3, 1, 2),
  },
  { name: 'write-strings-reverse', resource: 'configmaps', validations: [{ expression: "object.data.v.reverse() == 'x'" }], steps: [] },
  { name: 'write-regex-backreference', resource: 'configmaps', validations: [{ expression: "object.data.v.matches('(a)\\\\1')" }], steps: [] },

  // --- authorizer: SubjectAccessReviews for the requesting user (the admin, or AUTHZ_USER)
  {
    name: 'authz-resource',
    resource: 'configmaps',
    variables: [{ name: 'secrets', expression: "authorizer.group('').resource('secrets').namespace('diff-params').check('get')" }],
    validations: [{ expression: 'variables.secrets.allowed()', messageExpression: "'may not read secrets (' + variables.secrets.reason() + ', errored ' + string(variables.secrets.errored()) + ')'" }],
    steps: [
      { op: 'create', data: { a: '1' }, as: AUTHZ_USER },
      { op: 'create', data: { a: '1' } },
    ],
  },
  {
    name: 'authz-request-resource',
    resource: 'configmaps',
    operations: ['CREATE'],
    validations: [{ expression: "authorizer.requestResource.check('delete').allowed()", message: 'whoever creates it must be able to delete it' }],
    steps: [
      { op: 'create', data: { a: '1' }, as: AUTHZ_USER },
      { op: 'create', data: { a: '1' } },
    ],
  },
  {
    name: 'authz-service-account',
    resource: 'configmaps',
    operations: ['CREATE'],
    variables: [{ name: 'robot', expression: "authorizer.serviceAccount('diff-params', 'robot').group('').resource('configmaps').namespace('diff-params')" }],
    validations: [
      { expression: "variables.robot.check('list').allowed()", message: 'the robot must be able to list' },
      { expression: "variables.robot.check('delete').allowed()", message: 'the robot must be able to delete' },
    ],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'authz-path',
    resource: 'configmaps',
    operations: ['CREATE'],
    validations: [{ expression: "!authorizer.path('/healthz').check('get').allowed() || authorizer.path('/metrics').check('get').allowed()", message: 'may read /healthz but not /metrics' }],
    steps: [
      { op: 'create', data: { a: '1' }, as: AUTHZ_USER },
      { op: 'create', data: { a: '1' } },
    ],
  },
  { name: 'write-authz-in-message', resource: 'configmaps', validations: [{ expression: 'false', messageExpression: "string(authorizer.path('/healthz').check('get').allowed())" }], steps: [] },

  // --- matchConditions (evaluated by the API server before the policy)
  {
    name: 'match-conditions',
    resource: 'configmaps',
    operations: ['CREATE', 'UPDATE'],
    matchConditions: [{ name: 'not-skipped', expression: '!has(object.data.skip)' }],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [
      { op: 'create', data: { skip: 'yes' } },
      { op: 'update', data: { a: '1' } },
    ],
  },
  // Conditions that read params: webhook matchConditions cannot, so Portcullis evaluates them.
  {
    name: 'match-params',
    resource: 'configmaps',
    params: { data: { exempt: 'gold' } },
    matchConditions: [{ name: 'not-exempt', expression: 'object.data.tier != params.data.exempt' }],
    validations: [{ expression: 'false', messageExpression: "'tier ' + object.data.tier + ' is matched'" }],
    steps: [
      { op: 'create', data: { tier: 'gold' } },
      { op: 'create', data: { tier: 'silver' } },
    ],
  },
  {
    name: 'match-params-error',
    resource: 'configmaps',
    params: { data: { exempt: 'gold' } },
    matchConditions: [{ name: 'missing-key', expression: "params.data.missing == 'x'" }],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  // A condition that errors: 422 with VAP's words under Fail, skipped under Ignore.
  { name: 'match-error-fail', resource: 'configmaps', matchConditions: [{ name: 'errs', expression: "object.data.missing == 'x'" }], validations: [{ expression: 'false', message: 'matched' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'match-error-ignore',
    resource: 'configmaps',
    failurePolicy: 'Ignore',
    matchConditions: [{ name: 'errs', expression: "object.data.missing == 'x'" }],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'match-error-warn',
    resource: 'configmaps',
    validationActions: ['Warn', 'Audit'],
    matchConditions: [{ name: 'errs', expression: "object.data.missing == 'x'" }],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  // Every condition is evaluated: a false one skips whatever else errored; otherwise the errors, joined.
  {
    name: 'match-error-then-false',
    resource: 'configmaps',
    matchConditions: [
      { name: 'errs', expression: "object.data.missing == 'x'" },
      { name: 'gate', expression: 'has(object.data.gate)' },
    ],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'match-two-errors',
    resource: 'configmaps',
    matchConditions: [
      { name: 'first', expression: "object.data.missing == 'x'" },
      { name: 'second', expression: 'object.data.a + 1 > 0' },
    ],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: 'one' } }],
  },
  // One the API server decides as VAP would (it cannot fail), handed to it.
  {
    name: 'match-request',
    resource: 'configmaps',
    operations: ['CREATE', 'UPDATE'],
    matchConditions: [{ name: 'not-creates', expression: "request.operation != 'CREATE' && !(request.resource.group in ['apps'])" }],
    validations: [{ expression: 'false', message: 'matched' }],
    steps: [{ op: 'create', data: { a: '1' } }, { op: 'update', data: { a: '2' } }, { op: 'delete' }],
  },
  // Refused on write as VAP refuses them.
  { name: 'write-match-variables', resource: 'configmaps', variables: [{ name: 'v', expression: 'true' }], matchConditions: [{ name: 'vars', expression: 'variables.v' }], validations: [{ expression: 'true' }], steps: [] },
  { name: 'write-match-params-undeclared', resource: 'configmaps', matchConditions: [{ name: 'p', expression: "params.data.a == 'x'" }], validations: [{ expression: 'true' }], steps: [] },
  { name: 'write-match-not-bool', resource: 'configmaps', matchConditions: [{ name: 'dyn', expression: 'object.data.a' }], validations: [{ expression: 'true' }], steps: [] },

  { name: 'write-match-bad-name', resource: 'configmaps', matchConditions: [{ name: 'not a name', expression: 'true' }], validations: [{ expression: 'true' }], steps: [] },
  { name: 'write-match-empty', resource: 'configmaps', matchConditions: [{ name: 'blank', expression: '  ' }], validations: [{ expression: 'true' }], steps: [] },
  // --- equality across kinds: a map or list of the request on the left of `==` raises `no such overload` (cel-go), a literal does not; `!=` says true
  { name: 'eq-map-string', resource: 'configmaps', validations: [{ expression: "object.data == 'x'", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-map-string-ignore', resource: 'configmaps', failurePolicy: 'Ignore', validations: [{ expression: "!(object.data == 'x')", message: 'not x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'ne-map-string', resource: 'configmaps', validations: [{ expression: "object.data != 'x'", message: 'data is x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-map-int', resource: 'configmaps', validations: [{ expression: '!(object.metadata.labels == 1)', message: 'labels is 1' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-map-list', resource: 'configmaps', validations: [{ expression: "!(object.data == ['a'])", message: 'data is a list' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-map-null', resource: 'configmaps', validations: [{ expression: 'object.data != null', message: 'no data' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'eq-list-string',
    resource: 'deployments',
    validations: [{ expression: "!(object.spec.template.spec.containers == 'x')", message: 'containers is x' }],
    steps: [{ op: 'create', replicas: 1 }],
  },
  { name: 'eq-list-map', resource: 'deployments', validations: [{ expression: "!(object.spec.template.spec.containers[0] == ['x'])", message: 'container is a list' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-object-right', resource: 'configmaps', validations: [{ expression: "!('x' == object.data) && !([1] == object.data)", message: 'data is x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-literal-map', resource: 'configmaps', validations: [{ expression: "!(dyn({'a': '1'}) == 'x') && !(dyn(['a']) == 'x')", message: 'literal is x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-computed-list', resource: 'configmaps', validations: [{ expression: "!(object.data.map(k, k) == 'x')", message: 'computed is x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-params-map', resource: 'configmaps', params: { data: { a: '1' } }, validations: [{ expression: "!(params.data == 'x')", message: 'params is x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  {
    name: 'eq-variable-map',
    resource: 'configmaps',
    variables: [
      { name: 'data', expression: 'object.data' },
      { name: 'again', expression: 'variables.data' },
    ],
    validations: [{ expression: "!(variables.again == 'x')", message: 'data is x' }],
    steps: [{ op: 'create', data: { a: '1' } }],
  },
  {
    name: 'eq-old-object',
    resource: 'configmaps',
    validations: [{ expression: "oldObject == null || !(oldObject.data == 'x')", message: 'x' }],
    steps: [
      { op: 'create', data: { a: '1' } },
      { op: 'update', data: { a: '2' } },
    ],
  },
  // reached through optional steps and orValue (the public policies' `object.spec.?securityContext.?sysctls.orValue([])`)
  { name: 'eq-optional-elements', resource: 'deployments', validations: [{ expression: "object.spec.template.spec.?containers.orValue([]).all(c, c == '' || c.name == 'never')", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-optional-absent', resource: 'deployments', validations: [{ expression: "object.spec.template.spec.?sysctlsNowhere.orValue([]).all(c, c == '')", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-optional-map', resource: 'configmaps', validations: [{ expression: "!(object.?data.orValue({}) == 'x')", message: 'x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-optional-index', resource: 'deployments', validations: [{ expression: "!(object.spec.template.spec.?containers[?0].value() == 'x')", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  // comprehension variables over the object's elements are its values too (filter keeps them)
  { name: 'eq-comprehension', resource: 'deployments', validations: [{ expression: "!object.spec.template.spec.containers.exists(c, c == 'x')", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-comprehension-filter', resource: 'deployments', validations: [{ expression: "!object.spec.template.spec.containers.filter(c, true).exists(d, d == 'x')", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-comprehension-two-var', resource: 'deployments', validations: [{ expression: "object.spec.template.spec.containers.all(i, c, !(c == 'x'))", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-comprehension-key', resource: 'configmaps', validations: [{ expression: "!object.data.exists(k, k == 'x')", message: 'x' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-list-of-maps', resource: 'deployments', validations: [{ expression: "!(object.spec.template.spec.containers == ['x'])", message: 'x' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'eq-in-map', resource: 'configmaps', validations: [{ expression: "!('x' in object.data) && !(object.data in ['x'])", message: 'x in data' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'eq-match-condition', resource: 'configmaps', matchConditions: [{ name: 'kind', expression: "!(object.data == 'x')" }], validations: [{ expression: 'false', message: 'matched' }], steps: [{ op: 'create', data: { a: '1' } }] },
  // --- run-time errors in cel-go's words
  { name: 'err-pred-all', resource: 'configmaps', validations: [{ expression: 'object.data.all(k, k)', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-pred-exists', resource: 'configmaps', validations: [{ expression: 'object.data.exists(k, k)', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-pred-exists-one', resource: 'configmaps', validations: [{ expression: 'object.data.exists_one(k, k)', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-pred-filter', resource: 'configmaps', validations: [{ expression: 'object.data.filter(k, k).size() == 0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-pred-all-list', resource: 'configmaps', validations: [{ expression: "object.data.a.split(',').all(x, x)", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1,2' } }] },
  { name: 'err-or-value', resource: 'configmaps', validations: [{ expression: "object.data.a.orValue('y') == 'x'", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-or-value-map', resource: 'configmaps', validations: [{ expression: "object.data.orValue({'a': 'b'}).size() > 0", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-optional-value', resource: 'configmaps', validations: [{ expression: "object.data.a.value() == 'x'", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-optional-has-value', resource: 'configmaps', validations: [{ expression: 'object.data.a.hasValue()', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-optional-or', resource: 'configmaps', validations: [{ expression: "object.data.a.or(optional.of('b')).hasValue()", message: 'unreachable' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'err-int-convert', resource: 'configmaps', validations: [{ expression: 'int(object.data.a) > 0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: 'one' } }] },
  { name: 'err-uint-convert', resource: 'configmaps', validations: [{ expression: 'uint(object.data.a) > 0u', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '-1' } }] },
  { name: 'err-double-convert', resource: 'configmaps', validations: [{ expression: 'double(object.data.a) > 0.0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: 'one' } }] },
  { name: 'err-bool-convert', resource: 'configmaps', validations: [{ expression: 'bool(object.data.a)', message: 'unreachable' }], steps: [{ op: 'create', data: { a: 'yes' } }] },
  { name: 'err-duration-convert', resource: 'configmaps', validations: [{ expression: "duration(object.data.a) > duration('1s')", message: 'unreachable' }], steps: [{ op: 'create', data: { a: 'soon' } }] },
  { name: 'err-timestamp-convert', resource: 'configmaps', validations: [{ expression: "timestamp(object.data.a) > timestamp('2020-01-01T00:00:00Z')", message: 'unreachable' }], steps: [{ op: 'create', data: { a: 'today' } }] },
  { name: 'err-int-range', resource: 'configmaps', validations: [{ expression: 'int(double(object.data.a) * 1e30) > 0', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '2' } }] },
  { name: 'err-uint-negative', resource: 'configmaps', validations: [{ expression: 'uint(int(object.data.a)) > 0u', message: 'unreachable' }], steps: [{ op: 'create', data: { a: '-1' } }] },
  // --- write-time checks: a static message is one line; `orValue` on an optional of the object is dyn, so `!= null` type-checks in VAP too
  { name: 'write-message-newline', resource: 'configmaps', validations: [{ expression: 'false', message: 'line one\nline two' }], steps: [] },
  { name: 'write-message-cr', resource: 'configmaps', validations: [{ expression: 'false', message: 'one\rtwo' }], steps: [] },
  { name: 'msg-trailing-newline', resource: 'configmaps', validations: [{ expression: 'false', message: '  one line\n' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'or-value-map-null', resource: 'configmaps', validations: [{ expression: 'object.?data.orValue({}) == null' }], steps: [{ op: 'create', data: { a: '1' } }] },
  { name: 'or-value-list-null', resource: 'deployments', validations: [{ expression: 'object.?spec.template.spec.containers.orValue([]) != null' }], steps: [{ op: 'create', replicas: 1 }] },
  { name: 'or-value-string-null', resource: 'configmaps', validations: [{ expression: "object.?data.a.orValue('') == null" }], steps: [{ op: 'create', data: { a: '1' } }] },
  // on a dyn receiver (a variable holding an optional is dyn in VAP) cel-go types orValue as its argument
  { name: 'write-variable-or-value-null', resource: 'configmaps', variables: [{ name: 'o', expression: 'object.?data' }], validations: [{ expression: 'variables.o.orValue({}) != null' }], steps: [] },
  { name: 'write-dyn-or-value-null', resource: 'configmaps', validations: [{ expression: "object.data.orValue('') == null" }], steps: [] },
  { name: 'write-dyn-or-value-null-left', resource: 'configmaps', validations: [{ expression: 'null != object.data.orValue([])' }], steps: [] },
  { name: 'or-value-dyn-null', resource: 'configmaps', validations: [{ expression: 'object.?data.orValue(dyn({})) != null', message: 'no data' }], steps: [{ op: 'create', data: { a: '1' } }] },
  // --- matching: resourceNames and excludeResourceRules, with VAP's meaning
  {
    name: 'resource-names',
    resource: 'configmaps',
    resourceNames: ['resource-names-judged', 'resource-names'],
    validations: [{ expression: 'object == null || !has(object.data.bad)', message: 'bad is not allowed' }],
    steps: [
      { op: 'create', data: { bad: '1' }, name: 'resource-names-judged' },
      { op: 'create', data: { bad: '1' }, name: 'resource-names-other' },
      { op: 'create', data: { bad: '1' } },
      { op: 'update', data: { bad: '2' }, name: 'resource-names-other' },
      { op: 'delete', name: 'resource-names-other' },
    ],
  },
  {
    name: 'exclude-resource-rules',
    resource: 'configmaps',
    excludeResourceRules: [
      { operations: ['UPDATE'], resourceNames: ['exclude-resource-rules'] },
      { operations: ['CREATE'], resourceNames: ['exclude-resource-rules-skip'] },
    ],
    validations: [{ expression: 'object == null || !has(object.data.bad)', message: 'bad is not allowed' }],
    steps: [
      { op: 'create', data: { bad: '1' } },
      { op: 'create', data: { ok: '1' } },
      { op: 'update', data: { bad: '1' } },
      { op: 'create', data: { bad: '1' }, name: 'exclude-resource-rules-skip' },
      { op: 'update', data: { bad: '2' }, name: 'exclude-resource-rules-skip' },
      { op: 'delete', name: 'exclude-resource-rules-skip' },
    ],
  },
  {
    name: 'exclude-operation',
    resource: 'configmaps',
    excludeResourceRules: [{ operations: ['DELETE'] }],
    validations: [{ expression: "request.operation == 'CREATE'", message: 'only creates' }],
    steps: [{ op: 'create', data: { a: '1' } }, { op: 'update', data: { a: '2' } }, { op: 'delete' }],
  },
  { name: 'write-resource-names-slash', resource: 'configmaps', resourceNames: ['a/b'], validations: [{ expression: 'true' }], steps: [] },
  { name: 'write-resource-names-duplicate', resource: 'configmaps', resourceNames: ['a', 'a'], validations: [{ expression: 'true' }], steps: [] },
];
