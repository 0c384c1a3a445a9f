/**
 * What applying a certificate handler is warned of, as it happens: CertificateSigningRequests are
 * sent to a webhook only when its handler opts in (api/self-protection.ts), and then, with
 * failurePolicy Fail and no operator replica answering, the API server refuses every CSR that
 * webhook's rules match, as a kubelet asking for its certificate would be refused. Deleting the
 * suite, which the API server still allows, gives CSRs back. Owns its suite; stops its operator.
 */
import { expect } from 'chai';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { certificateRequestPem } from '../../src/certs/csr.ts';
import type { Operator } from '../../src/manager/operator.ts';

const SUITE = 'csr-lock-out';

/** A kubelet's client certificate request (system:node:<name> in system:nodes), or a client one in `organizations`. */
const csr = (name: string, organizations?: string[]) => ({
  apiVersion: 'certificates.k8s.io/v1',
  kind: 'CertificateSigningRequest',
  metadata: { name },
  spec: organizations
    ? { signerName: 'kubernetes.io/kube-apiserver-client', request: Buffer.from(certificateRequestPem(name, organizations)).toString('base64'), usages: ['digital signature', 'client auth'] }
    : {
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        request: Buffer.from(certificateRequestPem('system:node:worker-1', ['system:nodes'])).toString('base64'),
        usages: ['digital signature', 'client auth'],
      },
});
const createCsr = (name: string, organizations?: string[]) => rawRequest('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests?dryRun=All', csr(name, organizations));

describe('lifecycle: a suite opted into CertificateSigningRequests, the operator stopped', function () {
  this.timeout(5 * 60_000);
  let operator: Operator | undefined;

  before(async function () {
    operator = await startTestOperator();
    await createSuite(SUITE, {
      failurePolicy: 'Fail',
      webhooks: [
        {
          name: 'subject-restriction',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: ['certificates.k8s.io'], apiVersions: ['*'], resources: ['certificatesigningrequests'] }],
          handler: { name: 'CertificateSubjectRestriction' },
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
    // Served: a system:masters client certificate is refused by the handler.
    await eventually(
      async () => {
        const answer = await createCsr('lock-out-probe', ['system:masters']);
        if (!String(answer.body.message ?? '').includes('system:masters group is not allowed')) throw new Error(`not yet served: ${answer.status} ${answer.body.message ?? ''}`);
      },
      { what: 'the csr-lock-out suite to serve' },
    );
    expect((await createCsr('lock-out-node')).status).to.equal(201);
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator?.stop();
  });

  it("refuses every CSR its rules match while no replica answers, a kubelet's client certificate request included; deleting the suite gives them back", async function () {
    await operator!.stop();
    operator = undefined;
    const refused = await eventually(
      async () => {
        const answer = await createCsr('lock-out-node');
        return answer.status >= 400 ? answer : Promise.reject(new Error(`admitted: ${answer.status}`));
      },
      { what: 'the unreachable Fail webhook to refuse CSRs' },
    );
    expect(String(refused.body.message)).to.contain('failed calling webhook "subject-restriction.csr-lock-out.admission.portcullis.dev"');
    await deleteSuite(SUITE);
    await eventually(
      async () => {
        const answer = await createCsr('lock-out-node');
        if (answer.status !== 201) throw new Error(`still refused: ${answer.status} ${answer.body.message ?? ''}`);
      },
      { what: 'CSRs admitted once the suite is deleted' },
    );
  });
});
