/**
 * A tenant worker (see policy-workers.ts): evaluates one request's AdmissionPolicies at a time with a policy
 * registry of its own (compiled the same way), so a team's expressions never run on the thread that
 * answers probes, suites' webhooks and suite validation. Each request brings what its policies read
 * (Namespace, params, the schema an apply configuration merges by); `authorizer` checks go to the main
 * thread. Says which policy it is compiling (one that kills it is quarantined by policy-workers.ts). Makes
 * no API call and opens no socket; decides nothing but the request.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { MainQuestions } from './main-questions.ts';
import { followedFailurePolicy } from '../../api/admission-review.ts';
import type { ClusterView } from '../../handlers/handler.ts';
import { LookupNotReady } from '../../handlers/handler.ts';
import type { ParamsSource } from '../../registry/compile.ts';
import { PolicyRegistry, type PolicyContext } from '../../registry/policies.ts';
import { namespacedWebhook } from '../../registry/policy-webhook.ts';
import { tuneHeapForAdmission } from '../v8-tuning.ts';
import { signals } from '../../workers/kit.ts';
import { documentOf, paramsKey, type FromTenantWorker, type TenantContext, type ToTenantWorker } from './policy-workers.ts';
import type { MergeSchema } from '../../policy/engine/apply-configuration.ts';

const port = parentPort!;
const send = (message: FromTenantWorker) => port.postMessage(message);
const kit = signals(send);

/** The request being evaluated and what its policies may read; the view and params read it. */
let current: { namespace?: string; context: TenantContext } = { context: { params: {} } };
const view: ClusterView = {
  namespace: (name) => (name === current.namespace ? current.context.namespaceObject : undefined),
  limitRanges: () => [],
  // Policies declare no lookups (only handlers do).
  list: (kind) => {
    throw new LookupNotReady(kind);
  },
};
const params: ParamsSource = {
  watch: () => undefined,
  select: (ref) => current.context.params[paramsKey(ref)] ?? { state: 'pending', reason: 'params were not sent to the tenant worker' },
};

let requestId = 0;
const questions = new MainQuestions(send, () => requestId);
const settings = workerData as Pick<PolicyContext, 'limits' | 'protectedNamespaces' | 'operatorNamespace'> & { authorizer: boolean };

tuneHeapForAdmission();
const registry = new PolicyRegistry({
  limits: settings.limits,
  protectedNamespaces: settings.protectedNamespaces,
  ...(settings.operatorNamespace !== undefined ? { operatorNamespace: settings.operatorNamespace } : {}),
  view,
  params,
  ...(settings.authorizer ? { authorizer: questions.authorizer } : {}),
  // The kind's schema the pool read for this request; none sent (the pool saw no such mutation then): answered by failurePolicy.
  mergeSchemas: { schema: () => schemaOf(current.context.mergeSchema) },
});

/** By documentOf(source): the OpenAPI documents the pool sent, the newest of each group version. */
const documents = new Map<string, { source: string; components: MergeSchema['components'] }>();

function schemaOf(sent: TenantContext['mergeSchema']): MergeSchema | undefined {
  if (sent === undefined) throw new Error('it was not sent to the tenant worker');
  if (sent === null) return undefined;
  if ('components' in sent) return sent;
  const document = documents.get(documentOf(sent.source));
  if (document?.source !== sent.source) throw new Error(`its document ${sent.source} was not sent to the tenant worker`);
  return { ref: sent.ref, components: document.components };
}
const webhooks = { Mutating: namespacedWebhook('Mutating', registry), Validating: namespacedWebhook('Validating', registry) };

port.on('message', (message: ToTenantWorker) => {
  switch (message.type) {
    case 'policy': {
      const { namespace, name } = message.policy.metadata;
      const policy = `${namespace}/${name}`;
      // Said first: if compiling it kills the worker, the pool knows which policy did.
      kit.suspect(policy);
      try {
        registry.sync(message.policy);
      } catch (err) {
        // Not evaluated here at all: the pool refuses the requests it matches (it is quarantined).
        try {
          registry.remove(namespace, name);
        } finally {
          kit.cleared(policy);
          send({ type: 'compile-failed', policy, message: String((err as Error)?.message ?? err).split('\n')[0]! });
        }
        return;
      }
      kit.cleared(policy);
      return;
    }
    case 'removed':
      registry.remove(message.namespace, message.name);
      return;
    case 'withheld':
      registry.withhold(new Map(message.withheld));
      return;
    case 'schemas':
      documents.set(documentOf(message.source), { source: message.source, components: message.components });
      return;
    case 'review':
      void evaluate(message);
      return;
    default:
      questions.answered(message);
  }
});

/** One request at a time: the pool sends the next only once this one is answered. */
async function evaluate(review: Extract<ToTenantWorker, { type: 'review' }>): Promise<void> {
  requestId = review.id;
  current = { namespace: review.request.namespace || undefined, context: review.context };
  send({ type: 'started', id: review.id });
  try {
    const decision = await webhooks[review.webhook].admit(review.request);
    send({ type: 'answer', id: review.id, decision, failed: followedFailurePolicy(decision) });
  } catch (err) {
    send({ type: 'error', id: review.id, message: (err as Error).message });
  }
}
