/**
 * manager: what every replica compiles and serves: the suites' registry and the AdmissionPolicies'
 * (with the limits the cluster admin set), each webhook's answers counted, and the background
 * audit following what they serve (the leader's; its results of rules in shadow mode come from the
 * answers). Talks to no API server itself and starts no watch (cluster-state.ts, owned.ts).
 */
import type { Kube } from '../apiserver/client.ts';
import { Auditor } from '../audit/auditor.ts';
import { liveResults } from '../audit/live.ts';
import type { OperatorConfig } from '../config.ts';
import { protectedNamespaces } from '../desired/objects.ts';
import type { Metrics } from '../health/metrics.ts';
import { componentLogger } from '../log.ts';
import { setHandlerBackends } from '../handlers/backends.ts';
import type { WebhookObserver } from '../registry/compile.ts';
import { PolicyRegistry } from '../registry/policies.ts';
import { SuiteRegistry } from '../registry/registry.ts';
import { OpenApiSchemas } from '../apiserver/openapi.ts';
import type { ClusterState } from './cluster-state.ts';

export interface Registries {
  registry: SuiteRegistry;
  policyRegistry: PolicyRegistry;
  auditor?: Auditor;
  /** The API server's OpenAPI v3 schemas: type checking's, and the kinds ApplyConfiguration mutations merge into. */
  schemas: OpenApiSchemas;
}

/** `wake`: the work-queue key of a suite, or of the AdmissionPolicies, whose audit status changed. */
export function makeRegistries(config: OperatorConfig, kube: Kube, state: ClusterState, metrics: Metrics, wake: (target: { suite: string } | { policies: true }) => void): Registries {
  const { view, params, authorizer, mapper } = state;
  // A webhook's answers are counted; those it allowed with Warn or Audit failures are also the audit's live results.
  const observers = {
    webhook: (suite: string, webhook: string): WebhookObserver => {
      const counted = metrics.webhook(suite, webhook);
      return {
        answered: (operation, outcome, seconds, failurePolicy) => counted.answered(operation, outcome, seconds, failurePolicy),
        evaluated: (seconds, cost) => counted.evaluated(seconds, cost),
        shadowed: (request, decision) => {
          const live = auditor && liveResults(request, decision);
          if (live) auditor!.live(suite, webhook, live.ref, live.results);
        },
        excepted: (namespace, name) => metrics.exceptionUsed(suite, webhook, namespace, name),
      };
    },
  };
  // Before any suite is compiled or thread started: the threads inherit the list (handlers/backends.ts).
  setHandlerBackends(config.handlerBackends);
  // Read at apply and reconcile time (type checking), and by ApplyConfiguration mutations, cached by the documents' hashes.
  const schemas = new OpenApiSchemas(kube.config);
  const registry = new SuiteRegistry({
    view,
    params,
    authorizer,
    mapper,
    operatorNamespace: config.namespace,
    nativeEnforcement: config.nativeEnforcement,
    observers,
    exceptions: state.exceptions,
    mergeSchemas: { schema: (kind) => schemas.schema(kind) },
  });
  // A webhook's series go with it (a suite deleted, or a webhook removed from one).
  registry.subscribe((change) => ('removed' in change ? metrics.forget(change.removed) : metrics.forget(change.suite.metadata.name, new Set(change.suite.spec.webhooks.map((w) => w.name)))));
  registry.subscribe(() => state.lookups.use(registry.lookups()));

  // The teams' AdmissionPolicies: compiled as a suite's webhooks, within the limits the cluster admin set.
  const policyLimits = {
    mutations: config.namespacedPolicyMutations,
    costBudget: config.namespacedPolicyCostBudget,
    namespaceCostBudget: config.namespacedPolicyNamespaceCostBudget,
    deadlineMs: config.namespacedPolicyDeadlineMs,
    maxBytes: config.namespacedPolicyMaxBytes,
  };
  const policyRegistry = new PolicyRegistry({
    view,
    params,
    authorizer,
    mapper,
    operatorNamespace: config.namespace,
    limits: policyLimits,
    protectedNamespaces: protectedNamespaces(config),
    // read by the tenant pool before a request goes to a worker (policy-workers.ts), as the Namespace and params are gathered
    mergeSchemas: { schema: (kind) => schemas.schema(kind) },
  });

  // The background audit (the leader's, off the admission path): targets follow what the registries serve.
  const auditor = config.audit
    ? new Auditor({
        kube,
        log: componentLogger('audit'),
        config,
        context: { view, params, mapper, operatorNamespace: config.namespace, exceptions: state.exceptions },
        limits: policyLimits,
        namespaceLabels: (name) => (state.namespaces.get(name)?.metadata?.labels ?? undefined) as Record<string, string> | undefined,
        statusChanged: (target) => wake('suite' in target ? { suite: target.suite } : { policies: true }),
      })
    : undefined;
  if (auditor) {
    registry.subscribe((change) => {
      const name = 'removed' in change ? change.removed : change.suite.metadata.name;
      const served = 'suite' in change && registry.get(name)?.errors.length === 0;
      auditor.suite(name, served ? change.suite : undefined);
    });
    const auditPolicy = (namespace: string, name: string) => {
      const compiled = policyRegistry.get(namespace, name);
      auditor.policy(namespace, name, compiled && policyRegistry.served(namespace).includes(compiled) ? compiled.source : undefined);
    };
    policyRegistry.subscribe((change) => {
      if ('policy' in change) auditPolicy(change.policy.metadata.namespace, change.policy.metadata.name);
      else if ('removed' in change) auditor.policy(change.removed.namespace, change.removed.name, undefined);
      else for (const p of policyRegistry.all()) auditPolicy(p.namespace, p.name);
    });
  }
  return { registry, policyRegistry, auditor, schemas };
}
