/**
 * The certificate handlers (CertificateApproval, CertificateSigning, CertificateSubjectRestriction)
 * on what the API server would answer (a table of allowed checks standing in for
 * SubjectAccessReviews; the same requests against the in-tree plugins, through real API servers,
 * are the plugin differential's): which checks they ask, in what order, and the in-tree plugins'
 * words and codes when they refuse. Upstream's admission_test.go cases, named as there.
 */
import { expect } from 'chai';
import type { AuthorizationAttributes, AuthorizationDecision, Authorizer } from '../../../src/api/authorization.ts';
import type { AdmissionSuite } from '../../../src/api/types.ts';
import type { AdmissionRequest, Decision } from '../../../src/api/admission-review.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { certificateRequestPem } from '../../../src/certs/csr.ts';

/** Allows the checks whose `verb name` is listed; records every check asked. */
class SignerAuthorizer implements Authorizer {
  readonly asked: string[] = [];
  private readonly allowed: string[];
  constructor(allowed: string[]) {
    this.allowed = allowed;
  }
  async check(attributes: AuthorizationAttributes): Promise<AuthorizationDecision> {
    const r = attributes.resource!;
    expect([r.group, r.resource, r.subresource, r.namespace, attributes.user.username]).to.deep.equal(['certificates.k8s.io', 'signers', '', '', 'alice']);
    const said = `${r.verb} ${r.name}`;
    this.asked.push(said);
    return { allowed: this.allowed.includes(said), reason: '', evaluationError: '' };
  }
}

const RULES = [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['certificates.k8s.io'], apiVersions: ['*'], resources: ['certificatesigningrequests', 'certificatesigningrequests/approval', 'certificatesigningrequests/status'] }];

function admitFor(handler: string, authorizer: Authorizer = new SignerAuthorizer([])): (request: AdmissionRequest) => Promise<Decision> {
  const suite: AdmissionSuite = {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'certs', uid: 'u' },
    spec: { webhooks: [{ name: 'csrs', type: 'Validating', rules: RULES, handler: { name: handler } }] },
  };
  const compiled = compileSuite(suite, { authorizer });
  expect(compiled.errors).to.deep.equal([]);
  const admit = compiled.webhooks.get('csrs')!.admit;
  return async (request) => admit(request);
}

const csr = (signerName: string, status: Record<string, unknown> = {}, request = '') => ({
  apiVersion: 'certificates.k8s.io/v1',
  kind: 'CertificateSigningRequest',
  metadata: { name: 'panda' },
  spec: { signerName, request, usages: ['client auth'] },
  status,
});

function csrRequest(operation: AdmissionRequest['operation'], subResource: string, object: unknown, oldObject?: unknown): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' },
    resource: { group: 'certificates.k8s.io', version: 'v1', resource: 'certificatesigningrequests' },
    ...(subResource ? { subResource } : {}),
    name: 'panda',
    operation,
    userInfo: { username: 'alice', groups: ['system:authenticated'] },
    object: object as Record<string, unknown>,
    oldObject: (oldObject ?? null) as Record<string, unknown> | null,
  };
}

const FORBIDDEN = (why: string) => ({ allowed: false, code: 403, reason: 'Forbidden', message: `certificatesigningrequests.certificates.k8s.io "panda" is forbidden: ${why}` });
const APPROVED = { conditions: [{ type: 'Approved', status: 'True', reason: 'AutoApproved' }] };
const approve = (oldSigner: string, newSigner = oldSigner) => csrRequest('UPDATE', 'approval', csr(newSigner, APPROVED), csr(oldSigner));
const sign = (oldSigner: string, status: Record<string, unknown>, newSigner = oldSigner, oldStatus: Record<string, unknown> = APPROVED) => csrRequest('UPDATE', 'status', csr(newSigner, status), csr(oldSigner, oldStatus));

