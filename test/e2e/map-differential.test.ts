/**
 * The MutatingAdmissionPolicy differential (issue 53): each row's mutations, written as a MAP
 * writes them (`patchType: JSONPatch`, `jsonPatch.expression` of `JSONPatch{...}` values), are
 * installed twice: as the API server's own MutatingAdmissionPolicy + binding scoped to namespace
 * map-diff-native, and, pasted unchanged, as a Mutating webhook of the suite `map-diff` scoped to
 * map-diff-hook (both by the row's object label too), and, for the rows a team may write (no
 * params, failurePolicy Fail), as a team's AdmissionPolicy in map-diff-team (the tenant workers),
 * and as the MutatingAdmissionPolicies `portcullis compile` writes of the same suite (scoped to
 * map-diff-compiled), applied with kubectl.
 * The same dry-run creates of ConfigMaps go to each; the objects the API server returns must be the same field for field (but name,
 * namespace, uid, resourceVersion, creationTimestamp and managedFields), and a refusal the same
 * code and the policy's own words (each side's wrapper taken off). The native MAP is the oracle:
 * no expected object is typed by hand. On an API server that serves no MAP v1 (1.35), the suite's
 * side is checked alone: it still mutates (the row's first case changed, no refusal where the
 * row has none). Owns its namespaces, its MAPs and bindings (map-diff-*), its suite and params;
 * must not touch the VAP differential's.
 */
