/**
 * manager: admission as every replica serves it: what answers (suites, AdmissionPolicies, the validation
 * webhooks with their API checks), its endpoint, and by default the admission thread that listens instead,
 * fed with copies of the cluster state. Knows nothing of the reconcilers.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { AdmissionSuite } from '../api/types.ts';
import { AdmissionEndpoint } from '../admission/endpoint.ts';
import { AdmissionAnswering } from '../admission/answering.ts';
import type { ConnectionKind } from '../admission/connection-limits.ts';
import type { ParamsAccessCheck } from '../admission/suite-validation.ts';
import { AdmissionThread } from '../admission/threads/thread.ts';
import type { Kube } from '../apiserver/client.ts';
import type { OpenApiSchemas } from '../apiserver/openapi.ts';
import { SubjectAccessReviewer } from '../apiserver/authorizer.ts';
import { ParamsAccess } from '../apiserver/params-access.ts';
import { PolicyAuthorRights } from '../apiserver/policy-author.ts';
import { PolicyAuthorGate, SuiteAuthorGate } from '../controller/suite-author.ts';
import type { CertificateStore } from '../certs/store.ts';
import type { OperatorConfig } from '../config.ts';
import { recordConnections, type Metrics } from '../health/metrics.ts';
import { fixedApiServerAddresses, LOOPBACK, watchApiServerAddresses } from '../apiserver/apiserver-addresses.ts';
import { componentLogger } from '../log.ts';
import { nativeRefusals } from '../native/dry-run.ts';
import type { ClusterState } from './cluster-state.ts';
import type { Registries } from './registries.ts';

export interface Serving {
  /** What answers admission on this thread: everything without the admission thread, what the thread forwards with it. */
  admission: AdmissionAnswering;
  /** Told when the admission endpoint nears a connection limit, with the cause (operator.ts raises an Event). */
  onConnectionsNear(listener: (kind: ConnectionKind, cause: string) => void): void;
  thread?: AdmissionThread;
  schemas: OpenApiSchemas;
  authorRights: PolicyAuthorRights;
  /** What serves the suites on this replica: the registry, each suite with params only once its recorded author may read them. */
  suiteAuthors: SuiteAuthorGate;
  /** The same for the AdmissionPolicies: each with params served only once its recorded author may read them. */
  policyAuthors: PolicyAuthorGate;
  /** The port it serves on (the one asked for, or the one it was given for port 0); the asked one while held back. */
  port: number;
  listening(): boolean;
  listen(): Promise<void>;
  draining(): boolean;
  /** Every answer from now on closes its connection (the first step of a graceful stop). */
  drain(): void;
  close(): Promise<void>;
}

