/**
 * The admission thread (see thread.ts): the HTTPS endpoint, its TLS and the suites' webhooks, in a
 * V8 isolate of their own. It holds copies of what serving reads: the suites (compiled here, as the
 * review worker compiles them), the serving certificates, the Namespaces and LimitRanges, the
 * synced params collections and the small lookup kinds, and, when it answers the suite- and
 * policy-validation webhooks (ThreadData.validation), the OpenAPI schemas read (schema-copy.ts)
 * and the policies' limits. A review that reads what is not copied here (HeldElsewhere: Pods,
 * Nodes, a params collection not synced yet, a schema not read or stale, for a validation or an
 * ApplyConfiguration mutation, a SubjectAccessReview a validation needs), the AdmissionPolicies' webhooks, and large bodies are forwarded whole to the main thread's answering.
 * Makes no API call and opens no client socket; `authorizer` checks and RESTMappings are asked of
 * the main thread. Acknowledges each suite generation and certificate once it serves them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { LogLevel, LogWriter } from '../../log.ts';
import { CertificateStore } from '../../certs/store.ts';
import { HeldElsewhere, type ClusterView } from '../../handlers/handler.ts';
import type { ParamsSource, WebhookObserver } from '../../registry/compile.ts';
import { collectionKey, selectParams } from '../../api/params.ts';
import type { ParamsChange } from '../../apiserver/params-watches.ts';
import type { CachedKind, LookupChange } from '../../apiserver/lookups.ts';
import { SuiteRegistry } from '../../registry/registry.ts';
import { ExceptionStore } from '../../registry/exceptions.ts';
import { PolicyRegistry } from '../../registry/policies.ts';
import { AdmissionEndpoint } from '../endpoint.ts';
import { AdmissionAnswering, type Answered } from '../answering.ts';
import type { ConnectionCounts } from '../connection-limits.ts';
import type { ParamsAccessCheck, TypeChecking } from '../suite-validation.ts';
import { MainQuestions } from './main-questions.ts';
import { signals } from '../../workers/kit.ts';
import { SchemaCopy } from './schema-copy.ts';
import { tuneHeapForAdmission } from '../v8-tuning.ts';
import { liveResults } from '../../audit/live.ts';
import { changedNativeWebhooks } from '../../api/enforcement.ts';
import { forwardHandlerModules } from '../../handler-modules/forward.ts';
import type { FromThread, Observation, ThreadData, ToThread } from './thread-messages.ts';

const port = parentPort!;
const data = workerData as ThreadData;
// Handler modules: known here by name and config checks before any suite is compiled; their requests are forwarded (src/handler-modules/forward.ts).
if (data.handlerModules) await forwardHandlerModules(data.handlerModules);
const send = (message: FromThread) => port.postMessage(message);
const kit = signals(send);
tuneHeapForAdmission();
/** Lines the main thread's logger writes (its level and above), sent there (no winston in this isolate). */
const line = (level: LogLevel) => (message: string, fields?: object) => {
  if (data.logLevels.includes(level)) send({ type: 'log', level, message, fields });
};
const log: LogWriter = { error: line('error'), warn: line('warn'), info: line('info'), debug: line('debug') };

const namespaces = new Map<string, Record<string, any>>();
/** By namespace, then name. */
const limitRanges = new Map<string, Map<string, Record<string, any>>>();
const view: ClusterView = {
  namespace: (name) => namespaces.get(name),
  limitRanges: (namespace) => [...(limitRanges.get(namespace)?.values() ?? [])],
  // From the kinds copied here (COPIED_LOOKUPS, once synced); a review that reads another is answered by the main thread.
  list: (kind, namespace) => {
    const copy = lookups.get(kind);
    if (!copy) throw new HeldElsewhere(`the ${kind} cache`);
    return [...copy.values()].filter((o) => namespace === undefined || o.metadata?.namespace === namespace);
  },
};

/** Where a copy keeps an object: namespace/name. */
const objectKey = (name: string, namespace?: string) => `${namespace ?? ''}/${name}`;
const keyOf = (object: { metadata?: { name?: string; namespace?: string } }) => objectKey(object.metadata?.name ?? '', object.metadata?.namespace);

/** The lookup kinds copied here, by name. */
const lookups = new Map<CachedKind, Map<string, Record<string, any>>>();
function copyLookup(change: LookupChange): void {
  if (change.type === 'stopped') lookups.delete(change.kind);
  else if (change.type === 'synced') lookups.set(change.kind, new Map(change.objects.map((o) => [keyOf(o), o as Record<string, any>])));
  else if (change.deleted) lookups.get(change.kind)?.delete(keyOf(change.object));
  else lookups.get(change.kind)?.set(keyOf(change.object), change.object as Record<string, any>);
}

