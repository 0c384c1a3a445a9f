/**
 * Least privilege, proven from the API server's audit log (issue 23, check 6). The node cluster's
 * audit policy records every request of the operator's ServiceAccount at Metadata level
 * (test/node/cluster.ts). After the run so far (install, suites, rolls, drains, a lost leader),
 * this file first exercises the paths only some suites take (params read from a ConfigMap, the
 * SubjectAccessReview asking whether the author may read them, a Mutating webhook, and its
 * configuration deleted when the suite drops that type; native enforcement turned on as
 * deploy/optional/native-enforcement.yaml says, a Native webhook's policy written, healed and
 * removed, then turned off again; an AdmissionPolicy served through
 * portcullis--namespaced and its status, the configuration gone with it; built-in handlers that
 * look up PriorityClasses, RuntimeClasses, StorageClasses, IngressClasses, Pods and Nodes, whose shared caches
 * list and watch them), then reads the log: no request of the
 * operator was refused (403), every one is granted by deploy/02-rbac.yaml (or is discovery, which
 * every authenticated user may read), and every permission deploy/02-rbac.yaml grants was used,
 * but for a short allow-list, each entry with the reason it is rarely used.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { eventually } from '../../support/wait.ts';
import { OPERATOR_USER } from '../cluster.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, kc, namespace } from '../kubectl.ts';
import { layout } from '../layout.ts';
import { DEPLOY_DIR, ensureOperator, leader, OPERATOR_NS, settledReplicas, waitSuiteReady } from '../operator.ts';

const NS = 'rbac-audit';
const SUITE = 'rbac-exercise';
const LOOKUP_SUITE = 'rbac-lookups';
const AUDIT_SUITE = 'rbac-audit-reports';
const NATIVE_SUITE = 'rbac-native';
/** Native enforcement's grants, opt-in (`kubectl apply` of this file and --native-enforcement): exercised here, then taken away again. */
const NATIVE_RBAC = path.join(DEPLOY_DIR, 'optional', 'native-enforcement.yaml');

/** Granted, and used only on paths no test here can take on purpose. */
const RARELY_USED: { grant: string; reason: string }[] = [
  {
    grant: 'get admission.portcullis.dev/admissionsuites',
    reason: 'read only when a status write conflicts (the watch cache was behind the suite), to write over the newest version',
  },
  {
    grant: 'get admission.portcullis.dev/admissionpolicies',
    reason: 'read only when a status write conflicts (the watch cache was behind the policy), to write over the newest version',
  },
  {
    grant: 'update admission.portcullis.dev/admissionexceptions/status',
    reason: 'written only once an exception is used (uses, lastUsed) or expires (Expired): this phase makes none; test/e2e/exceptions-status.test.ts exercises the writes',
  },
  {
    grant: 'update admission.portcullis.dev/clusteradmissionexceptions/status',
    reason: 'written only once a cluster exception is used or expires: this phase makes none; test/e2e/cluster-exceptions.test.ts makes them',
  },
];

interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
}

interface Grant {
  /** undefined: every namespace (a ClusterRole's binding). */
  namespace?: string;
  apiGroup: string;
  resource: string;
  verb: string;
  resourceNames?: string[];
  /** A nonResourceURLs rule's path (`/openapi/v3/*`: that prefix); apiGroup and resource are empty then. */
  nonResourceURL?: string;
}

const grantKey = (g: Grant) =>
  g.nonResourceURL ? `${g.verb} ${g.nonResourceURL}` : `${g.verb} ${g.apiGroup ? `${g.apiGroup}/` : ''}${g.resource}${g.namespace ? ` in ${g.namespace}` : ''}${g.resourceNames ? ` named ${g.resourceNames.join(',')}` : ''}`;

