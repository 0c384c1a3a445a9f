/**
 * DenyServiceExternalIPs, after the Kubernetes admission plugin of that name (CVE-2020-8554):
 * a Service may not bring an external IP it did not already have. A CREATE with externalIPs is
 * denied; an UPDATE whose externalIPs are all among the old ones (kept, reordered, or fewer) is
 * allowed, so existing Services can still be changed and their external IPs removed. Refused in
 * the plugin's words and code (403): `services "web" is forbidden: Use of external IPs is denied
 * by admission control`.
 */
import { allowed } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { forbidden } from './errors.ts';

function externalIPs(object: unknown): string[] {
  const spec = isPlainObject(object) ? object.spec : undefined;
  const ips = isPlainObject(spec) ? spec.externalIPs : undefined;
  return Array.isArray(ips) ? ips.filter((ip): ip is string => typeof ip === 'string') : [];
}

/** The external IPs of `object` that `oldObject` did not have (all of them on CREATE). */
export function newExternalIPs(object: unknown, oldObject: unknown): string[] {
  const old = new Set(externalIPs(oldObject));
  return externalIPs(object).filter((ip) => !old.has(ip));
}

export const denyServiceExternalIPs: Handler<Record<string, never>> = {
  name: 'DenyServiceExternalIPs',
  audits: true,
  resources: [{ group: '', resource: 'services' }],
  parseConfig(config) {
    return { config: {}, errors: new ConfigReader(config, 'DenyServiceExternalIPs', []).errors };
  },
  validate(request) {
    if (request.resource.group !== '' || request.resource.resource !== 'services' || request.subResource) return allowed();
    if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
    const added = newExternalIPs(request.object, request.operation === 'UPDATE' ? request.oldObject : undefined);
    if (added.length === 0) return allowed();
    return forbidden(request, 'Use of external IPs is denied by admission control');
  },
};
