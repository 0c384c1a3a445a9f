/**
 * Handler modules (--handler-modules) through the real API server. The example module
 * (examples/unique-ingress-host, and examples/replicas-quota) is built as its users build it (copied
 * out of the repository, its own `npm install` with `portcullis` from the packed tarball, then
 * `npm run build`: test/support/package.ts) and copied into a folder
 * with three more modules: one whose handler throws, one whose handler busy-loops past its budget,
 * and one built for another major version of the handler API (refused at start, in one log line).
 * The operator loads the folder; suites name the handlers as they name built-ins; an Ingress with
 * a host another namespace's Ingress has is refused, a unique one admitted; the faulty handlers are
 * answered by their webhooks' failurePolicy and counted; and a CEL suite's answers, timed at the
 * client while the busy loop runs, keep their latency. Last, the image's bundles (tools/build.ts)
 * run as the image runs them serve the module from a folder laid out as the example's Dockerfile
 * lays it out (its worker's bundle found beside main.js). Everything is scoped to this file's
 * namespaces (hmod-*).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import winston from 'winston';
import * as k8s from '@kubernetes/client-node';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, waitForCondition } from '../support/suites.ts';
import { createConfigMap, deployment, ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { sampleValue, scrape } from '../support/prometheus.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { freePort } from '../../src/local/ports.ts';
import { logger } from '../../src/log.ts';
import { customHandlerNames } from '../../src/handlers/module-handlers.ts';
import { quantile } from '../../bench/stats.ts';
import { buildApp } from '../../tools/build.ts';
import { OPERATOR_NODE_FLAGS } from '../../src/admission/v8-tuning.ts';
import { spawnOperator, type OperatorProcess } from '../support/process.ts';
import { installExample, npm } from '../support/package.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { HandlerRef, LabelSelector, SuiteSpec, WebhookSpec } from '../../src/api/types.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/unique-ingress-host', import.meta.url));
const QUOTA_EXAMPLE = fileURLToPath(new URL('../../examples/replicas-quota', import.meta.url));
const NS = { a: 'hmod-a', b: 'hmod-b', quota: 'hmod-quota', faults: 'hmod-faults', other: 'hmod-other' };
/** The bundle's own (the first describe's may still be terminating). */
const BUNDLE_NS = { a: 'hmod-bundle-a', b: 'hmod-bundle-b' };
const SUITES = ['hmod-unique', 'hmod-quota', 'hmod-faults', 'hmod-other', 'hmod-unknown', 'hmod-bundle'];
const BUDGET_MS = 1_000;
const UNIQUE = 'example.portcullis.dev/UniqueIngressHost';

const only = (...namespaces: string[]): LabelSelector => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] });
const configMapRule = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };

let serial = 0;
const unique = (prefix: string) => `${prefix}-${++serial}`;

function ingress(name: string, host: string): k8s.V1Ingress {
  return {
    metadata: { name },
    spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
  };
}
const createIngress = (namespace: string, body: k8s.V1Ingress) => cluster().kubeConfig.makeApiClient(k8s.NetworkingV1Api).createNamespacedIngress({ namespace, body });

/** The module source of a module built for this API (1.0) whose one handler, on ConfigMaps, validates with `validate`. */
const faultyModule = (name: string, validate: string, apiVersion = '1.0') => `export const apiVersion = '${apiVersion}';
export const handlers = [{ name: '${name}', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (config) => ({ config, errors: [] }), validate: ${validate} }];
`;

/** A Validating webhook (failurePolicy Fail) on `resources` of `group` in `namespaces`, answered by a module's handler. */
function moduleWebhook(name: string, namespaces: string[], group: string, resources: string[], handler: HandlerRef): WebhookSpec {
  return { name, type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(...namespaces), rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [group], apiVersions: ['v1'], resources }], handler };
}

/** The API server's refusal of `call`, asked again while it admits: the webhook is being registered, the caches filled (`call` makes fresh names). */
function refusedEventually(call: () => Promise<unknown>, what: string): Promise<{ code?: number; message?: string }> {
  return eventually(async () => (await refusal(call)) ?? Promise.reject(new Error(`${what} was admitted`)), { what: `${what} to be refused` });
}

/** UniqueIngressHost served for namespaces `a` and `b` by suite `suite`: a host of `a`'s taken again in `b` is refused, naming the first Ingress. */
async function duplicateHostRefused(suite: string, a: string, b: string, host: string): Promise<{ code?: number; message?: string }> {
  await createSuite(suite, { webhooks: [moduleWebhook('hosts', [a, b], 'networking.k8s.io', ['ingresses'], { name: UNIQUE })] });
  await waitForCondition(suite, 'Ready', 'True');
  await createIngress(a, ingress('web', host));
  const denied = await refusedEventually(() => createIngress(b, ingress(unique('shop'), host)), 'the duplicate host');
  expect(denied.code).to.equal(409);
  expect(denied.message).to.contain(`host ${host} is already used by Ingress ${a}/web`);
  return denied;
}

