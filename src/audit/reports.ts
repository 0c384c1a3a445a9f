/**
 * audit: one namespace's results as OpenReports Report/ClusterReport (`openreports.io/v1alpha1`) or
 * the older `wgpolicyk8s.io/v1alpha2` PolicyReport/ClusterPolicyReport: one report per namespace
 * (`portcullis`), split into shards (`portcullis-1`, ...) by object uid past SHARD_BYTES, so an object
 * stays well under the API server's 1.5 MiB and a change rewrites one shard. Each carries its results'
 * digest (timestamps aside), so an unchanged report is never written again. Pure; no I/O.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../apiserver/client.ts';
import type { JudgedObject } from './results.ts';
import type { ResultKind, Severity } from './targets.ts';

export const REPORT_NAME = 'portcullis';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'portcullis' } as const;
export const RESULTS_DIGEST_ANNOTATION = 'admission.portcullis.dev/results-digest';
/** A shard's results are kept under this many bytes of JSON: a quarter of etcd's 1.5 MiB limit. */
export const SHARD_BYTES = 384 * 1024;
/** A message in a report is cut here, as the API server caps a messageExpression's (5 KiB) and less. */
const MESSAGE_LIMIT = 1024;

export type ReportFlavour = 'openreports' | 'policyreports';

export const REPORT_KINDS: Record<ReportFlavour, { apiVersion: string; namespaced: string; cluster: string; plural: string; clusterPlural: string; group: string; version: string }> = {
  openreports: { apiVersion: 'openreports.io/v1alpha1', group: 'openreports.io', version: 'v1alpha1', namespaced: 'Report', cluster: 'ClusterReport', plural: 'reports', clusterPlural: 'clusterreports' },
  policyreports: { apiVersion: 'wgpolicyk8s.io/v1alpha2', group: 'wgpolicyk8s.io', version: 'v1alpha2', namespaced: 'PolicyReport', cluster: 'ClusterPolicyReport', plural: 'policyreports', clusterPlural: 'clusterpolicyreports' },
};

/** What a report says about a target besides its results. */
export interface TargetInfo {
  policy: string;
  action: string;
  /** `AdmissionSuite` or `AdmissionPolicy`, and its webhook for a suite. */
  sourceKind: string;
  webhook?: string;
  /** `admission`: results of requests the webhook allowed with Warn or Audit failures; otherwise the scan's. */
  origin?: 'admission';
  /** Every result's `severity` and `category` (the suite's or policy's annotations), for people to sort by. */
  severity?: Severity;
  category?: string;
}

interface ResultEntry {
  source: string;
  policy: string;
  rule: string;
  result: ResultKind;
  message?: string;
  severity?: Severity;
  category?: string;
  scored: boolean;
  timestamp: { seconds: number; nanos: number };
  resources: { apiVersion: string; kind: string; name: string; namespace?: string; uid: string }[];
  properties: Record<string, string>;
}

/** A short stable number for a uid (FNV-1a), to pick its shard. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

function entriesOf(judged: JudgedObject, targets: ReadonlyMap<string, TargetInfo>): ResultEntry[] {
  const out: ResultEntry[] = [];
  const keys = [...judged.byTarget.keys()].sort();
  for (const key of keys) {
    const info = targets.get(key);
    if (!info) continue;
    const { results, since } = judged.byTarget.get(key)!;
    for (const r of results) {
      out.push({
        source: REPORT_NAME,
        policy: info.policy,
        rule: r.rule,
        result: r.result,
        ...(r.message ? { message: r.message.length > MESSAGE_LIMIT ? `${r.message.slice(0, MESSAGE_LIMIT)}...` : r.message } : {}),
        ...(info.severity ? { severity: info.severity } : {}),
        ...(info.category ? { category: info.category } : {}),
        scored: true,
        timestamp: { seconds: Math.floor(since / 1000), nanos: 0 },
        resources: [judged.ref],
        properties: { action: info.action, sourceKind: info.sourceKind, origin: info.origin ?? 'audit', ...(info.webhook ? { webhook: info.webhook } : {}) },
      });
    }
  }
  return out;
}

const shardName = (i: number) => (i === 0 ? REPORT_NAME : `${REPORT_NAME}-${i}`);

/** The digest of a report's results, timestamps aside: equal digests, equal reports. */
export function resultsDigest(results: ResultEntry[]): string {
  const stable = results.map(({ timestamp: _t, ...rest }) => rest);
  return createHash('sha256').update(JSON.stringify(stable)).digest('base64url').slice(0, 32);
}

/**
 * The reports of `namespace` ('' for cluster-scoped objects) for `objects`: none when nothing is
 * judged there. Objects are ordered by uid within a shard, results by target and rule.
 */
export function buildReports(namespace: string, objects: JudgedObject[], targets: ReadonlyMap<string, TargetInfo>, flavour: ReportFlavour = 'openreports'): KubeObject[] {
  const perObject = objects
    .map((judged) => ({ uid: judged.ref.uid, entries: entriesOf(judged, targets) }))
    .filter((o) => o.entries.length > 0)
    .sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  if (perObject.length === 0) return [];
  const bytes = perObject.reduce((sum, o) => sum + JSON.stringify(o.entries).length, 0);
  // A power of two, so that growing past a threshold moves about half of the objects, not all.
  let shards = 1;
  while (bytes / shards > SHARD_BYTES) shards *= 2;
  const buckets: ResultEntry[][] = Array.from({ length: shards }, () => []);
  for (const o of perObject) buckets[hash(o.uid) % shards]!.push(...o.entries);
  const kinds = REPORT_KINDS[flavour];
  return buckets
    .map((results, i) => ({ results, i }))
    .filter(({ results }) => results.length > 0)
    .map(({ results, i }) => {
      const summary = { pass: 0, fail: 0, warn: 0, error: 0, skip: 0 };
      for (const r of results) summary[r.result] += 1;
      const body = flavour === 'openreports' ? results : results.map(({ source: _s, ...r }) => ({ ...r, source: REPORT_NAME }));
      return {
        apiVersion: kinds.apiVersion,
        kind: namespace ? kinds.namespaced : kinds.cluster,
        metadata: {
          name: shardName(i),
          ...(namespace ? { namespace } : {}),
          labels: { ...MANAGED_BY },
          annotations: { [RESULTS_DIGEST_ANNOTATION]: resultsDigest(results) },
        },
        ...(flavour === 'openreports' ? { source: REPORT_NAME } : {}),
        summary,
        results: body,
      } as KubeObject;
    });
}
