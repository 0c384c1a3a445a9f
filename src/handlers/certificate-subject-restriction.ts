/**
 * CertificateSubjectRestriction, after the in-tree plugin (certificates/subjectrestriction): a CSR
 * CREATE for `kubernetes.io/kube-apiserver-client` whose subject has organization `system:masters` is
 * refused. The request is read as ParseCSR reads it (the first block Go's pem.Decode finds: certs/csr.ts,
 * pem.ts), so text around the PEM cannot make it judge another block than the API server does.
 * Opt-in (api/self-protection.ts). Must not import the controller or the admission server.
 */
import { allowed } from '../api/admission-review.ts';
import { requestOrganizations } from '../certs/csr.ts';
import type { Handler } from './handler.ts';
import { forbidden } from './errors.ts';
import { CSR_RESOURCES, csrParts, isCsrRequest, noConfig, NOT_A_CSR } from './certificate-signers.ts';

const KUBE_APISERVER_CLIENT = 'kubernetes.io/kube-apiserver-client';

export const certificateSubjectRestriction: Handler<Record<string, never>> = {
  name: 'CertificateSubjectRestriction',
  resources: CSR_RESOURCES,
  parseConfig: noConfig('CertificateSubjectRestriction'),
  validate(request) {
    if (request.operation !== 'CREATE' || !isCsrRequest(request, '')) return allowed();
    const csr = csrParts(request.object);
    if (!csr) return forbidden(request, NOT_A_CSR);
    if (csr.signerName !== KUBE_APISERVER_CLIENT) return allowed();
    const parsed = requestOrganizations(Buffer.from(csr.request, 'base64').toString('latin1'));
    if ('error' in parsed) return forbidden(request, `failed to parse CSR: ${parsed.error}`);
    if (parsed.organizations.includes('system:masters')) return forbidden(request, `use of ${KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed`);
    return allowed();
  },
};
