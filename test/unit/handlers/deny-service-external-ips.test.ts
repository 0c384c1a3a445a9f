/** DenyServiceExternalIPs, with the cases of upstream's TestAdmission and TestHandles. */
import { expect } from 'chai';
import { denyServiceExternalIPs } from '../../../src/handlers/deny-service-external-ips.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { suiteErrors } from '../../fixtures/patch.ts';

const svc = (...externalIPs: string[]) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'team-a' },
  spec: { ports: [{ port: 80 }], ...(externalIPs.length ? { externalIPs } : {}) },
});

const validate = (object: unknown, oldObject?: unknown) =>
  denyServiceExternalIPs.validate!(requestFor('services', oldObject ? 'UPDATE' : 'CREATE', { object: object as Record<string, unknown>, oldObject: (oldObject as Record<string, unknown>) ?? null }), {}, EMPTY_VIEW);

describe('handlers: DenyServiceExternalIPs', function () {
  // upstream TestAdmission
  const cases: { name: string; newSvc: unknown; oldSvc?: unknown; fail?: boolean }[] = [
    { name: 'create: without externalIPs', newSvc: svc() },
    { name: 'create: with externalIPs', newSvc: svc('1.1.1.1'), fail: true },
    { name: 'update: same externalIPs', newSvc: svc('1.1.1.1', '2.2.2.2'), oldSvc: svc('1.1.1.1', '2.2.2.2') },
    { name: 'update: reorder externalIPs', newSvc: svc('1.1.1.1', '2.2.2.2'), oldSvc: svc('2.2.2.2', '1.1.1.1') },
    { name: 'update: change externalIPs', newSvc: svc('1.1.1.1', '2.2.2.2'), oldSvc: svc('1.1.1.1', '3.3.3.3'), fail: true },
    { name: 'update: add externalIPs', newSvc: svc('1.1.1.1', '2.2.2.2'), oldSvc: svc('1.1.1.1'), fail: true },
    { name: 'update: add externalIPs to a Service that had none', newSvc: svc('1.1.1.1'), oldSvc: svc(), fail: true },
    { name: 'update: erase externalIPs', newSvc: svc(), oldSvc: svc('1.1.1.1', '2.2.2.2') },
    { name: 'update: reduce externalIPs from back', newSvc: svc('1.1.1.1'), oldSvc: svc('1.1.1.1', '2.2.2.2') },
    { name: 'update: reduce externalIPs from front', newSvc: svc('2.2.2.2'), oldSvc: svc('1.1.1.1', '2.2.2.2') },
    { name: 'update: reduce externalIPs from the middle', newSvc: svc('1.1.1.1', '3.3.3.3'), oldSvc: svc('1.1.1.1', '2.2.2.2', '3.3.3.3') },
    { name: 'update: change nothing relevant (a label)', newSvc: { ...svc('1.1.1.1'), metadata: { name: 'web', labels: { a: 'b' } } }, oldSvc: svc('1.1.1.1') },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const decision = validate(c.newSvc, c.oldSvc);
      if (!c.fail) return expect(decision).to.deep.equal({ allowed: true });
      expect(decision).to.include({ allowed: false, code: 403, reason: 'Forbidden' });
      expect(decision.message).to.equal('services "web" is forbidden: Use of external IPs is denied by admission control');
    });
  }

  // upstream TestHandles: CREATE and UPDATE only; and subresources are not looked at
  it('leaves DELETE with no object, CONNECT, subresources and other resources alone', function () {
    expect(denyServiceExternalIPs.validate!(requestFor('services', 'DELETE', { oldObject: svc('1.1.1.1') }), {}, EMPTY_VIEW).allowed).to.equal(true);
    expect(denyServiceExternalIPs.validate!(requestFor('services', 'DELETE', {}), {}, EMPTY_VIEW).allowed).to.equal(true);
    expect(denyServiceExternalIPs.validate!(requestFor('services', 'UPDATE', { object: svc('1.1.1.1'), oldObject: svc(), subResource: 'status' }), {}, EMPTY_VIEW).allowed).to.equal(true);
    expect(denyServiceExternalIPs.validate!(requestFor('configmaps', 'CREATE', { object: svc('1.1.1.1') }), {}, EMPTY_VIEW).allowed).to.equal(true);
  });

  it('a suite with a config, a mutating webhook, or other resources is refused, naming the field', function () {
    const rules = [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['services'] }];
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'DenyServiceExternalIPs', config: { allow: ['1.1.1.1'] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].handler.config.allow']);
    expect(suiteErrors({ type: 'Mutating', rules, handler: { name: 'DenyServiceExternalIPs' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].type']);
    const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    expect(suiteErrors({ type: 'Validating', rules: pods, handler: { name: 'DenyServiceExternalIPs' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].rules[0]']);
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'DenyServiceExternalIPs' } })).to.deep.equal([]);
  });
});