export async function startServing(config: OperatorConfig, kubeConfig: KubeConfig, kube: Kube, parts: { state: ClusterState; registries: Registries; certificates: CertificateStore; metrics: Metrics }, hold: boolean): Promise<Serving> {
  const { state, certificates, metrics } = parts;
  const { registry, policyRegistry, auditor } = parts.registries;
  // Asked with the operator's own credentials (never the test's stand-in for CEL's authorizer).
  const reviewer = new SubjectAccessReviewer(kubeConfig);
  const readAccess = new ParamsAccess(kubeConfig, reviewer);
  const authorRights = new PolicyAuthorRights(reviewer);
  // Asked again on the AdmissionPolicies' authors' period.
  const suiteAuthors = new SuiteAuthorGate({ registry, access: readAccess, recheckMs: config.namespacedPolicyAuthorRecheckMs, log: componentLogger('suite-author') });
  const policyAuthors = new PolicyAuthorGate({ registry: policyRegistry, access: readAccess, recheckMs: config.namespacedPolicyAuthorRecheckMs, log: componentLogger('policy-author') });
  const paramsAccess: ParamsAccessCheck = {
    refusals: (user, uses) => readAccess.refusals(user, uses),
    mutationRefusals: (user, namespace, rules) => authorRights.mutationRefusals(user, namespace, rules),
    writeRefusals: (user, namespace, writes) => authorRights.writeRefusals(user, namespace, writes),
    ...(config.nativeEnforcement ? { nativeRefusals: (suite: AdmissionSuite, old: AdmissionSuite | undefined) => nativeRefusals(kube, config, suite, old) } : {}),
  };
  let draining = false;
  const nearListeners: ((kind: ConnectionKind, cause: string) => void)[] = [];
  const connectionsNear = (kind: ConnectionKind, cause: string) => nearListeners.forEach((listener) => listener(kind, cause));
  // One reader of the schemas with the registries (registries.ts): type checking's and the ApplyConfiguration mutations'.
  const { schemas } = parts.registries;
  // The endpoint's limits the flags set: connections in the server that listens, review workers in the one that judges large reviews (either may be both).
  const limits = { maxConnectionsPerAddress: config.maxConnectionsPerAddress, reviewWorkers: config.reviewWorkers };
  // Where the API server calls from: its connections are sized by the webhooks served, never refused for being many.
  const apiServers = config.mode === 'local' ? fixedApiServerAddresses(LOOPBACK) : watchApiServerAddresses(kubeConfig, componentLogger('admission'));
  const countRejected = (code: string) => metrics.countRejected(code);
  const admission = new AdmissionAnswering({
    registry,
    policies: policyRegistry,
    metrics: { countRejected, webhook: (suite, webhook) => metrics.webhook(suite, webhook) },
    log: componentLogger('admission'),
    paramsAccess,
    schemas: { kindsFor: (g, v, r) => schemas.kindsFor(g, v, r), schema: (gvk) => schemas.schema(gvk), byDefault: config.typeCheckErrors },
    limits,
    tenants: { workers: config.namespacedPolicyWorkers },
    draining: () => draining,
  });
  // With the admission thread, this endpoint does not listen (the thread's does, and forwards to `admission`).
  const endpoint = new AdmissionEndpoint({
    answering: admission,
    certificates,
    metrics: { countRejected, connections: (counts) => recordConnections(metrics, counts), connectionsNear },
    apiServers: apiServers.set,
    log: componentLogger('admission'),
    limits,
  });
  // Reported before any connection comes, so the gauges and their alert have series from the start.
  recordConnections(metrics, endpoint.connectionCounts());
  const thread = config.admissionThread
    ? new AdmissionThread({
        answering: admission,
        registry,
        certificates,
        metrics,
        mirrors: { Namespace: state.namespaces, LimitRange: state.limitRanges },
        params: state.params,
        exceptions: state.exceptions,
        lookups: state.lookups,
        log: componentLogger('admission'),
        limits,
        apiServers,
        connectionsNear,
        handlerModules: config.handlerModules,
        shadowed: (suite, webhook, ref, results) => auditor?.live(suite, webhook, ref, results),
        // The validation webhooks answered in the thread, as `admission` answers them: an apply is not queued behind reconciles.
        validation: { paramsAccess: true, schemas: { subscribe: (l) => schemas.subscribe(l), refresh: (key) => schemas.refresh(key), byDefault: config.typeCheckErrors }, policies: policyRegistry },
      })
    : undefined;
  state.mirrorTo(thread);
  const listening = () => (thread ? thread.listening : endpoint.server.listening);
  const listen = async () => {
    const options = { port: config.servingPort, host: config.mode === 'local' ? 'localhost' : '::', reusePort: true };
    await (thread ? thread.listen(options) : endpoint.listen(options));
  };
  let port = config.servingPort;
  if (!hold) {
    await listen();
    port = thread ? thread.port! : (endpoint.server.address() as { port: number }).port;
  }
  return {
    admission,
    onConnectionsNear: (listener) => nearListeners.push(listener),
    thread,
    schemas,
    authorRights,
    suiteAuthors,
    policyAuthors,
    port,
    listening,
    listen: async () => {
      if (!listening()) await listen();
    },
    draining: () => draining,
    drain: () => {
      draining = true;
      thread?.drain();
    },
    close: async () => {
      await thread?.close();
      await endpoint.close();
      await admission.close();
      await apiServers.stop();
    },
  };
}
