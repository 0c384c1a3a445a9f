/**
 * A tiny worker for the worker kit's own test (test/unit/workers/kit.test.ts): holds the inputs it
 * is sent (`put`, `drop`), saying each as the kit's suspect while it takes it in; an input whose
 * value is `poison` stops the thread there. `held` replies with what it holds. No product code runs in it.
 */
import { parentPort } from 'node:worker_threads';
import { signals } from '../../../src/workers/kit.ts';

export type HolderIn = { type: 'put'; key: string; value: string } | { type: 'drop'; key: string } | { type: 'held'; id: number };
export type HolderOut = { type: 'holding'; id: number; keys: string[] };

const port = parentPort!;
const kit = signals((message) => port.postMessage(message));
const held = new Map<string, string>();
port.on('message', (message: HolderIn) => {
  if (message.type === 'put') {
    kit.suspect(message.key);
    if (message.value === 'poison') process.exit(5);
    held.set(message.key, message.value);
    kit.cleared(message.key);
  } else if (message.type === 'drop') held.delete(message.key);
  else port.postMessage({ type: 'holding', id: message.id, keys: [...held.keys()] } satisfies HolderOut);
});
