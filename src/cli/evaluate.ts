/**
 * Suites checked and run offline with the code that serves the cluster: validation is the
 * suite-validation webhook's (src/admission/suite-validation.ts), compiling and deciding are the
 * registry's (src/registry), the answer is encoded by src/admission/review.ts, and which webhooks
 * are called is read from the configurations the operator registers (src/controller/desired.ts).
 * What the API server does around the webhooks is done here as it does it: mutating webhooks in
 * configuration-name order, each on the object the one before patched, then every validating
 * webhook on the result; the first denial rejects the request. No I/O: the caller reads files.
 */
import { randomUUID } from 'node:crypto';
import jsonpatch from 'fast-json-patch';
import { API_VERSION, KIND, type AdmissionSuite, type WebhookType } from '../api/types.ts';
import { configurationName, webhookFullName as webhookFullNameOf } from '../api/names.ts';
import { outcomeOf, type AdmissionRequest, type AdmissionReview, type Outcome } from '../api/review.ts';
import { encodeReview } from '../admission/review.ts';
import { validateSuiteRequest } from '../admission/suite-validation.ts';
import { webhookConfigurations, NAMESPACE_NAME_LABEL } from '../controller/desired.ts';
import { DEFAULTS } from '../config.ts';
import type { ClusterView } from '../handlers/handler.ts';
import { compileSuite, type ParamsSource } from '../registry/compile.ts';
import { selectParams } from '../api/params.ts';
import { SuiteRegistry } from '../registry/registry.ts';
import { notCalledBecause, type RegisteredWebhook } from '../registry/match.ts';

type KubeObject = Record<string, any>;

/** One admission request as a test or `eval` describes it; what is left out is derived as the API server would. */
export interface Scenario {
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  operation?: AdmissionRequest['operation'];
  /** The plural resource (default: the kind, lower case, pluralised). */
  resource?: string;
  subResource?: string;
  namespace?: string;
  userInfo?: AdmissionRequest['userInfo'];
  dryRun?: boolean;
}

export interface WebhookRun {
  suite: string;
  webhook: string;
  fullName: string;
  type: WebhookType;
  /** Whether the API server would call it for this request; `reason` says why not. */
  called: boolean;
  reason?: string;
  /** The AdmissionReview the operator answers with, as sent to the API server. */
  review?: AdmissionReview;
  outcome?: Outcome;
  /** A mutating webhook's result: the object after its patch. */
  patchedObject?: KubeObject;
}

export interface Evaluation {
  request: AdmissionRequest;
  webhooks: WebhookRun[];
  /** The object after every mutating webhook, when one patched it. */
  patchedObject?: KubeObject;
  allowed: boolean;
  /** The API server's words for a rejection: `admission webhook "<name>" denied the request: <message>`. */
  message?: string;
}

/** Suites offline: the objects they may read (Namespaces, LimitRanges, params) given with them. */
export class OfflineCluster {
  readonly suites: AdmissionSuite[];
  private readonly objects: KubeObject[];
  private readonly namespace: string;
  private readonly registry: SuiteRegistry;

  constructor(suites: AdmissionSuite[], objects: KubeObject[] = [], operatorNamespace = DEFAULTS.namespace) {
    this.suites = [...suites].sort((a, b) => configurationName(a.metadata.name).localeCompare(configurationName(b.metadata.name)));
    this.objects = objects;
    this.namespace = operatorNamespace;
    const view: ClusterView = {
      namespace: (name) => this.namespaceObject(name),
      limitRanges: (namespace) => objects.filter((o) => o.kind === 'LimitRange' && o.metadata?.namespace === namespace),
      list: (kind, namespace) => objects.filter((o) => o.kind === kind && (namespace === undefined || o.metadata?.namespace === namespace)),
    };
    const params: ParamsSource = {
      watch: () => undefined,
      select: (ref, requestNamespace) => {
        const ofKind = objects.filter((o) => o.apiVersion === ref.apiVersion && o.kind === ref.kind);
        const inNamespace = (namespace?: string) => ofKind.filter((o) => namespace === undefined || o.metadata?.namespace === namespace);
        // Offline there is no discovery: a kind is namespaced when the objects given of it carry a namespace.
        const namespaced = ref.namespace !== undefined || ofKind.some((o) => o.metadata?.namespace);
        return selectParams(ref, requestNamespace, { namespaced, get: (name, namespace) => inNamespace(namespace).find((o) => o.metadata?.name === name), list: inNamespace });
      },
    };
    this.registry = new SuiteRegistry({ view, params, operatorNamespace });
  }

  /** Each suite the suite-validation webhook would refuse, with its message (the same words apply gets). */
  async refusals(): Promise<{ suite: string; message: string }[]> {
    const refused: { suite: string; message: string }[] = [];
    for (const suite of this.suites) {
      const request = { uid: randomUUID(), operation: 'CREATE', object: suite, userInfo: {} } as unknown as AdmissionRequest;
      const decision = await validateSuiteRequest(request, this.registry);
      if (!decision.allowed) refused.push({ suite: suite.metadata.name, message: decision.message ?? '' });
    }
    return refused;
  }

