/**
 * Nothing a suite sends stops a worker for good (src/workers/restarts.ts and each worker kind): a
 * worker that dies is started again, always, with backoff, however often it dies (20 times in a
 * row here, each as soon as it starts); a suite, a handler with a config, or an AdmissionPolicy
 * that keeps killing its worker is quarantined (not sent to it, answered by failurePolicy) while
 * the others keep being served; the admission thread says while nothing serves (what /healthz
 * fails on). Kinds: the admission thread, handler modules' workers, review workers (large
 * reviews), tenant workers (the AdmissionPolicies); the last two are started from an entry that
 * wraps the real one and stops it for an annotated suite or policy (test/support/workers).
 */
import https from 'node:https';
import { expect } from 'chai';
import { AdmissionAnswering } from '../../src/admission/answering.ts';
import { AdmissionThread } from '../../src/admission/threads/thread.ts';
import { CertificateStore } from '../../src/certs/store.ts';
import { createCA, issueLeaf, type IssuedCertificate } from '../../src/certs/x509.ts';
import { Metrics } from '../../src/health/metrics.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { HandlerRunner, HandlerFailure, type FailureReason } from '../../src/handler-modules/runner.ts';
import { loadHandlerModules } from '../../src/handler-modules/modules.ts';
import { Backoff, Quarantine } from '../../src/workers/restarts.ts';
import { ReviewOffload, SuiteQuarantinedError, WorkerLostError } from '../../src/admission/threads/offload.ts';
import { PolicyWorkerPool } from '../../src/admission/threads/policy-workers.ts';
import { PolicyRegistry } from '../../src/registry/policies.ts';
import type { AdmissionPolicy } from '../../src/api/types.ts';
import { requestFor } from '../fixtures/reviews.ts';
import type { AdmissionSuite } from '../../src/api/types.ts';
import type { AdmissionRequest } from '../../src/api/admission-review.ts';
import { EMPTY_VIEW } from '../../src/handlers/handler.ts';
import winston from 'winston';
import { HANDLER_API_VERSION } from 'portcullis/sdk';
import { tempFolder } from '../support/temp-files.ts';
import { eventually } from '../support/wait.ts';

const QUIET = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
const FAST = { initialMs: 5, maxMs: 40 };
const SERVER_NAME = 'portcullis-guards.portcullis-system.svc';

/**
 * A handler module whose handler stops the thread it runs in when its config says `exit`: in its
 * module's worker when it runs, and in the admission thread when that thread checks its config
 * (compiling a suite that uses it). Never on the main thread, which only checks configs here.
 */
const EXITING = `import { isMainThread } from 'node:worker_threads';
export const apiVersion = '${HANDLER_API_VERSION}';
const configmaps = [{ group: '', resource: 'configmaps' }];
export const handlers = [
  { name: 'acme.dev/Exits', resources: configmaps,
    parseConfig: (c) => { if (c.exitOnCompile && !isMainThread) process.exit(9); return { config: c, errors: [] }; },
    validate: (req, c) => { if (c.exit) process.exit(7); return { allowed: true }; } },
  { name: 'acme.dev/Fine', resources: configmaps, parseConfig: (c) => ({ config: c, errors: [] }), validate: () => ({ allowed: true, warnings: ['fine'] }) },
];
`;

const request = (): AdmissionRequest => ({
  uid: 'u',
  kind: { group: '', version: 'v1', kind: 'ConfigMap' },
  resource: { group: '', version: 'v1', resource: 'configmaps' },
  namespace: 'team-a',
  name: 'c',
  operation: 'CREATE',
  userInfo: { username: 'alice' },
  object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'team-a' } },
});

