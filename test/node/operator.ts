/**
 * test/node/operator.ts: the operator installed on the node cluster as users install it, for
 * the tests in test/node/e2e/5-* to 9-*: its image (operator-image.ts) imported into the node,
 * `kubectl apply -f deploy/` unchanged, its pods and Lease as the API server shows them, a steady
 * stream of creates through the API server that classifies every answer, and where kube-proxy
 * sends a Service's traffic (the node's iptables rules).
 * Owns: the image import (once per run) and the `portcullis.dev/load` namespace's objects the
 * load creates. The install is deploy/'s; 9-operator-uninstall removes it.
 * Must not touch: anything outside the node cluster.
 */
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { eventually } from '../support/wait.ts';
import { nodeCluster } from './hooks.ts';
import { apply, getJson, kc } from './kubectl.ts';
import { ensureOperatorImage, type OperatorImage } from './operator-image.ts';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEPLOY_DIR = path.join(REPO, 'deploy');
export const OPERATOR_NS = 'portcullis-system';
export const DEPLOYMENT = 'portcullis-operator';
export const POD_SELECTOR = 'app.kubernetes.io/name=portcullis';
/** deploy/03-deployment.yaml's flag defaults (src/config.ts): leader election and the shutdown delay. */
export const LEASE_DURATION_MS = 15_000;
export const RETRY_PERIOD_MS = 2_000;
export const SHUTDOWN_DELAY_MS = 5_000;

export interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string; creationTimestamp: string };
  spec: { containers: { securityContext?: Record<string, unknown> }[]; securityContext?: Record<string, unknown> };
  status: {
    phase: string;
    podIP?: string;
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    containerStatuses?: { ready: boolean; restartCount: number; started?: boolean }[];
  };
}

export const isReady = (p: Pod) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

let image: Promise<OperatorImage> | undefined;

/** The image built from the Dockerfile (cached by its inputs) and imported into the node, once per run. */
export function operatorImage(): Promise<OperatorImage> {
  image ??= (async () => {
    const built = await ensureOperatorImage((line) => process.stderr.write(`${line}\n`));
    await nodeCluster().importImage(built.archive);
    return built;
  })();
  return image;
}

/** `kubectl apply -f deploy/`, exactly as the README and docs/operating.md say (a no-op when it is installed and unchanged). */
export async function applyDeploy(): Promise<string> {
  await operatorImage();
  return kc(['apply', '-f', DEPLOY_DIR], undefined, 60_000);
}

/** The operator installed and settled: deploy/ applied, two Ready replicas, a leader. */
export async function ensureOperator(): Promise<Pod[]> {
  await applyDeploy();
  const pods = await settledReplicas();
  await leader();
  return pods;
}

/** Every pod of the operator, terminating ones included. */
export async function operatorPods(): Promise<Pod[]> {
  return (await getJson(['get', 'pods', '-n', OPERATOR_NS, '-l', POD_SELECTOR])).items as Pod[];
}

/** Exactly `count` pods, all Ready, none terminating: the Deployment at rest. */
export async function settledReplicas(count = 2, timeoutMs = 120_000): Promise<Pod[]> {
  return eventually(
    async () => {
      const pods = await operatorPods();
      const live = pods.filter((p) => !p.metadata.deletionTimestamp);
      if (pods.length !== count || live.length !== count || !live.every(isReady))
        throw new Error(`pods: ${pods.map((p) => `${p.metadata.name} ${p.status.phase}${isReady(p) ? ' Ready' : ''}${p.metadata.deletionTimestamp ? ' terminating' : ''}`).join(', ') || 'none'}`);
      return live;
    },
    { what: `${count} Ready operator replicas and no other`, timeoutMs, intervalMs: 250 },
  );
}

