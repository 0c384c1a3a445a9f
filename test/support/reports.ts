/**
 * Reading the background audit's OpenReports Reports in tests: a namespace's results, as a
 * user reads them through the API server. Reads only; writes nothing.
 */
import { cluster } from './cluster.ts';

/** One result of a Report (the fields the tests assert on). */
export interface ReportResult {
  policy: string;
  rule: string;
  result: string;
  message?: string;
  resources: { name: string; kind?: string; uid?: string }[];
  properties?: Record<string, string>;
}

/** Every result of the namespace's Reports (shards included). */
export async function reportResults(namespace: string): Promise<ReportResult[]> {
  const list = (await cluster().kube.custom.listNamespacedCustomObject({ group: 'openreports.io', version: 'v1alpha1', plural: 'reports', namespace })) as { items: { results?: ReportResult[] }[] };
  return list.items.flatMap((r) => r.results ?? []);
}
