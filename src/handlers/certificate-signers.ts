/**
 * What CertificateApproval, CertificateSigning and CertificateSubjectRestriction share (after
 * upstream's plugin/pkg/admission/certificates and pkg/certauthorization): which requests are a CSR's, its parts, the no-config parser, and
 * IsAuthorizedForSignerName (the verb on `signers` named by the signerName, else `<domain>/*`), asked
 * for the requesting user through `view.authorize`. Must not import the controller or the admission
 * server; which webhooks are sent CSRs is api/self-protection.ts'.
 */
import type { AdmissionRequest } from '../api/admission-review.ts';
import { authorizationUser } from '../api/authorization.ts';
import type { ClusterView, ServedResource } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';

export const CSR_GROUP = 'certificates.k8s.io';
export const CSR_RESOURCES: ServedResource[] = [{ group: CSR_GROUP, resource: 'certificatesigningrequests' }];

/** Whether the request is for CertificateSigningRequests' `subresource` ('' for the object itself). */
export function isCsrRequest(request: AdmissionRequest, subresource: string): boolean {
  return request.resource.group === CSR_GROUP && request.resource.resource === 'certificatesigningrequests' && (request.subResource ?? '') === subresource;
}

export interface CsrParts {
  signerName: string;
  /** spec.request: base64 of the PEM request, as JSON carries bytes. */
  request: string;
  status: Record<string, unknown>;
}

/** The parts of a CertificateSigningRequest the plugins read; undefined when it is not an object. */
export function csrParts(object: unknown): CsrParts | undefined {
  if (!isPlainObject(object)) return undefined;
  const spec = isPlainObject(object.spec) ? object.spec : {};
  const status = isPlainObject(object.status) ? object.status : {};
  return { signerName: typeof spec.signerName === 'string' ? spec.signerName : '', request: typeof spec.request === 'string' ? spec.request : '', status };
}

/** Upstream's refusal of what is not a CertificateSigningRequest (Go's `%T` of a nil object). */
export const NOT_A_CSR = 'expected type CertificateSigningRequest, got: <nil>';

/** The config parser of a handler that takes none. */
export function noConfig(name: string) {
  return (config: Record<string, unknown>) => {
    const read = new ConfigReader(config, name, []);
    return { config: {} as Record<string, never>, errors: read.errors };
  };
}

/**
 * upstream IsAuthorizedForSignerName: `verb` on signers named `signerName`, else on `<domain>/*`
 * (the part before the first slash), asked one after the other as upstream asks them. An
 * authorizer's error counts as no.
 */
export function isAuthorizedForSignerName(request: AdmissionRequest, view: ClusterView, verb: string, signerName: string): boolean {
  const user = authorizationUser(request.userInfo);
  const check = (name: string) => ({ user, resource: { verb, group: CSR_GROUP, resource: 'signers', subresource: '', namespace: '', name } });
  const [exact] = view.authorize!([check(signerName)]);
  if (exact!.allowed) return true;
  const [wildcard] = view.authorize!([check(`${signerName.split('/')[0]}/*`)]);
  return wildcard!.allowed;
}
