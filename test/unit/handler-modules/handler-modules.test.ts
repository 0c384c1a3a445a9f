/**
 * Handler modules (src/handler-modules) without a cluster: which modules of a folder load and which are
 * refused and why (API version, names, shapes); a module's handler served through the registry as
 * a built-in is (config refused on apply by field, unknown names refused); and what a handler that
 * throws, rejects, answers nonsense or blocks its thread costs: the webhook's failurePolicy for
 * its own request, counted by handler and reason, and nothing for another module's requests.
 */
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import client from 'prom-client';
import { compatible, loadHandlerModules } from '../../../src/handler-modules/modules.ts';
import { startHandlerModules, type HandlerModules } from '../../../src/handler-modules/serve.ts';
import { HandlerRunner } from '../../../src/handler-modules/runner.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { followedFailurePolicy, type AdmissionRequest, type Decision } from '../../../src/api/admission-review.ts';
import type { AdmissionSuite, FailurePolicy } from '../../../src/api/types.ts';
import { EMPTY_VIEW, LookupNotReady, type ClusterView } from '../../../src/handlers/handler.ts';
import type { LookupChange } from '../../../src/apiserver/lookups.ts';
import { findHandler } from '../../../src/handlers/registry.ts';
import { SuiteRegistry } from '../../../src/registry/registry.ts';
import { LARGE_BODY } from '../../../src/admission/threads/offload.ts';
import { startTestEndpoint } from '../../support/endpoint.ts';
import { tempFolder } from '../../support/temp-files.ts';
import { eventually } from '../../support/wait.ts';
import { ConfigReader, HANDLER_API_VERSION, allow, deny, noConfig, patch, withAuditAnnotations, withWarnings, type CustomHandler } from 'portcullis/sdk';
import { ConfigReader as BuiltinConfigReader } from '../../../src/handlers/config.ts';

const SILENT = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

/** A module's source: `body` is the handlers array's text. */
const moduleText = (body: string, apiVersion = `'${HANDLER_API_VERSION}'`) => `export const apiVersion = ${apiVersion};\nexport const handlers = ${body};\n`;

/** A handler named `name` whose validate side is `validate` (a function's source). */
const handlerText = (name: string, validate: string, extra = '') =>
  `{ name: '${name}', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (c) => ({ config: c, errors: Object.keys(c).filter((k) => k !== 'word').map((field) => ({ field, message: 'unknown field' })) }), validate: ${validate}${extra} }`;

const folder = (files: Record<string, string>) => tempFolder('handler-modules-', files);

const request = (name = 'x', data: Record<string, string> = {}): AdmissionRequest => ({
  uid: 'u',
  kind: { group: '', version: 'v1', kind: 'ConfigMap' },
  resource: { group: '', version: 'v1', resource: 'configmaps' },
  namespace: 'team-a',
  name,
  operation: 'CREATE',
  userInfo: { username: 'alice' },
  object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data },
});

function suiteUsing(handler: string, failurePolicy: FailurePolicy, config?: Record<string, unknown>, type: 'Validating' | 'Mutating' = 'Validating'): AdmissionSuite {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'custom', uid: 'u-custom', generation: 1 },
    spec: {
      webhooks: [
        {
          name: 'check',
          type,
          failurePolicy,
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          handler: { name: handler, ...(config ? { config } : {}) },
        },
      ],
    },
  };
}

