/** The operator's settings: flags and environment turned into one object, with the contract's defaults. */
import { parseArgs } from 'node:util';
import { parseDuration } from './kubernetes/duration.ts';
import { LOG_LEVELS, type LogLevel } from './log.ts';
import { VERSION } from './version.ts';
import { errorMessage } from './error-message.ts';
import { parseBackends } from './handlers/backends.ts';

/**
 * The time budget of a handler's run when none is set (--handler-budget): a fifth of the API
 * server's default webhook timeout (10 s), so a handler past it is answered by failurePolicy long
 * before the API server gives up on the webhook and applies the policy itself.
 */
export const DEFAULT_HANDLER_BUDGET_MS = 2_000;

export interface OperatorConfig {
  /** Where the operator runs; its CA Secret and the suites' Secrets and Services live here. */
  namespace: string;
  /** HTTPS port of the admission endpoint. */
  servingPort: number;
  /** Plain HTTP port of /metrics, /healthz, /readyz. */
  metricsPort: number;
  /**
   * `cluster`: Services select the operator's pods. `local`: no kube-proxy, so Services are
   * ExternalName to localhost and the webhooks name the serving port.
   */
  mode: 'cluster' | 'local';
  caDurationMs: number;
  caRenewBeforeMs?: number;
  /** How long a new CA is in every caBundle before it signs, and an old one stays after. */
  caOverlapMs: number;
  /** Leader election (client-go's defaults). */
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /**
   * After SIGTERM: how long the replica keeps answering (unready, closing each connection after
   * its answer) before it stops listening, so the API server's calls move to the other replicas
   * while the endpoints and kube-proxy's rules are updated.
   */
  shutdownDelayMs: number;
  /** Suites reconciled at once (controller-runtime's MaxConcurrentReconciles); one suite is never reconciled twice at once. */
  maxConcurrentReconciles: number;
  /** Whether the admission endpoint is served from a thread of its own or from the main thread. Why: docs/adr/0011-admission-thread.md */
  admissionThread: boolean;
  /** Connections the admission endpoint keeps from one source address (of its 1,000); unset, the endpoint's default (250). */
  maxConnectionsPerAddress?: number;
  /** Workers judging large reviews at once; unset, one per CPU the process may run on, at most 2 (what the shipped 1Gi memory limit holds). */
  reviewWorkers?: number;
  /** Whether Mutating AdmissionPolicies are served (a cluster admin's limit on what teams may do). */
  namespacedPolicyMutations: boolean;
  /** The CEL cost one AdmissionPolicy may spend on one request (the API server's budget per policy is 10,000,000). */
  namespacedPolicyCostBudget: number;
  /** The CEL cost one namespace's AdmissionPolicies may spend together on one request; unset: 5 x namespacedPolicyCostBudget. */
  namespacedPolicyNamespaceCostBudget?: number;
  /** How long one namespace's AdmissionPolicies may evaluate one request, in milliseconds. */
  namespacedPolicyDeadlineMs: number;
  /** The most AdmissionPolicies served in one namespace (the oldest keep their place). */
  namespacedPoliciesPerNamespace: number;
  /** The largest AdmissionPolicy spec, serialized, in bytes: refused on apply beyond it. */
  namespacedPolicyMaxBytes: number;
  /** How often a Mutating AdmissionPolicy's author is asked again whether they may still change what it changes. */
  namespacedPolicyAuthorRecheckMs: number;
  /** The tenant workers the AdmissionPolicies are evaluated in (admission/threads/policy-workers.ts). */
  namespacedPolicyWorkers: number;
  /** What a type error does on apply where a suite or policy does not set spec.typeCheckErrors. */
  typeCheckErrors: 'Warn' | 'Deny';
  /** Whether the leader audits stored objects in the background (src/audit). */
  audit: boolean;
  /** A full audit scan every this often, in milliseconds (changes of audited objects are judged as they come). */
  auditIntervalMs: number;
  /** Whether audit results are also written as wgpolicyk8s.io/v1alpha2 PolicyReports (their CRDs installed by the admin). */
  policyReports: boolean;
  /**
   * Whether suites' webhooks may be enforced natively (enforcement: Native or Auto), as
   * ValidatingAdmissionPolicies the operator writes. Off by default: it needs the grants of
   * deploy/optional/native-enforcement.yaml, which no admission control can narrow (the API server
   * sends no write of a policy to a policy or webhook), so the admin opts in knowingly.
   */
  nativeEnforcement: boolean;
  /**
   * `operator`: the serving operator (admission, suites, certificates). `native`: only the writer
   * of natively enforced webhooks' ValidatingAdmissionPolicies and bindings (and the keeper of the
   * token guard's), a process of its own identity with no admission port (src/manager/native.ts):
   * the serving pods, which face the network, then hold no grant that writes admission policies.
   */
  role: 'operator' | 'native';
  /** A folder of handler modules (src/handler-modules) loaded at start; unset, none. */
  handlerModules?: string;
  /** How long a module's handler may take on one request before it is answered by the webhook's failurePolicy. */
  handlerBudgetMs: number;
  /**
   * The URLs built-in handlers may call (ImagePolicyWebhook's backend), as https URL prefixes;
   * empty: none, so no suite can make the operator call out until the cluster admin allows a backend.
   */
  handlerBackends: string[];
  kubeconfig?: string;
  logLevel: LogLevel;
  /** json: one JSON object a line (for log collectors); text: one readable line (for people). */
  logFormat: 'json' | 'text';
}

