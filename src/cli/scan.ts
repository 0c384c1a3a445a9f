/**
 * `portcullis scan`: objects of files, folders and stdin (manifests, `helm template`, `kustomize
 * build`) judged by suites and AdmissionPolicies as the API server would judge creating each (updating,
 * with `--old`), every request evaluate.ts' OfflineCluster's, the code the operator serves with. Owns
 * reading the suites (refused ones named by file and line), the targets, each request, and the
 * results; printing is scan-report.ts'. Reads files and stdin; writes nothing.
 */
import type { WebhookType } from '../api/types.ts';
import { errorMessage } from '../error-message.ts';
import { crdErrors, ofOurGroup } from './crd-schema.ts';
import { OfflineCluster } from './evaluate.ts';
import { fieldOf, isPolicy, isSuite, locateDocuments, objectFiles, readDocuments, readLocatedDocuments, splitSuites, type LocatedDocument } from './files.ts';
import { Resources } from './resources.ts';

type KubeObject = Record<string, any>;

/** The name standard input is given in results and errors. */
export const STDIN = '(stdin)';

export interface ScanInput {
  /** Files and folders of AdmissionSuites and AdmissionPolicies; their other objects (params, Namespaces, CRDs) are what the suites may read. */
  suites: string[];
  /** Files and folders of objects to judge; `-` is standard input. */
  targets: string[];
  /** Files and folders of the objects as stored: a target with the same apiVersion, kind, namespace and name is judged as an UPDATE of it. */
  old?: string[];
  /** The namespace of namespaced objects (and AdmissionPolicies) that name none, as `kubectl apply -n` (default `default`). */
  namespace?: string;
  /** The labels of the namespaces no Namespace object among the files gives (namespaceSelector reads them). */
  namespaceLabels?: Record<string, string>;
  operatorNamespace: string;
  /** Standard input's text, read once when a target is `-`. */
  stdin: () => string;
}

/** One webhook's answer to one object's request. */
export interface Judgement {
  /** The suite, or `AdmissionPolicies` for the webhook that serves every AdmissionPolicy. */
  suite: string;
  webhook: string;
  fullName: string;
  type: WebhookType;
  /** The AdmissionPolicies that judged the request (their webhook's answer only). */
  policies?: string[];
  allowed: boolean;
  message?: string;
  code?: number;
  warnings: string[];
  auditAnnotations: Record<string, string>;
  patched: boolean;
}

export interface ScannedObject {
  /** The file the object is in (as given; STDIN for standard input), its line and its document's number there (1-based). */
  file: string;
  line: number;
  document: number;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  operation: 'CREATE' | 'UPDATE';
  /** The webhooks the API server would call for the request, in its order; none when no rule matches. */
  judgements: Judgement[];
  allowed: boolean;
  /** The API server's words for the rejection. */
  message?: string;
}

/** A suite or AdmissionPolicy that judged the objects, and where it is written. */
export interface ScannedSuite {
  kind: string;
  name: string;
  namespace?: string;
  file: string;
  line: number;
}

export interface ScanResult {
  suites: ScannedSuite[];
  objects: ScannedObject[];
}

interface Located {
  file: string;
  document: LocatedDocument;
}