describe('handler modules: loading a folder', function () {
  it('loads .mjs, .ts and package modules, and refuses each bad one whole with its reason while the others load', async function () {
    const dir = folder({
      'a-good.mjs': moduleText(`[${handlerText('acme.dev/Good', '() => ({ allowed: true })')}]`),
      'b-typed.ts': `import type { Decision } from 'portcullis/sdk';\nconst ok = (): Decision => ({ allowed: true });\n${moduleText(`[${handlerText('acme.dev/Typed', 'ok')}]`)}`,
      'c-package/package.json': JSON.stringify({ name: 'c', type: 'module', main: 'dist/index.js' }),
      'c-package/dist/index.js': moduleText(`[${handlerText('acme.dev/Packaged', '() => ({ allowed: true })')}]`),
      'd-next-major.mjs': moduleText(`[${handlerText('acme.dev/Future', '() => ({ allowed: true })')}]`, "'2.0'"),
      'e-newer-minor.mjs': moduleText(`[${handlerText('acme.dev/Newer', '() => ({ allowed: true })')}]`, "'1.99'"),
      'f-unqualified.mjs': moduleText(`[${handlerText('UniqueIngressHost', '() => ({ allowed: true })')}]`),
      'g-builtin-like.mjs': moduleText(`[${handlerText('AlwaysPullImages', '() => ({ allowed: true })')}]`),
      'h-duplicate.mjs': moduleText(`[${handlerText('acme.dev/Good', '() => ({ allowed: true })')}]`),
      'i-throws-on-load.mjs': "throw new Error('no config file');\n",
      'j-unbuilt/package.json': JSON.stringify({ name: 'j', main: 'dist/index.js' }),
      'k-no-sides.mjs': moduleText(`[{ name: 'acme.dev/Idle', resources: [{ group: '', resource: 'pods' }], parseConfig: (c) => ({ config: c, errors: [] }) }]`),
      'l-unknown-lookup.mjs': moduleText(`[${handlerText('acme.dev/Looks', '() => ({ allowed: true })', ", lookups: ['Secret']")}]`),
      'README.md': 'not a module',
      'types.d.ts': 'export {};',
    });
    const { loaded, refused } = await loadHandlerModules(dir);
    expect(loaded.map((l) => l.handler.name)).to.deep.equal(['acme.dev/Good', 'acme.dev/Typed', 'acme.dev/Packaged']);
    const why = Object.fromEntries(refused.map((r) => [path.basename(r.module), r.reason]));
    expect(Object.keys(why)).to.deep.equal(['d-next-major.mjs', 'e-newer-minor.mjs', 'f-unqualified.mjs', 'g-builtin-like.mjs', 'h-duplicate.mjs', 'i-throws-on-load.mjs', 'j-unbuilt', 'k-no-sides.mjs', 'l-unknown-lookup.mjs']);
    expect(why['d-next-major.mjs']).to.equal(`it declares handler API version "2.0"; this operator serves ${HANDLER_API_VERSION} (a module loads with the same major version and a minor no newer)`);
    expect(why['f-unqualified.mjs']).to.contain('handlers[0].name "UniqueIngressHost" must be qualified by a domain');
    expect(why['g-builtin-like.mjs']).to.contain('"AlwaysPullImages" must be qualified by a domain');
    expect(why['h-duplicate.mjs']).to.equal('handler acme.dev/Good is served already (by another module or twice in this one)');
    expect(why['i-throws-on-load.mjs']).to.equal('it failed to load: no config file');
    expect(why['j-unbuilt']).to.equal('its entry dist/index.js does not exist (was it built? npm run build)');
    expect(why['k-no-sides.mjs']).to.equal('handlers[0] (acme.dev/Idle) has neither validate nor mutate');
    expect(why['l-unknown-lookup.mjs']).to.contain('lookups names Secret');
  });

  it('stops the start at a folder that is not there, naming the flag', async function () {
    const missing = path.join(os.tmpdir(), 'no-such-handler-modules');
    const failed = await loadHandlerModules(missing).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failed).to.equal(`--handler-modules=${missing}: no such folder`);
  });

  it('takes a module built for an older minor of the same major, and no other', function () {
    expect(compatible('1.0', '1.0')).to.equal(true);
    expect(compatible('1.0', '1.3')).to.equal(true);
    expect(compatible('1.4', '1.3')).to.equal(false);
    expect(compatible('2.0', '1.3')).to.equal(false);
    expect(compatible('0.9', '1.3')).to.equal(false);
    expect(compatible(undefined, '1.0')).to.equal(false);
    expect(compatible('1', '1.0')).to.equal(false);
  });
});

