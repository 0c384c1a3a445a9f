/**
 * A tenant worker (src/admission/threads/policy-worker.ts, run unchanged) that stops its thread,
 * as a crash or an exhausted heap would, for an AdmissionPolicy annotated
 * `test.portcullis.dev/exit`: `compile` stops it as it begins compiling that policy (after saying
 * so, as a real death there would), `evaluate` as it is given a request of the policy's namespace
 * for a resource the policy's rules name. What the tests of worker restarts start instead of the
 * real entry (PolicyWorkerPool's `entry`), so no test hook lives in the shipped worker.
 */
import { parentPort } from 'node:worker_threads';
import type { AdmissionPolicy } from '../../../src/api/types.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';

const port = parentPort!;
const exits = new Map<string, AdmissionPolicy>();
const exitOf = (policy: AdmissionPolicy | undefined) => policy?.metadata.annotations?.['test.portcullis.dev/exit'];
port.on('message', (message: { type: string; policy?: AdmissionPolicy; namespace?: string; name?: string; request?: AdmissionRequest }) => {
  if (message.type === 'policy') exits.set(`${message.policy!.metadata.namespace}/${message.policy!.metadata.name}`, message.policy!);
  else if (message.type === 'removed') exits.delete(`${message.namespace}/${message.name}`);
  else if (message.type === 'review') {
    const request = message.request!;
    for (const policy of exits.values()) {
      if (exitOf(policy) !== 'evaluate' || policy.metadata.namespace !== request.namespace) continue;
      if (policy.spec.rules.some((rule) => rule.resources?.includes(request.resource.resource))) process.exit(7);
    }
  }
});
const post = port.postMessage.bind(port);
port.postMessage = (message: { type?: string; key?: string }) => {
  post(message);
  if (message.type === 'kit-suspect' && exitOf(exits.get(message.key!)) === 'compile') process.exit(9);
};
await import('../../../src/admission/threads/policy-worker.ts');