/** The result of every object of `input.targets`; throws, naming file and line, on what cannot be read or a suite that is refused. */
export async function scan(input: ScanInput): Promise<ScanResult> {
  const namespace = input.namespace ?? 'default';
  const suiteDocuments = input.suites.flatMap(objectFiles).flatMap((file) => readLocatedDocuments(file).map((document) => ({ file, document })));
  const {
    suites,
    policies,
    objects: suiteObjects,
  } = splitSuites(
    suiteDocuments.map((d) => d.document.object),
    namespace,
  );
  if (suites.length + policies.length === 0) throw new Error(`${input.suites.join(', ')}: no AdmissionSuite or AdmissionPolicy`);
  await refuseInvalid(suiteDocuments, namespace, input.operatorNamespace);

  const targets = readTargets(input.targets, input.stdin);
  if (targets.length === 0) throw new Error(`${input.targets.map((t) => (t === '-' ? 'standard input' : t)).join(', ')}: no objects to scan`);
  const resources = new Resources([...suiteObjects, ...targets.map((t) => t.document.object)]);
  const requested = targets.map((target) => ({ target, ...asCreated(target, resources, namespace) }));
  const old = new Map<string, KubeObject>();
  for (const file of (input.old ?? []).flatMap(objectFiles)) {
    for (const object of readDocuments(file).flatMap(listItems)) {
      const { object: stored } = asCreated({ file, document: { object, index: 0, line: () => 1 } }, resources, namespace);
      old.set(identity(stored), stored);
    }
  }

  const given = [...suiteObjects, ...requested.map((r) => r.object)];
  const namespaces = new Set(requested.map((r) => r.namespace).filter((n): n is string => n !== undefined));
  const named = new Set(given.filter((o) => o.kind === 'Namespace').map((o) => o.metadata?.name));
  // A namespace the files do not give is taken as --namespace-labels say it is labelled.
  for (const name of [...namespaces].filter((n) => !named.has(n))) given.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ...input.namespaceLabels } } });

  const cluster = new OfflineCluster(suites, given, input.operatorNamespace, policies);
  const scanned: ScannedObject[] = [];
  for (const { target, object, namespace: objectNamespace } of requested) {
    const oldObject = old.get(identity(object));
    const where = `${target.file}:${target.document.line([])}: document ${target.document.index}`;
    let evaluation;
    try {
      evaluation = await cluster.evaluate({ object, ...(oldObject ? { oldObject } : {}), ...(objectNamespace ? { namespace: objectNamespace } : {}) });
    } catch (err) {
      throw new Error(`${where}: ${String(object.kind)} ${JSON.stringify(object.metadata?.name ?? '')}: ${errorMessage(err)}`);
    }
    scanned.push({
      file: target.file,
      line: target.document.line([]),
      document: target.document.index,
      apiVersion: String(object.apiVersion),
      kind: String(object.kind),
      ...(objectNamespace ? { namespace: objectNamespace } : {}),
      name: String(object.metadata?.name ?? ''),
      operation: oldObject ? 'UPDATE' : 'CREATE',
      judgements: evaluation.webhooks
        .filter((w) => w.called)
        .map((w) => {
          const response = w.review?.response;
          return {
            suite: w.suite,
            webhook: w.webhook,
            fullName: w.fullName,
            type: w.type,
            ...(w.policies ? { policies: w.policies } : {}),
            allowed: response?.allowed ?? false,
            ...(response?.status?.message !== undefined ? { message: response.status.message } : {}),
            ...(response?.status?.code !== undefined ? { code: response.status.code } : {}),
            warnings: response?.warnings ?? [],
            // As the API server records them in the audit log: each key under the webhook's name.
            auditAnnotations: Object.fromEntries(Object.entries(response?.auditAnnotations ?? {}).map(([key, value]) => [`${w.fullName}/${key}`, value])),
            patched: response?.patch !== undefined,
          };
        }),
      allowed: evaluation.allowed,
      ...(evaluation.message !== undefined ? { message: evaluation.message } : {}),
    });
  }
  const listed = suiteDocuments
    .filter(({ document }) => isSuite(document.object) || isPolicy(document.object))
    .map(({ file, document }): ScannedSuite => {
      const metadata = document.object.metadata as { name?: string; namespace?: string } | undefined;
      return { kind: String(document.object.kind), name: metadata?.name ?? '', ...(isPolicy(document.object) ? { namespace: metadata?.namespace ?? namespace } : {}), file, line: document.line([]) };
    });
  return { suites: listed, objects: scanned };
}

/**
 * Throws when a suite or policy would not be stored: as validate judges it, the CRDs' schema and
 * rules (crd-schema.ts), then the operator's validation webhooks; every error, each as
 * FILE:LINE: document N.
 */
