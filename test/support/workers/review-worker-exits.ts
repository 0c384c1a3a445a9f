/**
 * A review worker (src/admission/threads/offload-worker.ts, run unchanged) that stops its thread,
 * as a crash or an exhausted heap would, for a suite annotated `test.portcullis.dev/exit`:
 * `compile` stops it as it begins compiling that suite (after saying so, as a real death there
 * would), `judge` as it is given a review of it. What the tests of worker restarts start instead
 * of the real entry (ReviewOffload's `entry`), so no test hook lives in the shipped worker.
 */
import { parentPort } from 'node:worker_threads';

const port = parentPort!;
const exits = new Map<string, string>();
port.on('message', (message: { type: string; suite?: unknown }) => {
  if (message.type === 'suite') {
    const suite = message.suite as { metadata: { name: string; annotations?: Record<string, string> } };
    exits.set(suite.metadata.name, suite.metadata.annotations?.['test.portcullis.dev/exit'] ?? '');
  } else if (message.type === 'review' && exits.get(message.suite as string) === 'judge') process.exit(7);
});
const post = port.postMessage.bind(port);
port.postMessage = (message: { type?: string; key?: string }) => {
  post(message);
  if (message.type === 'kit-suspect' && exits.get(message.key!) === 'compile') process.exit(9);
};
await import('../../../src/admission/threads/offload-worker.ts');
