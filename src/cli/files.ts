/** Reading the CLI's inputs: YAML or JSON files of one or more documents, and telling suites from the other objects. */
import fs from 'node:fs';
import * as yaml from 'js-yaml';
import { GROUP, KIND, type AdmissionSuite } from '../api/types.ts';

type KubeObject = Record<string, unknown>;

/** Every document of a YAML (or JSON) file; empty documents are skipped. */
export function readDocuments(file: string): KubeObject[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return (yaml.loadAll(text) as unknown[]).filter((d): d is KubeObject => d !== null && d !== undefined).map((d) => {
      if (typeof d !== 'object' || Array.isArray(d)) throw new Error('a document is not an object');
      return d as KubeObject;
    });
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** The one object of a file. */
export function readObject(file: string): KubeObject {
  const documents = readDocuments(file);
  if (documents.length !== 1) throw new Error(`${file} holds ${documents.length} documents, want one object`);
  return documents[0]!;
}

/** AdmissionSuites apart from the other objects (a sample file may create the params its suite reads). */
export function splitSuites(documents: KubeObject[]): { suites: AdmissionSuite[]; objects: KubeObject[] } {
  const isSuite = (d: KubeObject) => d.kind === KIND && String(d.apiVersion ?? '').startsWith(`${GROUP}/`);
  return { suites: documents.filter(isSuite) as unknown as AdmissionSuite[], objects: documents.filter((d) => !isSuite(d)) };
}