export const DEFAULTS: OperatorConfig = {
  namespace: 'portcullis-system',
  servingPort: 9443,
  metricsPort: 8080,
  mode: 'cluster',
  caDurationMs: 10 * 365 * 24 * 3600_000,
  caOverlapMs: 60_000,
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  shutdownDelayMs: 5_000,
  // A reconcile mostly waits on the API server. Why 40: docs/adr/0018-forty-reconciles-at-once.md
  maxConcurrentReconciles: 40,
  admissionThread: true,
  namespacedPolicyMutations: true,
  namespacedPolicyCostBudget: 1_000_000,
  namespacedPolicyDeadlineMs: 500,
  namespacedPoliciesPerNamespace: 50,
  namespacedPolicyMaxBytes: 65_536,
  namespacedPolicyAuthorRecheckMs: 120_000,
  namespacedPolicyWorkers: 2,
  typeCheckErrors: 'Warn',
  audit: true,
  auditIntervalMs: 10 * 60_000,
  policyReports: false,
  nativeEnforcement: false,
  role: 'operator',
  handlerBudgetMs: DEFAULT_HANDLER_BUDGET_MS,
  handlerBackends: [],
  logLevel: 'info',
  logFormat: 'json',
};

/** Each flag: what --help says of it, and how its value (from the flag or PORTCULLIS_<NAME>) sets the config. */
const FLAGS: Record<string, { help: string; /** true/false: may be given bare, meaning true. */ boolean?: true; set(config: OperatorConfig, value: string): void }> = {
  namespace: { help: 'where the operator runs (its CA, Secrets, Services); default POD_NAMESPACE or portcullis-system', set: (c, v) => (c.namespace = v) },
  'serving-port': { help: 'HTTPS port of the admission endpoint (9443)', set: (c, v) => (c.servingPort = port(v, 'serving-port')) },
  'metrics-port': { help: 'plain HTTP port of /metrics, /healthz, /readyz (8080)', set: (c, v) => (c.metricsPort = port(v, 'metrics-port')) },
  mode: {
    help: 'cluster (Services select the pods) or local (no kube-proxy: ExternalName Services to localhost)',
    set: (c, v) => {
      if (v !== 'cluster' && v !== 'local') throw new Error(`--mode must be cluster or local, not ${v}`);
      c.mode = v;
    },
  },
  'ca-duration': { help: "the operator CA's lifetime (87600h)", set: (c, v) => (c.caDurationMs = duration(v, 'ca-duration')) },
  'ca-renew-before': { help: 'rotate the CA when this much of its life remains (a third of it)', set: (c, v) => (c.caRenewBeforeMs = duration(v, 'ca-renew-before')) },
  'ca-overlap': { help: 'how long a new CA is trusted before it signs, and an old one after (1m)', set: (c, v) => (c.caOverlapMs = duration(v, 'ca-overlap')) },
  'lease-duration': { help: 'leader election lease (15s)', set: (c, v) => (c.leaseDurationMs = duration(v, 'lease-duration')) },
  'renew-deadline': { help: 'leader election renew deadline (10s)', set: (c, v) => (c.renewDeadlineMs = duration(v, 'renew-deadline')) },
  'retry-period': { help: 'leader election retry period (2s)', set: (c, v) => (c.retryPeriodMs = duration(v, 'retry-period')) },
  'shutdown-delay': { help: 'after SIGTERM, how long to keep answering, unready (5s)', set: (c, v) => (c.shutdownDelayMs = duration(v, 'shutdown-delay')) },
  kubeconfig: { help: 'the cluster to run against (default: in-cluster, KUBECONFIG, ~/.kube/config, else a local control plane)', set: (c, v) => (c.kubeconfig = v) },
  'log-level': {
    help: `${LOG_LEVELS.join(', ')} (info)`,
    set: (c, v) => {
      if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new Error(`--log-level must be one of ${LOG_LEVELS.join(', ')}, not ${v}`);
      c.logLevel = v as LogLevel;
    },
  },
  'log-format': {
    help: 'json (one object a line, for collectors) or text (for people) (json)',
    set: (c, v) => {
      if (v !== 'json' && v !== 'text') throw new Error(`--log-format must be json or text, not ${v}`);
      c.logFormat = v;
    },
  },
  'admission-thread': {
    help: "whether the admission endpoint is served from a thread of its own rather than the operator's main thread: true or false (true)",
    boolean: true,
    set: (c, v) => (c.admissionThread = bool(v, 'admission-thread')),
  },
  'max-connections-per-address': {
    help: "connections the admission endpoint keeps from one source address other than the API server's, of the 1000 they share; beyond, they are refused (250). The API server's addresses hold this and 4 more per webhook served",
    set: (c, v) => (c.maxConnectionsPerAddress = wholeNumber(v, 'max-connections-per-address', 1, 1000)),
  },
  'review-workers': {
    help: 'worker threads judging large reviews (256 KiB or more) at once; each may hold a few hundred MB for the largest, so raise it with the memory limit (one per CPU, at most 2)',
    set: (c, v) => (c.reviewWorkers = wholeNumber(v, 'review-workers', 1, 64)),
  },
  'namespaced-policy-mutations': {
    help: "whether Mutating AdmissionPolicies (teams' policies in their namespaces) are served: true or false (true)",
    set: (c, v) => {
      if (v !== 'true' && v !== 'false') throw new Error(`--namespaced-policy-mutations must be true or false, not ${v}`);
      c.namespacedPolicyMutations = v === 'true';
    },
  },
  'namespaced-policy-cost-budget': {
    help: "the CEL cost one AdmissionPolicy may spend on one request, in the API server's units; past it the request is denied (1000000)",
    set: (c, v) => (c.namespacedPolicyCostBudget = wholeNumber(v, 'namespaced-policy-cost-budget', 1, 10_000_000, "(the API server's own budget)")),
  },
  'namespaced-policy-namespace-cost-budget': {
    help: 'the CEL cost all the AdmissionPolicies of one namespace may spend together on one request; past it the request is denied, naming the policy that ran out (5 x --namespaced-policy-cost-budget)',
    set: (c, v) => (c.namespacedPolicyNamespaceCostBudget = wholeNumber(v, 'namespaced-policy-namespace-cost-budget', 1, 100_000_000)),
  },
  'namespaced-policy-deadline': {
    help: 'how long the AdmissionPolicies of one namespace may evaluate one request, whatever they cost; past it the request is denied (500ms)',
    set: (c, v) => {
      const ms = duration(v, 'namespaced-policy-deadline');
      if (ms < 1 || ms > 10_000) throw new Error(`--namespaced-policy-deadline must be from 1ms to 10s (the API server waits 10s for the webhook), not ${v}`);
      c.namespacedPolicyDeadlineMs = ms;
    },
  },
  'namespaced-policies-per-namespace': {
    help: 'the most AdmissionPolicies served in one namespace; the oldest keep their place, newer ones are Ready=False, ExceedsLimits (50)',
    set: (c, v) => (c.namespacedPoliciesPerNamespace = wholeNumber(v, 'namespaced-policies-per-namespace', 1, 10_000)),
  },
  'type-check-errors': {
    help: 'what an expression that fails type checking on every kind its webhook matches does on apply, where a suite or policy does not set spec.typeCheckErrors: Warn (accepted, with warnings, as ValidatingAdmissionPolicy) or Deny (refused) (Warn)',
    set: (c, v) => {
      if (v !== 'Warn' && v !== 'Deny') throw new Error(`--type-check-errors must be Warn or Deny, not ${v}`);
      c.typeCheckErrors = v;
    },
  },
  'namespaced-policy-workers': {
    help: "the worker threads AdmissionPolicies are evaluated in, away from the operator's probes and the suites; a namespace has one request in them at a time, and the namespaces take turns (2)",
    set: (c, v) => (c.namespacedPolicyWorkers = wholeNumber(v, 'namespaced-policy-workers', 1, 64)),
  },
  audit: { help: 'whether the leader audits stored objects against the suites and policies, writing OpenReports Reports (true)', boolean: true, set: (c, v) => (c.audit = bool(v, 'audit')) },
  'audit-interval': { help: 'a full audit scan every this often; changes of audited objects are judged as they come (10m)', set: (c, v) => (c.auditIntervalMs = duration(v, 'audit-interval')) },
  'native-enforcement': {
    help: "let suites' webhooks be enforced natively (enforcement: Native or Auto) as ValidatingAdmissionPolicies, which the portcullis-native Deployment of deploy/optional/native-enforcement.yaml writes (false)",
    boolean: true,
    set: (c, v) => (c.nativeEnforcement = bool(v, 'native-enforcement')),
  },
  role: {
    help: 'operator (serves admission and reconciles suites) or native (only writes the ValidatingAdmissionPolicies and bindings of webhooks the serving operator enforces natively, and puts back the token guard if it is deleted; no admission port) (operator)',
    set: (c, v) => {
      if (v !== 'operator' && v !== 'native') throw new Error(`--role must be operator or native, not ${v}`);
      c.role = v;
    },
  },
  'policy-reports': { help: 'also write audit results as wgpolicyk8s.io/v1alpha2 PolicyReports, whose CRDs must be installed (false)', boolean: true, set: (c, v) => (c.policyReports = bool(v, 'policy-reports')) },
  'namespaced-policy-author-recheck': {
    help: 'how often the author of each Mutating AdmissionPolicy is asked again whether they may still update and patch what it changes, and the author of each suite with params whether they may still read them; one whose author may not is not served (2m)',
    set: (c, v) => (c.namespacedPolicyAuthorRecheckMs = duration(v, 'namespaced-policy-author-recheck')),
  },
  'namespaced-policy-max-bytes': {
    help: 'the largest AdmissionPolicy spec, serialized as JSON, in bytes; a larger one is refused on apply (65536)',
    set: (c, v) => (c.namespacedPolicyMaxBytes = wholeNumber(v, 'namespaced-policy-max-bytes', 1024, 1_048_576)),
  },
  'handler-modules': {
    help: 'a folder of handler modules loaded at start (each *.js, *.mjs, *.ts file, or package with a main, exporting apiVersion and handlers named by their domain, such as acme.dev/UniqueIngressHost); each runs in a worker thread of its own (none)',
    set: (c, v) => (c.handlerModules = v),
  },
  'handler-budget': {
    help: "how long a module's handler may take on one request; past it the request is answered by the webhook's failurePolicy (2s)",
    set: (c, v) => {
      const ms = duration(v, 'handler-budget');
      if (ms < 1 || ms > 10_000) throw new Error(`--handler-budget must be from 1ms to 10s (the API server waits at most 30s, 10s by default), not ${v}`);
      c.handlerBudgetMs = ms;
    },
  },
  'handler-backends': {
    help: "the backends built-in handlers may call (ImagePolicyWebhook's url), comma-separated https URLs: one allows its host and port and the paths at or below its own; a suite naming another URL is refused on apply (none)",
    set: (c, v) => {
      const parsed = parseBackends(v);
      if ('error' in parsed) throw new Error(`--handler-backends: ${parsed.error}`);
      c.handlerBackends = parsed.entries;
    },
  },
  'max-concurrent-reconciles': {
    help: 'suites reconciled at once; one suite is never reconciled twice at once (40)',
    set: (c, v) => (c.maxConcurrentReconciles = wholeNumber(v, 'max-concurrent-reconciles', 1, 1000)),
  },
};