describe('worker restarts: backoff and quarantine', function () {
  it('starts again at once, then waits twice as long each death in a row up to its cap, and from the start once a worker lived long enough', function () {
    let now = 1_000;
    const backoff = new Backoff({ initialMs: 100, maxMs: 1_000, stableMs: 30_000 }, () => now);
    backoff.started();
    expect(Array.from({ length: 7 }, () => backoff.died())).to.deep.equal([0, 100, 200, 400, 800, 1_000, 1_000]);
    backoff.started();
    now += 30_000;
    expect(backoff.died()).to.equal(0);
  });

  it('quarantines a key at its third death, and forgets what it is told to', function () {
    const quarantine = new Quarantine(3);
    expect([quarantine.died('a', 'x'), quarantine.died('a', 'y'), quarantine.died('b', 'z'), quarantine.died('a', 'last')]).to.deep.equal([false, false, false, true]);
    expect(quarantine.why('a')).to.equal('it stopped its worker 3 times (last: last)');
    expect(quarantine.why('b')).to.equal(undefined);
    quarantine.forget((key) => key === 'a');
    expect(quarantine.why('a')).to.equal(undefined);
  });
});

describe('worker restarts: the admission thread', function () {
  this.timeout(120_000);
  let ca: IssuedCertificate;
  let registry: SuiteRegistry;
  let answering: AdmissionAnswering;
  let thread: AdmissionThread;
  const quarantined: string[] = [];
  const modules = tempFolder('exiting-module-', { 'exits.mjs': EXITING });
  const worker = () => (thread as unknown as { worker?: { terminate(): Promise<number>; threadId: number } }).worker;

  const post = (path: string, body: string) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: thread.port, path, method: 'POST', servername: SERVER_NAME, ca: ca.certPem, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const suite = (name: string, generation: number, webhook: AdmissionSuite['spec']['webhooks'][number]): AdmissionSuite => ({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name, uid: `uid-${name}`, generation },
    spec: { webhooks: [webhook] },
  });
  const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
  const good = suite('good', 1, { name: 'check', type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'no' }] });
  const killer = (generation: number, config: Record<string, unknown>) => suite('killer', generation, { name: 'check', type: 'Validating', rules: configMaps, handler: { name: 'acme.dev/Exits', config } });
  const answersGood = async () => {
    const answer = await post('/admit/good/check', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request() }));
    expect(answer.status).to.equal(200);
    expect(answer.body.response.allowed).to.equal(true);
  };

  before(async function () {
    ca = await createCA({ commonName: 'restart-ca', notAfter: new Date(Date.now() + 86_400_000) });
    const metrics = new Metrics();
    registry = new SuiteRegistry({ observers: metrics });
    registry.sync(good);
    const certificates = new CertificateStore();
    const issued = await issueLeaf(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', notAfter: new Date(Date.now() + 3600_000) });
    certificates.install('guards', issued.certPem, issued.keyPem);
    answering = new AdmissionAnswering({ registry, metrics, log: QUIET });
    thread = new AdmissionThread({
      answering,
      registry,
      certificates,
      metrics,
      mirrors: { Namespace: { list: () => [] }, LimitRange: { list: () => [] } },
      handlerModules: modules,
      // Its lines (a thread stopped, a suite quarantined) are the test's noise: nothing is written below error, and errors are expected here.
      log: winston.createLogger({ level: 'error', silent: true }),
      restart: FAST,
    });
    thread.onQuarantined?.((name) => quarantined.push(name));
    await thread.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await thread.close();
    await answering.close();
  });

  it('is started again after dying 20 times in a row, each time as soon as it starts, and serves again; meanwhile it says nothing serves', async function () {
    await answersGood();
    const down: unknown[] = [];
    for (let death = 0; death < 20; death++) {
      const started = await eventually(async () => worker() ?? Promise.reject(new Error(`no thread after death ${death}`)), { intervalMs: 1 });
      // Killed before it listens (the first time, after it served): what a suite that kills it on compile does.
      await started.terminate();
      down.push(thread.cannotServe);
    }
    await eventually(async () => expect(thread.listening, 'listening again').to.equal(true));
    expect(down, 'nothing serves after each death').to.deep.equal(Array(20).fill(true));
    expect(thread.cannotServe).to.equal(false);
    await answersGood();
  });

  it('quarantines a suite that kills it while compiling: not sent to it, said so, while the other suites are served; its next generation is tried again', async function () {
    registry.sync(killer(1, { exitOnCompile: true }));
    await eventually(async () => expect(thread.quarantined('killer', 'uid-killer', 1)).to.match(/^it stopped its worker 3 times \(last: the admission thread exited \(9\) while compiling generation 1\)$/));
    expect(quarantined).to.deep.equal(['killer']);
    await eventually(async () => expect(thread.listening).to.equal(true));
    // Served as quarantined: the reconciler waits no longer, and writes Ready=False, Quarantined.
    expect(await thread.whenServing('killer', 'uid-killer', 1)).to.equal(true);
    await answersGood();
    // Not served: the API server answers its webhook by its failurePolicy.
    expect((await post('/admit/killer/check', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request() }))).status).to.equal(404);
    const listeningThread = worker()!.threadId;
    registry.sync(killer(2, {}));
    expect(await thread.whenServing('killer', 'uid-killer', 2)).to.equal(true);
    expect(thread.quarantined('killer', 'uid-killer', 2)).to.equal(undefined);
    expect(worker()!.threadId, 'the new generation did not stop the thread').to.equal(listeningThread);
    await answersGood();
  });
});

