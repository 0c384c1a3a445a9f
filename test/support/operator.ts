/** An operator process of our own, in local mode, against the test control plane. */
import { DEFAULTS, type OperatorConfig } from '../../src/config.ts';
import { startOperator, type Operator, type StartOptions } from '../../src/operator.ts';
import { freePort } from '../../src/local/ports.ts';
import { cluster, OPERATOR_NAMESPACE } from './cluster.ts';

export async function startTestOperator(overrides: Partial<OperatorConfig> = {}, options: StartOptions = {}): Promise<Operator> {
  const config: OperatorConfig = {
    ...DEFAULTS,
    namespace: OPERATOR_NAMESPACE,
    mode: 'local',
    servingPort: await freePort(),
    metricsPort: await freePort(),
    // Short leases so a stopped test operator's successor takes over quickly.
    leaseDurationMs: 4000,
    renewDeadlineMs: 3000,
    retryPeriodMs: 500,
    caOverlapMs: 2000,
    ...overrides,
  };
  return startOperator(config, cluster().kubeConfig, options);
}
