/**
 * Suites and AdmissionPolicies checked and run offline with the code that serves the cluster:
 * validation is the operator's own webhooks' (src/admission/suite-validation.ts), compiling and
 * deciding are the registries' (src/registry: a suite's webhooks, and the one webhook of each type
 * that serves every AdmissionPolicy, registry/policy-webhook.ts), the answer is encoded by
 * src/admission/review-codec.ts, and which webhooks are called is read from the configurations the
 * operator registers (src/desired/objects.ts). What the API server does around the webhooks is
 * done here as it does it: configurations in name order (the policies' `portcullis--namespaced`
 * first), mutating webhooks each on the object the one before patched, then every validating
 * webhook on the result; the first denial rejects the request. AdmissionExceptions and
 * ClusterAdmissionExceptions among the objects are held in the store the operator's admission thread holds (registry/exceptions.ts)
 * and consulted by the same compiled webhooks, at the clock of the evaluation (`now`, else the
 * wall clock). No I/O: the caller reads files.
 */
import { randomUUID } from 'node:crypto';
import jsonpatch from 'fast-json-patch';
import { GROUP, KIND, VERSION, type AdmissionPolicy, type AdmissionSuite, type RuleWithOperations, type WebhookType } from '../api/types.ts';
import { configurationName, NAMESPACED } from '../api/names.ts';
import { outcomeOf, type AdmissionRequest, type AdmissionReview, type Decision, type Outcome } from '../api/admission-review.ts';
import { encodeReview } from '../admission/review-codec.ts';
import { validateExceptionRequest, validatePolicyRequest, validateSuiteRequest } from '../admission/suite-validation.ts';
import { CLUSTER_EXCEPTION_KIND, EXCEPTION_KIND, type AnyException } from '../api/exceptions.ts';
import { ExceptionStore } from '../registry/exceptions.ts';
import { namespacedConfiguration, protectedNamespaces, webhookConfigurations, NAMESPACE_NAME_LABEL } from '../desired/objects.ts';
import { DEFAULTS } from '../config.ts';
import type { ClusterView } from '../handlers/handler.ts';
import { OFFLINE_SCHEMAS, type MergeSchemaSource, type ParamsSource } from '../registry/compile.ts';
import { selectParams } from '../api/params.ts';
import { SuiteRegistry } from '../registry/registry.ts';
import { PolicyRegistry } from '../registry/policies.ts';
import { namespacedWebhook, policiesFor } from '../registry/policy-webhook.ts';
import { compileMatchConditions, notCalledBecause, type RegisteredWebhook } from '../registry/match.ts';
import type { PolicyLimits } from '../api/validate.ts';
import { optionsOf, Resources } from './resources.ts';

type KubeObject = Record<string, any>;

/** One admission request as a test or `eval` describes it; what is left out is derived as the API server would. */
export interface Scenario {
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  operation?: AdmissionRequest['operation'];
  /** The plural resource (default: a CRD's given with the objects, the built-in kind's, else the kind, lower case, pluralised). */
  resource?: string;
  /** The group and version of the resource requested, where they are not the object's (a subresource's, such as a Deployment's Scale). */
  resourceGroupVersion?: { group: string; version: string };
  /** The request's name, where it is not the object's (a subresource's request, a replayed one). */
  name?: string;
  subResource?: string;
  namespace?: string;
  userInfo?: AdmissionRequest['userInfo'];
  dryRun?: boolean;
  /** request.options (default: the operation's CreateOptions, UpdateOptions or DeleteOptions, as the API server fills it). */
  options?: KubeObject | null;
  /** The instant the request is made, in ms since the epoch (AdmissionExceptions expire at it); default: the cluster's `now`, else the wall clock. */
  now?: number;
}

export interface WebhookRun {
  /** The suite, or `AdmissionPolicies` for the webhook that serves every AdmissionPolicy of a type. */
  suite: string;
  /** The suite's webhook, or `Mutating`/`Validating` for the AdmissionPolicies'. */
  webhook: string;
  fullName: string;
  type: WebhookType;
  /** Whether the API server would call it for this request; `reason` says why not. */
  called: boolean;
  reason?: string;
  /** The AdmissionPolicies' webhook: the policies that judged the request, in order. */
  policies?: string[];
  /** The AdmissionReview the operator answers with, as sent to the API server. */
  review?: AdmissionReview;
  outcome?: Outcome;
  /** A mutating webhook's result: the object after its patch. */
  patchedObject?: KubeObject;
}

