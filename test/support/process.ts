/** The operator as a separate OS process (`node src/main.ts`), for tests that kill it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cluster, OPERATOR_NAMESPACE } from './cluster.ts';
import { eventually } from './wait.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface OperatorProcess {
  child: ChildProcess;
  metricsPort: number;
  output(): string;
  metric(name: string): Promise<number>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function spawnOperator(args: { servingPort: number; metricsPort: number; extra?: string[] }): Promise<OperatorProcess> {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      `--kubeconfig=${cluster().controlPlane.kubeconfigPath}`,
      '--mode=local',
      `--namespace=${OPERATOR_NAMESPACE}`,
      `--serving-port=${args.servingPort}`,
      `--metrics-port=${args.metricsPort}`,
      ...(args.extra ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORTCULLIS_LOG_LEVEL: 'info' } },
  );
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const handle: OperatorProcess = {
    child,
    metricsPort: args.metricsPort,
    output: () => output,
    metric: async (name) => {
      const text = await (await fetch(`http://127.0.0.1:${args.metricsPort}/metrics`)).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith(name))
        .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
    },
    kill: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`operator exited: ${output}`);
      if (!output.includes('Portcullis is ready')) throw new Error('not ready yet');
    },
    { what: 'the operator process to start', timeoutMs: 30_000 },
  );
  return handle;
}