async function refuseInvalid(documents: Located[], namespace: string, operatorNamespace: string): Promise<void> {
  const errors: string[] = [];
  const where = (d: Located, path: (string | number)[] = []) => `${d.file}:${d.document.line(path)}: document ${d.document.index}`;
  const stored: Located[] = [];
  for (const d of documents) {
    const object = d.document.object;
    const schemaErrors = ofOurGroup(object) ? crdErrors(object) : [];
    for (const e of schemaErrors) errors.push(`${where(d, e.path)}: ${String(object.kind)} ${JSON.stringify((object.metadata as { name?: string } | undefined)?.name ?? '')} is invalid: ${e.text}`);
    if (schemaErrors.length === 0 && (isSuite(object) || isPolicy(object))) stored.push(d);
  }
  const { suites, policies } = splitSuites(
    stored.map((d) => d.document.object),
    namespace,
  );
  for (const refusal of await new OfflineCluster(suites, [], operatorNamespace, policies).refusals()) {
    const at = stored.find((d) => {
      const metadata = d.document.object.metadata as { name?: string; namespace?: string } | undefined;
      const key = isSuite(d.document.object) ? metadata?.name : `${metadata?.namespace ?? namespace}/${metadata?.name}`;
      return d.document.object.kind === refusal.kind && key === refusal.suite;
    });
    errors.push(`${at ? where(at, fieldOf(refusal.message)) : refusal.suite}: ${refusal.message}`);
  }
  if (errors.length) throw new Error(`a suite or policy is refused:\n${errors.join('\n')}`);
}

/** Every object of the targets, a List's items each one, with where it is. */
function readTargets(targets: string[], stdin: () => string): Located[] {
  const located: Located[] = [];
  let readStdin = false;
  for (const target of targets) {
    if (target === '-') {
      if (readStdin) throw new Error('- (standard input) given twice');
      readStdin = true;
      located.push(...locateDocuments(stdin(), STDIN).map((document) => ({ file: STDIN, document })));
    } else {
      for (const file of objectFiles(target)) located.push(...readLocatedDocuments(file).map((document) => ({ file, document })));
    }
  }
  return located.flatMap(({ file, document }) =>
    listItems(document.object).map((object, i) => ({
      file,
      document: object === document.object ? document : { object, index: document.index, line: (path: (string | number)[]) => document.line(['items', i, ...path]) },
    })),
  );
}

/** A List's items (as kubectl apply takes them), else the object itself. */
function listItems(object: KubeObject): KubeObject[] {
  return /List$/.test(String(object.kind ?? '')) && Array.isArray(object.items) ? (object.items as KubeObject[]) : [object];
}

/**
 * The object as the API server has it when admission judges its create: a namespaced one in its
 * namespace (its own, else `namespace`), a cluster-scoped one in none. Throws, naming where it is,
 * on an object kubectl would not send (no apiVersion or kind).
 */
function asCreated({ file, document }: Located, resources: Resources, namespace: string): { object: KubeObject; namespace?: string } {
  const object = document.object;
  const missing = [object.apiVersion ? '' : 'apiVersion not set', object.kind ? '' : 'kind not set'].filter(Boolean);
  if (missing.length || typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') {
    throw new Error(`${file}:${document.line([])}: document ${document.index}: error validating data: [${missing.length ? missing.join(', ') : 'apiVersion and kind must be strings'}]`);
  }
  const group = object.apiVersion.includes('/') ? object.apiVersion.split('/')[0]! : '';
  const metadata = { ...(object.metadata as KubeObject | undefined) };
  if (!resources.namespaced(group, object.kind)) {
    delete metadata.namespace;
    return { object: { ...object, metadata } };
  }
  metadata.namespace ??= namespace;
  return { object: { ...object, metadata }, namespace: metadata.namespace as string };
}

/** apiVersion, kind, namespace and name: which stored object an object updates. */
function identity(object: KubeObject): string {
  return JSON.stringify([object.apiVersion, object.kind, object.metadata?.namespace ?? '', object.metadata?.name ?? '']);
}