/** What a WebhookRun names the webhook that serves the AdmissionPolicies (its `suite`). */
export const POLICIES = 'AdmissionPolicies';

export interface Evaluation {
  request: AdmissionRequest;
  webhooks: WebhookRun[];
  /** The object after every mutating webhook, when one patched it. */
  patchedObject?: KubeObject;
  allowed: boolean;
  /** The API server's words for a rejection: `admission webhook "<name>" denied the request: <message>`. */
  message?: string;
}

/** One webhook as the API server calls it: its registration, and what answers. */
interface Callable {
  suite: string;
  webhook: string;
  fullName: string;
  entry: RegisteredWebhook;
  /** The rules matchConditions are compiled with (a probe webhook's). */
  rules: RuleWithOperations[];
  admit: (request: AdmissionRequest) => Decision | Promise<Decision>;
  policies?: (request: AdmissionRequest) => string[];
}

/** Byte order, as the API server orders webhook configurations (not the locale's). */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The operator's default limits for AdmissionPolicies (its --namespaced-policy-* flags). */
export const DEFAULT_POLICY_LIMITS: PolicyLimits = {
  mutations: DEFAULTS.namespacedPolicyMutations,
  costBudget: DEFAULTS.namespacedPolicyCostBudget,
  ...(DEFAULTS.namespacedPolicyNamespaceCostBudget !== undefined ? { namespaceCostBudget: DEFAULTS.namespacedPolicyNamespaceCostBudget } : {}),
  deadlineMs: DEFAULTS.namespacedPolicyDeadlineMs,
  maxBytes: DEFAULTS.namespacedPolicyMaxBytes,
};

/** Namespace `name` as `objects` give it, with the label the API server sets on every namespace; one not given carries only that. */
export function namespaceObject(objects: KubeObject[], name: string): KubeObject {
  const given = objects.find((o) => o.kind === 'Namespace' && o.metadata?.name === name);
  if (!given) return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [NAMESPACE_NAME_LABEL]: name } } };
  return { ...given, metadata: { ...given.metadata, labels: { ...given.metadata?.labels, [NAMESPACE_NAME_LABEL]: name } } };
}

/**
 * What suites read (Namespaces, LimitRanges, the handlers' lookups, params) when it is `objects`,
 * taken as they are, never watched. `namespaced` says whether a params kind is namespaced where
 * discovery knows; else a kind is namespaced when the objects given of it carry a namespace.
 */
export function objectsContext(objects: KubeObject[], namespaced?: (apiVersion: string, kind: string) => boolean | undefined): { view: ClusterView; params: ParamsSource } {
  const view: ClusterView = {
    namespace: (name) => namespaceObject(objects, name),
    limitRanges: (namespace) => objects.filter((o) => o.kind === 'LimitRange' && o.metadata?.namespace === namespace),
    list: (kind, namespace) => objects.filter((o) => o.kind === kind && (namespace === undefined || o.metadata?.namespace === namespace)),
  };
  const params: ParamsSource = {
    watch: () => undefined,
    select: (ref, requestNamespace) => {
      const ofKind = objects.filter((o) => o.apiVersion === ref.apiVersion && o.kind === ref.kind);
      const inNamespace = (namespace?: string) => ofKind.filter((o) => namespace === undefined || o.metadata?.namespace === namespace);
      const isNamespaced = namespaced?.(ref.apiVersion, ref.kind) ?? (ref.namespace !== undefined || ofKind.some((o) => o.metadata?.namespace));
      return selectParams(ref, requestNamespace, { namespaced: isNamespaced, get: (name, namespace) => inNamespace(namespace).find((o) => o.metadata?.name === name), list: inNamespace });
    },
  };
  return { view, params };
}

const isException = (o: KubeObject) => (o.kind === EXCEPTION_KIND || o.kind === CLUSTER_EXCEPTION_KIND) && String(o.apiVersion ?? '').startsWith(`${GROUP}/`);

/**
 * An exception as kubectl sends it: YAML reads an unquoted `expires: 2026-12-31T00:00:00Z` as a
 * timestamp, which kubectl sends as the string (the webhook, the warning and the expiry read a string).
 */