/** The Lease's holder and the pod it names (identities are `<pod name>-<pid>-<random>`). */
export async function leader(timeoutMs = 60_000): Promise<{ holder: string; pod: string; transitions: number }> {
  return eventually(
    async () => {
      const lease = await getJson(['get', 'lease', '-n', OPERATOR_NS, DEPLOYMENT]);
      const holder: string | undefined = lease.spec?.holderIdentity;
      if (!holder) throw new Error('the Lease has no holder');
      const pod = (await operatorPods()).find((p) => holder.startsWith(`${p.metadata.name}-`));
      if (!pod) throw new Error(`the holder ${holder} is no current pod`);
      return { holder, pod: pod.metadata.name, transitions: lease.spec.leaseTransitions ?? 0 };
    },
    { what: 'a leader among the operator pods', timeoutMs, intervalMs: 250 },
  );
}

export async function waitSuiteReady(name: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    async () => {
      const suite = await getJson(['get', 'admissionsuite', name]);
      const ready = suite.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
      if (ready?.status !== 'True' || suite.status.observedGeneration !== suite.metadata.generation) throw new Error(`Ready: ${ready?.status} ${ready?.reason}: ${ready?.message}`);
    },
    { what: `the suite ${name} to be Ready`, timeoutMs, intervalMs: 100 },
  );
}

// ---------------------------------------------------------------------------------------------
// Requests to the API server, as the cluster's admin, over one keep-alive pool (TLS verified).

let client: { config: k8s.KubeConfig; server: URL; agent: https.Agent } | undefined;

function api() {
  if (!client) {
    const config = new k8s.KubeConfig();
    config.loadFromFile(nodeCluster().kubeconfigPath);
    client = { config, server: new URL(config.getCurrentCluster()!.server), agent: new https.Agent({ keepAlive: true, maxSockets: 64 }) };
  }
  return client;
}

export interface ApiAnswer {
  status: number;
  body: { message?: string; [key: string]: unknown };
}

/** One request; a transport error (no answer at all) is status 0 with the error as message. */
export async function apiRequest(method: string, urlPath: string, body?: unknown, timeoutMs = 40_000): Promise<ApiAnswer> {
  const { config, server, agent } = api();
  const options: https.RequestOptions = {
    method,
    host: server.hostname,
    port: server.port,
    path: urlPath,
    agent,
    timeout: timeoutMs,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
  };
  await config.applyToHTTPSOptions(options);
  options.agent = agent;
  return new Promise((resolve) => {
    const req = https.request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: ApiAnswer['body'];
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = { message: text };
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', (err) => resolve({ status: 0, body: { message: `response: ${err.message}` } }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ status: 0, body: { message: err.message } }));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

// ---------------------------------------------------------------------------------------------
// The load: creates at a steady rate, each answered by the policy, admitted, or failed.

/** The namespace the load creates in, and the suite that judges every create there. */
export const LOAD_NS = 'load';
export const LOAD_SUITE = 'load-guard';
export const LOAD_LABEL = 'portcullis.dev/load';
export const LOAD_WEBHOOK = `labelled-deny.${LOAD_SUITE}.admission.portcullis.dev`;
export const LOAD_MESSAGE = 'load-guard: ConfigMaps labelled portcullis.dev/load=deny are refused';

/**
 * Every ConfigMap created in LOAD_NS passes through this suite's webhook (failurePolicy Fail):
 * those labelled deny are refused with LOAD_MESSAGE, the others allowed. So an allowed create
 * fails if the webhook cannot be reached, and a refused one shows that it was consulted.
 */
export const loadSuite = {
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: LOAD_SUITE },
  spec: {
    failurePolicy: 'Fail',
    webhooks: [
      {
        name: 'labelled-deny',
        type: 'Validating',
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': LOAD_NS } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        validations: [
          {
            expression: `!has(object.metadata.labels) || !('${LOAD_LABEL}' in object.metadata.labels) || object.metadata.labels['${LOAD_LABEL}'] != 'deny'`,
            message: LOAD_MESSAGE,
          },
        ],
      },
    ],
  },
};

export async function ensureLoadNamespace(): Promise<void> {
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: LOAD_NS } });
}

export interface Outcome {
  seq: number;
  /** ms since the load started. */
  sentAt: number;
  doneAt: number;
  deny: boolean;
  status: number;
  message: string;
}

