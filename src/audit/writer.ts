/**
 * audit: writes the reports of the namespaces whose results changed, and only the reports whose
 * results did (by the digest each carries; after a restart, the digests of the reports already
 * there). Reports no longer needed (a shard merged away, a namespace with nothing judged) are
 * deleted. Only the operator's own reports (labelled managed-by portcullis) are read or touched.
 * Without the report CRDs, nothing is written and `available()` says why.
 */
import type { Logger } from '../log.ts';
import { deleteIfExists, describeError, isConflict, isNotFound, statusCode, write, type Kube, type KubeObject } from '../apiserver/client.ts';
import { buildReports, MANAGED_BY, REPORT_KINDS, RESULTS_DIGEST_ANNOTATION, type ReportFlavour, type TargetInfo } from './reports.ts';
import type { AuditResults } from './results.ts';

/** Namespaces whose reports are written at once. */
const WRITES_IN_FLIGHT = 4;

const SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

export class ReportWriter {
  private readonly kube: Kube;
  private readonly log: Logger;
  private readonly flavour: ReportFlavour;
  /** `namespace/name` of every report of ours -> the digest of its results, and its resourceVersion (an update names it). */
  private readonly written = new Map<string, { digest: string; resourceVersion?: string }>();
  private loaded = false;
  private unavailable: string | undefined;
  /** Report writes (creates, updates and deletes) since start. */
  writes = 0;

  constructor(kube: Kube, log: Logger, flavour: ReportFlavour = 'openreports') {
    this.kube = kube;
    this.log = log;
    this.flavour = flavour;
  }

  /** The namespaces ('' for cluster-scoped) where reports of ours are. */
  namespaces(): string[] {
    return [...new Set([...this.written.keys()].map((k) => k.slice(0, k.indexOf('/'))))];
  }

  /** Why reports cannot be written (their CRDs are not installed), or undefined. */
  available(): string | undefined {
    return this.unavailable;
  }

  /** Reads the reports of ours already there (once), so that unchanged ones are not written again. */
  private async load(): Promise<boolean> {
    if (this.loaded) return true;
    const kinds = REPORT_KINDS[this.flavour];
    try {
      for (const plural of [kinds.plural, kinds.clusterPlural]) {
        const list = (await this.kube.custom.listClusterCustomObject({ group: kinds.group, version: kinds.version, plural, labelSelector: SELECTOR })) as { items?: KubeObject[] };
        for (const item of list.items ?? []) {
          const meta = item.metadata as { name: string; namespace?: string; annotations?: Record<string, string>; resourceVersion?: string };
          this.written.set(`${meta.namespace ?? ''}/${meta.name}`, { digest: meta.annotations?.[RESULTS_DIGEST_ANNOTATION] ?? '', resourceVersion: meta.resourceVersion });
        }
      }
    } catch (err) {
      if (statusCode(err) === 404) {
        this.unavailable = `the ${kinds.group} CRDs (${kinds.plural}, ${kinds.clusterPlural}) are not installed: results are counted in status but not reported`;
        return false;
      }
      throw err;
    }
    this.unavailable = undefined;
    this.loaded = true;
    return true;
  }

  /** Writes what changed in `namespaces`; a namespace whose write failed is marked to be tried again. */
  async flush(results: AuditResults, namespaces: string[], targets: ReadonlyMap<string, TargetInfo>): Promise<void> {
    if (namespaces.length === 0) return;
    if (!(await this.load().catch((err) => (this.log.warn('audit: reports cannot be read', { error: describeError(err) }), false)))) {
      if (!this.unavailable) for (const n of namespaces) results.markDirty(n);
      return;
    }
    // A few namespaces at once: each write waits on the API server and etcd more than on us.
    let next = 0;
    const writeNext = async (): Promise<void> => {
      while (next < namespaces.length) {
        const namespace = namespaces[next++]!;
        try {
          await this.flushNamespace(namespace, buildReports(namespace, results.objects(namespace), targets, this.flavour));
        } catch (err) {
          results.markDirty(namespace);
          this.log.warn('audit: writing reports failed', { namespace, error: describeError(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(WRITES_IN_FLIGHT, namespaces.length) }, writeNext));
  }

  /**
   * Creates or replaces a report, returning its new resourceVersion; `resourceVersion`: of the
   * report as this writer last saw it (absent: it is not known to exist). A conflict (someone
   * changed or deleted it) reads its current version by a list and replaces it again. The verbs
   * are RBAC's list, create and update (config/base/rbac.yaml).
   */
  private async put(report: KubeObject, namespace: string, name: string, resourceVersion: string | undefined): Promise<string | undefined> {
    const kinds = REPORT_KINDS[this.flavour];
    const custom = this.kube.custom;
    const ref = { group: kinds.group, version: kinds.version, plural: namespace ? kinds.plural : kinds.clusterPlural };
    const rv = (o: unknown) => (o as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    const create = async () => rv(await write(this.kube, () => (namespace ? custom.createNamespacedCustomObject({ ...ref, namespace, body: report }) : custom.createClusterCustomObject({ ...ref, body: report }))));
    const replace = async (version: string) => {
      const body = { ...report, metadata: { ...(report.metadata as object), resourceVersion: version } };
      return rv(await write(this.kube, () => (namespace ? custom.replaceNamespacedCustomObject({ ...ref, namespace, name, body }) : custom.replaceClusterCustomObject({ ...ref, name, body }))));
    };
    const current = async () => {
      const fieldSelector = `metadata.name=${name}`;
      const list = (namespace ? await custom.listNamespacedCustomObject({ ...ref, namespace, fieldSelector }) : await custom.listClusterCustomObject({ ...ref, fieldSelector })) as { items?: unknown[] };
      return list.items?.[0] ? rv(list.items[0]) : undefined;
    };
    if (resourceVersion) {
      try {
        return await replace(resourceVersion);
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    } else {
      try {
        return await create();
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    const found = await current();
    return found ? replace(found) : create();
  }

  private async flushNamespace(namespace: string, desired: KubeObject[]): Promise<void> {
    const wanted = new Set<string>();
    for (const report of desired) {
      const meta = report.metadata as { name: string; annotations: Record<string, string> };
      const key = `${namespace}/${meta.name}`;
      wanted.add(key);
      const digest = meta.annotations[RESULTS_DIGEST_ANNOTATION]!;
      const known = this.written.get(key);
      if (known?.digest === digest) continue;
      const resourceVersion = await this.put(report, namespace, meta.name, known?.resourceVersion);
      this.writes += 1;
      this.written.set(key, { digest, resourceVersion });
    }
    const kinds = REPORT_KINDS[this.flavour];
    for (const key of [...this.written.keys()]) {
      const [ns, name] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
      if (ns !== namespace || wanted.has(key)) continue;
      await deleteIfExists(this.kube, { apiVersion: kinds.apiVersion, kind: ns ? kinds.namespaced : kinds.cluster, metadata: { name, ...(ns ? { namespace: ns } : {}) } });
      this.writes += 1;
      this.written.delete(key);
    }
  }
}
