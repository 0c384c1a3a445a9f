/**
 * The MutatingAdmissionPolicy differential of the ApplyConfiguration form (issue 53): each row's
 * mutations, written as a MAP writes them (`patchType: ApplyConfiguration`,
 * `applyConfiguration.expression` returning `Object{...}`), are installed twice: as the API
 * server's own MutatingAdmissionPolicy + binding scoped to namespace map-apply-native, and, pasted
 * unchanged, as a Mutating webhook of the suite `map-apply-diff` scoped to map-apply-hook (both by
 * the row's object label too), and, where a team may write the row (no params, no failurePolicy),
 * as a team's AdmissionPolicy in map-apply-team (answered in a tenant worker, with the kind's
 * schema the operator read sent with the request). The same dry-run creates of ConfigMaps, Deployments and Widgets (a
 * CRD of this test's, with list and map types of every kind) go to each; the objects the API
 * server returns must be the same field for field (but name, namespace, uid, resourceVersion,
 * creationTimestamp and managedFields), and a refusal the same code and the policy's own words
 * (each side's wrapper taken off). The native MAP is the oracle: no expected object is typed by
 * hand. Runs only where the API server serves MAP v1 (not in test:oldest's list: 1.35 does not).
 * Owns its namespaces, its MAPs and bindings (map-apply-*), its suite, policies, params and CRD; must not
 * touch the JSONPatch differential's (map-differential.test.ts).
 */
import { expect } from 'chai';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { dryRunCreate, waitEnforced, writer, type Outcome } from '../support/map-differential.ts';
import { apply, deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, POLICY_PLURAL, VERSION, type AdmissionPolicy, type FailurePolicy, type MatchCondition, type Mutation, type Variable, type WebhookSpec } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

const NATIVE_NS = 'map-apply-native';
const HOOK_NS = 'map-apply-hook';
const PARAMS_NS = 'map-apply-params';
const TEAM_NS = 'map-apply-team';
const SUITE = 'map-apply-diff';
const ROW_LABEL = 'map-apply-row';
const MAP_API = 'admissionregistration.k8s.io/v1';
const WIDGET_GROUP = 'mapapply.example.com';

type Kind = 'configmap' | 'deployment' | 'widget';

/** What each kind is created as, and the rule that matches it. */
const KINDS: Record<Kind, { apiVersion: string; kind: string; path: string; rule: { apiGroups: string[]; apiVersions: string[]; resources: string[] } }> = {
  configmap: { apiVersion: 'v1', kind: 'ConfigMap', path: '/api/v1/namespaces/NS/configmaps', rule: { apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] } },
  deployment: { apiVersion: 'apps/v1', kind: 'Deployment', path: '/apis/apps/v1/namespaces/NS/deployments', rule: { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] } },
  widget: { apiVersion: `${WIDGET_GROUP}/v1`, kind: 'Widget', path: `/apis/${WIDGET_GROUP}/v1/namespaces/NS/widgets`, rule: { apiGroups: [WIDGET_GROUP], apiVersions: ['v1'], resources: ['widgets'] } },
};