/**
 * policy: refused by the suite with its message. allowed: an allow-labelled create admitted.
 * unjudged: a deny-labelled create admitted, i.e. the API server did not call the webhook (no
 * configuration registered yet, or one removed). failed: anything else: a transport error, a
 * webhook call that failed, a timeout, a refusal that is not the policy's.
 */
export type Verdict = 'policy' | 'allowed' | 'unjudged' | 'failed';

export function verdict(o: Outcome): Verdict {
  if (o.status === 201) return o.deny ? 'unjudged' : 'allowed';
  if (o.deny && o.status >= 400 && o.status < 500 && o.message.includes(`admission webhook "${LOAD_WEBHOOK}" denied the request: ${LOAD_MESSAGE}`)) return 'policy';
  return 'failed';
}

export interface LoadSummary {
  sent: number;
  policy: number;
  allowed: number;
  unjudged: number;
  failed: number;
  /** The first few failed creates, with when they were sent. */
  failures: string[];
  /** The first few creates admitted unjudged. */
  unjudgedSamples: string[];
  seconds: number;
  perSecond: number;
}

export class CreateLoad {
  readonly outcomes: Outcome[] = [];
  readonly started = performance.now();
  private readonly perSecond: number;
  private readonly run = Math.random().toString(36).slice(2, 8);
  private readonly inflight = new Set<Promise<void>>();
  private sent = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  /** Starts at once: creates at a fixed rate whatever the answers take (an open loop, as real clients). */
  constructor(perSecond = 20) {
    this.perSecond = perSecond;
    this.tick();
  }

  now(): number {
    return performance.now() - this.started;
  }

  private tick(): void {
    if (this.stopped) return;
    const due = Math.floor((this.now() * this.perSecond) / 1000) + 1;
    while (this.sent < due) this.send(this.sent++);
    this.timer = setTimeout(() => this.tick(), 1000 / this.perSecond / 2);
  }

  private send(seq: number): void {
    const deny = seq % 2 === 1;
    const sentAt = this.now();
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `load-${this.run}-${seq}`, labels: { [LOAD_LABEL]: deny ? 'deny' : 'allow' } },
      data: { seq: String(seq) },
    };
    const p = apiRequest('POST', `/api/v1/namespaces/${LOAD_NS}/configmaps`, body).then((answer) => {
      this.outcomes.push({ seq, sentAt, doneAt: this.now(), deny, status: answer.status, message: answer.body.message ?? '' });
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Stops sending, waits for every answer, and counts them. */
  async stop(): Promise<LoadSummary> {
    this.stopped = true;
    clearTimeout(this.timer);
    const seconds = this.now() / 1000;
    while (this.inflight.size) await Promise.all([...this.inflight]);
    return summarize(this.outcomes, seconds);
  }
}

export function summarize(outcomes: Outcome[], seconds: number): LoadSummary {
  const count = (v: Verdict) => outcomes.filter((o) => verdict(o) === v).length;
  const samples = (v: Verdict) =>
    outcomes
      .filter((o) => verdict(o) === v)
      .sort((a, b) => a.sentAt - b.sentAt)
      .slice(0, 5)
      .map((o) => `#${o.seq} sent at ${(o.sentAt / 1000).toFixed(2)} s (${o.deny ? 'deny' : 'allow'}): ${o.status} ${o.message.slice(0, 300)}`);
  const failures = samples('failed');
  return {
    sent: outcomes.length,
    policy: count('policy'),
    allowed: count('allowed'),
    unjudged: count('unjudged'),
    failed: count('failed'),
    failures,
    unjudgedSamples: samples('unjudged'),
    seconds,
    perSecond: outcomes.length / seconds,
  };
}

export function describeLoad(s: LoadSummary): string {
  return `${s.sent} creates in ${s.seconds.toFixed(1)} s (${s.perSecond.toFixed(1)}/s): ${s.policy} refused by the policy, ${s.allowed} allowed, ${s.unjudged} admitted unjudged, ${s.failed} failed${s.failures.length ? `\n  ${s.failures.join('\n  ')}` : ''}`;
}

// ---------------------------------------------------------------------------------------------
// Where kube-proxy sends a Service's traffic.

/** The `IP:port` endpoints of a Service's ClusterIP chain in the node's iptables (nat table), as kube-proxy wrote it. */
export async function proxiedEndpoints(service: string, namespace = OPERATOR_NS): Promise<string[]> {
  const r = await nodeCluster().inNetns('iptables-save', ['-t', 'nat']);
  if (r.code !== 0) throw new Error(`iptables-save in the node's namespace failed: ${r.stderr}`);
  const found = new Set<string>();
  const prefix = `${namespace}/${service}:`;
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('-A KUBE-SVC-')) continue;
    const m = /--comment "?(\S+) -> (\d+\.\d+\.\d+\.\d+:\d+)"?/.exec(line);
    if (m && m[1]!.startsWith(prefix)) found.add(m[2]!);
  }
  return [...found];
}

