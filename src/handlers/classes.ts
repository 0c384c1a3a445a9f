/**
 * Cluster-wide classes (StorageClasses, IngressClasses) and Nodes as the in-tree plugins read them from
 * their informers: the default one when several claim to be (the newest, then the first by name,
 * as k8s.io/kubernetes/pkg/volume/util GetDefaultClass), and a class by name. Pure functions of
 * the objects a ClusterView lists.
 */
import { isPlainObject } from './config.ts';
import { metadataOf } from './pods.ts';

type Obj = Record<string, any>;

/** Newest creationTimestamp first (the API server's whole seconds), then ascending name. */
export function newestDefault(classes: Obj[], isDefault: (annotations: Record<string, string>) => boolean): Obj | undefined {
  const defaults = classes.filter((c) => isDefault(metadataOf(c)?.annotations ?? {}));
  defaults.sort((a, b) => {
    const ta = Date.parse(String(a.metadata?.creationTimestamp ?? '')) || 0;
    const tb = Date.parse(String(b.metadata?.creationTimestamp ?? '')) || 0;
    if (ta !== tb) return tb - ta;
    const na = String(a.metadata?.name ?? '');
    const nb = String(b.metadata?.name ?? '');
    return na < nb ? -1 : na > nb ? 1 : 0;
  });
  return defaults[0];
}

export function byName(classes: Obj[], name: string): Obj | undefined {
  return classes.find((c) => isPlainObject(c.metadata) && c.metadata.name === name);
}
