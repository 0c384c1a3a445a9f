/**
 * Self-protection (src/api/self-protection.ts): the condition the API server evaluates keeps every
 * protected resource away and lets others through, and a webhook carries it exactly when its rules
 * could reach one of them.
 */
import { expect } from 'chai';
import { csrLockOutWarnings, CSR_OPT_IN_CONDITION, reachesProtected, selfProtection, SELF_PROTECTION_CONDITION } from '../../../src/api/self-protection.ts';
import type { SuiteSpec } from '../../../src/api/types.ts';
import { compile } from '../../../src/policy/engine/environment.ts';
import { toCel } from '../../../src/policy/values/convert.ts';

const evaluate = (expression: string) => {
  const condition = compile(expression, 'matchConditions[0]', ['bool']);
  return (group: string, resource: string) => condition({ object: null, oldObject: null, params: null, namespaceObject: null, request: toCel({ operation: 'UPDATE', resource: { group, version: 'v1', resource } }), variables: {} } as never);
};
const sent = evaluate(SELF_PROTECTION_CONDITION.expression);
const sentToCertificateHandler = evaluate(CSR_OPT_IN_CONDITION.expression);

const rule = (apiGroups: string[], resources: string[]) => [{ operations: ['*'], apiGroups, apiVersions: ['*'], resources }];

const PROTECTED: [string, string][] = [
  ['', 'nodes'],
  ['coordination.k8s.io', 'leases'],
  ['certificates.k8s.io', 'certificatesigningrequests'],
  ['authentication.k8s.io', 'tokenreviews'],
  ['authorization.k8s.io', 'subjectaccessreviews'],
  ['authorization.k8s.io', 'localsubjectaccessreviews'],
  ['admission.portcullis.dev', 'admissionsuites'],
];

describe('api/self-protection', function () {
  it('the condition keeps Nodes, Leases, CSRs, token and access reviews and AdmissionSuites away', function () {
    for (const [group, resource] of PROTECTED) expect(sent(group, resource), `${group}/${resource}`).to.equal(false);
  });

  it('the condition lets everything else through, same-named resources of other groups included', function () {
    for (const [group, resource] of [
      ['', 'configmaps'],
      ['apps', 'deployments'],
      ['coordination.k8s.io', 'leasecandidates'],
      ['example.com', 'nodes'],
      ['', 'leases'],
    ]) {
      expect(sent(group!, resource!), `${group}/${resource}`).to.equal(true);
    }
  });

  it('every protected resource is reached by a rule naming it, its group with "*", or "*" in either place, subresources included', function () {
    for (const [group, resource] of PROTECTED) {
      for (const rules of [rule([group], [resource]), rule([group], [`${resource}/status`]), rule(['*'], [resource]), rule([group], ['*']), rule([group], ['*/*']), rule(['*'], ['*'])]) {
        expect(reachesProtected(rules), `${group}/${resource}: ${JSON.stringify(rules[0])}`).to.equal(true);
      }
    }
  });

  it('rules that name no protected resource do not reach one, so their webhook costs the API server no CEL per request', function () {
    expect(reachesProtected(rule([''], ['configmaps', 'pods', 'pods/status']))).to.equal(false);
    expect(reachesProtected(rule(['apps', 'batch'], ['*']))).to.equal(false);
    expect(reachesProtected(rule(['coordination.k8s.io'], ['leasecandidates']))).to.equal(false);
    expect(reachesProtected(rule(['example.com'], ['nodes']))).to.equal(false);
    expect(reachesProtected([])).to.equal(false);
    expect(reachesProtected(undefined)).to.equal(false);
  });

  describe('the certificate handlers opt into CertificateSigningRequests', function () {
    const CSRS = rule(['certificates.k8s.io'], ['certificatesigningrequests/approval']);
    const EVERYTHING = rule(['*'], ['*/*']);

    it("their webhooks' condition lets CSRs through and keeps every other protected resource away", function () {
      expect(CSR_OPT_IN_CONDITION.name).to.equal(SELF_PROTECTION_CONDITION.name);
      expect(sentToCertificateHandler('certificates.k8s.io', 'certificatesigningrequests')).to.equal(true);
      for (const [group, resource] of PROTECTED.filter(([, r]) => r !== 'certificatesigningrequests')) expect(sentToCertificateHandler(group, resource), `${group}/${resource}`).to.equal(false);
    });

    it('a certificate handler on CSRs alone needs no condition; on more, the one that lets CSRs through', function () {
      for (const handler of ['CertificateApproval', 'CertificateSigning', 'CertificateSubjectRestriction']) {
        expect(selfProtection(CSRS, handler), handler).to.equal(undefined);
        expect(selfProtection(EVERYTHING, handler), handler).to.deep.equal(CSR_OPT_IN_CONDITION);
      }
    });

    it('any other handler, or CEL validations, on CSRs gets the condition that keeps them away', function () {
      expect(selfProtection(CSRS, 'OwnerReferencesPermissionEnforcement')).to.deep.equal(SELF_PROTECTION_CONDITION);
      expect(selfProtection(CSRS)).to.deep.equal(SELF_PROTECTION_CONDITION);
    });

    it('the suite is warned on apply of the lock-out (Fail, the default) or of requests going unchecked (Ignore), naming the webhook', function () {
      const spec = (failurePolicy?: 'Fail' | 'Ignore'): SuiteSpec => ({
        ...(failurePolicy ? { failurePolicy } : {}),
        webhooks: [
          { name: 'labels', type: 'Validating', rules: rule([''], ['configmaps']), validations: [{ expression: 'true' }] },
          { name: 'approval', type: 'Validating', rules: CSRS, handler: { name: 'CertificateApproval' } },
        ],
      });
      const [fail, ...more] = csrLockOutWarnings(spec());
      expect(more).to.deep.equal([]);
      expect(fail).to.contain('spec.webhooks[1] (approval): handler CertificateApproval is sent CertificateSigningRequests');
      expect(fail).to.contain("kubelets' client and serving certificates included");
      expect(csrLockOutWarnings(spec('Fail'))).to.deep.equal([fail]);
      expect(csrLockOutWarnings(spec('Ignore'))).to.deep.equal([
        'spec.webhooks[1] (approval): handler CertificateApproval is sent CertificateSigningRequests with failurePolicy Ignore: while no operator replica answers, those requests are admitted unchecked',
      ]);
    });

    it('no warning where no CSR is sent: a certificate handler whose rules do not reach them, or no certificate handler', function () {
      expect(csrLockOutWarnings({ webhooks: [{ name: 'x', type: 'Validating', rules: rule([''], ['configmaps']), handler: { name: 'CertificateSigning' } }] })).to.deep.equal([]);
      expect(csrLockOutWarnings({ webhooks: [{ name: 'x', type: 'Validating', rules: CSRS, validations: [{ expression: 'true' }] }] })).to.deep.equal([]);
    });
  });
});