describe('worker restarts: handler modules’ workers', function () {
  this.timeout(120_000);
  const failures: string[] = [];
  const deaths: string[] = [];
  let runner: HandlerRunner;
  let exits: ReturnType<HandlerRunner['proxy']>;
  let fine: ReturnType<HandlerRunner['proxy']>;

  before(async function () {
    runner = new HandlerRunner({ budgetMs: 5_000, log: QUIET, restart: FAST, failed: (handler: string, reason: FailureReason) => failures.push(`${handler} ${reason}`), died: (module) => deaths.push(module) });
    const { loaded } = await loadHandlerModules(tempFolder('exiting-module-', { 'exits.mjs': EXITING }));
    [exits, fine] = loaded.map((l) => runner.proxy(l)) as [typeof exits, typeof fine];
  });
  after(() => runner.close());

  const run = (proxy: typeof exits, config: Record<string, unknown>) =>
    (proxy.validate!(request(), proxy.parseConfig(config).config, EMPTY_VIEW) as Promise<{ allowed: boolean; warnings?: string[] }>).then(
      (decision) => decision,
      (err: Error) => {
        expect(err).to.be.instanceOf(HandlerFailure);
        return err.message;
      },
    );
  const answersFine = () => eventually(async () => expect(await run(fine, {})).to.deep.equal({ allowed: true, warnings: ['fine'] }), { intervalMs: 5 });

  it('is started again after each of 20 deaths in a row, and answers again', async function () {
    for (let death = 0; death < 20; death++) {
      await eventually(async () => expect(await run(exits, { exit: true, death })).to.match(/its worker stopped/), { intervalMs: 5 });
      await answersFine();
    }
  });

  it('blames nothing for a death while running a request: the same request, 20 times, reaches the worker each time, and the handler with that config answers again after it', async function () {
    // Anyone can send the request that stops the worker (the admission port asks no credential): a
    // quarantine would let them switch the handler off for everyone until its suite changed.
    failures.length = 0;
    deaths.length = 0;
    const answers: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      // While its worker is started again (with backoff) the module's requests are answered `lost`: wait until it runs them again.
      await eventually(async () => expect(await run(fine, {})).to.deep.equal({ allowed: true, warnings: ['fine'] }), { intervalMs: 5 });
      answers.push(await run(exits, { exit: true }));
      await eventually(async () => expect(await run(exits, { exit: false })).to.deep.equal({ allowed: true }), { intervalMs: 5 });
    }
    expect(answers).to.deep.equal(Array(20).fill('handler acme.dev/Exits was not answered: its worker stopped (exit code 7)'));
    expect(deaths, 'each death counted').to.have.length(20);
    expect(
      failures.filter((f) => !f.endsWith(' lost')),
      'every failure was the worker lost under it',
    ).to.deep.equal([]);
  });
});

/** Watched deaths and quarantines of one pool, as the operator's metrics and status see them. */
function watched() {
  const events: string[] = [];
  return { events, watcher: { died: (kind: string) => events.push(`died ${kind}`), quarantined: (kind: string, input: string) => events.push(`quarantined ${kind} ${input}`) } };
}
const EXIT = 'test.portcullis.dev/exit';

