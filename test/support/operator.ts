/** An operator process of our own, in local mode, against the test control plane. */
import { DEFAULTS, type OperatorConfig } from '../../src/config.ts';
import { startOperator, type Operator } from '../../src/operator.ts';
import { freePort } from '../../src/local/ports.ts';
import { cluster, OPERATOR_NAMESPACE } from './cluster.ts';

export async function startTestOperator(overrides: Partial<OperatorConfig> = {}): Promise<Operator> {
  const config: OperatorConfig = {
    ...DEFAULTS,
    namespace: OPERATOR_NAMESPACE,
    mode: 'local',
    servingPort: await freePort(),
    metricsPort: await freePort(),
    ...overrides,
  };
  return startOperator(config, cluster().kubeConfig);
}
