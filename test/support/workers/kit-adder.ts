/**
 * A tiny worker for the worker kit's own test (test/unit/workers/kit.test.ts): answers `add` calls
 * after the delay each asks for (so replies can come out of order), never answers `hang`, stops on
 * `exit`, and says a `note` unasked. No product code runs in it; nothing else starts it.
 */
import { parentPort } from 'node:worker_threads';

export type AdderIn = { type: 'add'; id: number; a: number; b: number; delayMs: number } | { type: 'hang'; id: number } | { type: 'exit'; code: number } | { type: 'say'; text: string };
export type AdderOut = { type: 'sum'; id: number; value: number } | { type: 'note'; text: string };

const port = parentPort!;
const send = (message: AdderOut) => port.postMessage(message);
port.on('message', (message: AdderIn) => {
  if (message.type === 'add') setTimeout(() => send({ type: 'sum', id: message.id, value: message.a + message.b }), message.delayMs);
  else if (message.type === 'exit') process.exit(message.code);
  else if (message.type === 'say') send({ type: 'note', text: message.text });
});