/** A folder with the built examples as the example's Dockerfile copies one into the image: each package's manifest and its bundle. */
function exampleFolder(...examples: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'handler-modules-e2e-'));
  for (const example of examples) {
    const into = path.join(dir, path.basename(example));
    fs.mkdirSync(path.join(into, 'dist'), { recursive: true });
    fs.copyFileSync(path.join(example, 'package.json'), path.join(into, 'package.json'));
    fs.copyFileSync(path.join(example, 'dist', 'index.js'), path.join(into, 'dist', 'index.js'));
  }
  return dir;
}

const built = new Map<string, Promise<string>>();

/** The example as its users build it, outside the repository (once per run): its folder, holding dist/index.js. */
function builtExample(example: string): Promise<string> {
  let folder = built.get(example);
  if (!folder) built.set(example, (folder = installExample(example).then(async (installed) => (await npm(installed, 'run', 'build'), installed))));
  return folder;
}

async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; result?: T; refused?: { code?: number; message?: string } }> {
  const started = performance.now();
  try {
    const result = await call();
    return { ms: performance.now() - started, result };
  } catch (err) {
    const refused = (await refusal(() => Promise.reject(err)))!;
    return { ms: performance.now() - started, refused };
  }
}

describe('handler modules through the real API server', function () {
  let operator: Operator;
  let modules: string;
  let metricsPort: number;
  const lines: string[] = [];
  const capture = new winston.transports.Stream({ stream: new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk).trim()), done()) }) });

  before(async function () {
    this.timeout(240_000);
    // Built as a user builds it: outside the repository, with the package from its tarball.
    modules = exampleFolder(await builtExample(EXAMPLE), await builtExample(QUOTA_EXAMPLE));
    fs.writeFileSync(path.join(modules, 'throws.mjs'), faultyModule('e2e.portcullis.dev/Throws', "() => { throw new Error('the config service is down'); }"));
    fs.writeFileSync(path.join(modules, 'allows.mjs'), faultyModule('e2e.portcullis.dev/Allows', '() => ({ allowed: true })'));
    fs.writeFileSync(path.join(modules, 'spins.mjs'), faultyModule('e2e.portcullis.dev/Spins', '() => { const end = Date.now() + 5_000; while (Date.now() < end); return { allowed: true }; }'));
    fs.writeFileSync(path.join(modules, 'next-major.mjs'), faultyModule('e2e.portcullis.dev/Future', '() => ({ allowed: true })', '2.0'));
    await Promise.all(Object.values(NS).map((name) => ensureNamespace(name)));
    metricsPort = await freePort();
    logger.add(capture);
    operator = await startTestOperator({ handlerModules: modules, handlerBudgetMs: BUDGET_MS, metricsPort });
    await waitForSuiteValidation(operator);
  });

  after(async function () {
    this.timeout(120_000);
    logger.remove(capture);
    for (const name of SUITES) await deleteSuite(name);
    for (const name of Object.values(NS)) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await operator?.stop();
    if (modules) fs.rmSync(modules, { recursive: true, force: true });
  });

  it('refuses at start, in one log line naming it, a module built for another major version; loads the others', function () {
    const refused = lines.map((l) => JSON.parse(l)).filter((l) => l.message === 'handler module refused');
    expect(refused).to.have.length(1);
    expect(refused[0].module).to.equal(path.join(modules, 'next-major.mjs'));
    expect(refused[0].reason).to.contain('it declares handler API version "2.0"; this operator serves 1.0');
    expect(customHandlerNames()).to.have.members([UNIQUE, 'example.portcullis.dev/ReplicasQuota', 'e2e.portcullis.dev/Throws', 'e2e.portcullis.dev/Spins', 'e2e.portcullis.dev/Allows']);
  });

  it("passes the examples' own checks as their users run them: npm run typecheck (against the package's .d.ts), npm test (the handler), npm run test:suite (portcullis test --handler-modules)", async function () {
    this.timeout(120_000);
    for (const example of [EXAMPLE, QUOTA_EXAMPLE]) {
      await npm(await builtExample(example), 'run', 'typecheck'); // a type error throws, with tsc's words
      expect(await npm(await builtExample(example), 'test')).to.match(/ℹ fail 0/);
    }
    for (const example of [EXAMPLE, QUOTA_EXAMPLE]) expect(await npm(await builtExample(example), 'run', 'test:suite'), example).to.contain('3 of 3 expectations met');
  });

  it('refuses on apply a suite naming a handler no module serves, or a config the handler refuses, naming the field', async function () {
    const spec = (name: string, config?: Record<string, unknown>): SuiteSpec => ({
      webhooks: [moduleWebhook('check', [NS.a], 'networking.k8s.io', ['ingresses'], { name, ...(config ? { config } : {}) })],
    });
    const unknown = await refusal(() => createSuite('hmod-unknown', spec('acme.dev/Nope')));
    expect(unknown?.code).to.equal(422);
    expect(unknown?.message).to.contain('spec.webhooks[0].handler.name: no handler named "acme.dev/Nope" is loaded (--handler-modules)');
    const badConfig = await refusal(() => createSuite('hmod-unknown', spec(UNIQUE, { exemptNamespaces: 'kube-system' })));
    expect(badConfig?.code).to.equal(422);
    expect(badConfig?.message).to.contain('spec.webhooks[0].handler.config.exemptNamespaces: must be a list of namespace names');
    expect(await getSuite('hmod-unknown')).to.equal(undefined);
  });

  it("UniqueIngressHost (the example, built with npm): admits a unique host, refuses a host another namespace's Ingress has", async function () {
    await duplicateHostRefused('hmod-unique', NS.a, NS.b, 'shop.hmod.example');
    const admitted = await createIngress(NS.b, ingress('other', 'other.hmod.example'));
    expect(admitted.metadata?.name).to.equal('other');
  });

  it("ReplicasQuota (the second example): admits Deployments up to the namespace's total, refuses past it, scale included", async function () {
    await createSuite('hmod-quota', {
      webhooks: [moduleWebhook('replicas', [NS.quota], 'apps', ['deployments', 'deployments/scale'], { name: 'example.portcullis.dev/ReplicasQuota', config: { maxReplicas: 4 } })],
    });
    await waitForCondition('hmod-quota', 'Ready', 'True');
    const apps = cluster().kubeConfig.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: NS.quota, body: deployment('web', 3) });
    const denied = await refusedEventually(() => apps.createNamespacedDeployment({ namespace: NS.quota, body: deployment(unique('api'), 2) }), 'a Deployment past the quota');
    expect(denied.code).to.equal(403);
    expect(denied.message).to.match(/exceeded quota: the Deployments of namespace hmod-quota may have 4 replicas in total; \d+ are used by \d+ other Deployment\(s\), and api-\d+ asks for 2/);
    // Scaling `web` up through its scale subresource is judged the same way; down always passes.
    const scale = (replicas: number) => apps.replaceNamespacedDeploymentScale({ name: 'web', namespace: NS.quota, body: { metadata: { name: 'web', namespace: NS.quota }, spec: { replicas } } });
    expect((await refusal(() => scale(9)))?.message).to.contain('and web asks for 9');
    expect(await refusal(() => scale(1))).to.equal(undefined);
  });

  it('answers a throwing handler and one that busy-loops past its budget by failurePolicy, counted, while another suite keeps its latency', async function () {
    this.timeout(120_000);
    await createSuite('hmod-faults', {
      webhooks: [
        { name: 'throws', type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(NS.faults), objectSelector: { matchLabels: { fault: 'throws' } }, rules: [configMapRule], handler: { name: 'e2e.portcullis.dev/Throws' } },
        { name: 'allows', type: 'Validating', failurePolicy: 'Fail', namespaceSelector: only(NS.faults), objectSelector: { matchLabels: { fault: 'none' } }, rules: [configMapRule], handler: { name: 'e2e.portcullis.dev/Allows' } },
        { name: 'spins', type: 'Validating', failurePolicy: 'Ignore', namespaceSelector: only(NS.faults), objectSelector: { matchLabels: { fault: 'spins' } }, rules: [configMapRule], handler: { name: 'e2e.portcullis.dev/Spins' } },
      ],
    });
    await createSuite('hmod-other', {
      webhooks: [
        {
          name: 'words',
          type: 'Validating',
          failurePolicy: 'Fail',
          namespaceSelector: only(NS.other),
          rules: [configMapRule],
          validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: 'no forbidden key' }],
        },
      ],
    });
    await Promise.all(['hmod-faults', 'hmod-other'].map((name) => waitForCondition(name, 'Ready', 'True')));
    // The other suite is called (registered) before anything is timed.
    await refusedEventually(() => createConfigMap(NS.other, unique('probe'), { forbidden: 'x' }), 'a ConfigMap the CEL suite denies');

    const thrown = await refusedEventually(() => createConfigMap(NS.faults, unique('t'), {}, { fault: 'throws' }), 'a ConfigMap of the throwing handler');
    expect(thrown.message).to.contain('internal error: handler e2e.portcullis.dev/Throws failed: the config service is down');

    const other = () => timed(() => createConfigMap(NS.other, unique('o'), { fine: 'yes' }));
    const baseline: number[] = [];
    for (let i = 0; i < 30; i++) baseline.push((await other()).ms);
    // What a module's handler adds (admission thread -> main thread -> its worker and back), beside the CEL suite answered in the admission thread.
    const viaModule: number[] = [];
    for (let i = 0; i < 30; i++) {
      const answer = await timed(() => createConfigMap(NS.faults, unique('m'), {}, { fault: 'none' }));
      expect(answer.refused, 'the module handler admits').to.equal(undefined);
      viaModule.push(answer.ms);
    }

    // The busy loop: answered by Ignore at the budget (its ConfigMap stored), while the other suite is asked again and again.
    const spinning = timed(() => createConfigMap(NS.faults, unique('s'), {}, { fault: 'spins' }));
    let done = false;
    void spinning.then(() => (done = true));
    const during: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 50));
    while (!done) {
      const answer = await other();
      expect(answer.refused, 'the other suite admits').to.equal(undefined);
      during.push(answer.ms);
    }
    const spun = await spinning;
    const figures = (ms: number[]) => `p50 ${quantile(ms, 0.5).toFixed(1)} ms, p99 ${quantile(ms, 0.99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms (n=${ms.length})`;
    console.log(`      other suite, ConfigMap creates at the client: before ${figures(baseline)}; during the busy loop ${figures(during)}; the busy loop's request ${spun.ms.toFixed(0)} ms`);
    console.log(`      a module handler that allows, ConfigMap creates at the client: ${figures(viaModule)}`);
    expect(spun.refused, 'failurePolicy Ignore: stored').to.equal(undefined);
    expect(spun.ms, 'answered at its budget, not when the 5 s loop ends').to.be.within(BUDGET_MS, BUDGET_MS + 2_000);

    expect(during.length, 'the other suite answered many times during the loop').to.be.above(5);
    // Generous: a machine of 2 cores shared with other test runs.
    expect(quantile(during, 0.5), 'p50 during the loop').to.be.below(quantile(baseline, 0.5) * 3 + 50);
    expect(Math.max(...during), 'slowest during the loop').to.be.below(500);

    const families = await scrape(metricsPort);
    expect(sampleValue(families, 'portcullis_handler_module_failures_total', { handler: 'e2e.portcullis.dev/Throws', reason: 'error' })).to.be.at.least(1);
    expect(sampleValue(families, 'portcullis_handler_module_failures_total', { handler: 'e2e.portcullis.dev/Spins', reason: 'timeout' })).to.equal(1);
  });
});

