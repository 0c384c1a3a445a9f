/**
 * `portcullis import`: ValidatingAdmissionPolicies and bindings (and Kyverno ValidatingPolicies) as
 * AdmissionSuites (native/import.ts; Gatekeeper's, import-gatekeeper.ts; Kyverno's CEL ClusterPolicies
 * and Policies, import-kyverno.ts, namespaced ones as AdmissionPolicies), each checked as `validate`
 * checks a suite, so what is printed applies as it stands. What is not carried over is said on stderr
 * with its reason (a policy with no binding, a binding one webhook cannot say, a suite refused). Reads files only.
 */
import * as yaml from 'js-yaml';
import { importPolicies, isImportable } from '../native/import.ts';
import { importGatekeeper, isGatekeeper } from './import-gatekeeper.ts';
import { importKyverno, isKyvernoPolicy } from './import-kyverno.ts';
import { crdErrors } from './crd-schema.ts';
import { OfflineCluster } from './evaluate.ts';
import { objectFiles, readDocuments } from './files.ts';
import type { AdmissionPolicy, AdmissionSuite } from '../api/types.ts';

export interface ImportResult {
  suites: AdmissionSuite[];
  /** Kyverno's namespaced Policies' rules, as AdmissionPolicies. */
  policies: AdmissionPolicy[];
  /** What was not carried over, and why. */
  notes: string[];
  /** How many policies and bindings the files held. */
  found: number;
}

export async function importFiles(targets: string[], operatorNamespace: string): Promise<ImportResult> {
  const documents = targets.flatMap(objectFiles).flatMap(readDocuments);
  const found = documents.filter((d) => isImportable(d) || isGatekeeper(d) || isKyvernoPolicy(d)).length;
  const native = importPolicies(documents);
  const gatekeeper = importGatekeeper(documents);
  const kyverno = importKyverno(documents);
  const suites = [...native.suites, ...gatekeeper.suites, ...kyverno.suites];
  const notes = [...native.notes, ...gatekeeper.notes, ...kyverno.notes];
  const kept: AdmissionSuite[] = [];
  for (const { suite, source } of suites) {
    const schema = crdErrors(suite as unknown as Record<string, unknown>);
    const refused = schema.length ? schema.map((e) => e.text) : (await new OfflineCluster([suite], [], operatorNamespace, []).refusals()).map((r) => r.message);
    if (refused.length) notes.push(`${source}: as a suite it would be refused on apply: ${refused.join('; ')}; not imported`);
    else kept.push(suite);
  }
  const policies: AdmissionPolicy[] = [];
  for (const { policy, source } of kyverno.policies) {
    const schema = crdErrors(policy as unknown as Record<string, unknown>);
    const refused = schema.length ? schema.map((e) => e.text) : (await new OfflineCluster([], [], operatorNamespace, [policy]).refusals()).map((r) => r.message);
    if (refused.length) notes.push(`${source}: as an AdmissionPolicy it would be refused on apply: ${refused.join('; ')}; not imported`);
    else policies.push(policy);
  }
  return { suites: kept, policies, notes, found };
}

export function importedText(suites: (AdmissionSuite | AdmissionPolicy)[], output: 'yaml' | 'json'): string {
  if (output === 'json') return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: suites }, null, 2)}\n`;
  return suites.map((s) => yaml.dump(s, { lineWidth: -1, noRefs: true })).join('---\n');
}