function asSent(exception: KubeObject): AnyException {
  const expires = exception.spec?.expires;
  // A ClusterAdmissionException is held under the namespace '', as the operator reads one in (registry/exceptions.ts).
  const sent = exception.kind === CLUSTER_EXCEPTION_KIND ? { ...exception, metadata: { ...exception.metadata, namespace: '' } } : exception;
  if (!(expires instanceof Date)) return sent as AnyException;
  return { ...sent, spec: { ...exception.spec, expires: expires.toISOString().replace('.000Z', 'Z') } } as AnyException;
}

/**
 * Suites and AdmissionPolicies offline: the objects they may read (Namespaces, LimitRanges, params,
 * CRDs) given with them, and the AdmissionExceptions among those objects, applied as the operator
 * applies them.
 */
export class OfflineCluster {
  readonly suites: AdmissionSuite[];
  readonly policies: AdmissionPolicy[];
  private readonly objects: KubeObject[];
  private readonly namespace: string;
  private readonly registry: SuiteRegistry;
  private readonly policyRegistry: PolicyRegistry;
  private readonly resources: Resources;
  private readonly exceptions: AnyException[];
  /** The instant of the evaluation under way, which the compiled webhooks' clock reads. */
  private instant: number | undefined;
  private readonly now: number | undefined;

  /**
   * `policies` each carry their namespace (files.ts' splitSuites gives one to those without);
   * `now`: the instant every request is made at (ms since the epoch), unless a scenario says its own;
   * `mergeSchemas`: where ApplyConfiguration mutations read their kind's schema (a cluster's, for
   * `eval --kubeconfig`); none by default.
   */
  constructor(suites: AdmissionSuite[], objects: KubeObject[] = [], operatorNamespace = DEFAULTS.namespace, policies: AdmissionPolicy[] = [], options: { now?: number; mergeSchemas?: MergeSchemaSource } = {}) {
    this.now = options.now;
    this.suites = [...suites].sort((a, b) => byteOrder(configurationName(a.metadata.name), configurationName(b.metadata.name)));
    this.policies = policies;
    this.objects = objects;
    this.namespace = operatorNamespace;
    this.resources = new Resources(objects);
    const { view, params } = objectsContext(objects);
    this.exceptions = objects.filter(isException).map(asSent);
    const store = new ExceptionStore();
    for (const exception of this.exceptions) store.set(exception);
    // The operator's context (manager/registries.ts) with its store of exceptions; the clock is the evaluation's.
    // Offline no kind's schema is read: ApplyConfiguration mutations merge lists whole, and say so in a warning.
    const mergeSchemas = options.mergeSchemas ?? OFFLINE_SCHEMAS;
    this.registry = new SuiteRegistry({ view, params, operatorNamespace, exceptions: store, clock: () => this.instant ?? Date.now(), mergeSchemas });
    this.policyRegistry = new PolicyRegistry({
      view,
      params,
      operatorNamespace,
      mergeSchemas,
      limits: DEFAULT_POLICY_LIMITS,
      protectedNamespaces: protectedNamespaces({ namespace: operatorNamespace }),
    });
  }

