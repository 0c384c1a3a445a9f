/**
 * UniqueIngressHost: an Ingress may not claim a host that another Ingress, in any namespace,
 * already claims (ingress-nginx and most controllers route a host to one backend; two Ingresses
 * with one host make the second team's routes silently lose or win). CEL cannot say this: it sees
 * one object, not every Ingress. This handler reads them all from the operator's Ingress cache
 * (`lookups: ['Ingress']`), never from the API server on the request path.
 *
 * What it does not promise: two Ingresses with the same host created at the same moment may both
 * be allowed (each is judged against the cache before the other is in it), as with any check made
 * from a cache; wildcard hosts (`*.example.com`) are compared as written.
 *
 * A Portcullis handler module (portcullis/sdk): built into dist/index.js (npm run build), loaded by
 * the operator from --handler-modules, named by suites as `handler: {name: example.portcullis.dev/UniqueIngressHost}`.
 */
import { HANDLER_API_VERSION, allow, deny, type AdmissionRequest, type ClusterView, type CustomHandler } from 'portcullis/sdk';

export const apiVersion = HANDLER_API_VERSION;

export interface UniqueIngressHostConfig {
  /** Namespaces whose Ingresses are neither checked nor counted (a shared ingress namespace, say). */
  exemptNamespaces: string[];
}

/** The hosts an Ingress claims: its rules' hosts, each once. */
export function hostsOf(ingress: Record<string, any> | null | undefined): string[] {
  const rules: { host?: unknown }[] = Array.isArray(ingress?.spec?.rules) ? ingress.spec.rules : [];
  return [...new Set(rules.map((r) => r?.host).filter((h): h is string => typeof h === 'string' && h !== ''))];
}

function parseConfig(config: Record<string, unknown>): { config: UniqueIngressHostConfig; errors: { field: string; message: string }[] } {
  const errors: { field: string; message: string }[] = [];
  for (const field of Object.keys(config)) if (field !== 'exemptNamespaces') errors.push({ field, message: 'unknown field; UniqueIngressHost takes exemptNamespaces' });
  const exempt = config.exemptNamespaces ?? [];
  if (!Array.isArray(exempt) || !exempt.every((n) => typeof n === 'string' && n !== '')) {
    errors.push({ field: 'exemptNamespaces', message: 'must be a list of namespace names' });
    return { config: { exemptNamespaces: [] }, errors };
  }
  return { config: { exemptNamespaces: exempt as string[] }, errors };
}

function validate(request: AdmissionRequest, config: UniqueIngressHostConfig, view: ClusterView) {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allow();
  const namespace = request.namespace ?? '';
  if (config.exemptNamespaces.includes(namespace)) return allow();
  const object = request.object as Record<string, any> | undefined;
  const name = request.name || object?.metadata?.name;
  const claimed = new Set(hostsOf(object));
  if (claimed.size === 0) return allow();
  for (const other of view.list('Ingress')) {
    const meta = other.metadata ?? {};
    if (meta.namespace === namespace && meta.name === name) continue; // itself, as stored (an update)
    if (config.exemptNamespaces.includes(meta.namespace)) continue;
    const taken = hostsOf(other).find((host) => claimed.has(host));
    if (taken) return deny(409, 'Conflict', `host ${taken} is already used by Ingress ${meta.namespace}/${meta.name}`);
  }
  return allow();
}

export const uniqueIngressHost: CustomHandler<UniqueIngressHostConfig> = {
  name: 'example.portcullis.dev/UniqueIngressHost',
  resources: [{ group: 'networking.k8s.io', resource: 'ingresses' }],
  lookups: ['Ingress'],
  parseConfig,
  validate,
};

export const handlers = [uniqueIngressHost];