  async evaluate(scenario: Scenario, apiVersion = 'admission.k8s.io/v1'): Promise<Evaluation> {
    const request = requestOf(scenario);
    const runs: WebhookRun[] = [];
    let object = request.object ?? undefined;
    let patched = false;
    let rejection: string | undefined;
    const namespaceLabels = request.namespace ? (this.namespaceObject(request.namespace).metadata?.labels ?? {}) : undefined;
    for (const type of ['Mutating', 'Validating'] as const) {
      for (const suite of this.suites) {
        const compiled = this.registry.sync({ ...suite, metadata: { generation: 1, ...suite.metadata } });
        if (compiled.errors.length) throw new Error(`suite ${suite.metadata.name} is invalid: ${compiled.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
        const registered = (webhookConfigurations(suite, { ...DEFAULTS, namespace: this.namespace }, '').get(type)?.webhooks ?? []) as RegisteredWebhook[];
        for (const spec of suite.spec.webhooks.filter((w) => w.type === type)) {
          const webhook = compiled.webhooks.get(spec.name)!;
          const run: WebhookRun = { suite: suite.metadata.name, webhook: spec.name, fullName: webhook.fullName, type, called: false };
          runs.push(run);
          const current: AdmissionRequest = { ...request, object: object ?? request.object };
          const entry = registered.find((w) => w.name === webhook.fullName)!;
          run.reason = (type === 'Mutating' && rejection ? 'the request was already rejected' : undefined) ?? notCalledBecause(entry, current, namespaceLabels) ?? (await this.unmatchedCondition(suite, entry, current));
          if (run.reason) continue;
          run.called = true;
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
    }
    return { request, webhooks: runs, ...(patched ? { patchedObject: object } : {}), allowed: rejection === undefined, ...(rejection ? { message: rejection } : {}) };
  }

  /**
   * matchConditions, which the API server evaluates in CEL before calling: compiled and run by the
   * policy engine as the validations of a probe webhook (their environment is the same).
   */
  private async unmatchedCondition(suite: AdmissionSuite, entry: RegisteredWebhook, request: AdmissionRequest): Promise<string | undefined> {
    const conditions = entry.matchConditions ?? [];
    if (conditions.length === 0) return undefined;
    const probe = compileSuite(
      {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: suite.metadata.name, uid: '', generation: 1 },
        spec: { webhooks: [{ name: 'match', type: 'Validating', failurePolicy: 'Fail', rules: suite.spec.webhooks.find((w) => webhookFullNameOf(suite.metadata.name, w.name) === entry.name)!.rules, validations: conditions.map((c) => ({ expression: c.expression, message: c.name })) }] },
      } as AdmissionSuite,
      { operatorNamespace: this.namespace },
    );
    const admit = probe.webhooks.get('match');
    if (!admit) return `matchConditions do not compile: ${probe.errors.map((e) => e.message).join('; ')}`;
    const decision = await admit.admit(request);
    if (outcomeOf(decision) === 'error') return entry.failurePolicy === 'Ignore' ? `matchConditions errored (failurePolicy Ignore): ${decision.message ?? ''}` : `matchConditions errored: ${decision.message ?? ''}`;
    return decision.allowed ? undefined : `matchCondition ${decision.message} is false`;
  }

  private namespaceObject(name: string): KubeObject {
    // A namespace the test does not describe is one with only the label the API server sets on every namespace.
    return this.objects.find((o) => o.kind === 'Namespace' && o.metadata?.name === name) ?? { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [NAMESPACE_NAME_LABEL]: name } } };
  }
}

/** The AdmissionRequest the API server would send for `scenario`. */
export function requestOf(scenario: Scenario): AdmissionRequest {
  const source = scenario.object ?? scenario.oldObject;
  if (!source) throw new Error('a request needs an object or an old object');
  const operation = scenario.operation ?? (scenario.object && scenario.oldObject ? 'UPDATE' : scenario.object ? 'CREATE' : 'DELETE');
  const [group, version] = String(source.apiVersion ?? '').includes('/') ? String(source.apiVersion).split('/') : ['', String(source.apiVersion ?? '')];
  const kind = String(source.kind ?? '');
  if (!version || !kind) throw new Error('the object needs apiVersion and kind');
  const resource = scenario.resource ?? plural(kind);
  const namespace = scenario.namespace ?? source.metadata?.namespace;
  return {
    uid: randomUUID(),
    kind: { group: group!, version: version!, kind },
    resource: { group: group!, version: version!, resource },
    ...(scenario.subResource ? { subResource: scenario.subResource } : {}),
    requestKind: { group: group!, version: version!, kind },
    requestResource: { group: group!, version: version!, resource },
    name: source.metadata?.name ?? '',
    ...(namespace ? { namespace } : {}),
    operation,
    userInfo: scenario.userInfo ?? { username: 'portcullis-cli', groups: ['system:authenticated'] },
    object: operation === 'DELETE' ? null : (scenario.object ?? null),
    oldObject: operation === 'CREATE' ? null : (scenario.oldObject ?? null),
    dryRun: scenario.dryRun ?? false,
    options: null,
  };
}

/** The resource of a kind as the API server names most: lower case, plural (Policy → policies, Ingress → ingresses). */
function plural(kind: string): string {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}