  /**
   * Each suite and policy the operator's validation webhooks would refuse, with its message (the
   * same words apply gets); `suite` is the suite's name, or a policy's `namespace/name`.
   */
  async refusals(): Promise<{ kind: string; suite: string; message: string }[]> {
    const refused: { kind: string; suite: string; message: string }[] = [];
    for (const suite of this.suites) {
      const request = { uid: randomUUID(), operation: 'CREATE', object: suite, userInfo: {} } as unknown as AdmissionRequest;
      const decision = await validateSuiteRequest(request, this.registry);
      if (!decision.allowed) refused.push({ kind: KIND, suite: suite.metadata.name, message: decision.message ?? '' });
    }
    for (const policy of this.policies) {
      const namespace = policy.metadata.namespace;
      const request = { uid: randomUUID(), operation: 'CREATE', namespace, object: policy, userInfo: {} } as unknown as AdmissionRequest;
      const decision = await validatePolicyRequest(request, this.policyRegistry);
      if (!decision.allowed) refused.push({ kind: policy.kind, suite: `${namespace}/${policy.metadata.name}`, message: decision.message ?? '' });
    }
    // Exceptions as the operator's exception webhook judges them on apply: against the suites given (synced for it to read).
    if (this.exceptions.length) for (const suite of this.suites) this.registry.sync({ ...suite, metadata: { generation: 1, ...suite.metadata } });
    for (const exception of this.exceptions) {
      const namespace = exception.metadata?.namespace;
      const cluster = exception.kind === CLUSTER_EXCEPTION_KIND;
      const name = cluster ? (exception.metadata?.name ?? '') : `${namespace ?? ''}/${exception.metadata?.name ?? ''}`;
      if (cluster) {
        // As the API server sends it to the exception webhook: the kind says cluster-wide.
        const request = { uid: randomUUID(), operation: 'CREATE', kind: { group: GROUP, version: VERSION, kind: CLUSTER_EXCEPTION_KIND }, object: exception, userInfo: {} } as unknown as AdmissionRequest;
        const decision = await validateExceptionRequest(request, this.registry);
        if (!decision.allowed) refused.push({ kind: CLUSTER_EXCEPTION_KIND, suite: name, message: decision.message ?? '' });
        continue;
      }
      // Never guessed: the namespace is what decides which requests it may cover.
      if (!namespace) {
        refused.push({ kind: EXCEPTION_KIND, suite: name, message: `AdmissionException "${exception.metadata?.name ?? ''}" needs metadata.namespace: it covers requests in its own namespace only` });
        continue;
      }
      const request = { uid: randomUUID(), operation: 'CREATE', namespace, object: exception, userInfo: {} } as unknown as AdmissionRequest;
      const decision = await validateExceptionRequest(request, this.registry);
      if (!decision.allowed) refused.push({ kind: EXCEPTION_KIND, suite: name, message: decision.message ?? '' });
    }
    return refused;
  }