describe('handler modules in the image bundle (tools/build.ts), run as the image runs it', function () {
  this.timeout(180_000);
  let app: string;
  let modules: string;
  let operator: OperatorProcess | undefined;

  before(async function () {
    app = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-bundle-'));
    await buildApp(app);
    // The example the describe above built (built here when this one runs alone).
    modules = exampleFolder(await builtExample(EXAMPLE));
    await Promise.all([BUNDLE_NS.a, BUNDLE_NS.b].map((name) => ensureNamespace(name)));
  });

  after(async function () {
    await deleteSuite('hmod-bundle');
    await operator?.kill('SIGTERM');
    for (const dir of [app, modules]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
    for (const name of [BUNDLE_NS.a, BUNDLE_NS.b]) await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  });

  it('serves the example from --handler-modules (PORTCULLIS_HANDLER_MODULES, as the Dockerfile sets it): a duplicate host refused', async function () {
    process.env.PORTCULLIS_HANDLER_MODULES = modules;
    try {
      operator = await spawnOperator({
        main: path.join(app, 'dist', 'main.js'),
        nodeFlags: OPERATOR_NODE_FLAGS,
        servingPort: await freePort(),
        metricsPort: await freePort(),
        extra: ['--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms'],
      });
    } finally {
      delete process.env.PORTCULLIS_HANDLER_MODULES;
    }
    await duplicateHostRefused('hmod-bundle', BUNDLE_NS.a, BUNDLE_NS.b, 'bundle.hmod.example');
    expect(operator.output()).to.contain('handler modules loaded');
    expect(operator.output()).to.not.match(/"level":"error"/);
  });
});