/** The params collections the main thread has synced: their objects by namespace/name. */
const paramsCollections = new Map<string, { namespaced: boolean; objects: Map<string, Record<string, any>> }>();
const params: ParamsSource = {
  watch: () => undefined,
  // As the main thread selects (api/params.ts), from the copy; one not synced there is answered there (with its reason).
  select: (ref, requestNamespace) => {
    const collection = paramsCollections.get(collectionKey(ref));
    if (!collection) throw new HeldElsewhere(`the ${ref.kind} params collection`);
    return selectParams(ref, requestNamespace, {
      namespaced: collection.namespaced,
      get: (name, namespace) => collection.objects.get(objectKey(name, namespace)),
      list: (namespace) => [...collection.objects.values()].filter((o) => namespace === undefined || o.metadata?.namespace === namespace),
    });
  },
};
function copyParams(change: ParamsChange): void {
  if (change.type === 'synced') {
    paramsCollections.set(change.key, { namespaced: change.namespaced, objects: new Map(change.objects.map((o) => [keyOf(o), o as Record<string, any>])) });
    return;
  }
  const collection = paramsCollections.get(change.key);
  if (!collection) return;
  if (change.deleted) collection.objects.delete(keyOf(change.object));
  else collection.objects.set(keyOf(change.object), change.object as Record<string, any>);
}

/**
 * The answers counted here, sent to the main thread's metrics in batches: when it asks (before
 * each scrape), when a batch is full, and a moment after the first of a batch.
 */
let observations: Observation[] = [];
let flushTimer: NodeJS.Timeout | undefined;
const BATCH = 512;
const BATCH_DELAY_MS = 2_000;
function observe(observation: Observation): void {
  observations.push(observation);
  if (observations.length >= BATCH) sendObservations();
  else flushTimer ??= setTimeout(sendObservations, BATCH_DELAY_MS).unref();
}
/** The endpoint's connections by kind as they stand, sent with the next batch when changed (not once per connection). */
let connections: ConnectionCounts | undefined;
function sendObservations(): void {
  clearTimeout(flushTimer);
  flushTimer = undefined;
  if (connections) observations.push(['connections', connections]);
  connections = undefined;
  send({ type: 'observed', observations });
  observations = [];
}
const observers = {
  webhook: (suite: string, webhook: string): WebhookObserver => ({
    answered: (operation, outcome, seconds, failurePolicy) => observe(['answered', suite, webhook, operation, outcome, seconds, failurePolicy]),
    evaluated: (seconds, cost) => observe(['evaluated', suite, webhook, seconds, cost]),
    shadowed: (request, decision) => {
      const live = liveResults(request, decision);
      if (live) observe(['shadowed', suite, webhook, live.ref, live.results]);
    },
    excepted: (namespace, name) => observe(['excepted', suite, webhook, namespace, name]),
  }),
};

/**
 * The OpenAPI schemas the main thread read, copied (sent when it answers the validation webhooks):
 * they type-check suites and policies, and merge ApplyConfiguration mutations here; a kind the
 * copy lacks (or holds stale) is HeldElsewhere, so the main thread answers, reading it.
 */
const validation = data.validation;
const schemaCopy = validation?.typeChecking && new SchemaCopy((key) => send({ type: 'renew-schemas', key }));

const questions = new MainQuestions(send);
/** The AdmissionExceptions, as the main thread's store holds them (thread.ts sends every change). */
const exceptions = new ExceptionStore();
const registry = new SuiteRegistry({
  exceptions,
  view,
  params,
  authorizer: data.authorizer ? questions.authorizer : undefined,
  mapper: data.mapper ? questions.mapper : undefined,
  operatorNamespace: data.operatorNamespace,
  nativeEnforcement: data.nativeEnforcement,
  observers,
  ...(schemaCopy ? { mergeSchemas: { schema: (kind: { group: string; version: string; kind: string }) => schemaCopy.held(kind) } } : {}),
});
const certificates = new CertificateStore();

/**
 * The validation webhooks, answered here as the main thread's answering answers them: a write whose
 * check needs a SubjectAccessReview (params it introduces, a Mutating policy's rules), or a schema
 * the copy cannot give, is HeldElsewhere, so the main thread answers it whole.
 */
const askedThere = () => Promise.reject(new HeldElsewhere('a SubjectAccessReview'));
const paramsAccess: ParamsAccessCheck | undefined = validation?.paramsAccess
  ? {
      refusals: askedThere,
      mutationRefusals: askedThere,
      // Only a write that changes a Native webhook needs the API server's dry run.
      ...(data.nativeEnforcement ? { nativeRefusals: async (suite, old) => (changedNativeWebhooks(suite, old).length > 0 ? askedThere() : []) } : {}),
    }
  : undefined;
const schemas: TypeChecking | undefined = schemaCopy && {
  kindsFor: (group, version, resource) => schemaCopy.kindsFor(group, version, resource),
  schema: (gvk) => schemaCopy.schema(gvk),
  byDefault: validation!.typeChecking!.byDefault,
};
const policyContext = validation?.policies;
const policies =
  policyContext &&
  new PolicyRegistry({
    view,
    authorizer: policyContext.authorizer ? questions.authorizer : undefined,
    mapper: policyContext.mapper ? questions.mapper : undefined,
    operatorNamespace: policyContext.operatorNamespace,
    limits: policyContext.limits,
    protectedNamespaces: policyContext.protectedNamespaces,
  });

