/**
 * A suite (or AdmissionPolicy) type-checked against the schemas of the kinds its webhooks match, picked
 * as VAP's TypeChecker picks them (typesToCheck: no wildcard group or version, at most ten kinds a
 * webhook; no published schema, no check). Warnings for `status.typeChecking`; definite errors refuse on
 * apply only with `typeCheckErrors: Deny` (or --type-check-errors=Deny): a warning by default, as VAP.
 * Schemas come from a SchemaSource (openapi.ts, or the admission thread's copy); never on a request path.
 */
import type { AdmissionPolicy, AdmissionSuite, ExpressionWarning, RuleWithOperations, TypeCheckErrors, WebhookSpec } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { typeCheckWebhook, gvkString, type CheckedKind, type GroupVersionKind } from '../policy/typecheck/check.ts';
import { schemaTypes, type OpenApiSchema, type SchemaTypes } from '../policy/typecheck/schema.ts';
import { HeldElsewhere } from '../handlers/handler.ts';

/** Where kinds and their schemas come from (src/apiserver/openapi.ts's OpenApiSchemas). */
export interface SchemaSource {
  kindsFor(group: string, version: string, resource: string): Promise<GroupVersionKind[]>;
  schema(gvk: GroupVersionKind): Promise<{ ref: string; components: Readonly<Record<string, Record<string, unknown>>>; source: string } | undefined>;
}

export interface SuiteTypeCheck {
  warnings: ExpressionWarning[];
  /** False when a kind or schema could not be read (the API server briefly unreachable): those kinds went unchecked. */
  complete: boolean;
  /** The definite errors, when the suite (or the operator's default) asks for them to refuse it. */
  errors: FieldError[];
}

/** What a type error does where a suite or policy does not say: Warn (ValidatingAdmissionPolicy's way) or Deny. */
export type TypeCheckDefault = 'Warn' | 'Deny';

/** Whether definite errors refuse: `Deny` (or its earlier name `Refuse`), else the operator's default. */
function refuses(mode: TypeCheckErrors | undefined, byDefault: TypeCheckDefault): boolean {
  return (mode ?? byDefault) !== 'Warn';
}

/** VAP's maxTypesToCheck. */
const MAX_KINDS = 10;

/**
 * The kinds are VAP's typesToCheck: per rule, every group x version x resource, sorted, none for a rule
 * with a wildcard group or version, wildcard resources and subresources skipped, at most MAX_KINDS a
 * webhook. A definite error is one that fails on every kind checked.
 */
export async function typeCheckSuite(suite: AdmissionSuite, source: SchemaSource, byDefault: TypeCheckDefault = 'Warn'): Promise<SuiteTypeCheck> {
  const webhooks = (suite.spec.webhooks ?? []).map((webhook, i) => ({ webhook, path: `spec.webhooks[${i}]` }));
  return await typeCheckWebhooks(webhooks, refuses(suite.spec.typeCheckErrors, byDefault), source);
}

/** An AdmissionPolicy is one webhook whose fields are under `spec`, checked as a suite's. */
export async function typeCheckPolicy(policy: AdmissionPolicy, source: SchemaSource, byDefault: TypeCheckDefault = 'Warn'): Promise<SuiteTypeCheck> {
  const webhook: WebhookSpec = { ...policy.spec, name: policy.metadata.name };
  return await typeCheckWebhooks([{ webhook, path: 'spec' }], refuses(policy.spec?.typeCheckErrors, byDefault), source);
}

async function typeCheckWebhooks(webhooks: { webhook: WebhookSpec; path: string }[], refuse: boolean, source: SchemaSource): Promise<SuiteTypeCheck> {
  const warnings: ExpressionWarning[] = [];
  const errors: FieldError[] = [];
  // Type checking never changes what a suite does: what cannot be read is left unchecked (dyn), and
  // said. What is read elsewhere (a copy that lacks it: HeldElsewhere) ends the check, to be made there.
  let complete = true;
  const unread = (err: unknown) => {
    if (err instanceof HeldElsewhere) throw err;
    complete = false;
  };
  const reading: SchemaSource = {
    kindsFor: (group, version, resource) => source.kindsFor(group, version, resource).catch((err: unknown) => (unread(err), [])),
    schema: (gvk) => source.schema(gvk).catch((err: unknown) => (unread(err), undefined)),
  };
  for (const { webhook, path } of webhooks) {
    if (webhook.handler) continue;
    const kinds = await checkedKinds(webhook, reading);
    const params = webhook.params ? await paramsTypes(webhook, reading) : undefined;
    for (const checked of typeCheckWebhook(webhook, path, kinds, params)) {
      warnings.push({ fieldRef: checked.fieldRef, warning: checked.warning });
      if (checked.definite && refuse) {
        const on = kinds.map((k) => gvkString(k.gvk)).join('; ');
        errors.push({ field: checked.fieldRef, message: `type checking failed on every kind the webhook matches (${on}): ${checked.message} (spec.typeCheckErrors: Deny refuses it; Warn accepts it with warnings)` });
      }
    }
  }
  return { warnings, errors, complete };
}

