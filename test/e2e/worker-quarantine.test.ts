/**
 * A suite that keeps killing its worker, through the real API server: a handler module's handler
 * that stops its worker (process.exit) on every request is asked 20 times and more; its worker is
 * started again each time, and after the third death the handler with that config is quarantined
 * (Ready=False, Quarantined, its requests refused by its failurePolicy without reaching the worker)
 * while, throughout, another suite's creates (a CEL webhook in the admission thread, and another
 * module's handler in a worker of its own) all succeed and /healthz answers 200. Scoped to this
 * file's namespaces (wq-*).
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

const healthz = (port: number) =>
  new Promise<number>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz' }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
  });

describe('a suite that keeps killing its worker is quarantined, and the others keep being served', function () {
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

  it('quarantines the suite after its handler stopped its worker 3 times, while every create of another suite succeeds and /healthz stays 200', async function () {
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
    try {
      for (let i = 0; i < 20; i++) await ask();
      // Its worker was started again after each death (with backoff), so it died until quarantined; then no request reaches it.
      await eventually(async () => {
        await ask();
        expect(killerAnswers.at(-1)).to.contain('is quarantined with this config');
      });
      for (let i = 0; i < 5; i++) await ask();
    } finally {
      killing = false;
      await Promise.all([otherCreates, probing]);
    }

    const killed = killerAnswers.filter((m) => m.endsWith('was not answered: its worker stopped (exit code 7)'));
    expect(killed, `deaths before the quarantine: ${JSON.stringify(killerAnswers)}`).to.have.length(3);
    expect(killerAnswers.every((m) => m.includes('internal error: handler e2e.portcullis.dev/Exits')), 'every request refused by failurePolicy Fail').to.equal(true);
    expect(killerAnswers.slice(-5).every((m) => m.includes('is quarantined with this config: it stopped its worker 3 times'))).to.equal(true);

    const suite = await waitForCondition('wq-killer', 'Ready', 'False');
    const ready = suite.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready?.reason).to.equal('Quarantined');
    expect(ready?.message).to.match(/^quarantined, its webhooks answered by their failurePolicy: webhook check: it stopped its worker 3 times \(last: handler e2e\.portcullis\.dev\/Exits: its worker stopped \(exit code 7\)\)$/);

    expect(others.refused, "the other suite's refused creates").to.deep.equal([]);
    expect(others.created, "the other suite's creates").to.be.above(0);
    expect([...new Set(probes)], '/healthz answers').to.deep.equal([200]);
    await waitForCondition('wq-other', 'Ready', 'True');
  });
});
