/** The operator as a separate OS process (`node src/main.ts`, or another entry such as the image's bundle), for tests that kill it or run it as built. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cluster, OPERATOR_NAMESPACE } from './cluster.ts';
import { eventually } from './wait.ts';
import { scrape } from './prometheus.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface OperatorProcess {
  child: ChildProcess;
  metricsPort: number;
  output(): string;
  metric(name: string): Promise<number>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** `main`: the entry to run (src/main.ts by default); `nodeFlags`: Node's flags before it. */
export async function spawnOperator(args: { servingPort: number; metricsPort: number; extra?: string[]; main?: string; nodeFlags?: readonly string[] }): Promise<OperatorProcess> {
  const child = spawn(
    process.execPath,
    [
      ...(args.nodeFlags ?? []),
      args.main ?? MAIN,
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
    metric: async (name) =>
      [...(await scrape(args.metricsPort)).values()]
        .flatMap((family) => family.samples)
        .filter((sample) => sample.name === name)
        .reduce((sum, sample) => sum + sample.value, 0),
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
    { what: 'the operator process to start', timeoutMs: 60_000 },
  );
  return handle;
}
