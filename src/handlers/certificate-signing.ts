/**
 * CertificateSigning, after the in-tree admission plugin (plugin/pkg/admission/certificates/
 * signing): an UPDATE of `certificatesigningrequests/status` that changes `status.certificate` or
 * `status.conditions` needs verb `sign` on the signer the request named before the update, or on
 * `<domain>/*`, asked for the requesting user (certificate-signers.ts). Opt-in, as the other
 * certificate handlers (api/self-protection.ts). Must not import the controller or the admission server.
 */
import { allowed } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { forbidden } from './errors.ts';
import { CSR_RESOURCES, csrParts, isAuthorizedForSignerName, isCsrRequest, noConfig, NOT_A_CSR } from './certificate-signers.ts';

/** apiequality.Semantic.DeepEqual of two condition lists: an absent list is an empty one. */
const conditions = (status: Record<string, unknown>) => JSON.stringify(Array.isArray(status.conditions) ? status.conditions : []);

export const certificateSigning: Handler<Record<string, never>> = {
  name: 'CertificateSigning',
  resources: CSR_RESOURCES,
  asks: true,
  parseConfig: noConfig('CertificateSigning'),
  validate(request, _config, view) {
    if (request.operation !== 'UPDATE' || !isCsrRequest(request, 'status')) return allowed();
    const old = csrParts(request.oldObject);
    const csr = csrParts(request.object);
    if (!old || !csr) return forbidden(request, NOT_A_CSR);
    if ((old.status.certificate ?? '') === (csr.status.certificate ?? '') && conditions(old.status) === conditions(csr.status)) return allowed();
    if (isAuthorizedForSignerName(request, view, 'sign', old.signerName)) return allowed();
    return forbidden(request, `user not permitted to sign requests with signerName "${old.signerName}"`);
  },
};
