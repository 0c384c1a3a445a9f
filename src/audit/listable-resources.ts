/**
 * audit: which listable resources a target's rules name, from the API server's discovery
 * (`/api/v1`, `/apis`, `/apis/<group>/<version>`), read once per scan: wildcards expand to what is
 * served, a version of `*` is the group's preferred one, subresources are not listed. Secrets are
 * never audited: reports are readable by `view`, which cannot read Secrets, and a result's
 * message may be computed from the object. Knows nothing of targets beyond their rules (and,
 * for `portcullis audit`, which reads params as the operator does, the resource of a kind).
 */
import type * as k8s from '@kubernetes/client-node';
import type { RuleWithOperations } from '../api/types.ts';
import { getJson, NotFound } from '../apiserver/get-json.ts';

export interface ListableResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

/** The resources never audited, whatever a rule names (`group/resource`). */
export const NEVER_AUDITED = new Set(['/secrets']);

interface ResourceList {
  resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[];
}
interface GroupList {
  groups: { name: string; versions: { version: string }[]; preferredVersion?: { version: string } }[];
}

export const resourceKey = (r: Pick<ListableResource, 'group' | 'version' | 'resource'>) => `${r.group}/${r.version}/${r.resource}`;
/** The collection of a resource: of every namespace, or of `namespace` alone. */
export const resourcePath = (r: Pick<ListableResource, 'group' | 'version' | 'resource'>, namespace?: string) =>
  `${r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${r.resource}`;

/** Discovery as one scan sees it: each document read at most once. */
export class ScanDiscovery {
  private readonly config: k8s.KubeConfig;
  private groups: Promise<GroupList> | undefined;
  private readonly lists = new Map<string, Promise<ResourceList | undefined>>();

  constructor(config: k8s.KubeConfig) {
    this.config = config;
  }

  private groupList(): Promise<GroupList> {
    return (this.groups ??= getJson<GroupList>(this.config, '/apis').then((g) => ({ groups: [{ name: '', versions: [{ version: 'v1' }], preferredVersion: { version: 'v1' } }, ...g.groups] })));
  }

  private resourceList(group: string, version: string): Promise<ResourceList | undefined> {
    const key = `${group}/${version}`;
    let found = this.lists.get(key);
    if (!found) {
      found = getJson<ResourceList>(this.config, group ? `/apis/${group}/${version}` : `/api/${version}`).catch((err) => {
        if (err instanceof NotFound) return undefined;
        throw err;
      });
      this.lists.set(key, found);
    }
    return found;
  }

  /** The resource objects of `apiVersion` and `kind` are served as (a params kind's), or undefined when none is. */
  async ofKind(apiVersion: string, kind: string): Promise<ListableResource | undefined> {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    const list = await this.resourceList(group!, version!);
    const found = list?.resources.find((r) => r.kind === kind && !r.name.includes('/') && r.verbs.includes('list'));
    return found && { group: group!, version: version!, resource: found.name, kind, namespaced: found.namespaced };
  }

  /** The listable resources `rules` name (each once). */
  async resolve(rules: RuleWithOperations[]): Promise<ListableResource[]> {
    const out = new Map<string, ListableResource>();
    const { groups } = await this.groupList();
    for (const rule of rules) {
      const wantedGroups = (rule.apiGroups ?? []).includes('*') ? groups : groups.filter((g) => (rule.apiGroups ?? []).includes(g.name));
      for (const group of wantedGroups) {
        const anyVersion = (rule.apiVersions ?? []).includes('*');
        const versions = anyVersion ? [group.preferredVersion?.version ?? group.versions[0]?.version] : group.versions.map((v) => v.version).filter((v) => (rule.apiVersions ?? []).includes(v));
        for (const version of versions) {
          if (!version) continue;
          const list = await this.resourceList(group.name, version);
          for (const r of list?.resources ?? []) {
            if (r.name.includes('/') || !r.verbs.includes('list') || !r.verbs.includes('watch')) continue;
            if (NEVER_AUDITED.has(`${group.name}/${r.name}`)) continue;
            const named = (rule.resources ?? []).some((x) => x === '*' || x === '*/*' || x === r.name || x === `${r.name}/*`);
            if (!named) continue;
            if (rule.scope === 'Cluster' && r.namespaced) continue;
            if (rule.scope === 'Namespaced' && !r.namespaced) continue;
            const resource = { group: group.name, version, resource: r.name, kind: r.kind, namespaced: r.namespaced };
            // One version per group and resource: the first a rule names.
            if (![...out.values()].some((o) => o.group === resource.group && o.resource === resource.resource)) out.set(resourceKey(resource), resource);
          }
        }
      }
    }
    return [...out.values()];
  }
}

/**
 * The resources `targets` name, each once, with the targets that name it: each kind is listed
 * once and judged by all of them. `resolved` hears each target's resources, or why they could
 * not be resolved (the target is then left out).
 */
export async function targetsByResource<T extends { rules: RuleWithOperations[] }>(
  discovery: ScanDiscovery,
  targets: T[],
  resolved: (target: T, resources: ListableResource[] | { error: unknown }) => void,
): Promise<Map<string, { resource: ListableResource; targets: T[] }>> {
  const byResource = new Map<string, { resource: ListableResource; targets: T[] }>();
  for (const target of targets) {
    let resources: ListableResource[];
    try {
      resources = await discovery.resolve(target.rules);
    } catch (error) {
      resolved(target, { error });
      continue;
    }
    resolved(target, resources);
    for (const resource of resources) {
      const key = resourceKey(resource);
      const entry = byResource.get(key) ?? { resource, targets: [] };
      entry.targets.push(target);
      byResource.set(key, entry);
    }
  }
  return byResource;
}
