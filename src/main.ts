/**
 * The operator's entry point: flags and environment to config, then start. With no cluster
 * configured it starts a local control plane of its own (local mode) and runs against it.
 * SIGTERM, SIGINT and SIGHUP become a clean stop.
 */
import fs from 'node:fs';
import { appFile } from './app-files.ts';
import { parseCommandLine } from './config.ts';
import { clusterConfigured, loadKubeConfig } from './apiserver/client.ts';
import { configureLogging, logger } from './log.ts';
import { startOperator } from './manager/operator.ts';
import { startNativeEnforcement } from './manager/native.ts';
import { tuneHeapForAdmission } from './admission/v8-tuning.ts';
import { errorMessage } from './error-message.ts';

async function main(): Promise<void> {
  const command = parseCommandLine(process.argv.slice(2), process.env);
  if ('help' in command) return void process.stdout.write(command.help);
  if ('version' in command) return void process.stdout.write(`${command.version}\n`);
  const { config } = command;
  configureLogging({ level: config.logLevel, format: config.logFormat });
  if (config.role === 'native') return runNative(config);
  tuneHeapForAdmission();
  const stops: (() => Promise<void>)[] = [];

  if (!config.kubeconfig && !clusterConfigured()) {
    // Imported lazily: the local control plane is never needed in a cluster.
    const { startControlPlane } = await import('./local/controlplane.ts');
    const { installForLocalRun } = await import('./local/install.ts');
    const dataDir = process.env.PORTCULLIS_LOCAL_DATA_DIR || appFile('.local', 'controlplane');
    fs.rmSync(dataDir, { recursive: true, force: true });
    const controlPlane = await startControlPlane({ dataDir });
    stops.push(() => controlPlane.stop());
    config.kubeconfig = controlPlane.kubeconfigPath;
    config.mode = 'local';
    await installForLocalRun(loadKubeConfig(config.kubeconfig), config.namespace);
    logger.info('started a local control plane', { kubeconfig: config.kubeconfig });
    process.stdout.write(`\nLocal control plane: kubectl --kubeconfig ${config.kubeconfig} get admissionsuites\n`);
  }

  const operator = await startOperator(config, loadKubeConfig(config.kubeconfig));
  stops.unshift(() => operator.stop());
  process.stdout.write(`Portcullis is ready: serving admission on :${operator.servingPort} (mode ${config.mode})\n`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    // In a cluster, keep answering while the endpoints and kube-proxy drop this replica.
    await operator.drain();
    if (config.mode === 'cluster') await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
    for (const stop of stops) await stop().catch((err) => logger.error('stop failed', { error: errorMessage(err) }));
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  // A closed terminal: stop the local control plane too rather than leave it running.
  process.on('SIGHUP', () => void shutdown('SIGHUP'));
}

/**
 * --role=native: only the writer of native policies (src/manager/native.ts), against the cluster
 * it runs in; no admission endpoint, no local control plane.
 */
async function runNative(config: Parameters<typeof startNativeEnforcement>[0]): Promise<void> {
  const native = await startNativeEnforcement(config, loadKubeConfig(config.kubeconfig));
  process.stdout.write('Portcullis is ready: native enforcement only, no admission endpoint (role native)\n');
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    await native.stop().catch((err) => logger.error('stop failed', { error: errorMessage(err) }));
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));
}

main().catch((err) => {
  logger.error('portcullis failed to start', { error: errorMessage(err) });
  process.exit(1);
});
