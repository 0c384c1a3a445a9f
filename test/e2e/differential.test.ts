/**
 * The differential harness: each policy of the table is installed twice in one control plane,
 * as a native ValidatingAdmissionPolicy + binding scoped to namespace diff-vap, and as a webhook
 * of the AdmissionSuite `diff` (and `diff-2`, ..., as a suite holds at most 128 webhooks) scoped
 * to namespace diff-hook. The same steps go through the API
 * server to both, and the outcomes must be the same: admitted or refused, the HTTP code, and the
 * policy's own part of the message and of each warning (each side's wrapper stripped), and the
 * audit annotations in the API server's audit log. The same suites are served a third time with
 * `enforcement: Native` (scoped to diff-native): compiled by the operator into policies of its
 * own, they must answer as the hand-written ones. And a fourth time (scoped to diff-import) as
 * `portcullis import` makes suites of the native policies and bindings themselves: the same answers
 * again. The native VAP is the oracle: no expected outcome is typed by hand.
 */
import { expect } from 'chai';
import { cluster, KUBE_VERSION } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequest, type RawResponse } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { auditEvents } from '../support/audit-log.ts';
import { runCli } from '../support/cli.ts';
import { tempFolder } from '../support/temp-files.ts';
import * as yaml from 'js-yaml';
import path from 'node:path';
import { apply, deleteIfExists, type KubeObject } from '../../src/apiserver/client.ts';
import { webhookFullName } from '../../src/api/names.ts';
import { API_VERSION, GROUP, PLURAL, VERSION } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { WebhookSpec } from '../../src/api/types.ts';
import { AUTHZ_USER, POLICIES, UNAUTHORIZED_ROW, type PolicyRow, type Step } from './differential/policies.ts';

const SUITE = 'diff';
const VAP_NS = 'diff-vap';
const HOOK_NS = 'diff-hook';
/** Where the same suites, with `enforcement: Native`, are enforced by the API server as policies the operator wrote. */
const NATIVE_NS = 'diff-native';
const NATIVE_SUITE = 'diff-native';
/** Where the suites `portcullis import` makes of the native policies and bindings are served. */
const IMPORT_NS = 'diff-import';
const IMPORT_SUITE = 'diff-import';
const PARAMS_NS = 'diff-params';
const ROW_LABEL = 'diff-row';
const PARAMS_PER_WRITE = 4;
const WEBHOOKS_PER_SUITE = 100;
const PROBE: PolicyRow = { name: 'probe', resource: 'configmaps', validations: [{ expression: 'false', message: 'probe' }], steps: [] };

const GROUPS = { configmaps: '', deployments: 'apps' } as const;
const onlyNamespace = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
const policyName = (row: PolicyRow) => `diff-${row.name}`;
const paramsName = (row: PolicyRow) => `${row.name}-params`;
/** The label of the ConfigMaps a row selects as params (params.selected). */
const PARAMS_OF_LABEL = 'diff-params-of';

function resourceRule(row: PolicyRow) {
  return {
    apiGroups: [GROUPS[row.resource]],
    apiVersions: ['v1'],
    operations: row.operations ?? ['CREATE', 'UPDATE', 'DELETE'],
    resources: [row.resource],
  };
}

/** The row's rule with its resourceNames, as both VAP and a suite write it. */
const namedRule = (row: PolicyRow) => ({ ...resourceRule(row), ...(row.resourceNames ? { resourceNames: row.resourceNames } : {}) });
const excludeRules = (row: PolicyRow) => (row.excludeResourceRules ?? []).map((rule) => ({ ...resourceRule(row), ...rule }));

/** Which ConfigMaps a row's params are: by name or by selector, in diff-params or the request's namespace. */
function paramsReference(row: PolicyRow) {
  const params = row.params!;
  return {
    ...(params.inRequestNamespace ? {} : { namespace: PARAMS_NS }),
    ...(params.selected ? { selector: { matchLabels: { [PARAMS_OF_LABEL]: row.name } } } : { name: paramsName(row) }),
  };
}

