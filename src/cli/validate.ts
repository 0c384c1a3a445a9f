/**
 * `portcullis validate`: each file's documents judged as applying them would be, and with --strict
 * type-checked against the schemas main.ts chose. Owns the command's body and its words; must not
 * read arguments (main.ts parses them and says what is missing).
 */
import { OfflineCluster } from './evaluate.ts';
import { fieldOf, isPolicy, isSuite, objectName, readLocatedDocuments, splitSuites } from './files.ts';
import { crdErrors, ofOurGroup } from './crd-schema.ts';
import { typeCheckPolicy, typeCheckSuite, warningLine, type SchemaSource } from '../registry/typecheck.ts';
import type { AdmissionPolicy, AdmissionSuite, WebhookSpec } from '../api/types.ts';
import { CLUSTER_EXCEPTION_KIND, EXCEPTION_KIND, validateException, type AdmissionException, type ClusterAdmissionException } from '../api/exceptions.ts';
import { protectedNamespaces } from '../api/protected-namespaces.ts';

/** Where `validate --strict` reads schemas: its words for a kind with none, and the source. */
export interface StrictSchemas {
  source: SchemaSource;
  /** Said after "no schema for KIND": where the schemas came from and what would give more. */
  from: string;
}

/** What --strict found no schema for: a resource a rule names (no kind is served as it) or a kind (no schema published). */
interface Missing {
  group: string;
  version: string;
  resource?: string;
  kind?: string;
}

/**
 * `source`, noting what it has no schema for: a resource no kind is served as, a kind with no
 * schema. --strict refuses those rather than leave their expressions unchecked (dyn), as the
 * operator must: it said it would check them.
 */
function noticingMissing(source: SchemaSource): { source: SchemaSource; missing: Map<string, Missing> } {
  const missing = new Map<string, Missing>();
  return {
    missing,
    source: {
      kindsFor: async (group, version, resource) => {
        const kinds = await source.kindsFor(group, version, resource);
        if (kinds.length === 0) missing.set(`resource ${group ? `${group}/` : ''}${version} ${resource}`, { group, version, resource });
        return kinds;
      },
      schema: async (gvk) => {
        const schema = await source.schema(gvk);
        if (!schema) missing.set(`kind ${gvk.group ? `${gvk.group}/` : ''}${gvk.version} ${gvk.kind}`, gvk);
        return schema;
      },
    },
  };
}

/** The field that names what is missing: the first rule naming its group, version (and resource), else the params reference; `spec` if none does. */
function missingField(webhooks: { webhook: WebhookSpec; path: string }[], missing: Missing): string {
  for (const { webhook, path } of webhooks) {
    const params = webhook.params && missing.kind === webhook.params.kind && webhook.params.apiVersion === (missing.group ? `${missing.group}/${missing.version}` : missing.version);
    if (params) return `${path}.params`;
    const at = (webhook.rules ?? []).findIndex((r) => (r.apiGroups ?? []).includes(missing.group) && (r.apiVersions ?? []).includes(missing.version) && (missing.resource === undefined || (r.resources ?? []).includes(missing.resource)));
    if (at >= 0) return `${path}.rules[${at}]`;
  }
  return 'spec';
}

/**
 * Type-checks the suites and policies that compiled, as applying with `typeCheckErrors: Deny`
 * would: each warning printed, a definite error a refusal (keyed as OfflineCluster's refusals).
 */
async function typeErrors(suites: AdmissionSuite[], policies: AdmissionPolicy[], schemas: StrictSchemas, refusals: Map<string, string>, file: string): Promise<void> {
  const checked = [
    ...suites.map((s) => ({
      key: `AdmissionSuite ${s.metadata.name}`,
      what: `AdmissionSuite "${s.metadata.name}"`,
      webhooks: (s.spec.webhooks ?? []).map((webhook, i) => ({ webhook, path: `spec.webhooks[${i}]` })),
      check: (source: SchemaSource) => typeCheckSuite(s, source, 'Deny'),
    })),
    ...policies.map((p) => ({
      key: `AdmissionPolicy ${p.metadata.namespace}/${p.metadata.name}`,
      what: `AdmissionPolicy "${p.metadata.name}"`,
      webhooks: [{ webhook: { ...p.spec, name: p.metadata.name } as WebhookSpec, path: 'spec' }],
      check: (source: SchemaSource) => typeCheckPolicy(p, source, 'Deny'),
    })),
  ];
  for (const { key, what, webhooks, check } of checked) {
    if (refusals.has(key)) continue;
    const noticing = noticingMissing(schemas.source);
    const { warnings, errors, complete } = await check(noticing.source);
    for (const w of warnings) process.stdout.write(`${file}: warning: ${what}: ${warningLine(w)}\n`);
    if (!complete) process.stdout.write(`${file}: warning: ${what}: some kinds or schemas could not be read from the cluster; they were not checked\n`);
    const problems = [...errors.map((e) => `${e.field}: ${e.message}`), ...[...noticing.missing].map(([words, m]) => `${missingField(webhooks, m)}: --strict: no schema for ${words} to type-check against (${schemas.from})`)];
    if (problems.length) refusals.set(key, `${what} is invalid: ${problems.join('; ')}`);
  }
}

