/**
 * CertificateSubjectRestriction, after the in-tree admission plugin (plugin/pkg/admission/
 * certificates/subjectrestriction): a CREATE of a CertificateSigningRequest for the
 * `kubernetes.io/kube-apiserver-client` signer whose request's subject has the organization (the
 * group) `system:masters` is refused. The request is read by certs/csr.ts as ParseCSR reads it
 * (the block Go's pem.Decode finds first, certs/pem.ts), so that no text around the PEM makes the
 * handler judge another block than the plugin and the API server's validation do. Opt-in, as the other
 * certificate handlers (api/self-protection.ts). Must not import the controller or the admission server.
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