/** The ConfigMaps a row's params name or select, in every namespace they must be in. */
function paramsObjects(row: PolicyRow): KubeObject[] {
  const params = row.params;
  if (!params || (!params.data && !params.selected)) return [];
  const namespaces = params.inRequestNamespace ? [VAP_NS, HOOK_NS, NATIVE_NS, IMPORT_NS] : [PARAMS_NS];
  return namespaces.flatMap((namespace) =>
    params.selected
      ? params.selected.map((data, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${row.name}-p${i}`, namespace, labels: { [PARAMS_OF_LABEL]: row.name } }, data }))
      : [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: paramsName(row), namespace }, data: params.data }],
  );
}

function nativePolicy(row: PolicyRow, namespace = VAP_NS): KubeObject[] {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: policyName(row) },
    spec: {
      failurePolicy: row.failurePolicy ?? 'Fail',
      ...(row.params ? { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } : {}),
      matchConstraints: { resourceRules: [namedRule(row)], ...(row.excludeResourceRules ? { excludeResourceRules: excludeRules(row) } : {}) },
      ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
      ...(row.variables ? { variables: row.variables } : {}),
      validations: row.validations,
      ...(row.auditAnnotations ? { auditAnnotations: row.auditAnnotations } : {}),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName(row) },
    spec: {
      policyName: policyName(row),
      validationActions: row.validationActions ?? ['Deny'],
      ...(row.params ? { paramRef: { ...paramsReference(row), parameterNotFoundAction: row.params.notFoundAction ?? 'Deny' } } : {}),
      matchResources: { namespaceSelector: onlyNamespace(namespace), objectSelector: { matchLabels: { [ROW_LABEL]: row.name } } },
    },
  };
  return [policy, binding];
}

function suiteWebhook(row: PolicyRow, namespace = HOOK_NS): WebhookSpec {
  return {
    name: row.name,
    type: 'Validating',
    rules: [namedRule(row)],
    ...(row.excludeResourceRules ? { excludeResourceRules: excludeRules(row) } : {}),
    failurePolicy: row.failurePolicy ?? 'Fail',
    namespaceSelector: onlyNamespace(namespace),
    objectSelector: { matchLabels: { [ROW_LABEL]: row.name } },
    ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
    ...(row.params ? { params: { apiVersion: 'v1', kind: 'ConfigMap', ...paramsReference(row), notFoundAction: row.params.notFoundAction ?? 'Deny' } } : {}),
    ...(row.variables ? { variables: row.variables } : {}),
    validations: row.validations,
    ...(row.auditAnnotations ? { auditAnnotations: row.auditAnnotations } : {}),
    validationActions: row.validationActions ?? ['Deny'],
  };
}

function objectFor(row: PolicyRow, step: Step): Record<string, unknown> {
  const metadata = { name: step.name ?? row.name, labels: { [ROW_LABEL]: row.name, ...step.labels } };
  if (row.resource === 'configmaps') return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: step.data ?? {} };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas: step.replicas ?? 1,
      selector: { matchLabels: { app: row.name } },
      template: { metadata: { labels: { app: row.name } }, spec: { containers: [{ name: 'app', image: step.image ?? 'registry.k8s.io/pause:3.10' }] } },
    },
  };
}

interface Outcome {
  status: number;
  message: string;
  warnings: string[];
}

/** The policy's own words: each side's wrapper taken off. */
const WRAPPERS = [/^(?:\S+ "[^"]*" is forbidden: )?ValidatingAdmissionPolicy '[^']*' with binding '[^']*' denied request: /, /^admission webhook "[^"]*" denied the request: /];
const WARNING_WRAPPERS = [/^Validation failed for ValidatingAdmissionPolicy '[^']*' with binding '[^']*': /];
const strip = (text: string, wrappers: RegExp[]) => wrappers.reduce((t, w) => t.replace(w, ''), text);

async function run(row: PolicyRow, step: Step, namespace: string): Promise<Outcome> {
  const base = row.resource === 'configmaps' ? `/api/v1/namespaces/${namespace}/configmaps` : `/apis/apps/v1/namespaces/${namespace}/deployments`;
  const query = step.dryRun ? '?dryRun=All' : '';
  const as = { as: step.as };
  const response =
    step.op === 'create'
      ? await rawRequest('POST', base + query, objectFor(row, step), as)
      : step.op === 'update'
        ? await rawRequest('PUT', `${base}/${step.name ?? row.name}${query}`, objectFor(row, step), as)
        : await rawRequest('DELETE', `${base}/${step.name ?? row.name}${query}`, undefined, as);
  const ok = response.status < 300;
  return {
    status: response.status,
    message: ok ? '' : strip(response.body.message ?? '', WRAPPERS),
    warnings: response.warnings.map((w) => strip(w, WARNING_WRAPPERS)),
  };
}

/** A refusal when the policy is written: the field under the policy's spec, and the reason. */
interface WriteRefusal {
  field: string;
  reason: string;
}

/** The native policy's refusal on create, from the API server's Status causes. */
function vapRefusal(response: RawResponse): WriteRefusal | undefined {
  if (response.status < 300) return undefined;
  const cause = (response.body.details as { causes?: { field?: string; message?: string }[] } | undefined)?.causes?.[0];
  // A VAP's rules are under matchConstraints, a suite webhook's at its top.
  const field = (cause?.field ?? '').replace(/^spec\./, '').replace(/^matchConstraints\.(resourceRules|excludeResourceRules)/, (_, list: string) => (list === 'resourceRules' ? 'rules' : list));
  return { field, reason: (cause?.message ?? response.body.message ?? '').replace(/^Invalid value: "(?:[^"\\]|\\.)*": /, '') };
}

/** The suite's refusal on apply, from the suite-validation webhook's message (its first field). */
function suiteRefusal(response: RawResponse): WriteRefusal | undefined {
  if (response.status < 300) return undefined;
  // `s`: a syntax error's reason runs on over its caret lines
  const match = /is invalid: spec\.webhooks\[0\]\.([^:]+): (.*?)(?:; spec\.|$)/s.exec(response.body.message ?? '');
  return { field: match?.[1] ?? '', reason: match?.[2] ?? response.body.message ?? '' };
}

interface AuditEvent {
  verb: string;
  stage: string;
  objectRef?: { namespace?: string; name?: string; resource?: string };
  annotations?: Record<string, string>;
  requestReceivedTimestamp: string;
}

/** The policy's part of the audit annotations of the request on `row`'s object in `namespace`, per request in order. */
function auditAnnotations(events: AuditEvent[], row: PolicyRow, namespace: string, prefix: string): Record<string, unknown>[] {
  return events
    .filter((e) => e.stage === 'ResponseComplete' && e.objectRef?.namespace === namespace && e.objectRef?.name === row.name && e.objectRef?.resource === row.resource && e.verb !== 'get')
    .map((e) => {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(e.annotations ?? {})) {
        if (key === 'validation.policy.admission.k8s.io/validation_failure' || key === `${prefix}/validation_failure`) {
          // The policy's part of each failure: names of policy and binding differ by design.
          out.validation_failure = (JSON.parse(value) as Record<string, unknown>[]).map(({ message, expressionIndex, validationActions }) => ({ message, expressionIndex, validationActions }));
        } else if (key.startsWith(`${prefix}/`)) {
          out[key.slice(prefix.length + 1)] = value;
        }
      }
      return out;
    });
}

/**
 * The rows where kube-apiserver 1.35 (the oldest supported, `npm run test:oldest`) answers otherwise
 * than 1.37, whose answers a suite gives on every cluster (docs/operating.md#kubernetes-versions):
 * compared on the newest only, and each reason checked there by its rows.
 */
const NEWER_SEMANTICS: [rows: string[], why: string][] = [
  [
    [
      'eq-map-string',
      'eq-map-int',
      'eq-map-list',
      'eq-list-string',
      'eq-list-map',
      'eq-variable-map',
      'eq-old-object',
      'eq-optional-elements',
      'eq-optional-map',
      'eq-optional-index',
      'eq-comprehension',
      'eq-comprehension-filter',
      'eq-comprehension-two-var',
      'eq-match-condition',
    ],
    '== between a map or list and a value of another type: an error (no such overload) on 1.37, false on 1.35',
  ],
  [['err-or-value', 'err-or-value-map'], 'orValue() on a value that is not optional: an error on 1.37, the value itself on 1.35'],
  [['err-optional-or'], "or() on a value that is not optional: 1.35's message names the overload (no such overload: hasValue(string))"],
];
/** Rows whose answers agree on 1.35 but whose audit annotations do not: Deny with Audit records every failed validation on 1.37, the first only on 1.35. */
const NEWER_AUDIT_ANNOTATIONS = ['action-deny-audit'];

describe('Differential: AdmissionSuite validations against the API server’s own ValidatingAdmissionPolicy', function () {
  this.timeout(180_000);
  let operator: Operator;
  const outcomes = new Map<string, { vap: Outcome[]; hook: Outcome[]; native: Outcome[]; imported: Outcome[] }>();
  const refusedOnWrite = new Map<string, { vap?: WriteRefusal; suite?: WriteRefusal }>();
  /** The suites the table is served by, and which one serves each row. */
  const suites: { name: string; probe: PolicyRow; namespace: string }[] = [];
  const suiteOf = new Map<string, string>();
  const nativeSuiteOf = new Map<string, string>();
  const importSuiteOf = new Map<string, string>();
  /** Each accepted row's webhook as `portcullis import` made it from the row's native policy and binding (scoped to IMPORT_NS). */
  const imported = new Map<string, WebhookSpec>();

  before(async function () {
    const { kube } = cluster();
    for (const ns of [VAP_NS, HOOK_NS, NATIVE_NS, IMPORT_NS, PARAMS_NS]) await apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { team: 'differential' } } });
    for (const row of POLICIES) {
      for (const object of paramsObjects(row)) await apply(kube, object);
    }
    // AUTHZ_USER may write ConfigMaps on both sides but not delete them; the robot may list in diff-params.
    const role = (namespace: string, name: string, verbs: string[]) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs }] });
    const binding = (namespace: string, name: string, subject: Record<string, string>) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [subject],
    });
    for (const ns of [VAP_NS, HOOK_NS, NATIVE_NS, IMPORT_NS]) {
      await apply(kube, role(ns, 'diff-writer', ['create', 'update', 'get']));
      await apply(kube, binding(ns, 'diff-writer', { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: AUTHZ_USER }));
    }
    await apply(kube, role(PARAMS_NS, 'diff-robot', ['list']));
    await apply(kube, binding(PARAMS_NS, 'diff-robot', { kind: 'ServiceAccount', name: 'robot', namespace: PARAMS_NS }));
    operator = await startTestOperator({ nativeEnforcement: true });
    await waitForSuiteValidation(operator);
    // Written on both sides, one policy at a time: what either refuses is compared as a refusal.
    // VAP never refuses a policy for its types (it warns in status.typeChecking; several rows
    // compare run-time type errors), so the suites opt into the same: typeCheckErrors Warn.
    const accepted: PolicyRow[] = [];
    for (const [i, row] of POLICIES.entries()) {
      const [policy, binding] = nativePolicy(row);
      const vap = vapRefusal(await rawRequest('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', policy));
      const suiteBody = { apiVersion: API_VERSION, kind: 'AdmissionSuite', metadata: { name: `diff-check-${i}` }, spec: { typeCheckErrors: 'Warn', webhooks: [suiteWebhook(row)] } };
      const suite = suiteRefusal(await rawRequest('POST', `/apis/${GROUP}/${VERSION}/${PLURAL}?dryRun=All`, suiteBody));
      if (vap || suite) refusedOnWrite.set(row.name, { vap, suite });
      if (!vap) await apply(kube, binding!);
      if (!vap && !suite) accepted.push(row);
    }
    // The probe goes last on both sides: once it is enforced, so is every policy before it.
    for (const object of nativePolicy(PROBE)) await apply(kube, object);
    // A suite holds at most 128 webhooks (the CRD's bound): the table is spread over suites of
    // WEBHOOKS_PER_SUITE, each ending with a probe of its own. The same suites again, enforced
    // natively, in NATIVE_NS (without the row of a reason VAP refuses on write).
    // The native policies and bindings of the accepted rows, as a user would import them: one file, the command.
    const sources = tempFolder('diff-import-', {
      'policies.yaml': accepted
        .flatMap((row) => nativePolicy(row, IMPORT_NS))
        .map((o) => yaml.dump(o))
        .join('---\n'),
    });
    const importedRun = await runCli(['import', path.join(sources, 'policies.yaml')]);
    expect(importedRun.stderr, 'what import could not carry over').to.equal('');
    expect(importedRun.code, 'import exit code').to.equal(0);
    for (const suite of yaml.loadAll(importedRun.stdout) as { metadata: { name: string }; spec: { webhooks: WebhookSpec[] } }[]) {
      const row = accepted.find((r) => policyName(r) === suite.metadata.name);
      expect(row, `a suite named after a row's policy: ${suite.metadata.name}`).to.not.equal(undefined);
      expect(suite.spec.webhooks, `${suite.metadata.name}: a webhook per binding`).to.have.length(1);
      imported.set(row!.name, { ...suite.spec.webhooks[0]!, name: row!.name });
    }
    expect([...imported.keys()].sort(), 'every accepted row imported').to.deep.equal(accepted.map((r) => r.name).sort());
    const serve = async (rows: PolicyRow[], prefix: string, namespace: string, enforcement: 'Webhook' | 'Native', servedBy: Map<string, string>, webhookOf = (row: PolicyRow) => suiteWebhook(row, namespace)) => {
      for (let start = 0, n = 1; start < rows.length; start += WEBHOOKS_PER_SUITE, n++) {
        const name = n === 1 ? prefix : `${prefix}-${n}`;
        const probe = n === 1 ? PROBE : { ...PROBE, name: `probe-${n}` };
        const chunk = [...rows.slice(start, start + WEBHOOKS_PER_SUITE), probe];
        suites.push({ name, probe, namespace });
        for (const row of chunk) servedBy.set(row.name, name);
        // The params guard (deploy/06-suite-params-guard.yaml, installed by other tests of the same
        // control plane) lets one write introduce at most 4 ConfigMap params: the suite grows in steps.
        const webhooks = chunk.map(webhookOf);
        const withParams = webhooks.filter((w) => w.params);
        for (let introduced = 0; introduced === 0 || introduced < withParams.length; introduced += PARAMS_PER_WRITE) {
          const present = new Set(withParams.slice(0, introduced + PARAMS_PER_WRITE));
          const spec = { typeCheckErrors: 'Warn' as const, enforcement, webhooks: webhooks.filter((w) => !w.params || present.has(w)) };
          if (introduced === 0) await createSuite(name, spec);
          else await apply(kube, { apiVersion: API_VERSION, kind: 'AdmissionSuite', metadata: { name }, spec });
        }
      }
    };
    await serve([...accepted, UNAUTHORIZED_ROW], SUITE, HOOK_NS, 'Webhook', suiteOf);
    await serve(accepted, NATIVE_SUITE, NATIVE_NS, 'Native', nativeSuiteOf);
    await serve(accepted, IMPORT_SUITE, IMPORT_NS, 'Webhook', importSuiteOf, (row) => imported.get(row.name) ?? suiteWebhook(row, IMPORT_NS));
    for (const { name, namespace } of suites) {
      const ready = await waitForCondition(name, 'Ready', 'True', 60_000);
      // Not one of them fell back to the webhook: each is the API server's own policy.
      if (namespace === NATIVE_NS) expect(ready.status?.webhooks?.filter((w) => w.enforcement !== 'Native')).to.deep.equal([]);
    }
    const probes: [PolicyRow, string][] = [[PROBE, VAP_NS], ...suites.map(({ probe, namespace }): [PolicyRow, string] => [probe, namespace])];
    for (const [probe, namespace] of probes) {
      await eventually(
        async () => {
          const outcome = await run(probe, { op: 'create' }, namespace);
          if (outcome.status < 300) {
            await run(probe, { op: 'delete' }, namespace);
            throw new Error(`the probe ${probe.name} was admitted in ${namespace}`);
          }
        },
        { what: `the probe policy ${probe.name} to be enforced in ${namespace}`, timeoutMs: 60_000 },
      );
    }
  });

  after(async function () {
    for (const { name } of suites) await deleteSuite(name);
    const { kube } = cluster();
    for (const row of [...POLICIES, PROBE]) {
      for (const object of nativePolicy(row).reverse()) await deleteIfExists(kube, object as never);
    }
    await operator?.stop();
  });

  it('names only rows of the table as answered otherwise by the oldest supported API server', function () {
    const names = new Set(POLICIES.map((r) => r.name));
    expect([...NEWER_SEMANTICS.flatMap(([rows]) => rows), ...NEWER_AUDIT_ANNOTATIONS].filter((name) => !names.has(name))).to.deep.equal([]);
  });

  it(`has at least 40 policies, each a DNS label, each once`, function () {
    expect(POLICIES.length).to.be.at.least(40);
    expect(new Set(POLICIES.map((r) => r.name)).size).to.equal(POLICIES.length);
  });

  for (const row of POLICIES) {
    it(`${row.name}: the same outcome as the native policy`, async function () {
      // A suite answers as the newest Kubernetes on every cluster; on an older API server, a row of
      // NEWER_SEMANTICS is held to answering otherwise than that server's own policy (so a stale entry fails).
      const newer = KUBE_VERSION === undefined ? undefined : NEWER_SEMANTICS.find(([names]) => names.includes(row.name));
      const refused = refusedOnWrite.get(row.name);
      if (refused) {
        if (process.env.PORTCULLIS_DIFF_VERBOSE) console.log(`      ${row.name}: refused on write ${JSON.stringify(refused)}`);
        expect(refused.suite, `the suite refuses what VAP refuses (${JSON.stringify(refused.vap)})`).to.not.equal(undefined);
        expect(refused.vap, `VAP refuses what the suite refuses (${JSON.stringify(refused.suite)})`).to.not.equal(undefined);
        expect(refused.suite!.field, 'the field refused').to.equal(refused.vap!.field);
        // Type errors and syntax errors (line, column, caret: test/fixtures/cel-syntax-errors.ts) are
        // worded the same; the other compile errors' details are each checker's own.
        if (refused.vap!.reason.startsWith('compilation failed') && !refused.vap!.reason.includes('Syntax error:')) expect(refused.suite!.reason).to.match(/^compilation failed/);
        else expect(refused.suite!.reason).to.equal(refused.vap!.reason);
        return;
      }
      const vap: Outcome[] = [];
      const hook: Outcome[] = [];
      const native: Outcome[] = [];
      const fromImport: Outcome[] = [];
      for (const step of row.steps) {
        vap.push(await run(row, step, VAP_NS));
        hook.push(await run(row, step, HOOK_NS));
        native.push(await run(row, step, NATIVE_NS));
        fromImport.push(await run(row, step, IMPORT_NS));
      }
      outcomes.set(row.name, { vap, hook, native, imported: fromImport });
      // PORTCULLIS_DIFF_VERBOSE=1 prints what the oracle answered, to read a row's behaviour.
      if (process.env.PORTCULLIS_DIFF_VERBOSE) console.log(`      ${row.name}: ${JSON.stringify(vap)}`);
      const label = row.steps.map((s, i) => `${i}:${s.op}${s.dryRun ? '(dry-run)' : ''}`).join(' ');
      expect(native, `steps ${label}, enforced natively`).to.deep.equal(vap);
      if (newer) expect(hook, `steps ${label}: this API server's own policy answers otherwise, as documented: ${newer[1]}`).to.not.deep.equal(vap);
      else expect(hook, `steps ${label}`).to.deep.equal(vap);
      // Imported from the native policy itself, it answers as the hand-written suite (so as the oracle, where the oracle is the newest).
      expect(fromImport, `steps ${label}, as portcullis import made it`).to.deep.equal(hook);
    });
  }

  it('exercised the policies for real: the oracle refused some on write, refused requests with every reason, and warned', function () {
    expect([...refusedOnWrite.values()].filter((r) => r.vap).length).to.be.at.least(5);
    const all = [...outcomes.values()].flatMap((o) => o.vap);
    const codes = new Set(all.filter((o) => o.status >= 400).map((o) => o.status));
    expect([...codes].sort()).to.include.members([403, 413, 422]);
    expect(all.filter((o) => o.status >= 400).length).to.be.at.least(30);
    expect(all.filter((o) => o.warnings.length > 0).length).to.be.at.least(2);
  });

  it('reason Unauthorized, which VAP refuses on write, is answered with 401 by a suite (the contract offers it)', async function () {
    const [policy] = nativePolicy(UNAUTHORIZED_ROW);
    const written = await rawRequest('POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies?dryRun=All', policy);
    expect(vapRefusal(written)?.field).to.equal('validations[0].reason');
    const outcome = await run(UNAUTHORIZED_ROW, UNAUTHORIZED_ROW.steps[0]!, HOOK_NS);
    expect(outcome).to.deep.equal({ status: 401, message: 'no', warnings: [] });
  });

  it('params in the request’s namespace, for a request on a cluster-scoped object: the same configuration error, under Deny and Allow', async function () {
    // Outside the table, which judges namespaced objects only: ClusterRoles, sent as dry runs.
    const { kube } = cluster();
    const label = 'diff-cluster';
    const rule = { apiGroups: ['rbac.authorization.k8s.io'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['clusterroles'] };
    const actions = ['Deny', 'Allow'] as const;
    const native = (name: string, objectLabel: string, action?: 'Deny' | 'Allow'): KubeObject[] => [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name },
        spec: { failurePolicy: 'Fail', ...(action ? { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } : {}), matchConstraints: { resourceRules: [rule] }, validations: [{ expression: action ? 'true' : 'false', message: 'probe' }] },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name },
        spec: { policyName: name, validationActions: ['Deny'], ...(action ? { paramRef: { name: 'limits', parameterNotFoundAction: action } } : {}), matchResources: { objectSelector: { matchLabels: { [label]: objectLabel } } } },
      },
    ];
    const objects = [...actions.flatMap((action) => native(`diff-cluster-${action.toLowerCase()}`, `vap-${action}`, action)), ...native('diff-cluster-probe', 'probe')];
    const webhooks: WebhookSpec[] = actions.map((action) => ({
      name: `cluster-${action.toLowerCase()}`,
      type: 'Validating',
      rules: [rule],
      failurePolicy: 'Fail',
      objectSelector: { matchLabels: { [label]: `hook-${action}` } },
      params: { apiVersion: 'v1', kind: 'ConfigMap', name: 'limits', notFoundAction: action },
      validations: [{ expression: 'true' }],
    }));
    const create = (objectLabel: string) =>
      rawRequest('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles?dryRun=All', {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: `diff-cluster-${objectLabel.toLowerCase()}`, labels: { [label]: objectLabel } },
        rules: [],
      });
    try {
      for (const object of objects) await apply(kube, object);
      await createSuite('diff-cluster', { webhooks });
      await waitForCondition('diff-cluster', 'Ready', 'True', 60_000);
      await eventually(async () => expect((await create('probe')).status).to.equal(422), { what: 'the native policies to be enforced', timeoutMs: 60_000 });
      for (const action of actions) {
        const outcome = (r: RawResponse) => ({ status: r.status, message: strip(r.body.message ?? '', WRAPPERS) });
        const vap = outcome(await create(`vap-${action}`));
        const hook = outcome(await create(`hook-${action}`));
        if (process.env.PORTCULLIS_DIFF_VERBOSE) console.log(`      cluster-scoped, ${action}: ${JSON.stringify(vap)}`);
        expect(vap.message, 'the oracle').to.contain('cannot use namespaced paramRef');
        expect(hook, action).to.deep.equal(vap);
      }
    } finally {
      await deleteSuite('diff-cluster');
      for (const object of objects.reverse()) await deleteIfExists(kube, object as never);
    }
  });

  it('records the same audit annotations in the API server’s audit log', async function () {
    const audited = POLICIES.filter(
      (row) =>
        (row.validationActions?.includes('Audit') || row.auditAnnotations) &&
        !refusedOnWrite.has(row.name) &&
        !(KUBE_VERSION !== undefined && (NEWER_AUDIT_ANNOTATIONS.includes(row.name) || NEWER_SEMANTICS.some(([rows]) => rows.includes(row.name)))),
    );
    expect(audited.length).to.be.at.least(3);
    await eventually(
      async () => {
        const events = auditEvents<AuditEvent>(cluster().controlPlane.auditLogPath);
        for (const row of audited) {
          const vap = auditAnnotations(events, row, VAP_NS, policyName(row));
          const hook = auditAnnotations(events, row, HOOK_NS, webhookFullName(suiteOf.get(row.name)!, row.name));
          const native = auditAnnotations(events, row, NATIVE_NS, webhookFullName(nativeSuiteOf.get(row.name)!, row.name));
          const fromImport = auditAnnotations(events, row, IMPORT_NS, webhookFullName(importSuiteOf.get(row.name)!, row.name));
          expect(vap.length, `${row.name}: requests audited`).to.equal(row.steps.length);
          expect(
            vap.some((a) => Object.keys(a).length > 0),
            `${row.name}: the oracle annotated`,
          ).to.equal(true);
          expect(hook, `${row.name}: audit annotations ${JSON.stringify({ hook, vap })}`).to.deep.equal(vap);
          expect(native, `${row.name}: audit annotations, enforced natively ${JSON.stringify({ native, vap })}`).to.deep.equal(vap);
          expect(fromImport, `${row.name}: audit annotations, imported ${JSON.stringify({ fromImport, vap })}`).to.deep.equal(vap);
        }
      },
      { what: 'the audit log to hold the same annotations for both', timeoutMs: 60_000 },
    );
  });
});