/** Every (verb, group, resource) deploy/02-rbac.yaml (and the optional native enforcement's file) grants the operator's ServiceAccount, through its bindings. */
function grants(): Grant[] {
  const docs = [path.join(DEPLOY_DIR, '02-rbac.yaml'), NATIVE_RBAC].flatMap((file) => k8s.loadAllYaml(fs.readFileSync(file, 'utf8'))) as {
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string> };
    aggregationRule?: { clusterRoleSelectors?: { matchLabels?: Record<string, string> }[] };
    rules?: { apiGroups?: string[]; resources?: string[]; verbs: string[]; resourceNames?: string[]; nonResourceURLs?: string[] }[];
    roleRef?: { kind: string; name: string };
    subjects?: { kind: string; name: string; namespace?: string }[];
  }[];
  const out: Grant[] = [];
  for (const binding of docs.filter((d) => d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding')) {
    const ours = binding.subjects?.some((s) => s.kind === 'ServiceAccount' && `system:serviceaccount:${s.namespace}:${s.name}` === OPERATOR_USER);
    if (!ours) continue;
    const role = docs.find((d) => d.kind === binding.roleRef!.kind && d.metadata.name === binding.roleRef!.name && (d.kind === 'ClusterRole' || d.metadata.namespace === binding.metadata.namespace));
    expect(role, `${binding.kind} ${binding.metadata.name} refers to a role deploy/02-rbac.yaml defines`).to.not.equal(undefined);
    const namespace = binding.kind === 'RoleBinding' ? binding.metadata.namespace : undefined;
    // An aggregated ClusterRole holds the rules of the ClusterRoles its selectors match (the audit's default kinds).
    const aggregated = (role!.aggregationRule?.clusterRoleSelectors ?? []).flatMap((selector) =>
      docs.filter((d) => d.kind === 'ClusterRole' && Object.entries(selector.matchLabels ?? {}).every(([k, v]) => d.metadata.labels?.[k] === v)).flatMap((d) => d.rules ?? []),
    );
    for (const rule of [...(role!.rules ?? []), ...aggregated]) {
      for (const nonResourceURL of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ apiGroup: '', resource: '', verb, nonResourceURL });
      for (const apiGroup of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? []) for (const verb of rule.verbs) out.push({ namespace, apiGroup, resource, verb, ...(rule.resourceNames ? { resourceNames: rule.resourceNames } : {}) });
    }
  }
  return out;
}

/** The RBAC verbs a request exercised: a server-side apply that created its object (201) needed `create` as well as `patch`. */
function verbsOf(e: AuditEvent): string[] {
  return e.verb === 'patch' && e.responseStatus?.code === 201 ? ['patch', 'create'] : [e.verb];
}

function covers(g: Grant, e: AuditEvent, verb: string): boolean {
  const ref = e.objectRef!;
  const resource = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
  if (g.verb !== verb || g.apiGroup !== (ref.apiGroup ?? '') || g.resource !== resource) return false;
  if (g.namespace !== undefined && g.namespace !== ref.namespace) return false;
  return !g.resourceNames || (ref.name !== undefined && g.resourceNames.includes(ref.name));
}

function readAudit(): AuditEvent[] {
  const logs = layout(nodeCluster().dir).logs;
  const files = fs.readdirSync(logs).filter((f) => /^audit.*\.log$/.test(f));
  expect(files, `audit logs in ${logs}`).to.not.deep.equal([]);
  const events = new Map<string, AuditEvent>();
  for (const f of files)
    for (const line of fs.readFileSync(path.join(logs, f), 'utf8').split('\n')) {
      if (!line) continue;
      const e = JSON.parse(line) as AuditEvent;
      // A watch is logged when it starts and when it ends; the last stage has the outcome.
      if (e.user.username === OPERATOR_USER) events.set(e.auditID, e);
    }
  return [...events.values()];
}

/** A ConfigMap created (as a server-side dry run: admission in full, nothing stored) comes back with the Mutating webhook's label. */
async function stamped(name: string): Promise<void> {
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels: { a: 'b' } } });
  await eventually(async () => expect(JSON.parse(await kc(['create', '--dry-run=server', '-o', 'json', '-f', '-'], body)).metadata.labels).to.deep.equal({ a: 'b', stamped: 'yes' }), {
    what: `the Mutating webhook to label ${name}`,
    timeoutMs: 60_000,
  });
}