import { expect } from 'chai';
import { cluster, KUBE_VERSION } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { changedAny, dryRunCreate, waitEnforced, writer, type Outcome } from '../support/map-differential.ts';
import { runCli } from '../support/cli.ts';
import { kubectl } from '../support/cluster.ts';
import { tempFolder } from '../support/temp-files.ts';
import { apply, deleteIfExists, type KubeObject } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy } from '../../src/api/types.ts';
import type { FailurePolicy, MatchCondition, Mutation, Variable, WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NATIVE_NS = 'map-diff-native';
const HOOK_NS = 'map-diff-hook';
const PARAMS_NS = 'map-diff-params';
/** Where the rows a team may write are its AdmissionPolicies, one each. */
const TEAM_NS = 'map-diff-team';
/** Where the MAPs `portcullis compile` wrote of the suite apply. */
const COMPILED_NS = 'map-diff-compiled';
const SUITE = 'map-diff';
const ROW_LABEL = 'map-diff-row';
const MAP_API = 'admissionregistration.k8s.io/v1';

/** A ConfigMap of a case: its data, and metadata besides the name and the row's label. */
interface Case {
  data?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

interface Row {
  name: string;
  mutations: Mutation[];
  matchConditions?: MatchCondition[];
  variables?: Variable[];
  /** The data of the ConfigMap the row's params are, in PARAMS_NS. */
  params?: Record<string, string>;
  failurePolicy?: FailurePolicy;
  reinvocationPolicy?: 'Never' | 'IfNeeded';
  /**
   * The mutations of a second policy, the row's `-then`: a MAP of its own beside the row's, and the
   * suite's next webhook (after the row's). MAPs run in no order the API server promises, so such a
   * row's outcome must not depend on theirs.
   */
  then?: Mutation[];
  cases: Case[];
}

const jsonPatch = (expression: string): Mutation => ({ patchType: 'JSONPatch', jsonPatch: { expression } });

const ROWS: Row[] = [
  { name: 'add-label', mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/team', value: 'blue'}]")], cases: [{}, { labels: { team: 'red' } }] },
  {
    name: 'add-labels-map',
    mutations: [jsonPatch("has(object.metadata.annotations) ? [] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {'made-by': 'map'}}]")],
    cases: [{}, { annotations: { kept: 'yes' } }],
  },
  { name: 'replace-value', mutations: [jsonPatch("[JSONPatch{op: 'replace', path: '/data/k', value: object.data.k + '-x'}]")], cases: [{ data: { k: 'v' } }, { data: {} }] },
  // the API server's library sets a missing key of an object on replace
  { name: 'replace-missing-key', mutations: [jsonPatch("[JSONPatch{op: 'replace', path: '/data/absent', value: 'set'}]")], cases: [{ data: { k: 'v' } }, { data: { absent: 'was' } }] },
  { name: 'remove-fail', mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/data/drop'}]")], cases: [{ data: { drop: '1', keep: '2' } }, { data: { keep: '2' } }] },
  { name: 'remove-ignore', failurePolicy: 'Ignore', mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/data/drop'}]")], cases: [{ data: { drop: '1', keep: '2' } }, { data: { keep: '2' } }] },
  {
    // under Ignore the mutation that fails is skipped and the others' changes stand
    name: 'partial-ignore',
    failurePolicy: 'Ignore',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/data/before', value: 'b'}]"), jsonPatch("[JSONPatch{op: 'remove', path: '/data/drop'}]"), jsonPatch("[JSONPatch{op: 'add', path: '/data/after', value: 'a'}]")],
    cases: [{ data: { keep: '1' } }, { data: { drop: '1' } }],
  },
  { name: 'add-missing-parent', mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/spec/replicas', value: 1}]")], cases: [{ data: { a: '1' } }] },
  {
    name: 'test-gates',
    mutations: [jsonPatch("[JSONPatch{op: 'test', path: '/data/mode', value: 'on'}, JSONPatch{op: 'add', path: '/data/enabled', value: 'true'}]")],
    cases: [{ data: { mode: 'on' } }, { data: { mode: 'off' } }, { data: {} }],
  },
  { name: 'copy', mutations: [jsonPatch("[JSONPatch{op: 'copy', from: '/data/src', path: '/data/dst'}]")], cases: [{ data: { src: 's' } }, { data: { src: 's', dst: 'd' } }, { data: {} }] },
  { name: 'move', mutations: [jsonPatch("[JSONPatch{op: 'move', from: '/data/old', path: '/data/new'}]")], cases: [{ data: { old: 'o' } }, { data: {} }] },
  {
    name: 'escaped-key',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/owner'), value: 'team-a'}]")],
    cases: [{}, { annotations: { 'example.com/owner': 'other' } }],
  },
  {
    name: 'list-append',
    mutations: [jsonPatch("has(object.metadata.finalizers) ? [JSONPatch{op: 'add', path: '/metadata/finalizers/-', value: 'b.io/last'}] : [JSONPatch{op: 'add', path: '/metadata/finalizers', value: ['a.io/only']}]")],
    cases: [{}, { finalizers: ['x.io/one'] }],
  },
  {
    name: 'list-index',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/finalizers/1', value: 'b.io/second'}, JSONPatch{op: 'remove', path: '/metadata/finalizers/0'}]")],
    cases: [{ finalizers: ['x.io/one', 'x.io/two'] }, { finalizers: ['x.io/one'] }, {}],
  },
  { name: 'list-index-past-end', mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/finalizers/5', value: 'c.io/x'}]")], cases: [{ finalizers: ['x.io/one'] }] },
  {
    name: 'match-conditions',
    matchConditions: [{ name: 'tiered', expression: "has(object.data) && 'tier' in object.data" }],
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/tier', value: object.data.tier}]")],
    cases: [{ data: { tier: 'gold' } }, { data: { other: 'x' } }],
  },
  {
    name: 'variables',
    variables: [{ name: 'team', expression: "has(object.data) ? object.data.?team.orValue('none') : 'none'" }],
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/team', value: variables.team}]")],
    cases: [{ data: { team: 'green' } }, {}],
  },
  {
    name: 'params',
    params: { owner: 'platform' },
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/owner', value: params.data.owner}]")],
    cases: [{}, { labels: { owner: 'me' } }],
  },
  {
    name: 'map-over-data',
    mutations: [
      // not an empty map, which the API server's typed round trip drops before the next mutation (empty-map-dropped)
      jsonPatch("has(object.metadata.annotations) ? [] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {'made-by': 'map'}}]"),
      jsonPatch("object.data.map(k, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('seen.io/' + k), value: object.data[k]})"),
    ],
    cases: [{ data: { a: '1', b: '2' } }, { data: { a: '1' }, annotations: { x: 'y' } }],
  },
  {
    name: 'mutations-in-order',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/data/first', value: 'one'}]"), jsonPatch("[JSONPatch{op: 'add', path: '/data/second', value: object.data.first + '-two'}]")],
    cases: [{ data: {} }],
  },
  { name: 'unknown-op', mutations: [jsonPatch("[JSONPatch{op: 'bogus', path: '/data/x', value: 'y'}]")], cases: [{ data: {} }] },
  {
    // IfNeeded: the row's policy runs again once the `-then` one has added data.b, whichever ran first
    name: 'reinvocation-if-needed',
    reinvocationPolicy: 'IfNeeded',
    mutations: [jsonPatch("has(object.data) && 'b' in object.data && !('seen' in object.data) ? [JSONPatch{op: 'add', path: '/data/seen', value: object.data.b}] : []")],
    then: [jsonPatch("has(object.data) && 'b' in object.data ? [] : [JSONPatch{op: 'add', path: '/data/b', value: 'from-then'}]")],
    cases: [{ data: { a: '1' } }, { data: { b: 'mine' } }],
  },
  {
    // the empty map the first mutation adds is gone before the second: a ConfigMap is a typed object (omitempty)
    name: 'empty-map-dropped',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]"), jsonPatch("[JSONPatch{op: 'add', path: '/metadata/annotations/a', value: 'x'}]")],
    cases: [{}, { annotations: { kept: 'yes' } }],
  },
  {
    name: 'empty-map-dropped-ignore',
    failurePolicy: 'Ignore',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/data', value: {}}]"), jsonPatch("[JSONPatch{op: 'add', path: '/data/a', value: 'x'}]"), jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/after', value: 'yes'}]")],
    cases: [{ data: { k: 'v' } }],
  },
  { name: 'remove-label', mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/metadata/labels/drop'}]")], cases: [{ labels: { drop: 'x', keep: 'y' } }, { labels: { keep: 'y' } }] },
  { name: 'remove-whole-map', mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/data'}]")], cases: [{ data: { a: '1' } }, {}] },
  {
    name: 'remove-list-negative-index',
    mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/metadata/finalizers/-1'}]")],
    cases: [{ finalizers: ['x.io/one', 'x.io/two'] }, { finalizers: ['x.io/one'] }, {}],
  },
  {
    name: 'test-null-absent',
    mutations: [jsonPatch("[JSONPatch{op: 'test', path: '/data/mode', value: null}, JSONPatch{op: 'add', path: '/data/defaulted', value: 'yes'}]")],
    cases: [{ data: { other: '1' } }, { data: { mode: 'x' } }, {}],
  },
  {
    name: 'test-map-value',
    mutations: [jsonPatch("[JSONPatch{op: 'test', path: '/data', value: {'a': '1'}}, JSONPatch{op: 'add', path: '/data/exact', value: 'yes'}]")],
    cases: [{ data: { a: '1' } }, { data: { a: '2' } }, { data: { a: '1', b: '2' } }],
  },
  {
    name: 'escaped-remove',
    mutations: [jsonPatch("[JSONPatch{op: 'remove', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/team')}, JSONPatch{op: 'add', path: '/metadata/annotations/example.com~1moved', value: 'yes'}]")],
    cases: [{ annotations: { 'example.com/team': 'a', other: 'b' } }, { annotations: { other: 'b' } }],
  },
  {
    // a key with `~` escaped as ~0: the API server's own validation refuses the key on both sides
    name: 'escaped-tilde',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/data/' + jsonpatch.escapeKey('a~b'), value: 'x'}]")],
    cases: [{ data: { k: 'v' } }],
  },
  {
    name: 'variables-chain',
    variables: [
      { name: 'tier', expression: "has(object.data) && 'tier' in object.data ? object.data.tier : 'bronze'" },
      { name: 'label', expression: "'tier-' + variables.tier" },
    ],
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/tier', value: variables.label}]")],
    cases: [{ data: { tier: 'gold' } }, {}],
  },
  {
    name: 'match-condition-error',
    matchConditions: [{ name: 'reads-missing', expression: "object.data.missing == 'x'" }],
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/matched', value: 'yes'}]")],
    cases: [{ data: { missing: 'x' } }, { data: { other: '1' } }],
  },
  {
    name: 'match-condition-error-ignore',
    failurePolicy: 'Ignore',
    matchConditions: [{ name: 'reads-missing', expression: "object.data.missing == 'x'" }],
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/matched', value: 'yes'}]")],
    cases: [{ data: { missing: 'x' } }, { data: { other: '1' } }],
  },
  { name: 'eval-error', mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/v', value: object.data.missing}]")], cases: [{ data: { other: '1' } }, { data: { missing: 'm' } }] },
  {
    name: 'params-missing-key-ignore',
    failurePolicy: 'Ignore',
    params: { owner: 'platform' },
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/team', value: params.data.team}]"), jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/owner', value: params.data.owner}]")],
    cases: [{}],
  },
  {
    name: 'params-missing-key',
    params: { owner: 'platform' },
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/labels/team', value: params.data.team}]")],
    cases: [{}],
  },
  {
    name: 'add-list-negative-index',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/metadata/finalizers/-1', value: 'n.io/neg'}]")],
    cases: [{ finalizers: ['x.io/one', 'x.io/two'] }, { finalizers: ['x.io/one'] }],
  },
  { name: 'copy-whole-map', mutations: [jsonPatch("[JSONPatch{op: 'copy', from: '/data', path: '/metadata/annotations'}]")], cases: [{ data: { a: '1' } }, { data: { a: '1' }, annotations: { x: 'y' } }] },
];

const onlyNamespace = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
const policyName = (row: Row) => `map-diff-${row.name}`;
const paramsName = (row: Row) => `${row.name}-params`;
const configmaps = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] };

/** The row's MAP and binding, and its `-then` MAP and binding, selecting the same objects. */
function nativePolicy(row: Row): { apiVersion: string; kind: string; metadata: { name: string } }[] {
  const objects = (name: string, mutations: Mutation[], reinvocationPolicy: Row['reinvocationPolicy']) => [
    {
      apiVersion: MAP_API,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: row.failurePolicy ?? 'Fail',
        reinvocationPolicy: reinvocationPolicy ?? 'Never',
        ...(row.params ? { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } : {}),
        matchConstraints: { resourceRules: [configmaps] },
        ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
        ...(row.variables ? { variables: row.variables } : {}),
        mutations,
      },
    },
    {
      apiVersion: MAP_API,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName: name,
        ...(row.params ? { paramRef: { name: paramsName(row), namespace: PARAMS_NS, parameterNotFoundAction: 'Deny' } } : {}),
        matchResources: { namespaceSelector: onlyNamespace(NATIVE_NS), objectSelector: { matchLabels: { [ROW_LABEL]: row.name } } },
      },
    },
  ];
  return [...objects(policyName(row), row.mutations, row.reinvocationPolicy), ...(row.then ? objects(`${policyName(row)}-then`, row.then, 'Never') : [])];
}

/** The row's webhook, and its `-then` webhook right after it (a suite's webhooks are called in order). */
function suiteWebhooks(row: Row): WebhookSpec[] {
  return [suiteWebhook(row), ...(row.then ? [{ ...suiteWebhook({ ...row, mutations: row.then, reinvocationPolicy: undefined }), name: `${row.name}-then` }] : [])];
}

function suiteWebhook(row: Row): WebhookSpec {
  return {
    name: row.name,
    type: 'Mutating',
    rules: [configmaps as WebhookSpec['rules'][number]],
    failurePolicy: row.failurePolicy ?? 'Fail',
    ...(row.reinvocationPolicy ? { reinvocationPolicy: row.reinvocationPolicy } : {}),
    namespaceSelector: onlyNamespace(HOOK_NS),
    objectSelector: { matchLabels: { [ROW_LABEL]: row.name } },
    ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
    ...(row.params ? { params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: PARAMS_NS, name: paramsName(row), notFoundAction: 'Deny' } } : {}),
    ...(row.variables ? { variables: row.variables } : {}),
    // MAP's entries, unchanged
    mutations: row.mutations,
  } as WebhookSpec;
}

