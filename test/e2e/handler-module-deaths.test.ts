/**
 * A handler that keeps killing its worker, through the real API server: a handler module's handler
 * that stops its worker (process.exit) on every request is asked 20 times and more. Each request is
 * answered by its failurePolicy and its worker started again; nothing is quarantined, since anyone
 * can send the request that stops it (the admission port asks no credential), so its suite stays
 * Ready and each death is counted (portcullis_worker_deaths_total{worker="handler-module"}). And,
 * throughout, another suite's creates (a CEL webhook in the admission thread, and another module's
 * handler in a worker of its own) all succeed and /healthz answers 200. Scoped to this file's
 * namespaces (wq-*).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { tempFolder } from '../support/temp-files.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { freePort } from '../../src/local/ports.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { LabelSelector } from '../../src/api/types.ts';

const NS = { killer: 'wq-killer', other: 'wq-other' };
const SUITES = ['wq-killer', 'wq-other'];
const only = (...namespaces: string[]): LabelSelector => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] });
const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const moduleText = (name: string, validate: string) => `export const apiVersion = '1.0';
export const handlers = [{ name: '${name}', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (config) => ({ config, errors: [] }), validate: ${validate} }];
`;

const get = (port: number, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
const healthz = async (port: number) => (await get(port, '/healthz')).status;
/** portcullis_worker_deaths_total{worker="handler-module"}, read from /metrics. */
const moduleDeaths = async (port: number) => Number(/^portcullis_worker_deaths_total\{worker="handler-module"\} (\d+)$/m.exec((await get(port, '/metrics')).body)?.[1] ?? NaN);

describe('a handler that keeps killing its worker is answered by failurePolicy each time, never quarantined, and the others keep being served', function () {
  this.timeout(300_000);
  let operator: Operator;
  let modules: string;
  let metricsPort: number;
  let serial = 0;

  before(async function () {
    modules = tempFolder('worker-quarantine-', {
      'exits.mjs': moduleText('e2e.portcullis.dev/Exits', '() => process.exit(7)'),
      'allows.mjs': moduleText('e2e.portcullis.dev/Allows', '() => ({ allowed: true })'),
    });
    await Promise.all(Object.values(NS).map((name) => ensureNamespace(name)));
    metricsPort = await freePort();
    operator = await startTestOperator({ handlerModules: modules, metricsPort });
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    for (const name of SUITES) await deleteSuite(name);
    for (const name of Object.values(NS)) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await operator?.stop();
    if (modules) fs.rmSync(path.resolve(modules), { recursive: true, force: true });
  });

  it('answers each request by failurePolicy, starts the worker again each time and counts it, quarantines nothing, while every create of another suite succeeds and /healthz stays 200', async function () {
    await createSuite('wq-killer', {
      webhooks: [{ name: 'check', type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(NS.killer), rules: configMaps, handler: { name: 'e2e.portcullis.dev/Exits', config: { team: 'a' } } }],
    });
    await createSuite('wq-other', {
      webhooks: [
        { name: 'words', type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(NS.other), rules: configMaps, validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: 'no forbidden key' }] },
        { name: 'module', type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(NS.other), rules: configMaps, handler: { name: 'e2e.portcullis.dev/Allows' } },
      ],
    });
    await Promise.all(SUITES.map((name) => waitForCondition(name, 'Ready', 'True')));
    // Both registered and called before anything is counted.
    await eventually(async () => expect((await refusal(() => createConfigMap(NS.other, `probe-${++serial}`, { forbidden: 'x' })))?.message).to.contain('no forbidden key'));
    // (this first request to the killer already stops its worker once)
    const first = await eventually(async () => {
      const message = (await refusal(() => createConfigMap(NS.killer, `probe-${++serial}`)))?.message;
      expect(message).to.contain('e2e.portcullis.dev/Exits');
      return message!;
    });

    // Throughout: the other suite's creates, one after another, and the liveness probe.
    let killing = true;
    const others: { created: number; refused: string[] } = { created: 0, refused: [] };
    const probes: number[] = [];
    const otherCreates = (async () => {
      while (killing) {
        const refused = await refusal(() => createConfigMap(NS.other, `other-${++serial}`, { fine: 'yes' }));
        if (refused) others.refused.push(refused.message ?? String(refused.code));
        else others.created++;
      }
    })();
    const probing = (async () => {
      while (killing) {
        probes.push(await healthz(metricsPort));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const killerAnswers: string[] = [first];
    const ask = async () => {
      const refused = await refusal(() => createConfigMap(NS.killer, `killer-${++serial}`));
      killerAnswers.push(refused?.message ?? 'admitted');
    };
    const killed = () => killerAnswers.filter((m) => m.endsWith('was not answered: its worker stopped (exit code 7)')).length;
    try {
      for (let i = 0; i < 20; i++) await ask();
      // Its worker is started again after each death (with backoff: meanwhile its requests are answered at once), and each new one is stopped by the next request that reaches it.
      await eventually(async () => {
        await ask();
        expect(killed()).to.be.at.least(6);
      });
    } finally {
      killing = false;
      await Promise.all([otherCreates, probing]);
    }

    expect(
      killerAnswers.every((m) => m.includes('internal error: handler e2e.portcullis.dev/Exits')),
      'every request refused by failurePolicy Fail',
    ).to.equal(true);
    expect(
      killerAnswers.filter((m) => m.includes('quarantined')),
      'nothing quarantined',
    ).to.deep.equal([]);
    expect(await moduleDeaths(metricsPort), 'each death counted').to.be.at.least(killed());
    const ready = (await waitForCondition('wq-killer', 'Ready', 'True')).status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.reason, 'its suite is served as it is').to.not.equal('Quarantined');

    expect(others.refused, "the other suite's refused creates").to.deep.equal([]);
    expect(others.created, "the other suite's creates").to.be.above(0);
    expect([...new Set(probes)], '/healthz answers').to.deep.equal([200]);
    await waitForCondition('wq-other', 'Ready', 'True');
  });
});