  /** The webhooks of `type` in the order the API server calls them: configurations by name, webhooks in order. */
  private callables(type: WebhookType): Callable[] {
    const configurations: { name: string; webhooks: Callable[] }[] = [];
    for (const suite of this.suites) {
      const compiled = this.registry.sync({ ...suite, metadata: { generation: 1, ...suite.metadata } });
      if (compiled.errors.length) throw new Error(`suite ${suite.metadata.name} is invalid: ${compiled.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
      const registered = (webhookConfigurations(suite, { ...DEFAULTS, namespace: this.namespace }, '').get(type)?.webhooks ?? []) as RegisteredWebhook[];
      const webhooks = suite.spec.webhooks
        .filter((w) => w.type === type)
        .map((spec): Callable => {
          const webhook = compiled.webhooks.get(spec.name)!;
          return { suite: suite.metadata.name, webhook: spec.name, fullName: webhook.fullName, entry: registered.find((w) => w.name === webhook.fullName)!, rules: spec.rules, admit: (r) => webhook.admit(r) };
        });
      if (webhooks.length) configurations.push({ name: configurationName(suite.metadata.name), webhooks });
    }
    for (const policy of this.policies) {
      const compiled = this.policyRegistry.sync({ ...policy, metadata: { generation: 1, ...policy.metadata } });
      if (compiled.errors.length) throw new Error(`AdmissionPolicy ${policy.metadata.namespace}/${policy.metadata.name} is invalid: ${compiled.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
    }
    const served = this.policyRegistry.all().filter((p) => p.webhook && p.type === type);
    const config = { ...DEFAULTS, namespace: this.namespace };
    const registration = namespacedConfiguration(type, served, { name: NAMESPACED.configuration, labels: {}, ownerReferences: [] }, { namespace: this.namespace, name: 'portcullis', port: 443 }, config, '');
    if (registration) {
      const entry = (registration.webhooks as RegisteredWebhook[])[0]!;
      const webhook = namespacedWebhook(type, this.policyRegistry);
      configurations.push({
        name: NAMESPACED.configuration,
        webhooks: [{ suite: POLICIES, webhook: type, fullName: NAMESPACED.webhook, entry, rules: entry.rules ?? [], admit: (r) => webhook.admit(r), policies: (r) => policiesFor(r, type, this.policyRegistry).map((p) => p.name) }],
      });
    }
    return configurations.sort((a, b) => byteOrder(a.name, b.name)).flatMap((c) => c.webhooks);
  }

  async evaluate(scenario: Scenario, apiVersion = 'admission.k8s.io/v1'): Promise<Evaluation> {
    const request = requestOf(scenario, this.resources);
    this.instant = scenario.now ?? this.now;
    const runs: WebhookRun[] = [];
    let object = request.object ?? undefined;
    let patched = false;
    let rejection: string | undefined;
    const namespaceLabels = request.namespace ? (namespaceObject(this.objects, request.namespace).metadata?.labels ?? {}) : undefined;
    for (const type of ['Mutating', 'Validating'] as const) {
      for (const webhook of this.callables(type)) {
        const run: WebhookRun = { suite: webhook.suite, webhook: webhook.webhook, fullName: webhook.fullName, type, called: false };
        runs.push(run);
        const current: AdmissionRequest = { ...request, object: object ?? request.object };
        const entry = webhook.entry;
        run.reason = (type === 'Mutating' && rejection ? 'the request was already rejected' : undefined) ?? notCalledBecause(entry, current, namespaceLabels) ?? (await this.unmatchedCondition(webhook, current));
        if (run.reason) continue;
        run.called = true;
        if (webhook.policies) run.policies = webhook.policies(current);
        const decision = await webhook.admit(current);
        run.review = encodeReview(apiVersion, request.uid, decision);
        run.outcome = outcomeOf(decision);
        if (!decision.allowed) rejection ??= `admission webhook "${webhook.fullName}" denied the request: ${decision.message ?? ''}`;
        if (type === 'Mutating' && decision.allowed && decision.patch?.length && object) {
          object = jsonpatch.applyPatch(structuredClone(object), structuredClone(decision.patch) as jsonpatch.Operation[]).newDocument;
          run.patchedObject = object;
          patched = true;
        }
      }
    }
    return { request, webhooks: runs, ...(patched ? { patchedObject: object } : {}), allowed: rejection === undefined, ...(rejection ? { message: rejection } : {}) };
  }

  /** matchConditions, which the API server evaluates in CEL before calling (registry/match.ts). */
  private unmatchedCondition(webhook: Callable, request: AdmissionRequest): Promise<string | undefined> {
    const { entry } = webhook;
    const owner = webhook.suite === POLICIES ? 'admissionpolicies' : webhook.suite;
    return compileMatchConditions(owner, webhook.rules, entry.matchConditions ?? [], entry.failurePolicy ?? 'Fail', this.namespace)(request);
  }
}

/** The AdmissionRequest the API server would send for `scenario`. */
export function requestOf(scenario: Scenario, resources = new Resources()): AdmissionRequest {
  const source = scenario.object ?? scenario.oldObject;
  if (!source) throw new Error('a request needs an object or an old object');
  const operation = scenario.operation ?? (scenario.object && scenario.oldObject ? 'UPDATE' : scenario.object ? 'CREATE' : 'DELETE');
  const [group, version] = String(source.apiVersion ?? '').includes('/') ? String(source.apiVersion).split('/') : ['', String(source.apiVersion ?? '')];
  const kind = String(source.kind ?? '');
  if (!version || !kind) throw new Error('the object needs apiVersion and kind');
  const resource = scenario.resource ?? resources.of(group!, kind);
  const gvr = { group: scenario.resourceGroupVersion?.group ?? group!, version: scenario.resourceGroupVersion?.version ?? version!, resource };
  const namespace = scenario.namespace ?? source.metadata?.namespace;
  return {
    uid: randomUUID(),
    kind: { group: group!, version: version!, kind },
    resource: gvr,
    ...(scenario.subResource ? { subResource: scenario.subResource } : {}),
    requestKind: { group: group!, version: version!, kind },
    requestResource: gvr,
    name: scenario.name ?? source.metadata?.name ?? '',
    ...(namespace ? { namespace } : {}),
    operation,
    userInfo: scenario.userInfo ?? { username: 'portcullis-cli', groups: ['system:authenticated'] },
    object: operation === 'DELETE' ? null : (scenario.object ?? null),
    oldObject: operation === 'CREATE' ? null : (scenario.oldObject ?? null),
    dryRun: scenario.dryRun ?? false,
    options: scenario.options !== undefined ? scenario.options : optionsOf(operation, scenario.dryRun ?? false),
  };
}
