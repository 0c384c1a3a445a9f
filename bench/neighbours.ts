/**
 * `npm run bench:neighbours`: can one team's AdmissionPolicies slow down another team's, or the
 * operator's probes? Through the real API server (local control plane) and the operator as the
 * image runs it (tools/build.ts' bundles), ConfigMap creates (dry run: judged, not stored):
 *   quiet   one create every 20 ms in `bench-quiet`, whose policy is cheap;
 *   flood   NEIGHBOURS_CLIENTS clients creating back to back in `bench-shop`, whose policy spends
 *           past the per-policy cost budget (each request is denied by the budget);
 *   cheap   the same flood in `bench-cheap`, whose policy is as cheap as the quiet one: what the
 *           flood costs the machine (the API server, the bench's clients) apart from policies;
 *   probes  GET /readyz on the operator's metrics port every 250 ms, with the 1 s timeout the
 *           shipped readiness probe has;
 *   escape  one create in `bench-escape` whose policy sorts a large list the type checker sees as
 *           `dyn` (charged 1 unit by the API server's rule): timed, to see it cut.
 * First `quiet` alone for NEIGHBOURS_SECONDS (default 15), then beside `cheap`, then beside
 * `flood`, each with `probes`, for as long. Prints the quiet creates' p50/p99 in each phase and the
 * ratios of the p99s, the floods' answered creates, the probes that failed, and the escape's time
 * and answer; the last line is one JSON object. All of it shares this machine's cores with the
 * API server and etcd, so the cheap flood's ratio is the floor no policy engine could go under here.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { installForLocalRun } from '../src/local/install.ts';
import { connect } from '../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type PolicySpec } from '../src/api/types.ts';
import { DEFAULTS } from '../src/config.ts';
import { startOperatorBundle } from './processes.ts';
import { quantile } from './stats.ts';

const SECONDS = Number(process.env.NEIGHBOURS_SECONDS ?? 15);
const CLIENTS = Number(process.env.NEIGHBOURS_CLIENTS ?? 8);
const APP = fileURLToPath(new URL('../.local/neighbours-app', import.meta.url));
const OPERATOR_ARGS = process.env.NEIGHBOURS_OPERATOR_ARGS ? process.env.NEIGHBOURS_OPERATOR_ARGS.split(' ') : [];
const SERVING_PORT = 19643;
const METRICS_PORT = 19680;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(',')}]`;
const POLICIES: Record<string, PolicySpec> = {
  'bench-quiet': { type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'not that name' }] },
  'bench-cheap': { type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'not that name' }] },
  // Each validation well within the per-expression limit; together past the policy's budget.
  'bench-shop': { type: 'Validating', rules: configMaps, validations: Array.from({ length: 8 }, () => ({ expression: `${list(30)}.all(i, ${list(30)}.all(j, ${list(30)}.all(k, i + j + k >= 0)))` })) },
  'bench-escape': { type: 'Validating', rules: configMaps, validations: [{ expression: 'object.data.map(k, object.data[k]).sort().size() >= 0' }] },
};

/** One dry-run create; resolves with its time in ms and whether it was allowed. */
async function create(core: k8s.CoreV1Api, namespace: string, name: string, data: Record<string, string> = { k: 'v' }): Promise<{ ms: number; allowed: boolean; message?: string }> {
  const start = performance.now();
  try {
    await core.createNamespacedConfigMap({ namespace, dryRun: 'All', body: { metadata: { name }, data } });
    return { ms: performance.now() - start, allowed: true };
  } catch (err) {
    const body = (err as { body?: string }).body;
    return { ms: performance.now() - start, allowed: false, message: typeof body === 'string' ? body.slice(0, 300) : String(err) };
  }
}

