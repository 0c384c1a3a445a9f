/** The operator's settings: flags and environment turned into one object, with the contract's defaults. */
import { parseDuration } from './k8s/duration.ts';

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
  kubeconfig?: string;
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
  maxConcurrentReconciles: 10,
};

const FLAGS: Record<string, (config: OperatorConfig, value: string) => void> = {
  namespace: (c, v) => (c.namespace = v),
  'serving-port': (c, v) => (c.servingPort = port(v, 'serving-port')),
  'metrics-port': (c, v) => (c.metricsPort = port(v, 'metrics-port')),
  mode: (c, v) => {
    if (v !== 'cluster' && v !== 'local') throw new Error(`--mode must be cluster or local, not ${v}`);
    c.mode = v;
  },
  'ca-duration': (c, v) => (c.caDurationMs = duration(v, 'ca-duration')),
  'ca-renew-before': (c, v) => (c.caRenewBeforeMs = duration(v, 'ca-renew-before')),
  'ca-overlap': (c, v) => (c.caOverlapMs = duration(v, 'ca-overlap')),
  'lease-duration': (c, v) => (c.leaseDurationMs = duration(v, 'lease-duration')),
  'renew-deadline': (c, v) => (c.renewDeadlineMs = duration(v, 'renew-deadline')),
  'retry-period': (c, v) => (c.retryPeriodMs = duration(v, 'retry-period')),
  'shutdown-delay': (c, v) => (c.shutdownDelayMs = duration(v, 'shutdown-delay')),
  'max-concurrent-reconciles': (c, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error(`--max-concurrent-reconciles must be a whole number from 1 to 1000, not ${v}`);
    c.maxConcurrentReconciles = n;
  },
  kubeconfig: (c, v) => (c.kubeconfig = v),
};

/** `--name=value` flags; each also reads PORTCULLIS_NAME (upper case, dashes as underscores). */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): OperatorConfig {
  const config = { ...DEFAULTS };
  if (env.POD_NAMESPACE) config.namespace = env.POD_NAMESPACE;
  for (const [name, set] of Object.entries(FLAGS)) {
    const value = env[`PORTCULLIS_${name.toUpperCase().replaceAll('-', '_')}`];
    if (value) set(config, value);
  }
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    const set = match && FLAGS[match[1]!];
    if (!set) throw new Error(`unknown argument ${arg}; flags are ${Object.keys(FLAGS).map((f) => `--${f}=`).join(' ')}`);
    set(config, match[2]!);
  }
  return config;
}

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${flag} must be a port number, not ${value}`);
  return n;
}

function duration(value: string, flag: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new Error(`--${flag} must be a duration such as 87600h, not ${value}`);
  return ms;
}