/** A team's AdmissionPolicy has neither params (its author's rights to read them are another test's) nor a failurePolicy (a cluster admin's). */
/** Nor a reinvocationPolicy (its webhook is shared) or a second policy. */
const teamRow = (row: Row) => !row.params && row.failurePolicy === undefined && !row.reinvocationPolicy && !row.then;
const policies = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: TEAM_NS };

function teamPolicy(row: Row, author: Record<string, string> = {}) {
  const spec = {
    type: 'Mutating',
    rules: [configmaps],
    objectSelector: { matchLabels: { [ROW_LABEL]: row.name } },
    ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
    ...(row.variables ? { variables: row.variables } : {}),
    mutations: row.mutations,
  };
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: row.name, namespace: TEAM_NS, annotations: author }, spec };
}

function create(row: Row, c: Case, namespace: string): Promise<Outcome> {
  const metadata = { name: row.name, labels: { [ROW_LABEL]: row.name, ...c.labels }, ...(c.annotations ? { annotations: c.annotations } : {}), ...(c.finalizers ? { finalizers: c.finalizers } : {}) };
  return dryRunCreate(`/api/v1/namespaces/${namespace}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata, ...(c.data ? { data: c.data } : {}) });
}

/** Whether this API server serves MutatingAdmissionPolicy v1 (GA since 1.36; the oldest supported, 1.35, does not). */
async function servesMapV1(): Promise<boolean> {
  const response = await rawRequest('GET', '/apis/admissionregistration.k8s.io/v1');
  return ((response.body.resources as { name: string }[] | undefined) ?? []).some((r) => r.name === 'mutatingadmissionpolicies');
}

describe('MutatingAdmissionPolicy differential: JSONPatch mutations in a suite answer as the API server’s own MAP', function () {
  this.timeout(300_000);
  let operator: Operator;
  let native = false;
  let compiled: KubeObject[] = [];

  before(async function () {
    const { kube } = cluster();
    native = await servesMapV1();
    // the oracle is never lost quietly: the newest (and any 1.36+) serves MAP v1, 1.35 does not
    expect(native, `MutatingAdmissionPolicy v1 served by ${KUBE_VERSION ?? 'the newest'}`).to.equal(KUBE_VERSION === undefined || Number(KUBE_VERSION.split('.')[1]) >= 36);
    for (const ns of [NATIVE_NS, HOOK_NS, PARAMS_NS, TEAM_NS, COMPILED_NS]) await ensureNamespace(ns);
    if (native) {
      // The suite's webhooks as `portcullis compile` writes them (Auto: it writes a MAP of each), applied with kubectl
      const suite = {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'AdmissionSuite',
        metadata: { name: `${SUITE}-compiled` },
        spec: { enforcement: 'Auto', webhooks: ROWS.flatMap(suiteWebhooks).map((w) => ({ ...w, namespaceSelector: onlyNamespace(COMPILED_NS) })) },
      };
      const folder = tempFolder('map-diff-compile-', { 'suite.json': JSON.stringify(suite) });
      const result = await runCli(['compile', '-o', 'json', `${folder}/suite.json`]);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stderr, 'every webhook of the table written as a MAP').to.equal('');
      compiled = (JSON.parse(result.stdout) as { items: KubeObject[] }).items;
      expect(compiled.length).to.equal(2 * ROWS.flatMap(suiteWebhooks).length);
      const applied = await kubectl(['apply', '-f', '-'], result.stdout);
      expect(applied.code, applied.stderr).to.equal(0);
    }
    for (const row of ROWS) {
      if (row.params) await apply(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: paramsName(row), namespace: PARAMS_NS }, data: row.params });
      if (native) for (const object of nativePolicy(row)) await apply(kube, object);
    }
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, { webhooks: ROWS.flatMap(suiteWebhooks) });
    await waitForCondition(SUITE, 'Ready', 'True');
    const author = await writer();
    for (const row of ROWS.filter(teamRow)) {
      const body = teamPolicy(row, author);
      await deleteIfExists(kube, body);
      await kube.custom.createNamespacedCustomObject({ ...policies, body });
      await eventually(
        async () => {
          const policy = (await kube.custom.getNamespacedCustomObject({ ...policies, name: row.name })) as AdmissionPolicy;
          expect(policy.status?.conditions?.find((c) => c.type === 'Ready')?.status, JSON.stringify(policy.status)).to.equal('True');
        },
        { what: `AdmissionPolicy ${row.name} Ready` },
      );
    }
    // each side enforces each row once a create there comes back changed or refused
    for (const row of ROWS) {
      for (const ns of [...(native ? [NATIVE_NS, COMPILED_NS] : []), HOOK_NS, ...(teamRow(row) ? [TEAM_NS] : [])]) {
        await waitEnforced(
          `${row.name} in ${ns}`,
          ROW_LABEL,
          () => Promise.all(row.cases.map((c) => create(row, c, ns))),
          () => Promise.all(row.cases.map((c) => create({ ...row, name: `${row.name}-off` }, c, ns))),
        );
      }
    }
  });

  after(async function () {
    const { kube } = cluster();
    await deleteSuite(SUITE);
    for (const row of ROWS.filter(teamRow)) await deleteIfExists(kube, teamPolicy(row));
    await operator?.stop();
    for (const object of compiled) await deleteIfExists(kube, object as Parameters<typeof deleteIfExists>[1]);
    for (const row of ROWS) {
      if (native) for (const object of nativePolicy(row)) await deleteIfExists(kube, object);
      if (row.params) await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: paramsName(row), namespace: PARAMS_NS } });
    }
  });

  for (const row of ROWS) {
    it(`${row.name}: each create's object, or refusal, as the native MAP's, by a suite${teamRow(row) ? ', by an AdmissionPolicy' : ''} and by the MAP portcullis compile wrote`, async function () {
      const hook: Outcome[] = [];
      for (const c of row.cases) hook.push(await create(row, c, HOOK_NS));
      const team: Outcome[] = [];
      if (teamRow(row)) for (const c of row.cases) team.push(await create(row, c, TEAM_NS));
      if (!native) {
        // no oracle on this API server: the suite still mutates or refuses where the row does
        const plain = await Promise.all(row.cases.map((c) => create({ ...row, name: `${row.name}-off` }, c, HOOK_NS)));
        expect(changedAny(hook, plain, ROW_LABEL)).to.equal(true);
        if (teamRow(row)) expect(team, 'the AdmissionPolicy').to.deep.equal(hook);
        return;
      }
      const map: Outcome[] = [];
      for (const c of row.cases) map.push(await create(row, c, NATIVE_NS));
      expect(hook, `the suite; the MAP: ${JSON.stringify(map)}`).to.deep.equal(map);
      const fromCompile: Outcome[] = [];
      for (const c of row.cases) fromCompile.push(await create(row, c, COMPILED_NS));
      expect(fromCompile, `the MAP portcullis compile wrote; the suite: ${JSON.stringify(hook)}`).to.deep.equal(hook);
      if (teamRow(row)) expect(team, `the AdmissionPolicy; the MAP: ${JSON.stringify(map)}`).to.deep.equal(map);
    });
  }
});