/** The Service's EndpointSlice entries: address -> ready. */
export async function sliceEndpoints(service: string, namespace = OPERATOR_NS): Promise<Map<string, boolean>> {
  const answer = await apiRequest('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${service}`);
  if (answer.status !== 200) throw new Error(`listing EndpointSlices: ${answer.status} ${answer.body.message}`);
  const out = new Map<string, boolean>();
  for (const slice of (answer.body as { items?: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[] }).items ?? [])
    for (const e of slice.endpoints ?? []) for (const a of e.addresses) out.set(a, e.conditions?.ready === true);
  return out;
}

export interface Removal {
  /** ms from `since` until the EndpointSlice no longer had the pod ready. */
  unreadyMs: number;
  /** ms from `since` until kube-proxy's rules no longer sent the Service's traffic to the pod. */
  rulesGoneMs: number;
}

/**
 * Polls (every 50 ms) the Service's EndpointSlice and the node's iptables rules until the pod's
 * address is neither ready in the one nor a destination in the other; `since` is a
 * performance.now() instant (the deletion or eviction request).
 */
export async function watchRemoval(podIP: string, service: string, since: number, timeoutMs = 30_000): Promise<Removal> {
  const until = async (what: string, gone: () => Promise<boolean>): Promise<number> => {
    while (performance.now() - since < timeoutMs) {
      if (await gone()) return performance.now() - since;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${podIP} still ${what} ${timeoutMs} ms after it began terminating`);
  };
  const [unreadyMs, rulesGoneMs] = await Promise.all([
    until('ready in the EndpointSlice', async () => (await sliceEndpoints(service)).get(podIP) !== true),
    until("in kube-proxy's rules", async () => !(await proxiedEndpoints(service)).some((e) => e.startsWith(`${podIP}:`))),
  ]);
  return { unreadyMs, rulesGoneMs };
}

/** Names of objects of ours (labelled, or named portcullis-*) among `kinds`, in all namespaces. */
async function ours(kinds: string): Promise<string[]> {
  const list = await getJson(['get', kinds, '-A']);
  return list.items
    .filter(
      (o: { metadata: { name: string; labels?: Record<string, string> } }) =>
        o.metadata.name.startsWith('portcullis') || o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'portcullis' || o.metadata.labels?.['app.kubernetes.io/name'] === 'portcullis',
    )
    .map((o: { kind: string; metadata: { name: string; namespace?: string } }) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
}

/** Every kind Portcullis installs or makes. */
const OUR_KINDS = [
  'validatingwebhookconfigurations,mutatingwebhookconfigurations',
  'validatingadmissionpolicies,validatingadmissionpolicybindings',
  'clusterroles,clusterrolebindings',
  'roles,rolebindings',
  'secrets,services,serviceaccounts',
  'deployments,poddisruptionbudgets,networkpolicies',
  'customresourcedefinitions',
];

/** Objects of ours among `kinds` (all of Portcullis' kinds by default), in all namespaces: what an uninstall must leave none of. */
export async function ourObjects(kinds?: string): Promise<string[]> {
  return (await Promise.all((kinds ? [kinds] : OUR_KINDS).map(ours))).flat();
}
