/**
 * `npm run bench:e2e`: what a webhook adds to a create, through the real API server (local control
 * plane). ConfigMap creates, one at a time, interleaved round-robin over four namespaces:
 *   none        no admission of ours;
 *   vap         a native ValidatingAdmissionPolicy with the rule;
 *   native      the same AdmissionSuite with `enforcement: Native`: the operator's compiled
 *               ValidatingAdmissionPolicy and binding, enforced by the API server itself (the
 *               issue 40 target: within 0.1 ms of the hand-written one);
 *   portcullis  an AdmissionSuite with the same rule, served by the operator (its own process, run
 *               as the image runs it: tools/build.ts' bundles, the image's Node flags);
 *   server      the same suite in the admission server alone (bench/server.ts `e2e`: the
 *               operator's HTTPS server, chain and CEL, without the operator around it);
 *   floor       the bench's bare HTTPS webhook (bench/server.ts `floor`: parse and allow);
 * E2E_OPERATOR_ARGS adds operator flags (`--admission-thread=false`: served from the operator's
 * main thread, as before the admission thread).
 * server and floor registered the way Portcullis registers itself in local mode (a Service naming
 * localhost, TLS verified against its caBundle). `server` splits Portcullis' cost over the floor
 * into what the admission path adds (server - floor) and what the operator process around it adds
 * (portcullis - server).
 * Each one's rule is checked to be in force (a create that breaks it is refused) before timing.
 * Prints each one's added median and p99 over `none`, Portcullis' ratio to the floor's and to
 * VAP's, and the CPU each webhook process spent per create it answered (the operator's includes its
 * own background work). Then each of the three servers is called straight, one review at a time at
 * about the creates' pace (E2E_PROBES each, default 1,000): the same split without the API
 * server's spread, which moves a run's medians by about 0.05 ms. The last line is one JSON
 * object. Creates that fail are counted and reported, not thrown.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../src/local/controlplane.ts';
import { installForLocalRun } from '../src/local/install.ts';
import { apply, connect, loadKubeConfig } from '../src/apiserver/client.ts';
import { shareConnections } from '../src/apiserver/connections.ts';
import { createCA, issueLeaf } from '../src/certs/x509.ts';
import { GROUP, PLURAL, VERSION } from '../src/api/types.ts';
import { DEFAULTS } from '../src/config.ts';
import { startOperatorBundle, startServer } from './processes.ts';
import { E2E_RULE, e2eSuite } from './fixtures.ts';

const CREATES = Number(process.env.E2E_CREATES ?? 1000);
const PROBES = Number(process.env.E2E_PROBES ?? 1000);
const WARM_UP = 30;
const KINDS = ['none', 'vap', 'native', 'portcullis', 'server', 'floor'] as const;
type Kind = (typeof KINDS)[number];
const { expression: RULE, message: MESSAGE } = E2E_RULE;
/** The operator as the image runs it: tools/build.ts' bundles in an /app of their own. */
const APP = fileURLToPath(new URL('../.local/e2e-app', import.meta.url));
const OPERATOR_ARGS = process.env.E2E_OPERATOR_ARGS ? process.env.E2E_OPERATOR_ARGS.split(' ') : [];
const SERVING_PORT = 19543;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const namespaceOf = (kind: Kind) => `bench-${kind}`;
const selector = (kind: Kind) => ({ matchLabels: { 'bench.portcullis.dev/kind': kind } });

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low]! + (sorted[Math.min(low + 1, sorted.length - 1)]! - sorted[low]!) * (at - low);
}

/** CPU time a process has spent, all its threads (the JIT's and GC's too), in ms; Linux's /proc. */
function cpuMs(pid: number): number | null {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).reduce((sum, task) => sum + Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]) / 1e6, 0);
  } catch {
    return null;
  }
}