/** A Widget's schema: a keyed list, a set, an atomic list, an atomic map, a granular map, and a field that keeps unknown fields. */
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${WIDGET_GROUP}` },
  spec: {
    group: WIDGET_GROUP,
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  size: { type: 'integer' },
                  items: {
                    type: 'array',
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, value: { type: 'string' }, weight: { type: 'integer' } } },
                  },
                  tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
                  steps: { type: 'array', items: { type: 'string' } },
                  config: { type: 'object', 'x-kubernetes-map-type': 'atomic', properties: { a: { type: 'string' }, b: { type: 'string' } } },
                  settings: { type: 'object', additionalProperties: { type: 'string' } },
                  extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                },
              },
            },
          },
        },
      },
    ],
  },
};

/** An object of a case: metadata besides the name and the row's label, and its kind's content. */
interface Case {
  data?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  spec?: Record<string, unknown>;
}

interface Row {
  name: string;
  kind: Kind;
  mutations: Mutation[];
  matchConditions?: MatchCondition[];
  variables?: Variable[];
  /** The data of the ConfigMap the row's params are, in PARAMS_NS. */
  params?: Record<string, string>;
  failurePolicy?: FailurePolicy;
  cases: Case[];
}

const applyConfiguration = (expression: string): Mutation => ({ patchType: 'ApplyConfiguration', applyConfiguration: { expression } });
const jsonPatch = (expression: string): Mutation => ({ patchType: 'JSONPatch', jsonPatch: { expression } });

const DEPLOYMENT_SPEC = {
  replicas: 1,
  selector: { matchLabels: { app: 'web' } },
  template: {
    metadata: { labels: { app: 'web' } },
    spec: { containers: [{ name: 'app', image: 'nginx', args: ['-x'], ports: [{ containerPort: 80 }], env: [{ name: 'A', value: '1' }] }] },
  },
};
const WIDGET_SPEC = {
  size: 1,
  items: [
    { name: 'a', value: '1' },
    { name: 'b', value: '2' },
  ],
  tags: ['x'],
  steps: ['one'],
  config: { a: '1' },
  settings: { k: 'v' },
  extra: { n: 1 },
};

/** `Object.spec.template.spec` and the like, for the rows' long paths. */
const POD = 'Object.spec.template.spec';
const C = `${POD}.containers`;
const inPod = (fields: string) => `Object{spec: Object.spec{template: Object.spec.template{spec: ${POD}{${fields}}}}}`;

const ROWS: Row[] = [
  // ConfigMaps: granular maps and ObjectMeta's lists
  { name: 'cm-data-merge', kind: 'configmap', mutations: [applyConfiguration("Object{data: {'added': 'yes'}}")], cases: [{ data: { k: 'v' } }, {}, { data: { added: 'no' } }] },
  { name: 'cm-labels-merge', kind: 'configmap', mutations: [applyConfiguration("Object{metadata: Object.metadata{labels: {'team': 'blue'}}}")], cases: [{}, { labels: { team: 'red', other: 'x' } }] },
  {
    name: 'cm-from-object',
    kind: 'configmap',
    mutations: [applyConfiguration("Object{metadata: Object.metadata{annotations: {'copied': object.data.k}}}")],
    cases: [{ data: { k: 'v' } }, { data: { other: '1' } }],
  },
  {
    name: 'cm-finalizers-set',
    kind: 'configmap',
    mutations: [applyConfiguration("Object{metadata: Object.metadata{finalizers: ['b.io/two']}}")],
    cases: [{}, { finalizers: ['a.io/one'] }, { finalizers: ['b.io/two', 'a.io/one'] }],
  },
  {
    name: 'cm-owner-references-keyed',
    kind: 'configmap',
    mutations: [applyConfiguration("Object{metadata: Object.metadata{ownerReferences: [Object.metadata.ownerReferences{apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: '00000000-0000-0000-0000-000000000001'}]}}")],
    cases: [{}],
  },
  { name: 'cm-unknown-field', kind: 'configmap', mutations: [applyConfiguration('Object{spec: Object.spec{replicas: 1}}')], cases: [{ data: { k: 'v' } }] },
  { name: 'cm-wrong-type', kind: 'configmap', mutations: [applyConfiguration("Object{data: {'n': 1}}")], cases: [{ data: { k: 'v' } }] },
  { name: 'cm-type-name-mismatch', kind: 'configmap', mutations: [applyConfiguration("Object{metadata: Object.spec{labels: {'a': 'b'}}}")], cases: [{}] },
  {
    // under Ignore the mutation that fails is skipped and the others' changes stand
    name: 'cm-ignore',
    kind: 'configmap',
    failurePolicy: 'Ignore',
    mutations: [applyConfiguration('Object{spec: Object.spec{replicas: 1}}'), applyConfiguration("Object{metadata: Object.metadata{labels: {'after': 'yes'}}}")],
    cases: [{ data: { k: 'v' } }],
  },
  {
    name: 'cm-match-conditions',
    kind: 'configmap',
    matchConditions: [{ name: 'tiered', expression: "has(object.data) && 'tier' in object.data" }],
    mutations: [applyConfiguration("Object{metadata: Object.metadata{labels: {'tier': object.data.tier}}}")],
    cases: [{ data: { tier: 'gold' } }, { data: { other: 'x' } }],
  },
  {
    name: 'cm-variables',
    kind: 'configmap',
    variables: [{ name: 'team', expression: "has(object.data) ? object.data.?team.orValue('none') : 'none'" }],
    mutations: [applyConfiguration("Object{metadata: Object.metadata{labels: {'team': variables.team}}}")],
    cases: [{ data: { team: 'green' } }, {}],
  },
  {
    name: 'cm-params',
    kind: 'configmap',
    params: { owner: 'platform' },
    mutations: [applyConfiguration("Object{metadata: Object.metadata{labels: {'owner': params.data.owner}}}")],
    cases: [{}, { labels: { owner: 'me' } }],
  },
  {
    name: 'cm-in-order',
    kind: 'configmap',
    mutations: [applyConfiguration("Object{data: {'first': 'one'}}"), applyConfiguration("Object{data: {'second': object.data.first + '-two'}}")],
    cases: [{ data: { k: 'v' } }],
  },
  {
    name: 'cm-mixed-forms',
    kind: 'configmap',
    mutations: [jsonPatch("[JSONPatch{op: 'add', path: '/data/patched', value: 'jp'}]"), applyConfiguration("Object{data: {'applied': object.data.patched + '-ac'}}")],
    cases: [{ data: { k: 'v' } }],
  },
  {
    name: 'cm-conditional-empty',
    kind: 'configmap',
    mutations: [applyConfiguration("has(object.data) && 'x' in object.data ? Object{} : Object{data: {'x': 'set'}}")],
    cases: [{}, { data: { x: 'mine' } }],
  },
  // Deployments: the built-in schema's keyed lists, atomic lists and maps
  { name: 'deploy-replicas', kind: 'deployment', mutations: [applyConfiguration('Object{spec: Object.spec{replicas: 3}}')], cases: [{}, { spec: { ...DEPLOYMENT_SPEC, replicas: 5 } }] },
  {
    name: 'deploy-containers-by-name',
    kind: 'deployment',
    mutations: [applyConfiguration(inPod(`containers: [${C}{name: 'side', image: 'busybox'}, ${C}{name: 'app', image: 'nginx:2'}]`))],
    cases: [{}],
  },
  {
    name: 'deploy-ports-keyed',
    kind: 'deployment',
    mutations: [applyConfiguration(inPod(`containers: [${C}{name: 'app', ports: [${C}.ports{containerPort: 80, name: 'http'}, ${C}.ports{containerPort: 80, protocol: 'UDP', name: 'dns'}]}]`))],
    cases: [{}],
  },
  {
    name: 'deploy-env-keyed',
    kind: 'deployment',
    mutations: [applyConfiguration(inPod(`containers: [${C}{name: 'app', env: [${C}.env{name: 'MODE', value: 'prod'}, ${C}.env{name: 'A', value: '2'}]}]`))],
    cases: [{}],
  },
  { name: 'deploy-atomic-args', kind: 'deployment', mutations: [applyConfiguration(inPod(`containers: [${C}{name: 'app', args: ['-y']}]`))], cases: [{}] },
  { name: 'deploy-atomic-selector', kind: 'deployment', mutations: [applyConfiguration("Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'app': 'web'}}}}")], cases: [{}] },
  { name: 'deploy-tolerations', kind: 'deployment', mutations: [applyConfiguration(inPod(`tolerations: [${POD}.tolerations{key: 'k', operator: 'Exists'}]`))], cases: [{}] },
  { name: 'deploy-node-selector', kind: 'deployment', mutations: [applyConfiguration(inPod("nodeSelector: {'disk': 'ssd'}"))], cases: [{}] },
  {
    name: 'deploy-resources',
    kind: 'deployment',
    mutations: [applyConfiguration(inPod(`containers: [${C}{name: 'app', resources: ${C}.resources{limits: {'cpu': '100m'}}}]`))],
    cases: [{}],
  },
  {
    name: 'deploy-template-labels',
    kind: 'deployment',
    mutations: [applyConfiguration("Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {'injected': 'yes'}}}}}")],
    cases: [{}],
  },
  { name: 'deploy-wrong-type', kind: 'deployment', mutations: [applyConfiguration("Object{spec: Object.spec{replicas: 'three'}}")], cases: [{}] },
  // Widgets: a CRD's list and map types
  {
    name: 'crd-list-map',
    kind: 'widget',
    mutations: [applyConfiguration("Object{spec: Object.spec{items: [Object.spec.items{name: 'c', value: '3'}, Object.spec.items{name: 'a', weight: 5}]}}")],
    cases: [{}],
  },
  { name: 'crd-list-set', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{tags: ['y', 'x']}}")], cases: [{}, { spec: { ...WIDGET_SPEC, tags: ['z'] } }] },
  { name: 'crd-atomic-list', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{steps: ['two']}}")], cases: [{}] },
  { name: 'crd-atomic-map', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{config: Object.spec.config{b: '2'}}}")], cases: [{}] },
  { name: 'crd-granular-map', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{settings: {'added': 'yes'}, size: 2}}")], cases: [{}] },
  { name: 'crd-unknown-field', kind: 'widget', mutations: [applyConfiguration('Object{spec: Object.spec{bogus: 1}}')], cases: [{}] },
  // a map literal's values and a list literal's elements are converted shallowly by the API server: a literal in a literal is refused
  { name: 'crd-nested-literal', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{extra: {'m': {'deep': 'x'}}}}")], cases: [{}] },
  // ... while the request's own maps are converted whole
  { name: 'crd-preserve-unknown', kind: 'widget', mutations: [applyConfiguration("Object{spec: Object.spec{extra: {'copied': object.spec.settings, 'items': object.spec.items}}}")], cases: [{}] },
  { name: 'deploy-literal-in-list', kind: 'deployment', mutations: [applyConfiguration(inPod("containers: [{'name': 'app', 'image': 'x'}]"))], cases: [{}] },
  { name: 'deploy-copy-from-object', kind: 'deployment', mutations: [applyConfiguration(inPod('nodeSelector: object.spec.template.metadata.labels'))], cases: [{}] },
];

const onlyNamespace = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
const policyName = (row: Row) => `map-apply-${row.name}`;
const paramsName = (row: Row) => `${row.name}-params`;
const ruleOf = (row: Row) => ({ ...KINDS[row.kind].rule, operations: ['CREATE', 'UPDATE'] });

/** The row's MAP and binding. */
function nativePolicy(row: Row): ({ apiVersion: string; kind: string; metadata: { name: string } } & Record<string, unknown>)[] {
  const name = policyName(row);
  return [
    {
      apiVersion: MAP_API,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: row.failurePolicy ?? 'Fail',
        reinvocationPolicy: 'Never',
        ...(row.params ? { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } : {}),
        matchConstraints: { resourceRules: [ruleOf(row)] },
        ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
        ...(row.variables ? { variables: row.variables } : {}),
        mutations: row.mutations,
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
}

function suiteWebhook(row: Row): WebhookSpec {
  return {
    name: row.name,
    type: 'Mutating',
    rules: [ruleOf(row) as WebhookSpec['rules'][number]],
    failurePolicy: row.failurePolicy ?? 'Fail',
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
const teamRow = (row: Row) => !row.params && row.failurePolicy === undefined;
const policies = { group: GROUP, version: VERSION, plural: POLICY_PLURAL, namespace: TEAM_NS };

function teamPolicy(row: Row, author: Record<string, string> = {}) {
  const spec = {
    type: 'Mutating',
    rules: [ruleOf(row)],
    objectSelector: { matchLabels: { [ROW_LABEL]: row.name } },
    ...(row.matchConditions ? { matchConditions: row.matchConditions } : {}),
    ...(row.variables ? { variables: row.variables } : {}),
    mutations: row.mutations,
  };
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name: row.name, namespace: TEAM_NS, annotations: author }, spec };
}

function body(row: Row, c: Case): Record<string, unknown> {
  const { apiVersion, kind } = KINDS[row.kind];
  const metadata = { name: row.name, labels: { [ROW_LABEL]: row.name, ...c.labels }, ...(c.annotations ? { annotations: c.annotations } : {}), ...(c.finalizers ? { finalizers: c.finalizers } : {}) };
  if (row.kind === 'configmap') return { apiVersion, kind, metadata, ...(c.data ? { data: c.data } : {}) };
  return { apiVersion, kind, metadata, spec: c.spec ?? (row.kind === 'deployment' ? DEPLOYMENT_SPEC : WIDGET_SPEC) };
}

function create(row: Row, c: Case, namespace: string): Promise<Outcome> {
  return dryRunCreate(KINDS[row.kind].path.replace('NS', namespace), body(row, c));
}

describe('MutatingAdmissionPolicy differential: ApplyConfiguration mutations in a suite answer as the API server’s own MAP', function () {
  this.timeout(600_000);
  let operator: Operator;

  before(async function () {
    const { kube } = cluster();
    for (const ns of [NATIVE_NS, HOOK_NS, PARAMS_NS, TEAM_NS]) await ensureNamespace(ns);
    // as JSON, unchanged: the client's typed apply would drop the schema's x-kubernetes-* keys
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
    const existing = await rawRequest('GET', `${crdPath}/${CRD.metadata.name}`);
    const written =
      existing.status === 200
        ? await rawRequest('PUT', `${crdPath}/${CRD.metadata.name}`, { ...CRD, metadata: { ...CRD.metadata, resourceVersion: (existing.body.metadata as { resourceVersion: string }).resourceVersion } })
        : await rawRequest('POST', crdPath, CRD);
    expect(written.status, JSON.stringify(written.body)).to.be.below(300);
    await eventually(
      async () => {
        const listed = await kubectl(['get', `widgets.${WIDGET_GROUP}`, '-A']);
        if (listed.code !== 0) throw new Error(listed.stderr);
      },
      { what: 'the Widget CRD to be served' },
    );
    for (const row of ROWS) {
      if (row.params) await apply(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: paramsName(row), namespace: PARAMS_NS }, data: row.params });
      for (const object of nativePolicy(row)) await apply(kube, object);
    }
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, { webhooks: ROWS.map(suiteWebhook) });
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
      for (const ns of [NATIVE_NS, HOOK_NS, ...(teamRow(row) ? [TEAM_NS] : [])]) {
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
    for (const row of ROWS) {
      for (const object of nativePolicy(row)) await deleteIfExists(kube, object);
      if (row.params) await deleteIfExists(kube, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: paramsName(row), namespace: PARAMS_NS } });
    }
    await deleteIfExists(kube, CRD);
  });

  it('has at least 20 rows, over ConfigMaps, Deployments and a CRD', function () {
    expect(ROWS.length).to.be.at.least(20);
    expect(new Set(ROWS.map((r) => r.kind))).to.deep.equal(new Set(Object.keys(KINDS)));
  });

  for (const row of ROWS) {
    it(`${row.name}: each create's object, or refusal, as the native MAP's, by a suite${teamRow(row) ? ' and by an AdmissionPolicy' : ''}`, async function () {
      const hook: Outcome[] = [];
      for (const c of row.cases) hook.push(await create(row, c, HOOK_NS));
      const map: Outcome[] = [];
      for (const c of row.cases) map.push(await create(row, c, NATIVE_NS));
      expect(hook, `the suite; the MAP: ${JSON.stringify(map)}`).to.deep.equal(map);
      if (!teamRow(row)) return;
      const team: Outcome[] = [];
      for (const c of row.cases) team.push(await create(row, c, TEAM_NS));
      expect(team, `the AdmissionPolicy; the MAP: ${JSON.stringify(map)}`).to.deep.equal(map);
    });
  }
});
