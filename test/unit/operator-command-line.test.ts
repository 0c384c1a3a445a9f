/**
 * The operator's command line (flags, environment, --help, --version) and its logs: one structured
 * line per denial and per error with the request's uid, suite, webhook, operation and decision, as
 * JSON or as readable text.
 */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import winston from 'winston';
import { parseCommandLine, type OperatorConfig } from '../../src/config.ts';
import { configureLogging, logger } from '../../src/log.ts';
import { SuiteRegistry } from '../../src/registry/registry.ts';
import { startTestEndpoint, type TestEndpoint } from '../support/endpoint.ts';
import { fixtures } from '../fixtures/reviews.ts';
import { guardsSuite } from '../fixtures/suites.ts';

const config = (argv: string[], env: NodeJS.ProcessEnv = {}): OperatorConfig => {
  const parsed = parseCommandLine(argv, env);
  if (!('config' in parsed)) throw new Error(`not a run: ${JSON.stringify(parsed)}`);
  return parsed.config;
};

describe('operator command line', function () {
  it('takes --name=value and --name value, over PORTCULLIS_<NAME>, over the defaults', function () {
    const parsed = config(['--serving-port', '1234', '--log-format=text', '--ca-duration=48h'], { PORTCULLIS_LOG_LEVEL: 'debug', PORTCULLIS_SERVING_PORT: '99' });
    expect(parsed).to.include({ servingPort: 1234, logFormat: 'text', logLevel: 'debug', caDurationMs: 48 * 3600_000, metricsPort: 8080 });
    expect(config(['--log-level=warn'], { PORTCULLIS_LOG_LEVEL: 'debug' }).logLevel).to.equal('warn');
  });

  it('refuses an unknown flag or a bad value, saying what is wrong', function () {
    expect(() => parseCommandLine(['--bogus=1'], {})).to.throw("Unknown option '--bogus'; see --help");
    expect(() => parseCommandLine(['--log-level=loud'], {})).to.throw('--log-level must be one of error, warn, info, debug, not loud');
    expect(() => parseCommandLine(['--log-format=xml'], {})).to.throw('--log-format must be json or text, not xml');
    expect(() => parseCommandLine(['stray'], {})).to.throw("Unexpected argument 'stray'; see --help");
  });

  it('takes a folder of handler modules and their time budget, refusing a budget the API server would not wait for', function () {
    expect(config([]).handlerModules).to.equal(undefined);
    expect(config([]).handlerBudgetMs).to.equal(2_000);
    expect(config(['--handler-modules=/opt/portcullis/handlers', '--handler-budget=500ms'])).to.include({ handlerModules: '/opt/portcullis/handlers', handlerBudgetMs: 500 });
    expect(config([], { PORTCULLIS_HANDLER_MODULES: '/handlers' }).handlerModules).to.equal('/handlers');
    expect(() => parseCommandLine(['--handler-budget=11s'], {})).to.throw('--handler-budget must be from 1ms to 10s (the API server waits at most 30s, 10s by default), not 11s');
    expect(() => parseCommandLine(['--handler-budget=soon'], {})).to.throw('--handler-budget must be a duration such as 87600h, not soon');
    expect((parseCommandLine(['--help'], {}) as { help: string }).help)
      .to.contain('--handler-modules=')
      .and.contain('--handler-budget=');
  });

  it('takes the backends handlers may call, none by default, refusing an entry that is not an https URL prefix', function () {
    expect(config([]).handlerBackends).to.deep.equal([]);
    expect(config(['--handler-backends=https://Review.Security.svc:443/v1, https://10.0.0.5:8443']).handlerBackends).to.deep.equal(['https://review.security.svc/v1', 'https://10.0.0.5:8443/']);
    expect(config([], { PORTCULLIS_HANDLER_BACKENDS: 'https://review.security.svc' }).handlerBackends).to.deep.equal(['https://review.security.svc/']);
    expect(() => parseCommandLine(['--handler-backends=http://review.security.svc'], {})).to.throw('--handler-backends: "http://review.security.svc" is not an https URL');
    expect(() => parseCommandLine(['--handler-backends=https://review?x=1'], {})).to.throw('--handler-backends: "https://review?x=1" must have no user, query or fragment');
    expect(() => parseCommandLine(['--handler-backends=review:443'], {})).to.throw('is not an https URL');
  });

  it('prints help naming every flag, and the version', function () {
    const help = parseCommandLine(['--help'], {});
    expect(help).to.have.property('help');
    for (const flag of ['--namespace=', '--serving-port=', '--metrics-port=', '--log-level=', '--log-format=', '--kubeconfig=', '--version']) {
      expect((help as { help: string }).help).to.contain(flag);
    }
    expect(parseCommandLine(['-h'], {})).to.have.property('help');
    expect(parseCommandLine(['--version'], {})).to.deep.equal({ version: `portcullis 0.1.0 (Node.js ${process.version})` });
  });
});