/** A ConfigMap create's AdmissionReview, as the API server sends it. */
function configMapReview(uid: string, namespace: string): string {
  const gvk = { group: '', version: 'v1', kind: 'ConfigMap' };
  const gvr = { group: '', version: 'v1', resource: 'configmaps' };
  const metadata = {
    name: `probe-${uid}`,
    namespace,
    uid,
    creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    managedFields: [{ manager: 'node', operation: 'Update', apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:k0': {}, 'f:k1': {}, 'f:k2': {} } } }],
  };
  return JSON.stringify({
    kind: 'AdmissionReview',
    apiVersion: 'admission.k8s.io/v1',
    request: {
      uid,
      kind: gvk,
      resource: gvr,
      requestKind: gvk,
      requestResource: gvr,
      name: metadata.name,
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
      object: { kind: 'ConfigMap', apiVersion: 'v1', metadata, data: data(3) },
      oldObject: null,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  });
}

/** A webhook as registered, to be called straight: its address, and the name and CA the API server checks it by. */
type Target = { port: number; path: string; servername: string; ca: string };

/** Posts `body` over `agent`'s one kept-alive connection; resolves with the round trip in ms once the answer, an allow, has arrived. */
function post(target: Target, agent: https.Agent, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const request = https.request(
      { host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, servername: target.servername, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const ms = Number(process.hrtime.bigint() - start) / 1e6;
          const text = Buffer.concat(chunks).toString();
          if (response.statusCode === 200 && text.includes('"allowed":true')) resolve(ms);
          else reject(new Error(`${target.servername}: ${response.statusCode} ${text.slice(0, 300)}`));
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function data(keys: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 'v']));
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-e2e-bench-'));
const controlPlane = await startControlPlane({ dataDir: path.join(dir, 'controlplane'), log: () => undefined });
const children: ChildProcess[] = [];
try {
  const kubeConfig = shareConnections(loadKubeConfig(controlPlane.kubeconfigPath));
  const kube = connect(kubeConfig);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  await installForLocalRun(kubeConfig, DEFAULTS.namespace);
  for (const kind of KINDS) await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespaceOf(kind), labels: { 'bench.portcullis.dev/kind': kind } } });

  // vap
  await apply(kube, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'bench' },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] },
      validations: [{ expression: RULE, message: MESSAGE }],
    },
  });
  await apply(kube, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'bench' },
    spec: { policyName: 'bench', validationActions: ['Deny'], matchResources: { namespaceSelector: selector('vap') } },
  });

  // server and floor: each its own CA and certificate, named as the API server will dial it.
  const certificates = {} as Record<'server' | 'floor', { ca: string; serverName: string; certFile: string; keyFile: string }>;
  for (const kind of ['server', 'floor'] as const) {
    const service = `bench-${kind}`;
    const ca = await createCA({ commonName: `${service}-ca`, notAfter: new Date(Date.now() + 86_400_000) });
    const serverName = `${service}.default.svc`;
    const leaf = await issueLeaf(ca, { commonName: serverName, dnsNames: [serverName], usage: 'server', notAfter: new Date(Date.now() + 86_400_000) });
    const [certFile, keyFile] = [path.join(dir, `${kind}.crt`), path.join(dir, `${kind}.key`)];
    fs.writeFileSync(certFile, leaf.certPem);
    fs.writeFileSync(keyFile, leaf.keyPem);
    certificates[kind] = { ca: ca.certPem, serverName, certFile, keyFile };
  }

  const operator = await startOperatorBundle(APP, controlPlane.kubeconfigPath, [`--serving-port=${SERVING_PORT}`, '--metrics-port=19580', '--native-enforcement', ...OPERATOR_ARGS]);
  children.push(operator);
  // Native enforcement's writer: a process of its own (--role=native), as deploy/optional runs it.
  children.push(await startOperatorBundle(APP, controlPlane.kubeconfigPath, ['--role=native', '--metrics-port=19581']));
  const suite = e2eSuite(selector('portcullis'));
  await kubeConfig.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: suite });
  const nativeSuite = e2eSuite(selector('native'));
  nativeSuite.metadata.name = 'bench-native';
  nativeSuite.spec.enforcement = 'Native';
  await kubeConfig.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body: nativeSuite });

  const targets = {} as Record<'portcullis' | 'server' | 'floor', Target>;
  // Unpinned, like the operator and the API server: all share the machine's cores alike.
  const pids: Record<'portcullis' | 'server' | 'floor', number | undefined> = { portcullis: operator.pid, server: undefined, floor: undefined };
  for (const kind of ['server', 'floor'] as const) {
    const service = `bench-${kind}`;
    const { ca, serverName, certFile, keyFile } = certificates[kind];
    const started = await startServer(kind === 'server' ? 'e2e' : 'floor', certFile, keyFile, { pin: false });
    children.push(started.child);
    pids[kind] = started.child.pid;
    targets[kind] = { port: started.port, path: kind === 'server' ? '/admit/bench/keys' : '/', servername: serverName, ca };
    await apply(kube, { apiVersion: 'v1', kind: 'Service', metadata: { name: service, namespace: 'default' }, spec: { type: 'ExternalName', externalName: 'localhost' } });
    await apply(kube, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: service },
      webhooks: [
        {
          name: `${kind}.bench.portcullis.dev`,
          clientConfig: {
            service: { namespace: 'default', name: service, port: targets[kind].port, path: targets[kind].path },
            caBundle: Buffer.from(ca).toString('base64'),
          },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: selector(kind),
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    });
  }

  let sequence = 0;
  const create = async (kind: Kind, keys: number): Promise<number> => {
    const start = process.hrtime.bigint();
    await core.createNamespacedConfigMap({ namespace: namespaceOf(kind), body: { metadata: { name: `c-${sequence++}` }, data: data(keys) } });
    return Number(process.hrtime.bigint() - start) / 1e6;
  };

  // Each rule in force (the floor allows everything: it is checked to be called by its allow alone).
  for (const kind of ['vap', 'native', 'portcullis', 'server'] as const) {
    for (let i = 0; ; i++) {
      const refused = await create(kind, 11).then(
        () => false,
        (err) => String((err as { body?: unknown }).body ?? err).includes(MESSAGE),
      );
      if (refused) break;
      if (i > 600) throw new Error(`${kind}: a ConfigMap of 11 keys is still admitted after 60 s`);
      await sleep(100);
    }
  }

  // The operator's webhook for the suite (at the path the admission server alone serves it at), as it registered it.
  const configurations = await kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api).listValidatingWebhookConfiguration();
  const registered = configurations.items.flatMap((c) => c.webhooks ?? []).find((w) => w.clientConfig.service?.port === SERVING_PORT && w.clientConfig.service.path === targets.server.path);
  const service = registered?.clientConfig.service;
  if (!registered || !service) throw new Error('the operator registered no webhook for the bench suite');
  targets.portcullis = { port: SERVING_PORT, path: service.path ?? '/', servername: `${service.name}.${service.namespace}.svc`, ca: Buffer.from(registered.clientConfig.caBundle!, 'base64').toString() };

  // A server in the operator's process has no CPU figure of its own.
  const cpuNow = () => Object.fromEntries(Object.entries(pids).map(([kind, pid]) => [kind, pid === undefined ? null : cpuMs(pid)]));
  let cpuBefore: ReturnType<typeof cpuNow> = {};
  const latencies: Record<Kind, number[]> = { none: [], vap: [], native: [], portcullis: [], server: [], floor: [] };
  const failures: Record<Kind, number> = { none: 0, vap: 0, native: 0, portcullis: 0, server: 0, floor: 0 };
  for (let round = 0; round < WARM_UP + CREATES; round++) {
    if (round === WARM_UP) cpuBefore = cpuNow();
    // The order turns each round, so no kind always follows another.
    for (let k = 0; k < KINDS.length; k++) {
      const kind = KINDS[(round + k) % KINDS.length]!;
      try {
        const ms = await create(kind, 3);
        if (round >= WARM_UP) latencies[kind].push(ms);
      } catch {
        failures[kind]++;
      }
    }
  }

  const cpuAfter = cpuNow();
  const cpuPerCreateUs = Object.fromEntries(
    Object.keys(pids).map((kind) => {
      const [before, after] = [cpuBefore[kind], cpuAfter[kind]];
      return [kind, before == null || after == null ? null : Math.round(((after - before) / CREATES) * 1000)];
    }),
  );

  // Straight to each server: the order turns each round; a pause between calls keeps the creates' pace.
  const probeKinds = ['portcullis', 'server', 'floor'] as const;
  const agents = probeKinds.map((kind) => new https.Agent({ keepAlive: true, maxSockets: 1, ca: targets[kind].ca }));
  const probes: Record<(typeof probeKinds)[number], number[]> = { portcullis: [], server: [], floor: [] };
  for (let round = 0; round < WARM_UP + PROBES; round++) {
    for (let k = 0; k < probeKinds.length; k++) {
      const i = (round + k) % probeKinds.length;
      const kind = probeKinds[i]!;
      const ms = await post(targets[kind], agents[i]!, configMapReview(`probe-${round}-${kind}`, namespaceOf(kind)));
      if (round >= WARM_UP) probes[kind].push(ms);
      await sleep(3);
    }
  }
  for (const agent of agents) agent.destroy();
  const probeUs = (kind: (typeof probeKinds)[number]) => quantile(probes[kind], 0.5) * 1000;

  const base = { p50: quantile(latencies.none, 0.5), p99: quantile(latencies.none, 0.99) };
  const added = (kind: Kind) => ({ p50: quantile(latencies[kind], 0.5) - base.p50, p99: quantile(latencies[kind], 0.99) - base.p99 });
  console.log(`${CREATES} interleaved ConfigMap creates per kind (after ${WARM_UP} warm-up rounds), through kube-apiserver on loopback`);
  console.log(`none: create p50 ${base.p50.toFixed(2)} ms, p99 ${base.p99.toFixed(2)} ms`);
  for (const kind of ['vap', 'native', 'portcullis', 'server', 'floor'] as const) {
    const a = added(kind);
    console.log(`${kind.padEnd(10)} adds p50 ${a.p50.toFixed(2)} ms, p99 ${a.p99.toFixed(2)} ms${failures[kind] ? ` (${failures[kind]} failed creates)` : ''}`);
  }
  console.log(`native over the hand-written vap: p50 ${(added('native').p50 - added('vap').p50).toFixed(3)} ms, p99 ${(added('native').p99 - added('vap').p99).toFixed(3)} ms (target: within 0.1 ms)`);
  const ratioFloor = added('portcullis').p50 / added('floor').p50;
  // VAP adds less than the creates' own spread: a median it "adds" at or below zero has no ratio.
  const ratioVap = added('vap').p50 > 0 ? added('portcullis').p50 / added('vap').p50 : null;
  const ratioServer = added('server').p50 / added('floor').p50;
  console.log(`portcullis' added median: ${ratioFloor.toFixed(2)}x the floor webhook's, ${ratioVap === null ? "VAP's added median within the creates' noise (no ratio)" : `${ratioVap.toFixed(2)}x VAP's`}`);
  console.log(
    `of which the admission path (server over floor): ${(added('server').p50 - added('floor').p50).toFixed(2)} ms (${ratioServer.toFixed(2)}x), the operator process around it (portcullis over server): ${(added('portcullis').p50 - added('server').p50).toFixed(2)} ms`,
  );
  const cpu = (kind: string) => (cpuPerCreateUs[kind] === null ? 'n/a' : `${cpuPerCreateUs[kind]} us`);
  console.log(`CPU per create answered: portcullis (the operator process) ${cpu('portcullis')}, server ${cpu('server')}, floor ${cpu('floor')}`);
  console.log(
    `straight to each server (${PROBES} reviews each, one at a time): p50 round trip portcullis ${probeUs('portcullis').toFixed(0)} us, server ${probeUs('server').toFixed(0)} us, floor ${probeUs('floor').toFixed(0)} us; ` +
      `the admission path over the floor ${(probeUs('server') - probeUs('floor')).toFixed(0)} us, the operator process around it ${(probeUs('portcullis') - probeUs('server')).toFixed(0)} us`,
  );
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  console.log(
    JSON.stringify({
      creates: CREATES,
      none_p50_ms: round3(base.p50),
      none_p99_ms: round3(base.p99),
      native_over_vap_p50_ms: round3(added('native').p50 - added('vap').p50),
      ...Object.fromEntries(
        (['vap', 'native', 'portcullis', 'server', 'floor'] as const).flatMap((kind) => [
          [`${kind}_added_p50_ms`, round3(added(kind).p50)],
          [`${kind}_added_p99_ms`, round3(added(kind).p99)],
        ]),
      ),
      ratio_to_floor: round3(ratioFloor),
      server_ratio_to_floor: round3(ratioServer),
      ratio_to_vap: ratioVap === null ? null : round3(ratioVap),
      operator_args: OPERATOR_ARGS,
      failed_creates: failures,
      cpu_us_per_create: cpuPerCreateUs,
      probe_p50_us: Object.fromEntries(probeKinds.map((kind) => [kind, Math.round(probeUs(kind))])),
    }),
  );
} finally {
  for (const child of children) child.kill('SIGTERM');
  await controlPlane.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