/**
 * The budget of the handlers served through the registry: long enough that a worker started on a
 * busy machine answers well within it, so only the handlers made to outlast it (a ten-minute sleep,
 * an endless loop) run past it.
 */
const BUDGET_MS = 2_000;

describe('handler modules: served through the registry', function () {
  let modules: HandlerModules;
  const warnings: Record<string, unknown>[] = [];
  const infos: Record<string, unknown>[] = [];
  const registry = new client.Registry();
  const failures = async () => {
    const metric = registry.getSingleMetric('portcullis_handler_module_failures_total')!;
    return Object.fromEntries((await metric.get()).values.map((v) => [`${v.labels.handler} ${v.labels.reason}`, v.value]));
  };

  before(async function () {
    const dir = folder({
      'words.mjs': moduleText(`[
        ${handlerText('acme.dev/NoWord', "(req, config) => (Object.values(req.object.data ?? {}).includes(config.word) ? { allowed: false, code: 403, reason: 'Forbidden', message: 'no ' + config.word } : { allowed: true, warnings: ['checked'] })")},
        ${handlerText('acme.dev/Throws', "() => { throw new Error('boom') }")},
        ${handlerText('acme.dev/Rejects', "async () => { await new Promise((r) => setTimeout(r, 5)); throw new Error('later boom') }")},
        ${handlerText('acme.dev/Nonsense', '() => 42')},
        { name: 'acme.dev/Labels', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (c) => ({ config: c, errors: [] }), mutate: async (req) => ({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels', value: { checked: req.userInfo.username } }] }) },
        ${handlerText('acme.dev/Sleeps', 'async () => { await new Promise((r) => setTimeout(r, 600_000)); return { allowed: true } }')},
      ]`),
      'spin.mjs': moduleText(`[${handlerText('acme.dev/Spins', '() => { for (;;); }')}, ${handlerText('acme.dev/SameModule', '() => ({ allowed: true })')}]`),
      'quick.mjs': moduleText(`[${handlerText('acme.dev/Quick', '() => ({ allowed: true })')}]`),
    });
    const log = { ...SILENT, warn: (message: string, fields?: object) => warnings.push({ message, ...fields }), info: (message: string, fields?: object) => infos.push({ message, ...fields }) };
    modules = await startHandlerModules(dir, { budgetMs: BUDGET_MS, log, registry });
  });
  after(() => modules.close());

  const admit = async (handler: string, failurePolicy: FailurePolicy, req = request(), config?: Record<string, unknown>): Promise<Decision> => {
    const compiled = compileSuite(suiteUsing(handler, failurePolicy, config));
    expect(compiled.errors).to.deep.equal([]);
    return compiled.webhooks.get('check')!.admit(req);
  };

  it('answers with what the handler decides, its config parsed in its worker', async function () {
    const denied = await admit('acme.dev/NoWord', 'Fail', request('x', { a: 'secret' }), { word: 'secret' });
    expect(denied).to.deep.equal({ allowed: false, code: 403, reason: 'Forbidden', message: 'no secret' });
    expect(await admit('acme.dev/NoWord', 'Fail', request('x', { a: 'fine' }), { word: 'secret' })).to.deep.equal({ allowed: true, warnings: ['checked'] });
  });

  it('judges a large review (256 KiB or more) for a module handler where it is read, not in the review worker, which loads no modules', async function () {
    const registry = new SuiteRegistry();
    registry.sync(suiteUsing('acme.dev/NoWord', 'Fail', { word: 'secret' }));
    const endpoint = await startTestEndpoint(registry, 'custom');
    try {
      const review = (data: Record<string, string>) => JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request('big', { pad: 'x'.repeat(LARGE_BODY), ...data }) });
      const denied = await endpoint.post('/admit/custom/check', review({ a: 'secret' }));
      expect(denied.body.response).to.deep.include({ allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no secret' } });
      expect((await endpoint.post('/admit/custom/check', review({}))).body.response.allowed).to.equal(true);
    } finally {
      await endpoint.close();
    }
  });

  it('patches from a Mutating webhook, and refuses on apply a Validating one for a handler with only a mutating side', async function () {
    const compiled = compileSuite(suiteUsing('acme.dev/Labels', 'Fail', undefined, 'Mutating'));
    expect(await compiled.webhooks.get('check')!.admit(request())).to.deep.equal({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels', value: { checked: 'alice' } }] });
    expect(compileSuite(suiteUsing('acme.dev/Labels', 'Fail')).errors).to.deep.equal([{ field: 'spec.webhooks[0].type', message: 'handler acme.dev/Labels has no validating side' }]);
  });

  it('refuses on apply a config its handler refuses (naming the field) and a qualified name no module serves', function () {
    expect(compileSuite(suiteUsing('acme.dev/NoWord', 'Fail', { word: 'x', colour: 'red' })).errors).to.deep.equal([{ field: 'spec.webhooks[0].handler.config.colour', message: 'unknown field' }]);
    expect(compileSuite(suiteUsing('acme.dev/Nope', 'Fail')).errors).to.deep.equal([{ field: 'spec.webhooks[0].handler.name', message: 'no handler named "acme.dev/Nope" is loaded (--handler-modules)' }]);
    expect(compileSuite(suiteUsing('Nope', 'Fail')).errors[0]!.message).to.equal('no built-in handler named "Nope"');
  });

  it('answers a throw, a rejection and a non-decision by failurePolicy, naming the handler, and counts them', async function () {
    const thrown = await admit('acme.dev/Throws', 'Fail');
    expect(thrown).to.include({ allowed: false, message: 'internal error: handler acme.dev/Throws failed: boom' });
    expect(followedFailurePolicy(thrown)).to.equal(true);
    const ignored = await admit('acme.dev/Throws', 'Ignore');
    expect(ignored).to.deep.equal({ allowed: true });
    expect(followedFailurePolicy(ignored)).to.equal(true);
    expect((await admit('acme.dev/Rejects', 'Fail')).message).to.equal('internal error: handler acme.dev/Rejects failed: later boom');
    expect((await admit('acme.dev/Nonsense', 'Fail')).message).to.equal('internal error: handler acme.dev/Nonsense failed: it answered 42, not a decision ({allowed: boolean, ...})');
    expect(await failures()).to.include({ 'acme.dev/Throws error': 2, 'acme.dev/Rejects error': 1, 'acme.dev/Nonsense error': 1 });
    // One line each, naming the handler (with failurePolicy Ignore, the answer itself names nothing).
    const lines = infos.filter((l) => l.message === 'handler module answered by failurePolicy' && l.handler === 'acme.dev/Throws');
    expect(lines).to.have.length(2);
    expect(lines[1]).to.include({ reason: 'error', error: 'handler acme.dev/Throws failed: boom' });
  });

  it('answers a run past its budget by failurePolicy at the budget; a worker that does not block keeps serving', async function () {
    // It sleeps for ten minutes: an answer at all is the budget's (and a timer never fires early).
    const started = performance.now();
    const late = await admit('acme.dev/Sleeps', 'Fail');
    expect(late.message).to.equal(`internal error: handler acme.dev/Sleeps did not answer within its budget of ${BUDGET_MS} ms`);
    expect(performance.now() - started).to.be.at.least(BUDGET_MS - 20);
    // Its worker still answers pings: not stopped, its other handlers answer at once.
    expect((await admit('acme.dev/NoWord', 'Fail', request(), { word: 'x' })).allowed).to.equal(true);
    expect(await failures()).to.include({ 'acme.dev/Sleeps timeout': 1 });
  });

  it('stops a worker a handler blocks, answers by failurePolicy at the budget, while another module answers meanwhile', async function () {
    // It loops for ever: an answer at all means its worker was stopped at the budget.
    let spinAnswered = false;
    const spinning = admit('acme.dev/Spins', 'Fail').finally(() => (spinAnswered = true));
    // Another module's handler, asked while the first busy-loops: answered while it still loops.
    for (let i = 0; i < 5; i++) expect((await admit('acme.dev/Quick', 'Fail')).allowed).to.equal(true);
    expect(spinAnswered, "another module's five answers came while the loop held its own worker").to.equal(false);
    const spun = await spinning;
    expect(spun.message).to.equal(`internal error: handler acme.dev/Spins did not answer within its budget of ${BUDGET_MS} ms`);
    // The blocked worker was stopped (no pong within PROBE_MS), saying so, and is started again at once.
    await eventually(async () => expect(warnings).to.have.length.at.least(1), { what: 'the stopped worker logged' });
    expect(warnings).to.deep.equal([{ message: 'handler module worker stopped: a handler blocked it past its budget; started again', module: path.join(path.dirname(warnings[0]!.module as string), 'spin.mjs'), handler: 'acme.dev/Spins' }]);
    // Its module's other handler answers from the new worker (the old one would spin for ever).
    expect(await admit('acme.dev/SameModule', 'Fail')).to.deep.equal({ allowed: true });
    const again = await admit('acme.dev/Spins', 'Ignore');
    expect(again).to.deep.equal({ allowed: true });
    expect(await failures()).to.include({ 'acme.dev/Spins timeout': 2 });
  });
});

describe('handler modules: what a handler reads', function () {
  it('sends the request with its Namespace and declared lookups taken from the caches, and waits on a lookup not synced', async function () {
    const runner = new HandlerRunner({ budgetMs: 2_000, log: SILENT });
    const dir = folder({
      'reads.mjs': moduleText(
        `[${handlerText('acme.dev/Reads', "(req, c, view) => ({ allowed: true, warnings: [view.namespace('team-a')?.metadata.labels.team, String(view.list('Ingress').length), String(view.list('Ingress', 'team-b').length)] })", ", lookups: ['Ingress']")}]`,
      ),
    });
    const { loaded } = await loadHandlerModules(dir);
    const proxy = runner.proxy(loaded[0]!);
    const ingresses = [{ metadata: { name: 'a', namespace: 'team-a' } }, { metadata: { name: 'b', namespace: 'team-b' } }];
    const view: ClusterView = { ...EMPTY_VIEW, namespace: (n) => ({ metadata: { name: n, labels: { team: 'blue' } } }), list: () => ingresses };
    try {
      const decision = await proxy.validate!(request(), proxy.parseConfig({}).config, view);
      expect(decision.warnings).to.deep.equal(['blue', '2', '1']);
      expect(() =>
        proxy.validate!(request(), proxy.parseConfig({}).config, {
          ...view,
          list: (kind) => {
            throw new LookupNotReady(kind);
          },
        }),
      ).to.throw(LookupNotReady);
    } finally {
      await runner.close();
    }
  });

  it("keeps a copy of the declared lookups in the worker, from the caches' changes, rather than sending them with each request", async function () {
    const listeners: ((change: LookupChange) => void)[] = [];
    const ingress = (name: string, namespace: string) => ({ metadata: { name, namespace } });
    const source = {
      subscribe: (listener: (change: LookupChange) => void) => {
        listeners.push(listener);
        listener({ type: 'synced', kind: 'Ingress', objects: [ingress('a', 'team-a'), ingress('b', 'team-b')] });
        listener({ type: 'synced', kind: 'Node', objects: [{ metadata: { name: 'not-declared' } }] });
        return () => void listeners.splice(listeners.indexOf(listener), 1);
      },
    };
    const runner = new HandlerRunner({ budgetMs: 2_000, log: SILENT, lookups: source });
    const dir = folder({
      'reads.mjs': moduleText(`[${handlerText('acme.dev/Copies', "(req, c, view) => ({ allowed: true, warnings: view.list('Ingress').map((i) => i.metadata.namespace + '/' + i.metadata.name) })", ", lookups: ['Ingress']")}]`),
    });
    const { loaded } = await loadHandlerModules(dir);
    const proxy = runner.proxy(loaded[0]!);
    // What the request path reads here only says the cache has synced: the worker answers from its copy.
    const view: ClusterView = { ...EMPTY_VIEW, list: () => [] };
    try {
      expect((await proxy.validate!(request(), proxy.parseConfig({}).config, view)).warnings).to.deep.equal(['team-a/a', 'team-b/b']);
      for (const listener of listeners) {
        listener({ type: 'object', kind: 'Ingress', object: ingress('c', 'team-c'), deleted: false });
        listener({ type: 'object', kind: 'Ingress', object: ingress('a', 'team-a'), deleted: true });
      }
      expect((await proxy.validate!(request(), proxy.parseConfig({}).config, view)).warnings).to.deep.equal(['team-b/b', 'team-c/c']);
      expect(() =>
        proxy.validate!(request(), proxy.parseConfig({}).config, {
          ...view,
          list: (kind) => {
            throw new LookupNotReady(kind);
          },
        }),
      ).to.throw(LookupNotReady);
    } finally {
      await runner.close();
    }
    expect(listeners, 'unsubscribed when the worker stops').to.have.length(0);
  });

  it('gives a webhook whose timeoutSeconds is short a budget of half of it, never more than --handler-budget', async function () {
    const runner = new HandlerRunner({ budgetMs: 2_000, log: SILENT });
    const dir = folder({ 'sleeps.mjs': moduleText(`[${handlerText('acme.dev/Sleepy', 'async () => { await new Promise((r) => setTimeout(r, 600_000)); return { allowed: true } }')}]`) });
    const proxy = runner.proxy((await loadHandlerModules(dir)).loaded[0]!);
    try {
      expect(proxy.parseConfig({}, { timeoutSeconds: 1 }).config.budgetMs).to.equal(500);
      expect(proxy.parseConfig({}, { timeoutSeconds: 30 }).config.budgetMs).to.equal(2_000);
      expect(proxy.parseConfig({}).config.budgetMs).to.equal(2_000);
      const started = performance.now();
      const late = proxy.validate!(request(), proxy.parseConfig({}, { timeoutSeconds: 1 }).config, EMPTY_VIEW);
      await late.then(
        () => expect.fail('answered'),
        (err: Error) => expect(err.message).to.equal('handler acme.dev/Sleepy did not answer within its budget of 500 ms'),
      );
      expect(performance.now() - started, 'not before the budget').to.be.at.least(480);
    } finally {
      await runner.close();
    }
  });

  it('answers by failurePolicy when a handler ends its worker or outgrows its heap, and serves the next request from a new worker', async function () {
    const failed: string[] = [];
    const runner = new HandlerRunner({ budgetMs: 5_000, log: SILENT, maxHeapMb: 32, failed: (handler, reason) => failed.push(`${handler} ${reason}`) });
    const dir = folder({
      'exits.mjs': moduleText(`[${handlerText('acme.dev/Exits', "(req) => { if (req.name === 'exit') process.exit(3); return { allowed: true }; }")}]`),
      'leaks.mjs': moduleText(`[${handlerText('acme.dev/Leaks', "(req) => { if (req.name === 'leak') { const held = []; for (;;) held.push(new Array(1e5).fill(Math.random())); } return { allowed: true }; }")}]`),
    });
    const [exits, leaks] = (await loadHandlerModules(dir)).loaded.map((l) => runner.proxy(l));
    const config = exits!.parseConfig({}).config;
    try {
      for (const [proxy, name] of [
        [exits!, 'exit'],
        [leaks!, 'leak'],
      ] as const) {
        // Answered as a lost worker, not as a run past the budget ('did not answer within its budget'): at once, not at the budget.
        const lost = await proxy.validate!(request(name), config, EMPTY_VIEW).then(
          () => undefined,
          (err: Error) => err.message,
        );
        expect(lost).to.match(new RegExp(`^handler acme.dev/\\w+ was not answered: its worker (stopped|failed)`));
        expect((await proxy.validate!(request('fine'), config, EMPTY_VIEW)).allowed).to.equal(true);
      }
      expect(failed).to.deep.equal(['acme.dev/Exits lost', 'acme.dev/Leaks lost']);
    } finally {
      await runner.close();
    }
  });

  it("parses the config in the worker with the context it was parsed with on apply (the operator's namespace)", async function () {
    const runner = new HandlerRunner({ budgetMs: 2_000, log: SILENT });
    const dir = folder({
      'context.mjs': moduleText(
        `[{ name: 'acme.dev/Context', resources: [{ group: '', resource: 'configmaps' }], parseConfig: (c, context) => ({ config: { where: context?.operatorNamespace ?? 'nowhere' }, errors: [] }), validate: (req, config) => ({ allowed: true, warnings: [config.where] }) }]`,
      ),
    });
    const proxy = runner.proxy((await loadHandlerModules(dir)).loaded[0]!);
    try {
      expect((await proxy.validate!(request(), proxy.parseConfig({}, { operatorNamespace: 'portcullis-system' }).config, EMPTY_VIEW)).warnings).to.deep.equal(['portcullis-system']);
    } finally {
      await runner.close();
    }
  });

  it('finds a module handler only while it is served', async function () {
    const dir = folder({ 'one.mjs': moduleText(`[${handlerText('acme.dev/One', '() => ({ allowed: true })')}]`) });
    const modules = await startHandlerModules(dir, { budgetMs: 500, log: SILENT });
    expect(findHandler('acme.dev/One')?.name).to.equal('acme.dev/One');
    await modules.close();
    expect(findHandler('acme.dev/One')).to.equal(undefined);
  });

  it("gives handler authors the SDK helpers with the built-ins' Handler type", function () {
    const typed: CustomHandler<{ word: string }> = {
      name: 'acme.dev/Typed',
      resources: [{ group: '', resource: 'configmaps' }],
      parseConfig: () => ({ config: { word: 'x' }, errors: [] }),
      validate: async () => deny(403, 'Forbidden', 'no'),
      mutate: () => allow(),
    };
    expect(typed.mutate!(request(), { word: 'x' }, EMPTY_VIEW)).to.deep.equal({ allowed: true });
    expect(withWarnings(patch([{ op: 'add', path: '/a', value: 1 }]), 'w')).to.deep.equal({ allowed: true, patch: [{ op: 'add', path: '/a', value: 1 }], warnings: ['w'] });
    expect(withAuditAnnotations(allow(), { k: 'v' })).to.deep.equal({ allowed: true, auditAnnotations: { k: 'v' } });
    expect(noConfig('acme.dev/X')({ colour: 'red' }).errors).to.deep.equal([{ field: 'colour', message: 'acme.dev/X takes no configuration' }]);
    // The built-ins' config reader, the same class (not a copy).
    const read = new ConfigReader({ max: 'x', extra: 1 }, 'acme.dev/X', ['max']);
    read.integer('max', 0);
    expect(read.errors).to.deep.equal([
      { field: 'extra', message: 'unknown field; acme.dev/X takes max' },
      { field: 'max', message: 'must be an integer no less than 0' },
    ]);
    expect(ConfigReader).to.equal(BuiltinConfigReader);
  });
});
