/**
 * `portcullis test --replay`'s pure parts on audit events written here (the real API server's
 * log: test/e2e/cli-audit.test.ts): what was recorded (allowed, denied by which webhook), the
 * request rebuilt from an event (old objects from the log's earlier writes, a patch's object from
 * its response, options and dry run from the URI, the impersonated user, a subresource's
 * resource), what is not replayed and why, the comparison with a real offline evaluation; and
 * the command's exit codes on a log file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { compare, parseAuditLog, recordedOf, replayable, type AuditEvent } from '../../../src/cli/replay.ts';
import { OfflineCluster, requestOf } from '../../../src/cli/evaluate.ts';
import { readDocuments, splitSuites } from '../../../src/cli/files.ts';
import { REPO, runCli } from '../../support/cli.ts';

const WEBHOOK = 'replica-limit.replica-guard.admission.portcullis.dev';
const DENIAL = `admission webhook "${WEBHOOK}" denied the request: replicas must be no greater than 5`;

const deployment = (replicas: number, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', ...extra },
  spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } } },
});

let id = 0;
function event(verb: string, fields: Partial<AuditEvent> = {}): AuditEvent {
  return {
    level: 'RequestResponse',
    auditID: `id-${++id}`,
    stage: 'ResponseComplete',
    requestURI: '/apis/apps/v1/namespaces/shop/deployments/web',
    verb,
    user: { username: 'alice', groups: ['devs', 'system:authenticated'] },
    objectRef: { resource: 'deployments', namespace: 'shop', name: 'web', apiGroup: 'apps', apiVersion: 'v1' },
    responseStatus: { code: 200 },
    ...fields,
  };
}
const lines = (events: AuditEvent[]) => events.map((event, i) => ({ line: i + 1, event }));

describe('portcullis test --replay: audit events back into requests', function () {
  it('reads JSON lines, numbering them, and names the line that is not an event', function () {
    expect(parseAuditLog('{"verb":"create"}\n\n{"verb":"get"}\n').map((e) => [e.line, e.event.verb])).to.deep.equal([
      [1, 'create'],
      [3, 'get'],
    ]);
    expect(() => parseAuditLog('{"verb":"create"}\n{nope\n', 'audit.log')).to.throw(/^audit\.log:2: not a JSON audit event/);
    expect(() => parseAuditLog('[1]\n', 'audit.log')).to.throw('audit.log:1: not a JSON audit event');
  });

  it('tells what was recorded: allowed, denied by a webhook, or decided outside the webhooks', function () {
    expect(recordedOf(event('create', { responseStatus: { code: 201 } }))).to.deep.equal({ allowed: true });
    expect(recordedOf(event('create', { responseStatus: { code: 422, message: DENIAL } }))).to.deep.equal({ allowed: false, webhook: WEBHOOK, message: DENIAL });
    expect(recordedOf(event('create', { responseStatus: { code: 500, message: `Internal error occurred: failed calling webhook "${WEBHOOK}": connection refused` } }))).to.deep.equal({ reason: `the call to webhook ${WEBHOOK} failed` });
    expect(recordedOf(event('create', { responseStatus: { code: 403, message: 'deployments.apps is forbidden: User "alice" cannot create' } }))).to.deep.equal({ reason: 'refused outside the admission webhooks (403)' });
    expect(recordedOf(event('create', { responseStatus: undefined }))).to.deep.equal({ reason: 'no response status recorded' });
  });

  it("rebuilds each write: the old object is the one the log last recorded stored, a patch's object its response", function () {
    const created = deployment(2, { uid: 'u1', resourceVersion: '1' });
    const updated = deployment(3, { uid: 'u1', resourceVersion: '2' });
    const patched = deployment(4, { uid: 'u1', resourceVersion: '3', labels: { tier: 'web' } });
    const { requests, skipped } = replayable(
      lines([
        event('create', { requestURI: '/apis/apps/v1/namespaces/shop/deployments?fieldManager=kubectl-client-side-apply&fieldValidation=Strict', requestObject: deployment(2), responseObject: created, responseStatus: { code: 201 } }),
        event('get', { responseObject: created }),
        event('update', { stage: 'ResponseStarted', requestObject: deployment(9) }),
        event('update', { requestObject: deployment(3, { resourceVersion: '1' }), responseObject: updated }),
        event('patch', { requestURI: '/apis/apps/v1/namespaces/shop/deployments/web?dryRun=All', requestObject: { spec: { replicas: 4 } } as never, responseObject: patched, impersonatedUser: { username: 'bob', groups: ['ops'] } }),
        event('delete', { requestObject: { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', propagationPolicy: 'Foreground' }, responseObject: { kind: 'Status', apiVersion: 'v1', status: 'Success' } }),
      ]),
    );
    expect(skipped).to.deep.equal([]);
    expect(requests.map((r) => [r.line, r.scenario.operation, r.scenario.object?.spec?.replicas ?? null, r.scenario.oldObject?.spec?.replicas ?? null])).to.deep.equal([
      [1, 'CREATE', 2, null],
      [4, 'UPDATE', 3, 2],
      [5, 'UPDATE', 4, 3],
      [6, 'DELETE', null, 4],
    ]);
    const [create, update, patch, del] = requests.map((r) => requestOf(r.scenario));
    expect(create!.options).to.deep.equal({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict' });
    expect(create!.userInfo).to.deep.equal({ username: 'alice', groups: ['devs', 'system:authenticated'] });
    expect(create!.resource).to.deep.equal({ group: 'apps', version: 'v1', resource: 'deployments' });
    expect(update!).to.include({ operation: 'UPDATE', name: 'web', namespace: 'shop', dryRun: false });
    // the impersonated user is the one the webhooks were told of; a dry run is in the URI
    expect(patch!.userInfo).to.deep.equal({ username: 'bob', groups: ['ops'] });
    expect(patch!).to.include({ dryRun: true });
    expect(patch!.options).to.deep.equal({ kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1', dryRun: ['All'] });
    expect(del!.options).to.deep.equal({ kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', propagationPolicy: 'Foreground' });
    expect(del!.object).to.equal(null);
  });

  it('says why a write is not replayed, and never guesses what the log does not hold', function () {
    const { requests, skipped } = replayable(
      lines([
        event('update', { requestObject: deployment(3) }),
        event('create', { level: 'Metadata', responseStatus: { code: 201 } }),
        event('patch', { requestObject: { spec: { replicas: 9 } } as never, responseStatus: { code: 422, message: DENIAL } }),
        event('deletecollection', { objectRef: { resource: 'deployments', namespace: 'shop', apiGroup: 'apps', apiVersion: 'v1' } }),
        event('create', { requestObject: deployment(1), responseStatus: { code: 403, message: 'forbidden' } }),
        event('update', {
          objectRef: { resource: 'deployments', namespace: 'shop', name: 'web', apiGroup: 'apps', apiVersion: 'v1', subresource: 'scale' },
          requestObject: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'web' } },
        }),
        event('create', { requestURI: '/apis', objectRef: undefined, requestObject: deployment(1) }),
      ]),
    );
    expect(requests).to.deep.equal([]);
    expect(skipped.map((s) => [s.line, s.reason])).to.deep.equal([
      [1, 'the old object is not in the log (no earlier write of it recorded)'],
      [2, 'recorded at Metadata level: no request object'],
      [3, 'a refused patch: the object it would have made is not in the log'],
      [4, 'verb deletecollection: the objects it deleted are not in the log'],
      [5, 'refused outside the admission webhooks (403)'],
      [6, 'the old object is not in the log (no earlier write of its scale recorded)'],
    ]);
  });

  it('finds the old object of one created with generateName by the name its response recorded', function () {
    const stored = deployment(2, { name: 'web-x7k2p', generateName: 'web-' });
    const { requests } = replayable(
      lines([
        event('create', {
          objectRef: { resource: 'deployments', namespace: 'shop', apiGroup: 'apps', apiVersion: 'v1' },
          requestObject: deployment(2, { name: undefined, generateName: 'web-' }),
          responseObject: stored,
          responseStatus: { code: 201 },
        }),
        event('update', { objectRef: { resource: 'deployments', namespace: 'shop', name: 'web-x7k2p', apiGroup: 'apps', apiVersion: 'v1' }, requestObject: deployment(3, { name: 'web-x7k2p' }) }),
      ]),
    );
    expect(requests[1]?.scenario.oldObject).to.deep.equal(stored);
  });

  it("asks a subresource's request of its resource, named by the event, and keeps each Namespace as last stored", function () {
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } };
    const { requests, namespaces } = replayable(
      lines([
        event('create', { objectRef: { resource: 'namespaces', name: 'shop', apiVersion: 'v1' }, requestObject: ns, responseObject: ns, responseStatus: { code: 201 } }),
        event('create', {
          objectRef: { resource: 'pods', namespace: 'shop', name: 'p', apiVersion: 'v1', subresource: 'eviction' },
          requestObject: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { namespace: 'shop' } },
          responseStatus: { code: 201 },
        }),
      ]),
    );
    expect(namespaces).to.deep.equal([ns]);
    const eviction = requestOf(requests[1]!.scenario);
    expect(eviction).to.deep.include({ name: 'p', namespace: 'shop', subResource: 'eviction', kind: { group: 'policy', version: 'v1', kind: 'Eviction' }, resource: { group: '', version: 'v1', resource: 'pods' } });
  });

  it('compares with a real evaluation: a new denial, the same denial, another message, a webhook not replayed', async function () {
    const { suites } = splitSuites(readDocuments(path.join(REPO, 'config/samples/replica-limit.yaml')));
    const cluster = new OfflineCluster(suites);
    const six = await cluster.evaluate({ object: deployment(6) });
    const two = await cluster.evaluate({ object: deployment(2) });
    expect(compare({ allowed: true }, six)).to.deep.equal({ differs: { recorded: 'allowed', replayed: `denied: ${DENIAL}` } });
    expect(compare({ allowed: true }, two)).to.deep.equal({});
    expect(compare({ allowed: false, webhook: WEBHOOK, message: DENIAL }, six)).to.deep.equal({});
    const older = `admission webhook "${WEBHOOK}" denied the request: replicas must be no greater than 4`;
    expect(compare({ allowed: false, webhook: WEBHOOK, message: older }, six)).to.deep.equal({ differs: { recorded: `denied: ${older}`, replayed: `denied: ${DENIAL}` } });
    expect(compare({ allowed: false, webhook: WEBHOOK, message: DENIAL }, two)).to.deep.equal({ differs: { recorded: `denied: ${DENIAL}`, replayed: 'allowed' } });
    expect(compare({ allowed: false, webhook: 'other.example.com', message: 'no' }, six)).to.deep.equal({ reason: 'denied by webhook other.example.com, which none of the suites replayed has' });
  });

  describe('the command', function () {
    this.timeout(30_000);
    let dir: string;
    let log: string;
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-replay-'));
      log = path.join(dir, 'audit.log');
      const created = deployment(6, { uid: 'u1' });
      const events = [
        event('create', { requestObject: deployment(6), responseObject: created, responseStatus: { code: 201 } }),
        event('update', { requestObject: deployment(8), responseStatus: { code: 422, message: DENIAL.replace('5', '7') } }),
        event('get', { responseObject: created }),
      ];
      fs.writeFileSync(log, events.map((e) => JSON.stringify(e)).join('\n'));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('prints each request answered otherwise, with exit 1; exit 0 when none is', async function () {
      const result = await runCli(['test', '--replay', log, 'config/samples/replica-limit.yaml']);
      expect(result.code, result.stderr).to.equal(1);
      expect(result.stdout).to.equal(
        [
          `${log}:1: CREATE deployments.apps shop/web (by alice)`,
          '  recorded: allowed',
          `  replayed: denied: ${DENIAL}`,
          `${log}:2: UPDATE deployments.apps shop/web (by alice)`,
          `  recorded: denied: ${DENIAL.replace('5', '7')}`,
          `  replayed: denied: ${DENIAL}`,
          '2 of 2 replayed requests answered otherwise than recorded',
          '',
        ].join('\n'),
      );
      const loose = path.join(dir, 'loose.yaml');
      const suite = readDocuments(path.join(REPO, 'config/samples/replica-limit.yaml'))[0] as { spec: { webhooks: { validations: { expression: string; message: string }[] }[] } };
      suite.spec.webhooks[0]!.validations = [{ expression: 'object.spec.replicas <= 7', message: 'replicas must be no greater than 7' }];
      fs.writeFileSync(loose, yaml.dump(suite));
      const same = await runCli(['test', '--replay', log, loose, '-o', 'json']);
      expect(same.code, same.stdout + same.stderr).to.equal(0);
      expect(JSON.parse(same.stdout)).to.deep.equal({ replayed: 2, differences: [], notReplayed: [] });
    });

    it('exits 2 on a log with nothing to replay, or an unknown output', async function () {
      const empty = path.join(dir, 'reads.log');
      fs.writeFileSync(empty, `${JSON.stringify(event('get'))}\n${JSON.stringify(event('create', { level: 'Metadata', responseStatus: { code: 201 } }))}\n`);
      const nothing = await runCli(['test', '--replay', empty, 'config/samples/replica-limit.yaml']);
      expect(nothing.code).to.equal(2);
      expect(nothing.stderr).to.contain(`${empty}: no write request to replay (1: recorded at Metadata level: no request object)`);
      expect((await runCli(['test', '--replay', log, 'config/samples/replica-limit.yaml', '-o', 'yaml'])).code).to.equal(2);
      expect((await runCli(['test', '--replay', path.join(dir, 'missing.log'), 'config/samples/replica-limit.yaml'])).stderr).to.contain('ENOENT');
    });
  });
});
