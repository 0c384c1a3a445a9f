/**
 * `portcullis import`: the ValidatingAdmissionPolicies and bindings (and Kyverno ValidatingPolicies)
 * of files or folders as AdmissionSuites (native/import.ts makes them; Gatekeeper's ConstraintTemplates
 * and Constraints, import-gatekeeper.ts), each then checked as `validate` checks a suite
 * (the CRD's schema, then the operator's webhook) so that what is printed applies as it stands.
 * What is not carried over (a policy with no binding, a binding one webhook cannot say, a suite the
 * operator would refuse) is said on stderr with its reason. Reads files only; no network call.
 */
import * as yaml from 'js-yaml';
import { importPolicies, isImportable } from '../native/import.ts';
import { importGatekeeper, isGatekeeper } from './import-gatekeeper.ts';
import { crdErrors } from './crd-schema.ts';
import { OfflineCluster } from './evaluate.ts';
import { objectFiles, readDocuments } from './files.ts';
import type { AdmissionSuite } from '../api/types.ts';

export interface ImportResult {
  suites: AdmissionSuite[];
  /** What was not carried over, and why. */
  notes: string[];
  /** How many policies and bindings the files held. */
  found: number;
}

export async function importFiles(targets: string[], operatorNamespace: string): Promise<ImportResult> {
  const documents = targets.flatMap(objectFiles).flatMap(readDocuments);
  const found = documents.filter((d) => isImportable(d) || isGatekeeper(d)).length;
  const native = importPolicies(documents);
  const gatekeeper = importGatekeeper(documents);
  const suites = [...native.suites, ...gatekeeper.suites];
  const notes = [...native.notes, ...gatekeeper.notes];
  const kept: AdmissionSuite[] = [];
  for (const { suite, source } of suites) {
    const schema = crdErrors(suite as unknown as Record<string, unknown>);
    const refused = schema.length ? schema.map((e) => e.text) : (await new OfflineCluster([suite], [], operatorNamespace, []).refusals()).map((r) => r.message);
    if (refused.length) notes.push(`${source}: as a suite it would be refused on apply: ${refused.join('; ')}; not imported`);
    else kept.push(suite);
  }
  return { suites: kept, notes, found };
}

export function importedText(suites: AdmissionSuite[], output: 'yaml' | 'json'): string {
  if (output === 'json') return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: suites }, null, 2)}\n`;
  return suites.map((s) => yaml.dump(s, { lineWidth: -1, noRefs: true })).join('---\n');
}
