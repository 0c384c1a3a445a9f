/**
 * audit: what the background audit judges stored objects with. Each validating suite webhook,
 * AdmissionPolicy and auditable built-in handler becomes a target: which objects it selects (the
 * registration the operator writes, read as the API server reads it: rules for a CREATE,
 * namespaceSelector, objectSelector, matchConditions; a policy's own namespace and exclusions), and
 * its checks, one per validation, each compiled as a webhook of its own so that a result names the
 * validation that failed. An object is judged as the API server would judge a CREATE of it:
 * every matchCondition, those the API server evaluates (webhook semantics) and those the operator
 * evaluates (compiled by the admission path's own compileWebhook, with the webhook's
 * failurePolicy), decides whether it is judged at all; `oldObject` is null, as on a create; an
 * evaluation error counts as the webhook's failurePolicy answers it (Fail: `error`, failing;
 * Ignore: admitted, a `skip` saying so). A check that reads what only a request has (the user,
 * `authorizer`, dryRun, the options) is a `skip` with that reason, never guessed. Compiles; does
 * no I/O.
 */
import type { AdmissionPolicy, AdmissionSuite, FailurePolicy, MatchCondition, RuleWithOperations, WebhookSpec } from '../api/types.ts';
import { outcomeOf, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { OperatorConfig } from '../config.ts';
import { webhookConfigurations } from '../desired/objects.ts';
import { webhookFullName } from '../api/names.ts';
import { findHandler } from '../handlers/registry.ts';
import { compileWebhook, type CompileContext } from '../registry/compile.ts';
import { compileMatchConditions, notCalledBecause, ruleMatches, type RegisteredWebhook } from '../registry/match.ts';
import { compile, type ResultType } from '../policy/engine/environment.ts';
import { planMatchConditions } from '../policy/engine/match-conditions.ts';
import type { RulesOptions } from '../policy/engine/rules.ts';
import { POLICY_FAILURE_POLICY } from '../registry/policies.ts';
import { ActivationReads } from '../policy/values/reads.ts';
import type { Program } from '../policy/celjs/program.ts';
import type { PolicyLimits } from '../api/validate.ts';
import type { TargetReader } from './access.ts';
import { recordedAuthor } from '../api/authorization.ts';
import { EXCEPTION_AUDIT_KEY, exceptionWarning, isExceptionWarning } from '../api/exceptions.ts';
import { protectedNamespaces, SYSTEM_NAMESPACES } from '../api/protected-namespaces.ts';

/** OpenReports' results. */
export type ResultKind = 'pass' | 'fail' | 'warn' | 'error' | 'skip';

export interface CheckResult {
  /** The validation (`validations[0]`), `matchConditions`, or a handler's name. */
  rule: string;
  result: ResultKind;
  message?: string;
}

/** Where a target comes from: its report's `source`-side names. */
export interface TargetSource {
  kind: 'AdmissionSuite' | 'AdmissionPolicy';
  name: string;
  /** An AdmissionPolicy's namespace. */
  namespace?: string;
  /** A suite's webhook. */
  webhook?: string;
  generation: number;
}

export interface AuditTarget {
  /** Unique among targets: `suite/<name>/<webhook>`, `policy/<namespace>/<name>`. */
  key: string;
  /** The report's `policy`: `<suite>/<webhook>`, or the AdmissionPolicy's `<namespace>/<name>`. */
  policy: string;
  source: TargetSource;
  /** What a failure does (validationActions, or the handler's Deny), as OpenReports' `action` property. */
  action: string;
  /** The report's `severity` and `category` of every result, from the suite's or policy's annotations (sortingOf). */
  severity?: Severity;
  category?: string;
  /** The rules that say which resources it can select (their CREATE rules). */
  rules: RuleWithOperations[];
  /** An AdmissionPolicy judges its own namespace only. */
  namespace?: string;
  /** Who its results are shown to (access.ts): the scanner judges or counts only what they may list. */
  reader: TargetReader;
  /**
   * The results for `request` (a CREATE of a stored object), or undefined when the API server
   * would not send it this request. `namespaceLabels`: of the object's namespace (undefined for
   * a cluster-scoped object).
   */
  judge(request: AdmissionRequest, namespaceLabels: Record<string, string> | undefined): Promise<CheckResult[] | undefined>;
}

/** The fields of `request` an object's CREATE has whatever the requester: everything else is the request's own. */
const OBJECT_REQUEST_FIELDS = new Set(['kind', 'resource', 'name', 'namespace', 'operation', 'requestKind', 'requestResource', 'subResource', 'requestSubResource', 'oldObject']);

/**
 * Why expressions cannot be judged on a stored object, or undefined when they can: what they
 * read that only a request has.
 */
export function requestOnlyReads(programs: (Program | undefined)[]): string | undefined {
  const reads = new ActivationReads(programs);
  if (reads.uses('authorizer')) return 'asks authorizer, which answers for the requesting user';
  if (!reads.uses('request')) return undefined;
  const request = reads.of('request');
  if (request === true || request === undefined) return 'reads the whole request';
  const own = request.fields.map(([name]) => name).filter((name) => !OBJECT_REQUEST_FIELDS.has(name));
  return own.length ? `reads ${own.map((f) => `request.${f}`).join(', ')}, which only a request has` : undefined;
}

/** Compiles `expression` for its reads only (the registry has compiled and accepted it already). */
function programOf(expression: string | undefined, expect: ResultType[], params: boolean): Program | undefined {
  if (!expression) return undefined;
  try {
    return compile(expression, 'audit', expect, { params });
  } catch {
    return undefined;
  }
}

/** How a policy is compiled (registry/policies.ts): its cost budget, every matchCondition the operator's. */
const policyOptions = (limits: PolicyLimits): RulesOptions => ({ costBudget: limits.costBudget, allMatchConditions: true, strictCost: true });

/** The CREATE rules of `rules` (a stored object is judged as its CREATE). */
function createRules(rules: RuleWithOperations[]): RuleWithOperations[] {
  return rules.filter((r) => (r.operations ?? []).some((o) => o === '*' || o === 'CREATE'));
}

interface Check {
  rule: string;
  skip?: string;
  admit?: (request: AdmissionRequest) => Decision | Promise<Decision>;
  /** Its admit applies AdmissionExceptions itself (a handler's): an answer one let through is a skip naming it. */
  excepted?: boolean;
}

/** What a create that errored is, under `failurePolicy`: Fail rejects it (failing), Ignore admits it (a skip that says why). */
function erroredResult(rule: string, message: string, failurePolicy: FailurePolicy): CheckResult {
  return failurePolicy === 'Ignore' ? { rule, result: 'skip', message: `errored, which failurePolicy Ignore admits: ${message}` } : { rule, result: 'error', message };
}

/**
 * A decision of one check as a result; `warnOnly`: its failures only warn (validationActions
 * [Warn]). Checks are compiled under Fail so that an error shows; `failurePolicy` says what it is.
 */
function resultOf(rule: string, decision: Decision, warnOnly: boolean, failurePolicy: FailurePolicy): CheckResult {
  const outcome = outcomeOf(decision);
  if (outcome === 'error') return erroredResult(rule, decision.message ?? 'the evaluation failed', failurePolicy);
  if (!decision.allowed) return { rule, result: warnOnly ? 'warn' : 'fail', message: decision.message ?? '' };
  if (decision.warnings?.length) return { rule, result: 'warn', message: decision.warnings.join('; ') };
  return { rule, result: 'pass' };
}

/**
 * One check per validation of a CEL webhook: the webhook with that validation alone, its
 * variables and params kept, denying on failure (whatever its actions: the report says them).
 */
function celChecks(owner: string, spec: WebhookSpec, path: string, context: CompileContext, policyLimits?: PolicyLimits): Check[] {
  const params = spec.params !== undefined;
  const variables = (spec.variables ?? []).map((v) => programOf(v.expression, [], params));
  return (spec.validations ?? []).map((validation, i): Check => {
    const rule = `validations[${i}]`;
    const own = [programOf(validation.expression, ['bool'], params), programOf(validation.messageExpression, ['string'], params)];
    // A validation that names `variables` may read any of them (conservatively: all of them).
    const reads = own.some((p) => p && new ActivationReads([p]).uses('variables')) ? [...own, ...variables] : own;
    const skip = requestOnlyReads(reads);
    if (skip) return { rule, skip };
    const alone: WebhookSpec = { ...spec, matchConditions: [], validations: [validation], auditAnnotations: [], validationActions: ['Deny'], failurePolicy: 'Fail' };
    const options = policyLimits && policyOptions(policyLimits);
    const compiled = compileWebhook(owner, alone, `${path}.${rule}`, 'Fail', { ...context, observers: undefined }, options);
    if ('errors' in compiled) return { rule, skip: `does not compile: ${compiled.errors.map((e) => e.message).join('; ')}` };
    return { rule, admit: (request) => compiled.admit(request) };
  });
}

/**
 * A built-in handler's check: the whole handler, when it declares it can judge a stored object.
 * `excepted`: the suite, when it accepts AdmissionExceptions: the handler then asks them as on the
 * request path (a PodSecurity webhook's controls), and what one lets through is a `skip` naming it.
 */
function handlerChecks(owner: string, spec: WebhookSpec, path: string, context: CompileContext, excepted: AdmissionSuite | undefined): Check[] | undefined {
  const handler = spec.handler ? findHandler(spec.handler.name) : undefined;
  if (!handler?.audits || !handler.validate) return undefined;
  const compiled = compileWebhook(owner, { ...spec, matchConditions: [] }, path, 'Fail', { ...context, observers: undefined }, undefined, excepted);
  if ('errors' in compiled) return undefined;
  return [{ rule: handler.name, admit: (request) => compiled.admit(request), ...(excepted ? { excepted: true } : {}) }];
}

/** An admitted decision some exception let through: the skip that names it (its warning), else undefined. */
function exceptedResult(rule: string, decision: Decision): CheckResult | undefined {
  if (!decision.allowed || decision.auditAnnotations?.[EXCEPTION_AUDIT_KEY] === undefined) return undefined;
  const named = (decision.warnings ?? []).filter(isExceptionWarning);
  return named.length ? { rule, result: 'skip', message: named.join('; ') } : undefined;
}

/** Whether matchConditions can be judged on a stored object: the reason they cannot, if not. */
function conditionsSkip(conditions: MatchCondition[], params: boolean): string | undefined {
  const why = requestOnlyReads(conditions.map((c) => programOf(c.expression, ['bool'], params)));
  return why && `matchConditions ${why}`;
}

/** A target's matchConditions on a request: it is judged (true), left out and not reported (false), or this one result (an error, by failurePolicy). */
type Matched = boolean | CheckResult;
type Matcher = (request: AdmissionRequest) => Promise<Matched>;

const MATCHED: Matcher = async () => true;

/**
 * The matchConditions a suite's registration hands the API server, as it evaluates a webhook's:
 * a false one leaves the request out; an error is the webhook's failurePolicy's.
 */
function registeredConditions(owner: string, rules: RuleWithOperations[], conditions: MatchCondition[], failurePolicy: FailurePolicy, operatorNamespace: string): Matcher {
  const unmatched = compileMatchConditions(owner, rules, conditions, failurePolicy, operatorNamespace);
  return async (request) => {
    const why = await unmatched(request);
    if (why === undefined) return true;
    return why.startsWith('matchConditions errored') ? erroredResult('matchConditions', why, failurePolicy) : false;
  };
}

/**
 * The matchConditions the operator evaluates itself (planMatchConditions: a suite's that the API
 * server could not decide alike, every one of a policy's), by the admission path's own compiled
 * webhook: `spec` with its conditions, params and failurePolicy and one validation that always
 * fails, so that a denial says they matched, an allow that they left the request out (a false
 * one, or an error under Ignore, which VAP skips), an error the failurePolicy's answer.
 */
function evaluatedConditions(owner: string, spec: WebhookSpec, path: string, failurePolicy: FailurePolicy, context: CompileContext, options: RulesOptions | undefined): Matcher | string {
  let evaluated: number;
  try {
    evaluated = planMatchConditions(spec, path, failurePolicy, options?.allMatchConditions).evaluated.length;
  } catch (err) {
    return `matchConditions do not compile: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (evaluated === 0) return MATCHED;
  const probe: WebhookSpec = { ...spec, variables: [], validations: [{ expression: 'false', message: 'matched' }], auditAnnotations: [], validationActions: ['Deny'], failurePolicy };
  const compiled = compileWebhook(owner, probe, path, failurePolicy, { ...context, observers: undefined }, options);
  if ('errors' in compiled) return `matchConditions do not compile: ${compiled.errors.map((e) => e.message).join('; ')}`;
  return async (request) => {
    const decision = await compiled.admit(request);
    if (outcomeOf(decision) === 'error') return erroredResult('matchConditions', decision.message ?? 'the evaluation failed', failurePolicy);
    return !decision.allowed;
  };
}

/** Judges with `checks` once `called` says the API server would send the request and every matcher, in order, that it is matched. */
function judgeWith(
  checks: Check[],
  warnOnly: boolean,
  failurePolicy: FailurePolicy,
  called: (request: AdmissionRequest, labels: Record<string, string> | undefined) => boolean,
  conditions: { skip?: string; matchers: Matcher[] },
): AuditTarget['judge'] {
  return async (request, labels) => {
    if (!called(request, labels)) return undefined;
    if (conditions.skip) return checks.map((c) => ({ rule: c.rule, result: 'skip' as const, message: conditions.skip }));
    for (const matcher of conditions.matchers) {
      const matched = await matcher(request);
      // Left out: the API server never sends it, or the operator skips it, as it would a create of it.
      if (matched === false) return undefined;
      if (matched !== true) return [matched];
    }
    const results: CheckResult[] = [];
    for (const check of checks) {
      if (check.skip) results.push({ rule: check.rule, result: 'skip', message: check.skip });
      else {
        const decision = await check.admit!(request);
        results.push((check.excepted && exceptedResult(check.rule, decision)) || resultOf(check.rule, decision, warnOnly, failurePolicy));
      }
    }
    return results;
  };
}

/** A report result's severity, as OpenReports and PolicyReport enumerate them. */
export type Severity = 'critical' | 'high' | 'medium' | 'low' | 'info';
const SEVERITIES: readonly string[] = ['critical', 'high', 'medium', 'low', 'info'];
/** On a suite or an AdmissionPolicy: the severity and category of every result of its rules. */
export const SEVERITY_ANNOTATION = 'portcullis.dev/severity';
export const CATEGORY_ANNOTATION = 'portcullis.dev/category';
/** On a suite, for one webhook (`severity.portcullis.dev/<webhook>`), over the suite's. */
export const WEBHOOK_SEVERITY_PREFIX = 'severity.portcullis.dev/';
export const WEBHOOK_CATEGORY_PREFIX = 'category.portcullis.dev/';

/**
 * The severity and category the results of a suite's webhook (or a policy, `webhook` unset) are
 * reported with, from its annotations: the webhook's own over the suite's. A severity other than
 * the reports' five is left out (the report's schema would refuse it), as is an empty category.
 */
export function sortingOf(annotations: Record<string, string> | undefined, webhook?: string): { severity?: Severity; category?: string } {
  const read = (key: string, perWebhook: string) => (webhook !== undefined ? annotations?.[`${perWebhook}${webhook}`] : undefined) ?? annotations?.[key];
  const severity = read(SEVERITY_ANNOTATION, WEBHOOK_SEVERITY_PREFIX)?.trim().toLowerCase();
  const category = read(CATEGORY_ANNOTATION, WEBHOOK_CATEGORY_PREFIX)?.trim();
  return { ...(severity && SEVERITIES.includes(severity) ? { severity: severity as Severity } : {}), ...(category ? { category } : {}) };
}

function actionOf(spec: Pick<WebhookSpec, 'validationActions' | 'handler'>): { action: string; warnOnly: boolean } {
  const actions = spec.handler ? ['Deny'] : (spec.validationActions ?? ['Deny']);
  return { action: actions.join(','), warnOnly: !actions.includes('Deny') && !actions.includes('Audit') };
}

/** The targets of a suite: its validating webhooks with validations, or an auditable handler. */
export function suiteTargets(suite: AdmissionSuite, config: OperatorConfig, context: CompileContext): AuditTarget[] {
  const registered = (webhookConfigurations(suite, config, '').get('Validating')?.webhooks ?? []) as RegisteredWebhook[];
  const name = suite.metadata.name;
  const targets: AuditTarget[] = [];
  suite.spec.webhooks.forEach((spec, i) => {
    if (spec.type !== 'Validating') return;
    const path = `spec.webhooks[${i}]`;
    const checks = spec.handler ? handlerChecks(name, spec, path, context, suite.spec.exceptions?.allowed === true ? suite : undefined) : celChecks(name, spec, path, context);
    if (!checks?.length) return;
    const entry = registered.find((w) => w.name === webhookFullName(name, spec.name));
    if (!entry) return;
    const failurePolicy: FailurePolicy = spec.failurePolicy ?? suite.spec.failurePolicy ?? 'Fail';
    const params = spec.params !== undefined;
    const { action, warnOnly } = actionOf(spec);
    // What the API server evaluates (the registration's conditions), then what the operator does (the rest of the suite's).
    const evaluated = spec.handler ? MATCHED : evaluatedConditions(name, spec, path, failurePolicy, context, undefined);
    targets.push({
      key: `suite/${name}/${spec.name}`,
      policy: `${name}/${spec.name}`,
      source: { kind: 'AdmissionSuite', name, webhook: spec.name, generation: suite.metadata.generation ?? 0 },
      action,
      ...sortingOf(suite.metadata.annotations, spec.name),
      // A suite's status is cluster-wide, read by its author; each namespace's Report, by those who read the namespace.
      reader: { user: recordedAuthor(suite.metadata), scope: 'count' },
      rules: createRules(entry.rules ?? []),
      judge: excepted(
        suite,
        spec,
        context,
        judgeWith(checks, warnOnly, failurePolicy, (request, labels) => notCalledBecause(entry, request, labels) === undefined, {
          skip: conditionsSkip([...(entry.matchConditions ?? []), ...(spec.handler ? [] : (spec.matchConditions ?? []))], params) ?? (typeof evaluated === 'string' ? evaluated : undefined),
          matchers: [registeredConditions(name, spec.rules, entry.matchConditions ?? [], failurePolicy, context.operatorNamespace ?? config.namespace), ...(typeof evaluated === 'string' ? [] : [evaluated])],
        }),
      ),
    });
  });
  return targets;
}

/**
 * A suite webhook's judgement with the AdmissionExceptions that cover a create of the object now
 * (as the request path asks them, registry/exceptions.ts): a failing validation one lets through
 * is a `skip` naming it, as its create would be admitted. A webhook no exception names, or a
 * suite that takes none, is judged as it is.
 */
function excepted(suite: AdmissionSuite, spec: WebhookSpec, context: CompileContext, judge: AuditTarget['judge']): AuditTarget['judge'] {
  const { exceptions } = context;
  if (!exceptions || suite.spec.exceptions?.allowed !== true || spec.handler) return judge;
  const guarded = context.operatorNamespace === undefined ? SYSTEM_NAMESPACES : protectedNamespaces(context.operatorNamespace);
  return async (request, namespaceLabels) => {
    const results = await judge(request, namespaceLabels);
    if (!results || !exceptions.names(suite.metadata.name, spec.name)) return results;
    const excuse = exceptions.excuse(suite, spec.name, request, { now: Date.now(), namespaceLabels: () => namespaceLabels, protectedNamespaces: guarded });
    if (!excuse) return results;
    return results.map((result) => {
      const index = /^validations\[(\d+)\]$/.exec(result.rule)?.[1];
      const by = result.result === 'fail' && index !== undefined ? excuse.coveredBy(Number(index)) : undefined;
      return by ? { rule: result.rule, result: 'skip' as const, message: exceptionWarning(by) } : result;
    });
  };
}

/** The target of a validating AdmissionPolicy, judging the objects of its namespace. */
export function policyTarget(policy: AdmissionPolicy, limits: PolicyLimits, config: OperatorConfig, context: CompileContext): AuditTarget | undefined {
  const { namespace, name } = policy.metadata as { namespace: string; name: string };
  const spec: WebhookSpec = { ...policy.spec, name, ...(policy.spec.params ? { params: { ...policy.spec.params, namespace } } : {}) };
  if (spec.type !== 'Validating') return undefined;
  const checks = celChecks(namespace, spec, 'spec', context, limits);
  if (!checks.length) return undefined;
  const { action, warnOnly } = actionOf(spec);
  // Every condition of a policy is the operator's (registry/policies.ts), under the policies' failurePolicy.
  const evaluated = evaluatedConditions(namespace, spec, 'spec', POLICY_FAILURE_POLICY, context, policyOptions(limits));
  const selected = (request: AdmissionRequest) =>
    request.namespace === namespace &&
    notCalledBecause({ name, rules: spec.rules, ...(spec.objectSelector ? { objectSelector: spec.objectSelector } : {}) }, request, undefined) === undefined &&
    !(spec.excludeResourceRules ?? []).some((rule) => ruleMatches(rule, request));
  return {
    key: `policy/${namespace}/${name}`,
    policy: `${namespace}/${name}`,
    source: { kind: 'AdmissionPolicy', name, namespace, generation: policy.metadata.generation ?? 0 },
    action,
    ...sortingOf(policy.metadata.annotations),
    reader: { user: recordedAuthor(policy.metadata), scope: 'judge' },
    rules: createRules(spec.rules),
    namespace,
    judge: judgeWith(checks, warnOnly, POLICY_FAILURE_POLICY, selected, {
      skip: conditionsSkip(spec.matchConditions ?? [], spec.params !== undefined) ?? (typeof evaluated === 'string' ? evaluated : undefined),
      matchers: typeof evaluated === 'string' ? [] : [evaluated],
    }),
  };
}
