/**
 * Reading the CLI's inputs: YAML or JSON files of one or more documents (or a directory of them),
 * and telling suites and AdmissionPolicies from the other objects (RBAC, ConfigMaps, CRDs, ...
 * which a file may hold beside them).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { GROUP, KIND, POLICY_KIND, type AdmissionPolicy, type AdmissionSuite } from '../api/types.ts';
import { errorMessage } from '../error-message.ts';

type KubeObject = Record<string, unknown>;

/** Every document of a YAML (or JSON) file; empty documents are skipped. */
export function readDocuments(file: string): KubeObject[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
  try {
    return (yaml.loadAll(text) as unknown[]).filter((d): d is KubeObject => d !== null && d !== undefined).map((d) => {
      if (typeof d !== 'object' || Array.isArray(d)) throw new Error('a document is not an object');
      return d as KubeObject;
    });
  } catch (err) {
    throw new Error(`${file}: ${errorMessage(err).split('\n')[0]}`);
  }
}

/**
 * The files `target` names: itself, or every YAML and JSON file under a directory (in name order),
 * test files (`*portcullis-test.yaml`, which are not objects) left out.
 */
export function objectFiles(target: string): string[] {
  const stat = fs.statSync(target, { throwIfNoEntry: false });
  if (!stat) throw new Error(`cannot read ${target}: ENOENT`);
  if (!stat.isDirectory()) return [target];
  return fs
    .readdirSync(target, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ya?ml|json)$/.test(name) && !name.endsWith('portcullis-test.yaml'))
    .sort()
    .map((name) => path.join(target, name))
    .filter((file) => fs.statSync(file).isFile());
}

/** The one object of a file. */
export function readObject(file: string): KubeObject {
  const documents = readDocuments(file);
  if (documents.length !== 1) throw new Error(`${file} holds ${documents.length} documents, want one object`);
  return documents[0]!;
}

const ofGroup = (d: KubeObject, kind: string) => d.kind === kind && String(d.apiVersion ?? '').startsWith(`${GROUP}/`);
export const isSuite = (d: KubeObject) => ofGroup(d, KIND);
export const isPolicy = (d: KubeObject) => ofGroup(d, POLICY_KIND);

/**
 * AdmissionSuites and AdmissionPolicies apart from the other objects (a sample file may create
 * the params its suite reads, or the RBAC a suite needs). A policy without a namespace is given
 * `namespace`, as `kubectl apply -n` would.
 */
export function splitSuites(documents: KubeObject[], namespace = 'default'): { suites: AdmissionSuite[]; policies: AdmissionPolicy[]; objects: KubeObject[] } {
  const suites = documents.filter(isSuite) as unknown as AdmissionSuite[];
  const policies = (documents.filter(isPolicy) as unknown as AdmissionPolicy[]).map((p) =>
    p.metadata?.namespace ? p : ({ ...p, metadata: { ...p.metadata, namespace } } as AdmissionPolicy),
  );
  const objects = documents.filter((d) => !isSuite(d) && !isPolicy(d));
  return { suites, policies, objects };
}

/** `Kind/name` of an object, as `kubectl` names it. */
export function objectName(object: KubeObject): string {
  const metadata = (object.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(object.kind ?? '(no kind)')}/${metadata.name ?? '(no name)'}`;
}
