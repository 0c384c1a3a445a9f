/**
 * test/node/main.ts (`npm run cluster`): starts the node cluster for a person to explore with
 * kubectl, prints how to reach it, and stops it (everything of the run removed) on Ctrl-C or
 * SIGTERM, within 10 s. Owns nothing beyond what startNodeCluster() owns.
 */
import { startNodeCluster } from './cluster.ts';

// A Ctrl-C while it starts (a cold build takes minutes): exit, so that the cluster's exit handler
// kills what was started and cleans up; a signal's default action would skip that.
const early = () => process.exit(130);
process.on('SIGINT', early);
process.on('SIGTERM', early);
const cluster = await startNodeCluster().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
process.off('SIGINT', early);
process.off('SIGTERM', early);
const kubectl = `${cluster.binaries.kubectl} --kubeconfig ${cluster.kubeconfigPath}`;
process.stdout.write(`
The node cluster is up (Node ${cluster.nodeName} Ready after ${cluster.timings['Node Ready']?.toFixed(1)} s).
  kubeconfig:  ${cluster.kubeconfigPath}   (the API server at ${cluster.server}, forwarded into the namespace)
  kubectl:     ${kubectl} get nodes,pods -A -o wide
  its network: nsenter --net=/run/netns/${cluster.netns} sh    (pod and Service addresses answer there)
  images:      ${Object.values(cluster.images).join(', ')} (imagePullPolicy: Never; nothing can be pulled)
  state, logs: ${cluster.dir}
Ctrl-C stops it and removes everything of the run.
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the cluster\n`);
    cluster.stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`${err.message}\n`);
        process.exit(1);
      },
    );
  });
}