/** The kinds VAP's typesToCheck gives for these rules, with their types. */
async function checkedKinds(webhook: WebhookSpec, source: SchemaSource): Promise<CheckedKind[]> {
  const gvks: GroupVersionKind[] = [];
  const seen = new Set<string>();
  collect: for (const rule of webhook.rules ?? []) {
    const [groups, versions, resources] = ruleParts(rule);
    // As VAP: counted per rule, and the first rule to reach the cap ends the collection.
    let count = 0;
    for (const group of groups) {
      for (const version of versions) {
        for (const resource of resources) {
          for (const gvk of await source.kindsFor(group, version, resource)) {
            const key = gvkString(gvk);
            if (!seen.has(key)) {
              seen.add(key);
              gvks.push(gvk);
            }
            if (++count === MAX_KINDS) break collect;
          }
        }
      }
    }
  }
  gvks.sort((a, b) => cmp(a.group, b.group) || cmp(a.version, b.version) || cmp(a.kind, b.kind));
  const kinds: CheckedKind[] = [];
  for (const gvk of gvks) {
    const types = await typesOf(gvk, source);
    if (types) kinds.push({ gvk, types });
  }
  return kinds;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function ruleParts(rule: RuleWithOperations): [string[], string[], string[]] {
  const groups = rule.apiGroups ?? [];
  const versions = rule.apiVersions ?? [];
  if (groups.some((g) => g.includes('*')) || versions.some((v) => v.includes('*'))) return [[], [], []];
  const resources = (rule.resources ?? []).filter((r) => !/[*/]/.test(r));
  return [[...groups].sort(), [...versions].sort(), [...resources].sort()];
}

async function paramsTypes(webhook: WebhookSpec, source: SchemaSource): Promise<SchemaTypes | undefined> {
  const { apiVersion, kind } = webhook.params!;
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
  return await typesOf({ group: group!, version: version!, kind }, source);
}

/** One SchemaTypes per kind and document version, reused; bounded. Why: docs/adr/0016-schema-environments-cached.md */
const converted = new Map<string, SchemaTypes | undefined>();
const MAX_CONVERTED = 64;

async function typesOf(gvk: GroupVersionKind, source: SchemaSource): Promise<SchemaTypes | undefined> {
  const schema = await source.schema(gvk);
  if (!schema) return undefined;
  const key = `${schema.source}#${gvkString(gvk)}`;
  if (!converted.has(key)) {
    if (converted.size >= MAX_CONVERTED) converted.delete(converted.keys().next().value!);
    converted.set(key, schemaTypes(gvk.kind, schema.ref, schema.components as Readonly<Record<string, OpenApiSchema>>));
  }
  return converted.get(key);
}

/** A warning in one line, for an apply's answer or a terminal: its field, then each kind's first line (the caret lines stay in status). */
export function warningLine(warning: ExpressionWarning): string {
  return `${warning.fieldRef}: ${warning.warning
    .split('\n\n')
    .map((kind) => kind.split('\n')[0])
    .join('; ')}`;
}

/** What a type check puts in an object's status: `typeChecking`, or nothing (the last report stands). */
export type TypeCheckingStatus = { typeChecking?: { expressionWarnings?: ExpressionWarning[] } };

/**
 * The last type check of each object (a suite, a policy), kept while its uid, generation and the
 * schemas' epoch stay the same: the same spec against the same schemas gives the same answer, so a
 * reconcile does not check again. A check that could not read every kind or schema is not kept and
 * reports nothing, so the last report in status stands and the next reconcile checks again.
 */
export class TypeCheckMemo {
  private readonly last = new Map<string, { key: string; status: TypeCheckingStatus }>();

  async status(id: string, object: { metadata: { uid?: string; generation?: number } }, epoch: number, check: () => Promise<SuiteTypeCheck>): Promise<TypeCheckingStatus> {
    const key = `${object.metadata.uid}/${object.metadata.generation ?? 0}/${epoch}`;
    const known = this.last.get(id);
    if (known?.key === key) return known.status;
    const { warnings, complete } = await check();
    if (!complete) return {};
    const status = { typeChecking: warnings.length ? { expressionWarnings: warnings } : {} };
    this.last.set(id, { key, status });
    return status;
  }

  /** Forgets the objects that no longer exist. */
  keepOnly(ids: Set<string>): void {
    for (const id of this.last.keys()) if (!ids.has(id)) this.last.delete(id);
  }

  forget(id: string): void {
    this.last.delete(id);
  }
}
