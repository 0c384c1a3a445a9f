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
  return parseDocuments(readText(file), file);
}

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
}

/** Every document of `text` (YAML or JSON), read from `file` (the name errors give); empty documents are skipped. */
function parseDocuments(text: string, file: string): KubeObject[] {
  try {
    return (yaml.loadAll(text) as unknown[])
      .filter((d): d is KubeObject => d !== null && d !== undefined)
      .map((d) => {
        if (typeof d !== 'object' || Array.isArray(d)) throw new Error('a document is not an object');
        return d as KubeObject;
      });
  } catch (err) {
    throw new Error(`${file}: ${errorMessage(err).split('\n')[0]}`);
  }
}

/** A document of a file with where its parts are: `line(path)` is the 1-based line of the field (or list item) at `path`, else of the nearest enclosing one. */
export interface LocatedDocument {
  object: KubeObject;
  /** 1-based, among the file's documents that are not empty (as `readDocuments` returns them). */
  index: number;
  line(path: (string | number)[]): number;
}

/** `readDocuments` with each document's lines, for errors that say where. */
export function readLocatedDocuments(file: string): LocatedDocument[] {
  return locateDocuments(readText(file), file);
}

/** `readLocatedDocuments` of text read elsewhere (standard input): `file` is the name errors give. */
export function locateDocuments(text: string, file: string): LocatedDocument[] {
  const objects = parseDocuments(text, file);
  const offsets = fieldOffsets(text);
  const lineOf = lineFinder(text);
  return objects.map((object, i) => {
    const fields = offsets[i] ?? new Map<string, number>();
    return {
      object,
      index: i + 1,
      line(path) {
        for (let n = path.length; n >= 0; n--) {
          const offset = fields.get(JSON.stringify(path.slice(0, n)));
          if (offset !== undefined) return lineOf(offset);
        }
        return 1;
      },
    };
  });
}

/** The 1-based line of an offset in `text`, by binary search of where its lines start: `scan` asks for one per object, and a rendered chart or kustomization has thousands. */
function lineFinder(text: string): (offset: number) => number {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
}

/**
 * For each document that is not empty, the source offset of each path (JSON of its segments): a
 * mapping's key where it is written, a list item's start. Read from js-yaml's event stream, which
 * keeps offsets that the loaded values do not.
 */
function fieldOffsets(text: string): Map<string, number>[] {
  const documents: Map<string, number>[] = [];
  // One frame per open collection: its path, and for a mapping the key awaiting its value (keys are scalars).
  type Frame = { path: (string | number)[]; mapping: boolean; next: number; key?: string };
  let stack: Frame[] = [];
  let fields = new Map<string, number>();
  let empty = true;
  const place = (start: number): (string | number)[] | undefined => {
    const top = stack[stack.length - 1];
    if (!top) return [];
    if (top.mapping) {
      if (top.key === undefined) return undefined;
      const path = [...top.path, top.key];
      top.key = undefined;
      return path;
    }
    const path = [...top.path, top.next++];
    fields.set(JSON.stringify(path), start);
    return path;
  };
  for (const event of yaml.parseEvents(text, {})) {
    if (event.type === yaml.EVENT_ID.DOCUMENT) {
      stack = [];
      fields = new Map();
      empty = true;
    } else if (event.type === yaml.EVENT_ID.MAPPING || event.type === yaml.EVENT_ID.SEQUENCE) {
      empty = false;
      const path = place(event.start) ?? [];
      if (stack.length === 0) fields.set('[]', event.start);
      stack.push({ path, mapping: event.type === yaml.EVENT_ID.MAPPING, next: 0 });
    } else if (event.type === yaml.EVENT_ID.SCALAR || event.type === yaml.EVENT_ID.ALIAS) {
      const top = stack[stack.length - 1];
      if (event.type === yaml.EVENT_ID.SCALAR && top?.mapping && top.key === undefined) {
        top.key = yaml.getScalarValue(text, event);
        fields.set(JSON.stringify([...top.path, top.key]), event.valueStart);
      } else {
        // A document of one scalar other than null fails to load; one that is null is skipped, as readDocuments skips it.
        if (stack.length === 0 && event.type === yaml.EVENT_ID.SCALAR && !/^(~|null|Null|NULL|)$/.test(yaml.getScalarValue(text, event))) empty = false;
        place(event.type === yaml.EVENT_ID.SCALAR ? event.valueStart : event.anchorStart);
      }
    } else if (event.type === yaml.EVENT_ID.POP) {
      if (stack.length) stack.pop();
      else if (!empty) documents.push(fields);
    }
  }
  return documents;
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
  const policies = (documents.filter(isPolicy) as unknown as AdmissionPolicy[]).map((p) => (p.metadata?.namespace ? p : ({ ...p, metadata: { ...p.metadata, namespace } } as AdmissionPolicy)));
  const objects = documents.filter((d) => !isSuite(d) && !isPolicy(d));
  return { suites, policies, objects };
}

/** `Kind/name` of an object, as `kubectl` names it. */
export function objectName(object: KubeObject): string {
  const metadata = (object.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(object.kind ?? '(no kind)')}/${metadata.name ?? '(no name)'}`;
}

/** The path of the first field a refusal names (`spec.webhooks[0].validations[1].expression: ...`), for its line (validate's and scan's). */
export function fieldOf(message: string): (string | number)[] {
  const field = /\bis invalid: ((?:[A-Za-z0-9_-]+(?:\[\d+\])*\.)*[A-Za-z0-9_-]+(?:\[\d+\])*):/.exec(message)?.[1];
  return field ? [...field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]!)) : [];
}
