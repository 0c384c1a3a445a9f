/**
 * CertificateApproval, after the in-tree admission plugin (plugin/pkg/admission/certificates/
 * approval): an UPDATE of `certificatesigningrequests/approval` needs verb `approve` on the
 * signer the request names (before the update: changing the signerName there gains nothing), or
 * on its domain's `<domain>/*`, asked for the requesting user (certificate-signers.ts). Opt-in:
 * CertificateSigningRequests reach only a webhook of one of the certificate handlers
 * (api/self-protection.ts). Must not import the controller or the admission server.
 */
import { allowed } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { forbidden } from './errors.ts';
import { CSR_RESOURCES, csrParts, isAuthorizedForSignerName, isCsrRequest, noConfig, NOT_A_CSR } from './certificate-signers.ts';

export const certificateApproval: Handler<Record<string, never>> = {
  name: 'CertificateApproval',
  resources: CSR_RESOURCES,
  asks: true,
  parseConfig: noConfig('CertificateApproval'),
  validate(request, _config, view) {
    if (request.operation !== 'UPDATE' || !isCsrRequest(request, 'approval')) return allowed();
    const old = csrParts(request.oldObject);
    if (!old) return forbidden(request, NOT_A_CSR);
    if (isAuthorizedForSignerName(request, view, 'approve', old.signerName)) return allowed();
    return forbidden(request, `user not permitted to approve requests with signerName "${old.signerName}"`);
  },
};