function probe(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: METRICS_PORT, path: '/readyz', timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

const controlPlane = await startControlPlane();
let operator: ChildProcess | undefined;
try {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  await installForLocalRun(kubeConfig, DEFAULTS.namespace);
  const kube = connect(kubeConfig);
  operator = await startOperatorBundle(APP, controlPlane.kubeconfigPath, [`--serving-port=${SERVING_PORT}`, `--metrics-port=${METRICS_PORT}`, ...OPERATOR_ARGS]);
  for (const [namespace, spec] of Object.entries(POLICIES)) {
    await kube.core.createNamespace({ body: { metadata: { name: namespace } } });
    await kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: 'p' }, spec } });
  }
  // In force: the quiet policy refuses its name, the shop's runs out of budget.
  for (let i = 0; ; i++) {
    const quiet = await create(kube.core, 'bench-quiet', 'forbidden');
    const shop = await create(kube.core, 'bench-shop', 'x');
    if (!quiet.allowed && !shop.allowed) break;
    if (i > 600) throw new Error(`the policies are not in force: ${quiet.message} / ${shop.message}`);
    await sleep(100);
  }

  const quietRound = async (stop: () => boolean) => {
    const times: number[] = [];
    let failed = 0;
    for (let i = 0; !stop(); i++) {
      const answer = await create(kube.core, 'bench-quiet', `q${i}`);
      if (answer.allowed) times.push(answer.ms);
      else failed++;
      await sleep(20);
    }
    return { times, failed };
  };

  const aloneUntil = Date.now() + SECONDS * 1000;
  const alone = await quietRound(() => Date.now() > aloneUntil);

  /** `quiet` beside CLIENTS clients creating in `namespace` back to back, and the probes. */
  const beside = async (namespace: string) => {
    const until = Date.now() + SECONDS * 1000;
    let answered = 0;
    let probes = 0;
    let probesFailed = 0;
    const flood = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; Date.now() < until; i++) {
        await create(kube.core, namespace, `s${c}-${i}`);
        answered++;
      }
    });
    const prober = (async () => {
      while (Date.now() < until) {
        probes++;
        if (!(await probe())) probesFailed++;
        await sleep(250);
      }
    })();
    const quiet = await quietRound(() => Date.now() > until);
    await Promise.all([...flood, prober]);
    return { quiet, answered, probes, probesFailed };
  };
  const cheap = await beside('bench-cheap');
  const costly = await beside('bench-shop');

  const data: Record<string, string> = {};
  for (let i = 0; i < 20_000; i++) data[`k${i}`] = `v${i}`;
  const escape = await create(kube.core, 'bench-escape', 'e', data);

  const summary = (round: { times: number[]; failed: number }) => ({ p50: quantile(round.times, 0.5), p99: quantile(round.times, 0.99), n: round.times.length, failed: round.failed });
  const figures = {
    quiet: { alone: summary(alone), cheapFlood: summary(cheap.quiet), costlyFlood: summary(costly.quiet) },
    p99Ratio: { cheapFlood: quantile(cheap.quiet.times, 0.99) / quantile(alone.times, 0.99), costlyFlood: quantile(costly.quiet.times, 0.99) / quantile(alone.times, 0.99) },
    floods: { clients: CLIENTS, cheapAnswered: cheap.answered, costlyAnswered: costly.answered },
    probes: { sent: cheap.probes + costly.probes, failed: cheap.probesFailed + costly.probesFailed },
    escape: { ms: escape.ms, allowed: escape.allowed, message: escape.message },
  };
  const line = (what: string, f: ReturnType<typeof summary>) => `${what} p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms (${f.n} creates, ${f.failed} failed)`;
  console.log(line('quiet alone:              ', figures.quiet.alone));
  console.log(`${line('quiet beside cheap flood: ', figures.quiet.cheapFlood)}: p99 x${figures.p99Ratio.cheapFlood.toFixed(2)}`);
  console.log(`${line('quiet beside costly flood:', figures.quiet.costlyFlood)}: p99 x${figures.p99Ratio.costlyFlood.toFixed(2)}`);
  console.log(`floods:          ${cheap.answered} cheap and ${costly.answered} costly creates answered by ${CLIENTS} clients in ${SECONDS} s each`);
  console.log(`probes:          ${figures.probes.failed} of ${figures.probes.sent} failed (1 s timeout)`);
  console.log(`escape attempt:  ${escape.ms.toFixed(0)} ms, ${escape.allowed ? 'allowed' : `denied: ${escape.message}`}`);
  console.log(JSON.stringify(figures));
} finally {
  operator?.kill('SIGTERM');
  await controlPlane.stop();
}