describe('the operator: least privilege, from the audit log', function () {
  this.timeout(5 * 60_000);
  let removeNamespace: () => Promise<void>;

  before(async function () {
    await ensureOperator();
    removeNamespace = await namespace(NS);
  });
  after(async function () {
    await kc(['delete', 'admissionsuite', SUITE, LOOKUP_SUITE, AUDIT_SUITE, NATIVE_SUITE, '--ignore-not-found']);
    await removeNamespace();
  });

  it('a suite with params and a Mutating webhook works, and dropping a type removes its configuration', async function () {
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rbac-params', namespace: NS }, data: { forbidden: 'not-this-one' } });
    const webhooks = [
      {
        name: 'named-by-params',
        type: 'Validating',
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        params: { apiVersion: 'v1', kind: 'ConfigMap', namespace: NS, name: 'rbac-params' },
        validations: [{ expression: 'object.metadata.name != params.data.forbidden', messageExpression: "'the name ' + params.data.forbidden + ' is forbidden'" }],
      },
      {
        name: 'stamp',
        type: 'Mutating',
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        mutations: [{ condition: 'has(object.metadata.labels)', patch: [{ op: 'add', path: '/metadata/labels/stamped', value: 'yes' }] }],
      },
    ];
    const suite = { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: SUITE }, spec: { webhooks } };
    await apply(suite);
    await waitSuiteReady(SUITE);
    await eventually(
      async () => {
        const denied = await nodeCluster().kubectl(['create', 'configmap', 'not-this-one', '-n', NS]);
        expect(denied.stderr).to.contain('denied the request: the name not-this-one is forbidden');
      },
      { what: 'the params-based validation to deny', timeoutMs: 60_000 },
    );
    await stamped('stamped');

    await apply({ ...suite, spec: { webhooks: webhooks.filter((w) => w.type === 'Validating') } });
    await waitSuiteReady(SUITE);
    await eventually(async () => expect(await kc(['get', 'mutatingwebhookconfiguration', `portcullis-${SUITE}`, '--ignore-not-found', '-o', 'name'])).to.equal(''), {
      what: 'the Mutating configuration of the suite to be deleted',
    });
    // And the other way round: Mutating only, so its Validating configuration goes.
    await apply({ ...suite, spec: { webhooks: webhooks.filter((w) => w.type === 'Mutating') } });
    await waitSuiteReady(SUITE);
    await eventually(async () => expect(await kc(['get', 'validatingwebhookconfiguration', `portcullis-${SUITE}`, '--ignore-not-found', '-o', 'name'])).to.equal(''), {
      what: 'the Validating configuration of the suite to be deleted',
    });
    await stamped('not-this-one');
  });

  it('the background audit lists and watches every kind it may read, and writes, updates and deletes its reports', async function () {
    const rule = (apiGroup: string, resources: string[]) => ({ operations: ['CREATE'], apiGroups: [apiGroup], apiVersions: ['*'], resources });
    const audited = {
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionSuite',
      metadata: { name: AUDIT_SUITE },
      spec: {
        webhooks: [
          {
            name: 'configmaps',
            type: 'Validating',
            validationActions: ['Audit'],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
            rules: [rule('', ['configmaps'])],
            validations: [{ expression: "!has(object.data) || !('bad' in object.data)", message: 'bad data' }],
          },
          {
            name: 'namespaces',
            type: 'Validating',
            validationActions: ['Audit'],
            objectSelector: { matchLabels: { 'rbac-audit': 'yes' } },
            rules: [rule('', ['namespaces'])],
            validations: [{ expression: "!('bad' in object.metadata.labels)", message: 'bad label' }],
          },
          // Every kind the shipped portcullis-audit-default grants: each is listed and watched, none selected.
          {
            name: 'kinds',
            type: 'Validating',
            validationActions: ['Audit'],
            objectSelector: { matchLabels: { 'rbac-audit': 'never' } },
            rules: [
              rule('', ['pods', 'configmaps', 'services', 'serviceaccounts', 'persistentvolumeclaims', 'replicationcontrollers', 'namespaces']),
              rule('apps', ['deployments', 'statefulsets', 'daemonsets', 'replicasets']),
              rule('batch', ['jobs', 'cronjobs']),
              rule('networking.k8s.io', ['ingresses', 'networkpolicies']),
              rule('policy', ['poddisruptionbudgets']),
            ],
            validations: [{ expression: 'true' }],
          },
        ],
      },
    };
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'audited', namespace: NS }, data: { good: '1' } });
    await apply(audited);
    await waitSuiteReady(AUDIT_SUITE);
    const report = async (args: string[]) => JSON.parse(await kc(['get', ...args, '-o', 'json'])) as { results: { result: string; policy: string }[] };
    const has = (found: { results: { result: string; policy: string }[] }, policy: string, result: string) => found.results.some((r) => r.policy === policy && r.result === result);
    await eventually(async () => expect(has(await report(['report', 'portcullis', '-n', NS]), `${AUDIT_SUITE}/configmaps`, 'pass')).to.equal(true), { what: 'the Report to be created', timeoutMs: 60_000 });
    await kc(['label', 'namespace', NS, 'rbac-audit=yes']);
    await eventually(async () => expect(has(await report(['clusterreport', 'portcullis']), `${AUDIT_SUITE}/namespaces`, 'pass')).to.equal(true), { what: 'the ClusterReport to be created', timeoutMs: 60_000 });
    // Changes are judged as they come: each report is updated.
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'audited', namespace: NS }, data: { bad: '1' } });
    await kc(['label', 'namespace', NS, 'bad=1']);
    await eventually(async () => expect(has(await report(['report', 'portcullis', '-n', NS]), `${AUDIT_SUITE}/configmaps`, 'fail')).to.equal(true), { what: 'the Report to be updated', timeoutMs: 60_000 });
    await eventually(async () => expect(has(await report(['clusterreport', 'portcullis']), `${AUDIT_SUITE}/namespaces`, 'fail')).to.equal(true), { what: 'the ClusterReport to be updated', timeoutMs: 60_000 });
    // With the suite gone, nothing is left to report: the reports are deleted.
    await kc(['delete', 'admissionsuite', AUDIT_SUITE]);
    await eventually(async () => expect(await kc(['get', 'report', 'portcullis', '-n', NS, '--ignore-not-found', '-o', 'name'])).to.equal(''), { what: 'the Report to be deleted', timeoutMs: 60_000 });
    await eventually(async () => expect(await kc(['get', 'clusterreport', 'portcullis', '--ignore-not-found', '-o', 'name'])).to.equal(''), { what: 'the ClusterReport to be deleted', timeoutMs: 60_000 });
  });

  it('an AdmissionPolicy is served through portcullis--namespaced, and its configuration goes with it', async function () {
    const policy = {
      apiVersion: 'admission.portcullis.dev/v1alpha1',
      kind: 'AdmissionPolicy',
      metadata: { name: 'no-forbidden', namespace: NS },
      spec: {
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        validations: [{ expression: "object.metadata.name != 'policy-forbidden'", message: 'not this name in this namespace' }],
      },
    };
    await apply(policy);
    await eventually(
      async () => {
        const denied = await nodeCluster().kubectl(['create', 'configmap', 'policy-forbidden', '-n', NS, '--dry-run=server']);
        expect(denied.stderr).to.contain('AdmissionPolicy no-forbidden: not this name in this namespace');
      },
      { what: 'the AdmissionPolicy to deny', timeoutMs: 60_000 },
    );
    await eventually(async () => expect(await kc(['get', 'apol', 'no-forbidden', '-n', NS, '-o', 'jsonpath={.status.conditions[0].reason}'])).to.equal('Served'), {
      what: 'the AdmissionPolicy to be Ready',
    });
    await kc(['delete', 'apol', 'no-forbidden', '-n', NS]);
    await eventually(async () => expect(await kc(['get', 'validatingwebhookconfiguration', 'portcullis--namespaced', '--ignore-not-found', '-o', 'name'])).to.equal(''), {
      what: 'the namespaced configuration to go with the last policy',
    });
  });

  it('a suite of handlers that look up classes works: its caches list and watch them', async function () {
    const only = { matchLabels: { 'kubernetes.io/metadata.name': NS } };
    const rule = (group: string, resource: string) => [{ operations: ['CREATE'], apiGroups: [group], apiVersions: ['v1'], resources: [resource] }];
    const webhooks = [
      { name: 'priority', type: 'Mutating', namespaceSelector: only, rules: rule('', 'pods'), handler: { name: 'Priority' } },
      { name: 'runtime-class', type: 'Mutating', namespaceSelector: only, rules: rule('', 'pods'), handler: { name: 'RuntimeClass' } },
      { name: 'storage-class', type: 'Mutating', namespaceSelector: only, rules: rule('', 'persistentvolumeclaims'), handler: { name: 'DefaultStorageClass' } },
      { name: 'ingress-class', type: 'Mutating', namespaceSelector: only, rules: rule('networking.k8s.io', 'ingresses'), handler: { name: 'DefaultIngressClass' } },
      // PodSecurity reads the Pod cache (its warning on a namespace label change).
      { name: 'pod-security', type: 'Validating', namespaceSelector: only, rules: rule('', 'pods'), handler: { name: 'PodSecurity' } },
      // PodTopologyLabels reads the Node cache (a bound Pod's topology labels), started with the others.
      { name: 'pod-topology-labels', type: 'Mutating', namespaceSelector: only, rules: rule('', 'pods'), handler: { name: 'PodTopologyLabels' } },
    ];
    await apply({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: LOOKUP_SUITE }, spec: { webhooks } });
    await waitSuiteReady(LOOKUP_SUITE);
    // A Pod naming a RuntimeClass that does not exist is refused from the RuntimeClass cache (dry run: nothing stored).
    const pod = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rc', namespace: NS }, spec: { runtimeClassName: 'none', containers: [{ name: 'a', image: 'localhost/portcullis-test:1' }] } });
    await eventually(
      async () => {
        const refused = await nodeCluster().kubectl(['create', '--dry-run=server', '-f', '-'], { input: pod });
        expect(refused.stderr).to.contain('pod rejected: RuntimeClass "none" not found');
      },
      { what: 'the RuntimeClass handler to refuse', timeoutMs: 60_000 },
    );
  });

  it("a Service or configuration someone else holds under a suite's name is read, reported as a Conflict, and left alone", async function () {
    // A name no one holds is written without a read (src/apiserver/names.ts); a held one is read to say whose it is.
    const foreign = [
      {
        suite: 'rbac-foreign-svc',
        type: 'Validating',
        object: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'portcullis-rbac-foreign-svc', namespace: OPERATOR_NS }, spec: { ports: [{ port: 8443 }], selector: { app: 'theirs' } } },
      },
      ...(['Validating', 'Mutating'] as const).map((type) => ({
        suite: `rbac-foreign-${type.toLowerCase()}`,
        type,
        object: {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: `${type}WebhookConfiguration`,
          metadata: { name: `portcullis-rbac-foreign-${type.toLowerCase()}` },
          webhooks: [
            {
              name: 'theirs.example.com',
              clientConfig: { url: 'https://theirs.example.invalid/hook' },
              rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
              objectSelector: { matchLabels: { 'theirs.example.com/never': 'set' } },
              failurePolicy: 'Ignore',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
            },
          ],
        },
      })),
    ];
    try {
      for (const { suite, type, object } of foreign) {
        await apply(object);
        const hook = { name: 'any', type, rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], objectSelector: { matchLabels: { 'rbac-audit/never': 'set' } } };
        const rules = type === 'Mutating' ? { mutations: [{ patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }] }] } : { validations: [{ expression: 'true' }] };
        await apply({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: suite }, spec: { webhooks: [{ ...hook, ...rules }] } });
        await eventually(async () => expect(await kc(['get', 'admissionsuite', suite, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}'])).to.equal('Conflict'), {
          what: `suite ${suite} to report the Conflict over ${object.kind} ${object.metadata.name}`,
          timeoutMs: 60_000,
        });
        const theirs = JSON.parse(await kc(['get', object.kind.toLowerCase(), object.metadata.name, ...('namespace' in object.metadata ? ['-n', OPERATOR_NS] : []), '-o', 'json']));
        expect(theirs.metadata.labels ?? {}, object.kind).to.deep.equal({});
        expect(theirs.metadata.ownerReferences ?? [], object.kind).to.deep.equal([]);
      }
    } finally {
      for (const { suite, object } of foreign) {
        await kc(['delete', 'admissionsuite', suite, '--ignore-not-found']);
        await kc(['delete', object.kind.toLowerCase(), object.metadata.name, ...('namespace' in object.metadata ? ['-n', OPERATOR_NS] : []), '--ignore-not-found']);
      }
    }
  });

  it('with native enforcement turned on as deploy/optional says: a Native webhook written, healed after a hand edit, removed when it goes back, a held name reported', async function () {
    this.timeout(8 * 60_000);
    const name = `deny.${NATIVE_SUITE}.admission.portcullis.dev`;
    const held = 'held.rbac-native-held.admission.portcullis.dev';
    const webhook = {
      name: 'deny',
      type: 'Validating',
      enforcement: 'Native',
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      validations: [{ expression: "object.metadata.name != 'natively-denied'", message: 'natively denied' }],
    };
    const suite = { apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: NATIVE_SUITE }, spec: { webhooks: [webhook] } };
    await kc(['apply', '-f', NATIVE_RBAC]);
    await kc(['-n', OPERATOR_NS, 'patch', 'deployment', 'portcullis-operator', '--type=json', '-p', '[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--native-enforcement"}]']);
    try {
      await kc(['-n', OPERATOR_NS, 'rollout', 'status', 'deployment/portcullis-operator', '--timeout=180s'], undefined, 200_000);
      await settledReplicas();
      await leader();
      await apply(suite);
      await waitSuiteReady(NATIVE_SUITE);
      await eventually(
        async () => expect((await nodeCluster().kubectl(['create', 'configmap', 'natively-denied', '-n', NS])).stderr).to.contain(`ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: natively denied`),
        { what: 'the native policy to deny', timeoutMs: 60_000 },
      );
      // Items added to a set or a keyed list, which an apply alone would leave in place: the whole object is replaced (update).
      await kc(['patch', 'validatingadmissionpolicybinding', name, '--type=merge', '-p', '{"spec":{"validationActions":["Audit"]}}']);
      await kc(['patch', 'validatingadmissionpolicy', name, '--type=merge', '-p', '{"spec":{"matchConditions":[{"name":"never","expression":"false"}]}}']);
      await eventually(async () => expect(await kc(['get', 'validatingadmissionpolicybinding', name, '-o', 'jsonpath={.spec.validationActions}'])).to.equal('["Deny"]'), {
        what: 'the edited binding to be put back',
        timeoutMs: 60_000,
      });
      await eventually(async () => expect(await kc(['get', 'validatingadmissionpolicy', name, '-o', 'jsonpath={.spec.matchConditions}'])).to.equal(''), {
        what: 'the edited policy to be put back',
        timeoutMs: 60_000,
      });
      // A name someone else holds, a policy's or a binding's, is read (get) to say whose it is, and left alone.
      const heldBinding = 'held.rbac-native-held-binding.admission.portcullis.dev';
      await apply({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: held },
        spec: { matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['theirs.example.com'], apiVersions: ['v1'], resources: ['gadgets'] }] }, validations: [{ expression: 'true' }] },
      });
      await apply({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: heldBinding }, spec: { policyName: 'theirs.example.com', validationActions: ['Deny'] } });
      for (const holder of ['rbac-native-held', 'rbac-native-held-binding']) {
        await apply({ ...suite, metadata: { name: holder }, spec: { webhooks: [{ ...webhook, name: 'held' }] } });
        await eventually(async () => expect(await kc(['get', 'admissionsuite', holder, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}'])).to.equal('Conflict'), {
          what: `suite ${holder} to report the Conflict over the held name`,
          timeoutMs: 60_000,
        });
      }
      // Back to the webhook: the policy and binding deleted once the webhook holds.
      await apply({ ...suite, spec: { webhooks: [{ ...webhook, enforcement: 'Webhook' }] } });
      await eventually(async () => expect(await kc(['get', 'validatingadmissionpolicy', name, '--ignore-not-found', '-o', 'name'])).to.equal(''), {
        what: 'the native policy to be removed once the webhook holds',
        timeoutMs: 60_000,
      });
    } finally {
      await kc(['delete', 'admissionsuite', NATIVE_SUITE, 'rbac-native-held', 'rbac-native-held-binding', '--ignore-not-found']);
      await kc(['delete', 'validatingadmissionpolicy', held, '--ignore-not-found']);
      await kc(['delete', 'validatingadmissionpolicybinding', 'held.rbac-native-held-binding.admission.portcullis.dev', '--ignore-not-found']);
      // As deploy/ installs it again: no flag, no grants.
      await kc(['apply', '-f', path.join(DEPLOY_DIR, '03-deployment.yaml')]);
      await kc(['delete', '-f', NATIVE_RBAC, '--ignore-not-found']);
      await kc(['-n', OPERATOR_NS, 'rollout', 'status', 'deployment/portcullis-operator', '--timeout=180s'], undefined, 200_000);
      await settledReplicas();
    }
  });

  it('every request of its ServiceAccount was allowed and granted by deploy/02-rbac.yaml, and every grant was used', async function () {
    const events = readAudit();
    const granted = grants();
    expect(events.length, 'requests of the operator in the audit log').to.be.above(100);

    const refused = events.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`);
    expect([...new Set(refused)], 'requests of the operator refused (403)').to.deep.equal([]);

    const used = new Map<string, number>();
    const nonResource = events.filter((e) => !e.objectRef?.resource);
    // Discovery (the client's lookup of a kind's resource), readable by every authenticated user;
    // any other path (the OpenAPI schemas type checking reads) must be a nonResourceURLs grant's.
    const unexplained = new Set<string>();
    for (const e of nonResource) {
      if (/^\/(api|apis)(\/[^/?]+){0,2}(\?.*)?$/.test(e.requestURI)) continue;
      const path = e.requestURI.split('?')[0]!;
      const grant = granted.find((g) => g.nonResourceURL && g.verb === e.verb && (g.nonResourceURL.endsWith('*') ? path.startsWith(g.nonResourceURL.slice(0, -1)) : path === g.nonResourceURL));
      if (grant) used.set(grantKey(grant), (used.get(grantKey(grant)) ?? 0) + 1);
      else unexplained.add(`${e.verb} ${e.requestURI}`);
    }
    expect([...unexplained], 'non-resource requests neither discovery nor granted by a nonResourceURLs rule').to.deep.equal([]);

    const ungranted = new Set<string>();
    const table = new Map<string, number>();
    for (const e of events) {
      if (!e.objectRef?.resource) continue;
      const ref = e.objectRef;
      const row = `${e.verb} ${ref.apiGroup ? `${ref.apiGroup}/` : ''}${ref.resource}${ref.subresource ? `/${ref.subresource}` : ''}${ref.namespace ? ` in ${ref.namespace}` : ''}`;
      table.set(row, (table.get(row) ?? 0) + 1);
      for (const verb of verbsOf(e)) {
        const grant = granted.find((g) => covers(g, e, verb));
        if (grant) used.set(grantKey(grant), (used.get(grantKey(grant)) ?? 0) + 1);
        else ungranted.add(`${verb} ${e.requestURI}`);
      }
    }
    process.stderr.write(
      `      ${events.length} requests of the operator, by verb and resource:\n${[...table]
        .sort()
        .map(([k, n]) => `        ${String(n).padStart(6)}  ${k}`)
        .join('\n')}\n`,
    );
    expect([...ungranted], 'requests no rule of deploy/02-rbac.yaml grants').to.deep.equal([]);

    const allowed = new Set(RARELY_USED.map((r) => r.grant));
    const unused = granted.map(grantKey).filter((k) => !used.has(k) && !allowed.has(k));
    expect([...new Set(unused)], 'permissions deploy/02-rbac.yaml grants that nothing used').to.deep.equal([]);
    // An allow-list entry that names no grant is stale.
    for (const r of RARELY_USED) expect(granted.map(grantKey), `allow-list entry "${r.grant}"`).to.include(r.grant);
  });
});