/** Whether a document is an AdmissionException (of our API group). */
const isException = (document: Record<string, unknown>) => ofOurGroup(document) && (document.kind === EXCEPTION_KIND || document.kind === CLUSTER_EXCEPTION_KIND);

/**
 * An AdmissionException as the operator's exception webhook judges it: against its suite when the
 * file holds it, else its own shape and namespace only (its suite is the cluster's, judged on apply).
 */
function exceptionProblem(exception: AdmissionException | ClusterAdmissionException, suites: AdmissionSuite[], namespace: string, operatorNamespace: string): { refused: boolean; text: string } {
  const name = JSON.stringify(exception.metadata?.name ?? '');
  const cluster = exception.kind === CLUSTER_EXCEPTION_KIND;
  const suite = suites.find((s) => s.metadata.name === exception.spec?.suite);
  const errors = validateException((cluster ? exception : { ...exception, metadata: { ...exception.metadata, namespace } }) as AdmissionException | ClusterAdmissionException, {
    protectedNamespaces: protectedNamespaces(operatorNamespace),
    suite,
    namespaceLabels: { 'kubernetes.io/metadata.name': namespace },
  }).filter((e) => suite || e.field !== 'spec.suite');
  const kind = cluster ? CLUSTER_EXCEPTION_KIND : EXCEPTION_KIND;
  if (errors.length) return { refused: true, text: `${kind} ${name} is invalid: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}` };
  const unchecked = suite ? '' : ` (its suite ${exception.spec.suite} is not in this file: its webhook and validations are checked on apply)`;
  return { refused: false, text: `${kind} ${name}${cluster ? '' : ` in namespace ${namespace}`} is valid${unchecked}` };
}

/**
 * Each file's documents judged as applying them would be: those of our API group first as the API
 * server judges a create (crd-schema.ts: kind and version, unknown fields, the CRD's schema and
 * rules), then those it would store as the operator's validation webhooks do. Every error is
 * printed, each where it is (file:line: document N); a file with no document is refused, as
 * kubectl refuses it. 1 when anything is refused.
 */
export async function validateFiles(files: string[], operatorNamespace: string, namespace: string, schemas?: StrictSchemas): Promise<number> {
  let refused = 0;
  for (const file of files) {
    const located = readLocatedDocuments(file);
    if (located.length === 0) {
      process.stdout.write(`${file}: no objects passed to apply\n`);
      refused++;
      continue;
    }
    const schemaErrors = new Map(located.filter((d) => ofOurGroup(d.object)).map((d) => [d, crdErrors(d.object)] as const));
    // Only what the API server would store reaches the operator's webhook.
    const stored = located.filter((d) => !schemaErrors.get(d)?.length).map((d) => d.object);
    const { suites, policies } = splitSuites(stored, namespace);
    const refusals = new Map((await new OfflineCluster(suites, [], operatorNamespace, policies).refusals()).map((r) => [`${r.kind} ${r.suite}`, r.message]));
    if (schemas) await typeErrors(suites, policies, schemas, refusals, file);
    // In the file's order: each suite and policy valid or refused, each other object skipped.
    for (const at of located) {
      const { object: document, index } = at;
      const metadata = (document.metadata ?? {}) as { name?: string; namespace?: string };
      const where = (path: (string | number)[] | undefined) => `${file}:${at.line(path ?? [])}: document ${index}`;
      const errors = schemaErrors.get(at);
      if (errors?.length) {
        refused++;
        for (const e of errors) process.stdout.write(`${where(e.path)}: ${String(document.kind)} ${JSON.stringify(metadata.name ?? '')} is invalid: ${e.text}\n`);
        continue;
      }
      if (isException(document)) {
        const problem = exceptionProblem(document as unknown as AdmissionException | ClusterAdmissionException, suites, metadata.namespace ?? namespace, operatorNamespace);
        if (problem.refused) refused++;
        process.stdout.write(problem.refused ? `${where([])}: ${problem.text}\n` : `${file}: ${problem.text}\n`);
        continue;
      }
      if (!isSuite(document) && !isPolicy(document)) {
        process.stdout.write(`${file}: ${objectName(document)} skipped: not an AdmissionSuite or AdmissionPolicy\n`);
        continue;
      }
      const policyNamespace = metadata.namespace ?? namespace;
      const message = refusals.get(isSuite(document) ? `${document.kind} ${metadata.name}` : `${document.kind} ${policyNamespace}/${metadata.name}`);
      if (message !== undefined) {
        refused++;
        // at the line of the field it names: a CEL error's own line:column is within that field
        process.stdout.write(`${where(fieldOf(message))}: ${message}\n`);
        continue;
      }
      const valid = isSuite(document) ? `AdmissionSuite "${metadata.name}" is valid` : `AdmissionPolicy "${metadata.name}" in namespace ${policyNamespace} is valid`;
      process.stdout.write(`${file}: ${valid}\n`);
    }
    if (schemaErrors.size === 0) process.stdout.write(`${file}: no AdmissionSuite or AdmissionPolicy\n`);
  }
  return refused ? 1 : 0;
}
