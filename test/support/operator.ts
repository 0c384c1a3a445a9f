/**
 * An operator process of our own, in local mode, against the test control plane; with
 * `nativeEnforcement`, the native process beside it (src/manager/native.ts, in-process, as
 * `nativeKubeConfig`: its own ServiceAccount where a test asks), stopped with it.
 * Owns starting test operators; touches no cluster object itself.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { DEFAULTS, type OperatorConfig } from '../../src/config.ts';
import { startOperator, type Operator, type StartOptions } from '../../src/manager/operator.ts';
import { startNativeEnforcement } from '../../src/manager/native.ts';
import { freePort } from '../../src/local/ports.ts';
import { cluster, OPERATOR_NAMESPACE } from './cluster.ts';
import { eventually } from './wait.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';

/** `kubeConfig`: who the operator is (the test's admin by default; operatorKubeConfig() for its ServiceAccount); `nativeKubeConfig`, who the native process is. */
export async function startTestOperator(overrides: Partial<OperatorConfig> = {}, options: StartOptions = {}, kubeConfig: KubeConfig = cluster().kubeConfig, nativeKubeConfig: KubeConfig = kubeConfig): Promise<Operator> {
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
    // The background audit writes reports and status of its own: only the tests that are about it turn it on.
    audit: false,
    ...overrides,
  };
  const operator = await startOperator(config, kubeConfig, options);
  if (!config.nativeEnforcement) return operator;
  const native = await startNativeEnforcement({ ...config, role: 'native', metricsPort: await freePort() }, nativeKubeConfig);
  return {
    ...operator,
    stop: async () => {
      await operator.stop();
      await native.stop();
    },
  };
}

/** Waits until the suite-validation webhook is registered for `operator` (each test operator serves on a port of its own). */
export async function waitForSuiteValidation(operator: Operator): Promise<void> {
  await eventually(
    async () => {
      const configuration = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: SUITE_VALIDATION.configuration });
      if (configuration.webhooks?.[0]?.clientConfig.service?.port !== operator.servingPort) throw new Error('registered for another operator');
    },
    { what: 'the suite-validation webhook to be registered for this operator' },
  );
}