let nextForward = 1;
const forwarded = new Map<number, { resolve(answer: Answered): void; reject(err: Error): void }>();
let draining = false;
/** The API server's addresses, as the main thread last sent them. */
const apiServers = new Set<string>();
const countRejected = (code: string) => observe(['rejected', code]);
// What answers here (the suites' webhooks, the validation ones when it validates), the rest forwarded to the main thread.
const answering = new AdmissionAnswering({
  registry,
  metrics: { countRejected, webhook: observers.webhook },
  log,
  limits: data.limits,
  draining: () => draining,
  paramsAccess,
  schemas,
  ...(validation ? { validates: { policies } } : {}),
  forward: {
    to: (url, body) =>
      new Promise((resolve, reject) => {
        const id = nextForward++;
        forwarded.set(id, { resolve, reject });
        // A large body's bytes move to the main thread rather than being copied, when they are
        // the whole of their buffer (a body read in one chunk may share Node's pool).
        const whole = typeof body !== 'string' && body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
        port.postMessage({ type: 'forward', id, url, body } satisfies FromThread, whole ? [body.buffer as ArrayBuffer] : []);
      }),
  },
});
const endpoint = new AdmissionEndpoint({
  answering,
  certificates,
  metrics: {
    countRejected,
    connections: (counts) => {
      connections = counts;
      flushTimer ??= setTimeout(sendObservations, BATCH_DELAY_MS).unref();
    },
    connectionsNear: (kind, cause) => observe(['connections-near', kind, cause]),
  },
  apiServers,
  log,
  limits: data.limits,
});

port.on('message', (message: ToThread) => {
  // Nothing the main thread sends stops the thread: a throw is caught here, said and logged.
  try {
    received(message);
  } catch (err) {
    if (message.type !== 'suite') log.error('the admission thread could not apply a change', { change: message.type, error: (err as Error)?.message });
  }
});

function received(message: ToThread): void {
  switch (message.type) {
    case 'suite': {
      const { name, uid } = message.suite.metadata;
      const generation = message.suite.metadata.generation ?? 0;
      // Said first: if compiling it kills the thread, the main thread knows which suite did.
      // (as thread.ts's suiteKey: the generation a death blames)
      const key = `${name}\n${uid ?? ''}\n${generation}`;
      kit.suspect(key);
      try {
        registry.sync(message.suite);
      } catch (err) {
        // Not served here at all (not even an earlier generation): its webhooks are answered by their failurePolicy.
        try {
          registry.remove(name);
        } finally {
          kit.cleared(key);
          send({ type: 'compile-failed', name, uid, generation, message: String((err as Error)?.message ?? err).split('\n')[0]! });
        }
        return;
      }
      kit.cleared(key);
      send({ type: 'synced', name, uid, generation });
      return;
    }
    case 'removed':
      registry.remove(message.name);
      return;
    case 'certificate':
      if (message.pems) certificates.install(message.key, message.pems.certPem, message.pems.keyPem);
      else certificates.remove(message.key);
      send({ type: 'served', key: message.key, certPem: message.pems?.certPem });
      return;
    case 'mirror':
      mirror(message.kind, message.object, message.deleted);
      return;
    case 'params':
      copyParams(message.change);
      return;
    case 'exception':
      exceptions.apply(message.change);
      return;
    case 'lookup':
      copyLookup(message.change);
      return;
    case 'schemas':
      schemaCopy?.apply(message.change);
      return;
    case 'forwarded': {
      const waiting = forwarded.get(message.id);
      forwarded.delete(message.id);
      if (message.answer) waiting?.resolve(message.answer);
      else waiting?.reject(new Error(message.error ?? 'the main thread did not answer'));
      return;
    }
    case 'draining':
      draining = true;
      return;
    case 'apiservers':
      apiServers.clear();
      for (const address of message.addresses) apiServers.add(address);
      return;
    case 'flush':
      sendObservations();
      send({ type: 'flushed', id: message.id });
      return;
    case 'close':
      void endpoint
        .close()
        .then(() => answering.close())
        .then(() => {
          sendObservations();
          send({ type: 'closed' });
          port.close();
        });
      return;
    default:
      questions.answered(message);
  }
}

function mirror(kind: 'Namespace' | 'LimitRange', object: Record<string, any>, deleted: boolean): void {
  const { name, namespace = '' } = (object.metadata ?? {}) as { name?: string; namespace?: string };
  if (!name) return;
  if (kind === 'Namespace') {
    if (deleted) namespaces.delete(name);
    else namespaces.set(name, object);
    return;
  }
  let inNamespace = limitRanges.get(namespace);
  if (deleted) {
    inNamespace?.delete(name);
    if (inNamespace?.size === 0) limitRanges.delete(namespace);
    return;
  }
  if (!inNamespace) limitRanges.set(namespace, (inNamespace = new Map()));
  inNamespace.set(name, object);
}

endpoint.listen(data.listen).then(
  () => send({ type: 'listening', port: (endpoint.server.address() as { port: number }).port }),
  (err: NodeJS.ErrnoException) => send({ type: 'listen-failed', code: err.code, message: err.message }),
);
