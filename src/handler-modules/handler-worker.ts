/**
 * A handler module's worker (see runner.ts): imports its one module and runs its handlers' sides for
 * the requests sent, each with what it may read (sent with it: Namespace, LimitRanges, Pods; or copied
 * as the lookup caches change). A throw, rejection or non-decision is an error naming the handler;
 * budgets, blocking and deaths are the main thread's (it says which run it starts before starting it).
 * Makes no API call and holds nothing of the operator's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { Decision } from '../api/admission-review.ts';
import type { ClusterView } from '../handlers/handler.ts';
import type { CustomHandler } from '../sdk/index.ts';
import type { LookupChange } from '../apiserver/lookups.ts';
import type { FromHandlerWorker, HandlerContext, ToHandlerWorker } from './runner.ts';
import { errorMessage } from '../error-message.ts';
import { signals } from '../workers/kit.ts';

const port = parentPort!;
const send = (message: FromHandlerWorker) => port.postMessage(message);
const kit = signals(send);
const { module } = workerData as { module: string };

const exported = (await import(pathToFileURL(module).href)) as { handlers?: CustomHandler<any>[] };
const handlers = new Map((exported.handlers ?? []).map((h) => [h.name, h]));
/** Each config parsed once (by the id the main thread gave it), as the main thread parsed it on apply. */
const configs = new Map<number, unknown>();
/** The lookup kinds copied here (runner.ts), by namespace/name. */
const copies = new Map<string, Map<string, Record<string, any>>>();
const keyOf = (o: { metadata?: { name?: string; namespace?: string } }) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
function copyLookup(change: LookupChange): void {
  if (change.type === 'stopped') copies.delete(change.kind);
  else if (change.type === 'synced') copies.set(change.kind, new Map(change.objects.map((o) => [keyOf(o), o as Record<string, any>])));
  else if (change.deleted) copies.get(change.kind)?.delete(keyOf(change.object));
  else copies.get(change.kind)?.set(keyOf(change.object), change.object as Record<string, any>);
}

function viewOf(context: HandlerContext): ClusterView {
  return {
    namespace: (name) => (name === context.namespace ? context.namespaceObject : undefined),
    limitRanges: (namespace) => (namespace === context.namespace ? context.limitRanges : []),
    list: (kind, namespace) => {
      const copy = copies.get(kind);
      const objects = context.lookups[kind] ?? (copy && [...copy.values()]);
      if (!objects) throw new Error(`${kind} is not among the handler's lookups`);
      return namespace === undefined ? objects : objects.filter((o) => o.metadata?.namespace === namespace);
    },
  };
}

function isDecision(value: unknown): value is Decision {
  return typeof value === 'object' && value !== null && typeof (value as Decision).allowed === 'boolean';
}

async function run(message: Extract<ToHandlerWorker, { type: 'run' }>): Promise<void> {
  const { id, handler: name, side } = message;
  try {
    const handler = handlers.get(name);
    const run = handler?.[side];
    if (!handler || !run) throw new Error(`the module has no ${side} side for it`);
    const sent = message.config;
    let config = configs.get(sent.id);
    if (config === undefined) configs.set(sent.id, (config = handler.parseConfig(sent.raw, sent.context).config));
    // Said first: if the handler stops this worker (process.exit, its heap outgrown), the main thread knows which run did.
    kit.suspect(String(id));
    const decision = await run.call(handler, message.request, config, viewOf(message.context));
    if (!isDecision(decision)) throw new Error(`it answered ${JSON.stringify(decision)?.slice(0, 100)}, not a decision ({allowed: boolean, ...})`);
    send({ type: 'answer', id, decision });
  } catch (err) {
    send({ type: 'error', id, message: errorMessage(err).split('\n')[0]! });
  }
  kit.cleared(String(id));
}

port.on('message', (message: ToHandlerWorker) => {
  if (message.type === 'ping') send({ type: 'pong', id: message.id });
  else if (message.type === 'lookup') copyLookup(message.change);
  else void run(message);
});