describe('handlers: CertificateApproval', function () {
  it("should deny request if user does not have permission for this signerName, in upstream's words, after asking for the signer and then its domain", async function () {
    const authorizer = new SignerAuthorizer(['approve notabc.com/xyz']);
    expect(await admitFor('CertificateApproval', authorizer)(approve('abc.com/xyz'))).to.deep.equal(FORBIDDEN('user not permitted to approve requests with signerName "abc.com/xyz"'));
    expect(authorizer.asked).to.deep.equal(['approve abc.com/xyz', 'approve abc.com/*']);
  });

  it('should allow request if user is authorized for specific signerName, asking nothing more', async function () {
    const authorizer = new SignerAuthorizer(['approve abc.com/xyz']);
    expect(await admitFor('CertificateApproval', authorizer)(approve('abc.com/xyz'))).to.deep.equal({ allowed: true });
    expect(authorizer.asked).to.deep.equal(['approve abc.com/xyz']);
  });

  it('should allow request if user is authorized with wildcard', async function () {
    expect(await admitFor('CertificateApproval', new SignerAuthorizer(['approve abc.com/*']))(approve('abc.com/xyz'))).to.deep.equal({ allowed: true });
  });

  it('should deny request if user attempts to update signerName to a new value they *do* have permission to approve for', async function () {
    const admit = admitFor('CertificateApproval', new SignerAuthorizer(['approve allowed.com/xyz']));
    expect(await admit(approve('notallowed.com/xyz', 'allowed.com/xyz'))).to.deep.equal(FORBIDDEN('user not permitted to approve requests with signerName "notallowed.com/xyz"'));
  });

  it('judges only UPDATEs of the approval subresource: a status update or a create asks nothing', async function () {
    const authorizer = new SignerAuthorizer([]);
    const admit = admitFor('CertificateApproval', authorizer);
    expect(await admit(sign('abc.com/xyz', { certificate: 'ZGF0YQ==' }))).to.deep.equal({ allowed: true });
    expect(await admit(csrRequest('CREATE', '', csr('abc.com/xyz')))).to.deep.equal({ allowed: true });
    expect(authorizer.asked).to.deep.equal([]);
  });
});

describe('handlers: CertificateSigning', function () {
  it("allowed if the 'certificate' and conditions field has not changed, asking nothing", async function () {
    const authorizer = new SignerAuthorizer([]);
    const status = { ...APPROVED, certificate: 'ZGF0YQ==' };
    expect(await admitFor('CertificateSigning', authorizer)(sign('abc.com/xyz', status, 'abc.com/xyz', status))).to.deep.equal({ allowed: true });
    expect(authorizer.asked).to.deep.equal([]);
  });

  it('deny request on certificate change, and on condition change, for a user who may not sign', async function () {
    const admit = admitFor('CertificateSigning', new SignerAuthorizer([]));
    const refused = FORBIDDEN('user not permitted to sign requests with signerName "abc.com/xyz"');
    expect(await admit(sign('abc.com/xyz', { ...APPROVED, certificate: 'ZGF0YQ==' }))).to.deep.equal(refused);
    expect(await admit(sign('abc.com/xyz', { conditions: [...APPROVED.conditions, { type: 'Failed', status: 'True' }] }))).to.deep.equal(refused);
  });

  it('allow request if user is authorized for specific signerName, or with wildcard', async function () {
    const change = sign('abc.com/xyz', { ...APPROVED, certificate: 'ZGF0YQ==' });
    expect(await admitFor('CertificateSigning', new SignerAuthorizer(['sign abc.com/xyz']))(change)).to.deep.equal({ allowed: true });
    expect(await admitFor('CertificateSigning', new SignerAuthorizer(['sign abc.com/*']))(change)).to.deep.equal({ allowed: true });
    // approve is not sign
    expect((await admitFor('CertificateSigning', new SignerAuthorizer(['approve abc.com/*']))(change)).allowed).to.equal(false);
  });

  it('should deny request if user attempts to update signerName to a new value they *do* have permission to sign for', async function () {
    const admit = admitFor('CertificateSigning', new SignerAuthorizer(['sign allowed.com/xyz']));
    expect(await admit(sign('notallowed.com/xyz', { ...APPROVED, certificate: 'ZGF0YQ==' }, 'allowed.com/xyz'))).to.deep.equal(FORBIDDEN('user not permitted to sign requests with signerName "notallowed.com/xyz"'));
  });
});

describe('handlers: CertificateSubjectRestriction', function () {
  const pem = (organizations: string[]) => Buffer.from(certificateRequestPem('pooh', organizations)).toString('base64');
  const create = (signerName: string, request: string, subResource = '') => csrRequest('CREATE', subResource, csr(signerName, {}, request));
  const admit = admitFor('CertificateSubjectRestriction');

  it("request for system:masters with the kube-apiserver-client signer: refused in upstream's words", async function () {
    expect(await admit(create('kubernetes.io/kube-apiserver-client', pem(['dev', 'system:masters'])))).to.deep.equal(FORBIDDEN('use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed'));
  });

  it('some other signer, some other group, an ignored subresource: allowed', async function () {
    expect(await admit(create('kubernetes.io/kube-apiserver-client-kubelet', pem(['system:masters'])))).to.deep.equal({ allowed: true });
    expect(await admit(create('kubernetes.io/kube-apiserver-client', pem(['system:admin'])))).to.deep.equal({ allowed: true });
    expect(await admit(create('kubernetes.io/kube-apiserver-client', pem(['system:masters']), 'approve'))).to.deep.equal({ allowed: true });
  });

  it('invalid request: refused as upstream cannot parse it', async function () {
    expect(await admit(create('kubernetes.io/kube-apiserver-client', Buffer.from('this is not a CSR').toString('base64')))).to.deep.equal(FORBIDDEN('failed to parse CSR: PEM block type must be CERTIFICATE REQUEST'));
  });
});