/** What the command line asks: help, the version, or a run with this config. */
export type CommandLine = { help: string } | { version: string } | { config: OperatorConfig };

/**
 * A true/false flag given bare (`--policy-reports`, as the chart writes it) means true: written
 * `--name=true` before parsing, unless a value follows it (`--audit false`).
 */
function withBareBooleans(argv: string[]): string[] {
  return argv.map((arg, i) => {
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    const next = argv[i + 1];
    return name !== undefined && FLAGS[name]?.boolean && (next === undefined || next.startsWith('-')) ? `${arg}=true` : arg;
  });
}

/**
 * `--name=value` or `--name value` flags (node:util parseArgs), `--help`, `--version`; each flag
 * also reads PORTCULLIS_NAME (upper case, dashes as underscores), which a flag overrides.
 */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({
      args: withBareBooleans(argv),
      options: {
        ...Object.fromEntries(Object.keys(FLAGS).map((name) => [name, { type: 'string' as const }])),
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new Error(`${errorMessage(err).split('. ')[0]}; see --help`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) return { help: usage() };
  if (values.version) return { version: `portcullis ${VERSION} (Node.js ${process.version})` };
  const config = { ...DEFAULTS };
  if (env.POD_NAMESPACE) config.namespace = env.POD_NAMESPACE;
  for (const [name, flag] of Object.entries(FLAGS)) {
    const value = env[`PORTCULLIS_${name.toUpperCase().replaceAll('-', '_')}`];
    if (value) flag.set(config, value);
  }
  for (const [name, flag] of Object.entries(FLAGS)) {
    const value = values[name];
    if (typeof value === 'string') flag.set(config, value);
  }
  return { config };
}

function usage(): string {
  const width = Math.max(...Object.keys(FLAGS).map((name) => name.length)) + 4;
  return [
    `portcullis ${VERSION}: the Portcullis operator (AdmissionSuites: TLS, registration, rotation, and the webhooks that answer).`,
    '',
    'Usage: node src/main.ts [flags]',
    '',
    ...Object.entries(FLAGS).map(([name, { help }]) => `  --${name}=`.padEnd(width + 4) + help),
    '  -h, --help'.padEnd(width + 4) + 'print this and exit',
    '  --version'.padEnd(width + 4) + 'print the version and exit',
    '',
    'Each flag can also be set as PORTCULLIS_<NAME> (upper case, dashes as underscores); a flag overrides it.',
    'Offline checks of suites: the portcullis command (src/cli/main.ts): portcullis --help.',
    '',
  ].join('\n');
}

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${flag} must be a port number, not ${value}`);
  return n;
}

/** A whole number from `min` to `max` (`why` says where a bound comes from), or a refusal naming the flag. */
function wholeNumber(value: string, flag: string, min: number, max: number, why = ''): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${flag} must be a whole number from ${min} to ${max}${why ? ` ${why}` : ''}, not ${value}`);
  return n;
}

function bool(value: string, flag: string): boolean {
  if (value !== 'true' && value !== 'false') throw new Error(`--${flag} must be true or false, not ${value}`);
  return value === 'true';
}

function duration(value: string, flag: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new Error(`--${flag} must be a duration such as 87600h, not ${value}`);
  return ms;
}