describe('admission logs', function () {
  let endpoint: TestEndpoint;
  let lines: string[] = [];
  const capture = new winston.transports.Stream({ stream: new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk).trim()), done()) }) });
  const level = logger.level;

  before(async function () {
    const suite = guardsSuite();
    // A third webhook whose expression errors on every request, answered by failurePolicy Ignore.
    suite.spec.webhooks.push({ ...suite.spec.webhooks[0]!, name: 'broken', failurePolicy: 'Ignore', validations: [{ expression: "object.metadata.labels.missing == 'x'" }] });
    const registry = new SuiteRegistry();
    registry.sync(suite);
    endpoint = await startTestEndpoint(registry, 'guards');
    logger.add(capture);
    logger.level = 'info';
  });

  after(async function () {
    logger.remove(capture);
    configureLogging({ level: level as 'info', format: 'json' });
    await endpoint.close();
  });

  beforeEach(() => (lines = []));

  const send = async (webhook: string, replicas: number, uid: string) => {
    const review = fixtures.deploymentCreate();
    review.request!.uid = uid;
    (review.request!.object as { spec: { replicas: number } }).spec.replicas = replicas;
    await endpoint.post(`/admit/guards/${webhook}`, JSON.stringify(review));
    // (winston hands lines to its transports through streams, a tick or so later)
    await new Promise((resolve) => setTimeout(resolve, 20));
  };

  it('writes one JSON line per denial and per error, with uid, suite, webhook, operation and decision; none for an allow', async function () {
    configureLogging({ level: 'info', format: 'json' });
    await send('replicas', 1, 'uid-allowed');
    await send('replicas', 5, 'uid-denied');
    await send('broken', 1, 'uid-error');
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.map((e) => e.uid)).to.deep.equal(['uid-denied', 'uid-error']);
    expect(entries[0]).to.deep.include({ uid: 'uid-denied', suite: 'guards', webhook: 'replicas', operation: 'CREATE', decision: 'denied', allowed: false, denial: 'at most 2 replicas', level: 'info' });
    expect(entries[1]).to.deep.include({ uid: 'uid-error', suite: 'guards', webhook: 'broken', operation: 'CREATE', decision: 'error', allowed: true });
    expect(entries[0]!.timestamp).to.be.a('string');
  });

  it('writes the same as one readable line with --log-format=text', async function () {
    configureLogging({ level: 'info', format: 'text' });
    await send('replicas', 5, 'uid-text');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^\d{4}-\d\d-\d\dT[\d:.]+Z info denied uid=uid-text suite=guards webhook=replicas operation=CREATE decision=denied allowed=false denial="at most 2 replicas"$/);
  });

  it('--log-level=warn keeps denials out', async function () {
    configureLogging({ level: 'warn', format: 'json' });
    await send('replicas', 5, 'uid-quiet');
    expect(lines).to.deep.equal([]);
  });
});