describe('worker restarts: review workers', function () {
  this.timeout(120_000);
  let registry: SuiteRegistry;
  let offload: ReviewOffload;
  let watch: ReturnType<typeof watched>;
  const pool = () => (offload as unknown as { pool: { worker: { terminate(): Promise<number> } }[] }).pool;
  const configMaps = [{ operations: ['CREATE' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
  const suite = (name: string, generation: number, exit?: string): AdmissionSuite => ({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name, uid: `uid-${name}`, generation, ...(exit ? { annotations: { [EXIT]: exit } } : {}) },
    spec: { webhooks: [{ name: 'check', type: 'Validating', rules: configMaps, validations: [{ expression: "object.metadata.name != 'forbidden'", message: 'no' }] }] },
  });
  const body = () => new TextEncoder().encode(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: request() }));
  const admit = (name: string) =>
    offload.admit(name, 'check', body()).then(
      (answer) => answer.decision,
      (err: Error) => err,
    );
  const answersGood = async () => expect(await admit('good')).to.deep.include({ allowed: true });

  beforeEach(function () {
    registry = new SuiteRegistry({});
    registry.sync(suite('good', 1));
    watch = watched();
    offload = new ReviewOffload(registry, QUIET, { workers: 2, waiting: 8 }, { restart: FAST, entry: new URL('../support/workers/review-worker-exits.ts', import.meta.url) });
    offload.watch(watch.watcher);
  });
  afterEach(() => offload.close());

  it('is started again after dying 20 times in a row, without waiting for a review, and judges again', async function () {
    await answersGood();
    for (let death = 0; death < 20; death++) {
      const worker = await eventually(async () => pool()[0]?.worker ?? Promise.reject(new Error(`no review worker started again after death ${death}`)), { intervalMs: 1 });
      await worker.terminate();
    }
    await eventually(async () => expect(pool(), 'started again').to.have.length(1), { intervalMs: 5 });
    expect(watch.events).to.deep.equal(Array(20).fill('died review'));
    await answersGood();
  });

  it('quarantines a suite that kills it while compiling: every other suite judged, the suite answered by failurePolicy until it changes', async function () {
    await answersGood();
    registry.sync(suite('killer', 1, 'compile'));
    await eventually(async () => expect(offload.quarantined('killer', 'uid-killer', 1)).to.match(/^it stopped its worker 3 times \(last: a review worker stopped \(the review worker exited \(9\)\) while compiling generation 1\)$/));
    expect(watch.events).to.deep.equal(['died review', 'died review', 'died review', 'quarantined review killer']);
    for (let i = 0; i < 20; i++) await answersGood();
    const held = await admit('killer');
    expect(held).to.be.instanceOf(SuiteQuarantinedError).and.to.be.instanceOf(WorkerLostError);
    expect((held as Error).message).to.match(/^suite killer is quarantined from the review workers: it stopped its worker 3 times/);
    registry.sync(suite('killer', 2));
    expect(offload.quarantined('killer', 'uid-killer', 2)).to.equal(undefined);
    expect(await admit('killer')).to.deep.include({ allowed: true });
    expect(watch.events, 'no death since').to.have.length(4);
  });

  it('blames no suite for reviews that kill it (any client can send one): each answered by failurePolicy, the worker started again, the suite never quarantined, the other suites judged throughout', async function () {
    registry.sync(suite('killer', 1, 'judge'));
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      answers.push(await admit('killer'));
      await eventually(answersGood, { intervalMs: 5 });
    }
    expect(answers.map((a) => (a as Error).message)).to.deep.equal(Array(10).fill('the review worker stopped: the review worker exited (7)'));
    expect(answers.some((a) => a instanceof SuiteQuarantinedError)).to.equal(false);
    expect(watch.events).to.deep.equal(Array(10).fill('died review'));
    expect(offload.quarantined('killer', 'uid-killer', 1)).to.equal(undefined);
  });
});

