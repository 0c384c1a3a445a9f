/**
 * DenyEscalatingExec, after the Kubernetes admission plugins DenyEscalatingExec and
 * DenyExecOnPrivileged (plugin/pkg/admission/exec, removed in 1.22): `kubectl exec` and
 * `kubectl attach` into a Pod that is privileged, or shares the node's PID or IPC namespace, is
 * refused, since a shell there is a shell on the node. Only CONNECT of pods/exec and pods/attach
 * is judged, as the plugins judged it (pods/portforward reaches no container's processes). The
 * Pod is read from the operator's Pod cache, where the plugins fetched it from the API server: a
 * change of the last moments (an ephemeral container just added) may not be seen yet.
 *
 * Config: `privileged`, `hostPID`, `hostIPC` (each true by default: DenyEscalatingExec) and
 * `hostNetwork` (false by default, as in both plugins, which never turned it on);
 * DenyExecOnPrivileged is `{hostPID: false, hostIPC: false}`. Refused in the plugins' words, order
 * and code (403): `pods "web" is forbidden: cannot exec into or attach to a privileged container`.
 * A Pod the cache does not hold is refused as the plugins refused a Pod their GET did not find.
 */
import { allowed, type AdmissionRequest } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { forbidden } from './errors.ts';
import { CONTAINER_LISTS, metadataOf, podSpecOf } from './pods.ts';

export interface DenyEscalatingExecConfig {
  privileged: boolean;
  hostPID: boolean;
  hostIPC: boolean;
  hostNetwork: boolean;
}

const FIELDS = ['privileged', 'hostPID', 'hostIPC', 'hostNetwork'] as const;
const DEFAULTS: DenyEscalatingExecConfig = { privileged: true, hostPID: true, hostIPC: true, hostNetwork: false };

/** The subresources that run something inside a container: what the plugins judged. */
const JUDGED = new Set(['exec', 'attach']);

/** Whether the request opens a stream into a Pod's container (CONNECT of pods/exec or pods/attach). */
export function entersContainer(request: Pick<AdmissionRequest, 'operation' | 'resource' | 'subResource'>): boolean {
  return request.operation === 'CONNECT' && request.resource.group === '' && request.resource.resource === 'pods' && JUDGED.has(request.subResource ?? '');
}

/** upstream isPrivileged: any container, init and ephemeral ones included, with securityContext.privileged true. */
export function isPrivileged(pod: unknown): boolean {
  const spec = podSpecOf(pod) as Record<string, unknown> | undefined;
  return CONTAINER_LISTS.some((list) => {
    const containers = spec?.[list];
    return Array.isArray(containers) && containers.some((c) => isPlainObject(c) && isPlainObject(c.securityContext) && c.securityContext.privileged === true);
  });
}

/** Why entering `pod` is refused under `config`, in upstream's words and order; undefined when it is not. */
export function escalation(pod: unknown, config: DenyEscalatingExecConfig): string | undefined {
  const spec = podSpecOf(pod) as Record<string, unknown> | undefined;
  if (config.hostNetwork && spec?.hostNetwork === true) return 'cannot exec into or attach to a container using host network';
  if (config.hostPID && spec?.hostPID === true) return 'cannot exec into or attach to a container using host pid';
  if (config.hostIPC && spec?.hostIPC === true) return 'cannot exec into or attach to a container using host ipc';
  if (config.privileged && isPrivileged(pod)) return 'cannot exec into or attach to a privileged container';
  return undefined;
}

export const denyEscalatingExec: Handler<DenyEscalatingExecConfig> = {
  name: 'DenyEscalatingExec',
  // No `audits`: a CONNECT is no stored object's CREATE, so the background audit has nothing to judge.
  resources: [{ group: '', resource: 'pods' }],
  lookups: ['Pod'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'DenyEscalatingExec', [...FIELDS]);
    const parsed = { ...DEFAULTS };
    for (const field of FIELDS) {
      if (!read.has(field)) continue;
      const value = read.raw(field);
      if (typeof value === 'boolean') parsed[field] = value;
      else read.error(field, 'must be true or false');
    }
    return { config: parsed, errors: read.errors };
  },
  validate(request, config, view) {
    if (!entersContainer(request)) return allowed();
    const name = request.name ?? '';
    const pod = view.list('Pod', request.namespace ?? '').find((p) => metadataOf(p)?.name === name);
    // The plugins' GET failing: admission.NewForbidden with the NotFound error's words.
    if (!pod) return forbidden(request, `pods "${name}" not found`);
    const why = escalation(pod, config);
    return why ? forbidden(request, why) : allowed();
  },
};
