/**
 * The operator's first seconds when the cluster is not yet what it needs: started before its CRD
 * exists, it is not ready while the suite list fails, retries that list with delays that grow to
 * the cap, and once the CRD is installed it becomes ready and registers the suite-validation
 * webhook. Run as users run it: `node src/main.ts` against the real API server.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { eventually } from '../support/wait.ts';
import { freePort } from '../../src/local/ports.ts';
import { installForLocalRun } from '../../src/local/install.ts';
import { SUITE_VALIDATION } from '../../src/api/names.ts';
import { WATCH_RESTART } from '../../src/apiserver/watch.ts';
import { getObject } from '../../src/apiserver/client.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: SUITE_VALIDATION.crd } };

function readyz(port: number): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/readyz' }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', () => resolve(0));
  });
}

interface Restart {
  at: number;
  failures: number;
  delayMs: number;
}

describe('first seconds: an operator started before its CRD', function () {
  this.timeout(600_000);
  let child: ChildProcess | undefined;

  after(async function () {
    child?.kill('SIGKILL');
    // Whatever happened here, the next tests need the CRD.
    await installForLocalRun(cluster().kubeConfig, OPERATOR_NAMESPACE);
  });

  it('is not ready while its suite list fails, backs off to the cap, then becomes ready and registers its webhook', async function () {
    const { kube, controlPlane } = cluster();
    await kube.objects.delete(CRD);
    await eventually(
      async () => {
        if (await getObject(kube, CRD)) throw new Error('the CRD is still there');
      },
      { what: 'the CRD to be deleted', timeoutMs: 180_000, intervalMs: 1000 },
    );

    const servingPort = await freePort();
    const metricsPort = await freePort();
    child = spawn(
      process.execPath,
      [
        MAIN,
        `--kubeconfig=${controlPlane.kubeconfigPath}`,
        '--mode=local',
        `--namespace=${OPERATOR_NAMESPACE}`,
        `--serving-port=${servingPort}`,
        `--metrics-port=${metricsPort}`,
        '--lease-duration=4s',
        '--renew-deadline=3s',
        '--retry-period=500ms',
      ],
      { env: { ...process.env, PORTCULLIS_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const restarts: Restart[] = [];
    let output = '';
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
    // The operator logs JSON lines to stderr; a chunk may end mid-line.
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk;
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('watch broke') || !line.includes('admissionsuites')) continue;
        const entry = JSON.parse(line) as { failures: number; delayMs: number };
        restarts.push({ at: Date.now(), failures: entry.failures, delayMs: entry.delayMs });
      }
    });

    // The suite list fails until the delays reach the cap; /readyz says not ready all along.
    await eventually(
      async () => {
        if (child!.exitCode !== null) throw new Error(`the operator exited: ${output}`);
        expect(await readyz(metricsPort), 'ready while the suite list fails').to.equal(503);
        const last = restarts.at(-1);
        if (!last || last.delayMs < WATCH_RESTART.maxMs * 0.75) throw new Error(`delays so far: ${restarts.map((r) => r.delayMs).join(', ')}; operator output: ${output.slice(-1500)}`);
      },
      { what: 'the suite watch to back off to its cap', timeoutMs: 60_000, intervalMs: 250 },
    );
    // Each delay grows with the failures until the cap, and failures only count up.
    restarts.forEach((r, i) => {
      expect(r.failures).to.equal(i + 1);
      const step = Math.min(WATCH_RESTART.maxMs, WATCH_RESTART.baseMs * 2 ** i);
      expect(r.delayMs).to.be.within(step * 0.75 - 1, step * 1.25 + 1);
    });
    // And the time between attempts really grows (not a reset on every try).
    const gaps = restarts.slice(1).map((r, i) => r.at - restarts[i]!.at);
    expect(gaps.at(-1)!).to.be.above(gaps[0]! * 4);

    await installForLocalRun(cluster().kubeConfig, OPERATOR_NAMESPACE);
    await eventually(
      async () => {
        if ((await readyz(metricsPort)) !== 200) throw new Error('not ready');
      },
      { what: 'the operator to be ready once the CRD exists', timeoutMs: 60_000 },
    );
    await eventually(
      async () => {
        const configuration = await cluster().admissionregistration.readValidatingWebhookConfiguration({ name: SUITE_VALIDATION.configuration });
        if (configuration.webhooks?.[0]?.clientConfig.service?.port !== servingPort) throw new Error('registered for another operator');
      },
      { what: 'the suite-validation webhook to be registered after the CRD appeared', timeoutMs: 60_000 },
    );
  });
});