describe('worker restarts: tenant workers', function () {
  this.timeout(120_000);
  let registry: PolicyRegistry;
  let pool: PolicyWorkerPool;
  let watch: ReturnType<typeof watched>;
  const slots = () => (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots;
  const policy = (namespace: string, name: string, generation: number, resource: string, exit?: string): AdmissionPolicy => ({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name, namespace, uid: `uid-${namespace}-${name}`, generation, ...(exit ? { annotations: { [EXIT]: exit } } : {}) },
    spec: { type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: [resource] }], validations: [{ expression: "object.metadata.name != 'forbidden'", message: `${name} forbids it` }] },
  });
  const create = (resource: 'configmaps' | 'secrets', namespace: string, name = 'c') =>
    requestFor(resource, 'CREATE', { namespace, object: { apiVersion: 'v1', kind: resource === 'secrets' ? 'Secret' : 'ConfigMap', metadata: { name, namespace } } });
  /** Team ok's policy answers both ways, in its own words. */
  const teamOkAnswers = async () => {
    expect(await pool.admit('Validating', create('configmaps', 'team-ok'))).to.deep.equal({ allowed: true });
    expect((await pool.admit('Validating', create('configmaps', 'team-ok', 'forbidden'))).message).to.equal('AdmissionPolicy guard: guard forbids it');
  };

  beforeEach(function () {
    registry = new PolicyRegistry({ limits: { mutations: true, costBudget: 1_000_000 }, protectedNamespaces: [] });
    registry.sync(policy('team-ok', 'guard', 1, 'configmaps'));
    // In the killer's namespace, a policy of another resource: the namespace's other requests are its.
    registry.sync(policy('team-kill', 'bystander', 1, 'secrets'));
    watch = watched();
    pool = new PolicyWorkerPool(registry, QUIET, { restart: FAST, entry: new URL('../support/workers/tenant-worker-exits.ts', import.meta.url) });
    pool.watch(watch.watcher);
  });
  afterEach(() => pool.close());

  it('is started again after dying 20 times in a row, without waiting for a request, and evaluates again', async function () {
    await teamOkAnswers();
    for (let death = 0; death < 20; death++) {
      const worker = await eventually(async () => slots()[0]?.worker ?? Promise.reject(new Error(`no tenant worker started again after death ${death}`)), { intervalMs: 1 });
      await worker.terminate();
    }
    await eventually(async () => expect(slots(), 'started again').to.have.length(1), { intervalMs: 5 });
    expect(watch.events).to.deep.equal(Array(20).fill('died tenant'));
    await teamOkAnswers();
  });

  it('blames no policy for requests that kill it (any client can send one): each refused by failurePolicy, its namespace’s others and every other namespace answered throughout, the policy never quarantined', async function () {
    registry.sync(policy('team-kill', 'killer', 1, 'configmaps', 'evaluate'));
    const answers: (string | undefined)[] = [];
    for (let i = 0; i < 10; i++) {
      const decision = await pool.admit('Validating', create('configmaps', 'team-kill'));
      expect(decision.allowed).to.equal(false);
      answers.push(decision.message);
      await teamOkAnswers();
      expect((await pool.admit('Validating', create('secrets', 'team-kill', 'forbidden'))).message).to.equal('AdmissionPolicy bystander: bystander forbids it');
    }
    expect(answers).to.deep.equal(Array(10).fill('the AdmissionPolicies of namespace team-kill could not be evaluated: the tenant worker exited (7)'));
    expect(watch.events).to.deep.equal(Array(10).fill('died tenant'));
    expect(pool.quarantined(policy('team-kill', 'killer', 1, 'configmaps'))).to.equal(undefined);
  });

  it('quarantines a policy that kills it while compiling, and every namespace’s requests are answered', async function () {
    await teamOkAnswers();
    registry.sync(policy('team-kill', 'killer', 1, 'configmaps', 'compile'));
    await eventually(async () => expect(pool.quarantined(policy('team-kill', 'killer', 1, 'configmaps'))).to.match(/^it stopped its worker 3 times \(last: the tenant worker exited \(9\) while compiling it\)$/));
    for (let i = 0; i < 10; i++) await teamOkAnswers();
    expect((await pool.admit('Validating', create('configmaps', 'team-kill'))).message).to.match(/AdmissionPolicy killer is quarantined/);
    expect(watch.events.filter((e) => e.startsWith('quarantined'))).to.deep.equal(['quarantined tenant team-kill/killer']);
  });
});
