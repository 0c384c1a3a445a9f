/**
 * The plugin differential: the in-tree admission plugins that built-in handlers re-create are the
 * oracle. Each row of plugins-differential/rows.ts (the plugin's upstream admission_test.go cases,
 * and some of ours) creates the same objects, then sends the same request, to the reference API
 * server (test/support/reference.ts: the in-tree plugins on) and to the run's own API server
 * (those plugins off, a Portcullis suite with the handlers on). The answers must be the same:
 * the status code, the message (the webhook's wrapper stripped), the warnings, and the stored
 * object's spec, finalizers and annotations. Counts per plugin are printed: cases run, agreed,
 * and those that differ, with why. The plugins that act on every Pod (AlwaysPullImages,
 * DefaultTolerationSeconds, PodNodeSelector, LimitRanger; and DenyServiceExternalIPs) are compared
 * with a reference of their own (rows with `reference: 'unscoped'`), served on our side by a second
 * suite that selects those rows' label.
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { REFERENCE_NODE_SELECTORS, REFERENCE_POD_TOLERATION_DEFAULTS, referenceCluster, unscopedReferenceCluster, type ReferenceCluster } from '../support/reference.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { rawRequestTo, type RawResponse } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { apply } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { LookupNotReady, type LookupKind } from '../../src/handlers/handler.ts';
import { API_VERSION, PLURAL, type RuleWithOperations, type WebhookSpec } from '../../src/api/types.ts';
import { CERTIFICATE_USERS_RBAC, LABEL, NS, ROWS, UNSCOPED_LABEL, objectPath, type Request, type Row } from './plugins-differential/rows.ts';

const SUITE = 'plugins-diff';
const UNSCOPED_SUITE = 'plugins-diff-unscoped';
/** How long the reference's own informers get to see a class created or deleted (they are in its process: milliseconds). */
const REFERENCE_SETTLE_MS = 500;
/** runRow's answer for a row that differs exactly as its knownDifference documents. */
const KNOWN = 'known';
const LOOKUP_KINDS = new Set<string>(['PriorityClass', 'RuntimeClass', 'StorageClass', 'IngressClass', 'Node']);

const rule = (operations: string[], group: string, resources: string[]): RuleWithOperations => ({ operations, apiGroups: [group], apiVersions: ['v1'], resources });
const hook = (name: string, type: 'Mutating' | 'Validating', handler: string, rules: RuleWithOperations[], config?: Record<string, unknown>, label: Record<string, string> = LABEL): WebhookSpec => ({
  name,
  type,
  rules,
  objectSelector: { matchLabels: label },
  handler: { name: handler, ...(config ? { config } : {}) },
});
const PTR_CONFIG = { default: REFERENCE_POD_TOLERATION_DEFAULTS };

/** The suite that stands in for the in-tree plugins on the run's own API server; mutating ones in the in-tree order. */
const WEBHOOKS: WebhookSpec[] = [
  hook('priority', 'Mutating', 'Priority', [rule(['CREATE', 'UPDATE'], '', ['pods'])]),
  hook('pod-toleration-restriction', 'Mutating', 'PodTolerationRestriction', [rule(['CREATE', 'UPDATE'], '', ['pods'])], PTR_CONFIG),
  hook('extended-resource-toleration', 'Mutating', 'ExtendedResourceToleration', [rule(['CREATE', 'UPDATE'], '', ['pods'])]),
  hook('default-storage-class', 'Mutating', 'DefaultStorageClass', [rule(['CREATE'], '', ['persistentvolumeclaims'])]),
  hook('soiup', 'Mutating', 'StorageObjectInUseProtection', [rule(['CREATE'], '', ['persistentvolumes', 'persistentvolumeclaims']), rule(['CREATE'], 'storage.k8s.io', ['volumeattributesclasses'])]),
  hook('runtime-class', 'Mutating', 'RuntimeClass', [rule(['CREATE'], '', ['pods'])]),
  hook('default-ingress-class', 'Mutating', 'DefaultIngressClass', [rule(['CREATE'], 'networking.k8s.io', ['ingresses'])]),
  hook('pod-topology-labels', 'Mutating', 'PodTopologyLabels', [rule(['CREATE'], '', ['pods', 'pods/binding'])]),
  hook('pod-resize', 'Validating', 'PodResizeValidator', [rule(['UPDATE'], '', ['pods/resize'])]),
  hook('runtime-class-overhead', 'Validating', 'RuntimeClass', [rule(['CREATE'], '', ['pods'])]),
  hook('pod-toleration-whitelist', 'Validating', 'PodTolerationRestriction', [rule(['CREATE', 'UPDATE'], '', ['pods'])], PTR_CONFIG),
  hook('priority-classes', 'Validating', 'Priority', [rule(['CREATE', 'UPDATE'], 'scheduling.k8s.io', ['priorityclasses'])]),
  hook('pvc-resize', 'Validating', 'PersistentVolumeClaimResize', [rule(['UPDATE'], '', ['persistentvolumeclaims'])]),
  hook('anti-affinity', 'Validating', 'LimitPodHardAntiAffinityTopology', [rule(['CREATE', 'UPDATE'], '', ['pods'])]),
  // Sent CertificateSigningRequests only because these handlers opt in (api/self-protection.ts).
  hook('certificate-approval', 'Validating', 'CertificateApproval', [rule(['UPDATE'], 'certificates.k8s.io', ['certificatesigningrequests/approval'])]),
  hook('certificate-signing', 'Validating', 'CertificateSigning', [rule(['UPDATE'], 'certificates.k8s.io', ['certificatesigningrequests/status'])]),
  hook('certificate-subject-restriction', 'Validating', 'CertificateSubjectRestriction', [rule(['CREATE'], 'certificates.k8s.io', ['certificatesigningrequests'])]),
];

const unscopedHook = (name: string, type: 'Mutating' | 'Validating', handler: string, rules: RuleWithOperations[], config?: Record<string, unknown>) => hook(name, type, handler, rules, config, UNSCOPED_LABEL);
/**
 * The suite that stands in for the unscoped reference's plugins, mutating ones in the in-tree
 * order (LimitRanger, AlwaysPullImages, PodNodeSelector, DefaultTolerationSeconds), each on the
 * operations and resources its plugin handles.
 */
const UNSCOPED_WEBHOOKS: WebhookSpec[] = [
  unscopedHook('limit-ranger', 'Mutating', 'DefaultResources', [rule(['CREATE', 'UPDATE'], '', ['pods'])]),
  unscopedHook('always-pull-images', 'Mutating', 'AlwaysPullImages', [rule(['CREATE', 'UPDATE'], '', ['pods', 'pods/ephemeralcontainers'])]),
  unscopedHook('pod-node-selector', 'Mutating', 'PodNodeSelector', [rule(['CREATE'], '', ['pods'])], REFERENCE_NODE_SELECTORS),
  unscopedHook('default-toleration-seconds', 'Mutating', 'DefaultTolerationSeconds', [rule(['CREATE', 'UPDATE'], '', ['pods'])]),
  unscopedHook('limit-ranger-limits', 'Validating', 'DefaultResources', [rule(['CREATE', 'UPDATE'], '', ['pods', 'pods/resize', 'persistentvolumeclaims'])]),
  unscopedHook('always-pull-images-policy', 'Validating', 'AlwaysPullImages', [rule(['CREATE', 'UPDATE'], '', ['pods', 'pods/ephemeralcontainers'])]),
  unscopedHook('pod-node-selector-conflicts', 'Validating', 'PodNodeSelector', [rule(['CREATE'], '', ['pods'])], REFERENCE_NODE_SELECTORS),
  unscopedHook('deny-service-external-ips', 'Validating', 'DenyServiceExternalIPs', [rule(['CREATE', 'UPDATE'], '', ['services'])]),
];

interface Side {
  name: 'reference' | 'portcullis';
  send(step: Request): Promise<RawResponse>;
  send(method: string, path: string, body?: unknown, contentType?: string): Promise<RawResponse>;
}

/** What is compared of an answer. */
function outcome(response: RawResponse) {
  const ok = response.status < 300;
  const body = response.body as Record<string, any>;
  // A Service's cluster IP is each API server's own allocation.
  if (ok && body.kind === 'Service' && body.spec) body.spec = { ...body.spec, clusterIP: undefined, clusterIPs: undefined };
  // A CSR records who created it: the admin's credential id is each control plane's own client certificate.
  if (ok && body.kind === 'CertificateSigningRequest' && body.spec) body.spec = { ...body.spec, extra: undefined };
  return {
    status: response.status,
    message: ok ? undefined : String(body.message ?? '').replace(/^admission webhook "[^"]*" denied the request: /, ''),
    warnings: response.warnings,
    object: ok ? { spec: body.spec, finalizers: body.metadata?.finalizers, annotations: body.metadata?.annotations, labels: body.metadata?.labels, globalDefault: body.globalDefault } : undefined,
  };
}

/** The first path at which two JSON values differ, for a reason one can read. */
function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const found = firstDifference((a as any)[key], (b as any)[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return `${path || '.'}: reference ${JSON.stringify(a)?.slice(0, 300)}, portcullis ${JSON.stringify(b)?.slice(0, 300)}`;
}

describe('the plugin differential: built-in handlers against the in-tree plugins', function () {
  this.timeout(15 * 60_000);
  let operator: Operator;
  let reference: ReferenceCluster;
  let unscopedReference: ReferenceCluster;
  let scopedSides: [Side, Side];
  let unscopedSides: [Side, Side];
  const counts = new Map<string, { run: number; agreed: number; differing: string[] }>();

  const sideFor = (name: Side['name'], kubeConfig: ReturnType<typeof cluster>['kubeConfig']): Side => ({
    name,
    send: ((stepOrMethod: any, path?: string, body?: unknown, contentType?: string) =>
      typeof stepOrMethod === 'string'
        ? rawRequestTo(kubeConfig, stepOrMethod, path!, body, { contentType })
        : rawRequestTo(kubeConfig, stepOrMethod.method, stepOrMethod.path, stepOrMethod.body, { contentType: stepOrMethod.contentType, as: stepOrMethod.as })) as Side['send'],
  });

  before(async function () {
    reference = await referenceCluster();
    unscopedReference = await unscopedReferenceCluster();
    await Promise.all([cluster().kube, reference.kube, unscopedReference.kube].map((kube) => apply(kube, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })));
    // The certificate rows' users, the same on both sides.
    for (const kube of [cluster().kube, reference.kube]) for (const object of CERTIFICATE_USERS_RBAC) await apply(kube, object);
    operator = await startTestOperator();
    await createSuite(SUITE, { webhooks: WEBHOOKS });
    await createSuite(UNSCOPED_SUITE, { webhooks: UNSCOPED_WEBHOOKS });
    await waitForCondition(SUITE, 'Ready', 'True', 60_000);
    await waitForCondition(UNSCOPED_SUITE, 'Ready', 'True', 60_000);
    scopedSides = [sideFor('reference', reference.kubeConfig), sideFor('portcullis', cluster().kubeConfig)];
    unscopedSides = [sideFor('reference', unscopedReference.kubeConfig), scopedSides[1]];
    // The suite answers once its webhooks are registered: a labelled PVC gets its finalizer (dry run: nothing stored).
    await eventually(
      async () => {
        const answer = await scopedSides[1].send('POST', `/api/v1/namespaces/${NS}/persistentvolumeclaims?dryRun=All`, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'probe', labels: LABEL },
          spec: { storageClassName: '', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        });
        if (!(answer.body as any).metadata?.finalizers?.includes('kubernetes.io/pvc-protection')) throw new Error(`not yet served: ${JSON.stringify(answer.body).slice(0, 200)}`);
      },
      { what: 'the plugins-diff suite to serve', timeoutMs: 60_000 },
    );
    // And the unscoped one: a labelled Pod gets imagePullPolicy Always (dry run).
    await eventually(
      async () => {
        const answer = await scopedSides[1].send('POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'probe', labels: UNSCOPED_LABEL },
          spec: { containers: [{ name: 'probe', image: 'registry.k8s.io/pause:3.10', imagePullPolicy: 'Never' }] },
        });
        if ((answer.body as any).spec?.containers?.[0]?.imagePullPolicy !== 'Always') throw new Error(`not yet served: ${JSON.stringify(answer.body).slice(0, 200)}`);
      },
      { what: 'the plugins-diff-unscoped suite to serve', timeoutMs: 60_000 },
    );
  });

  after(async function () {
    const lines = [...counts].map(([plugin, c]) => `      ${plugin}: ${c.run} run, ${c.agreed} agreed, ${c.differing.length} differing${c.differing.map((d) => `\n        - ${d}`).join('')}`);
    process.stdout.write(`\n      plugin differential (cases per plugin):\n${lines.join('\n')}\n`);
    await deleteSuite(SUITE);
    await deleteSuite(UNSCOPED_SUITE);
    await operator?.stop();
  });

  /** Waits until the operator's lookup cache (or namespace cache) holds, or no longer holds, the objects named. */
  async function ourCacheHas(kind: string, names: Set<string>, gone: Set<string>, namespace = NS): Promise<void> {
    const view = operator.registry.context.view;
    if (kind === 'LimitRange') {
      await eventually(
        async () => {
          const listed = new Set(view.limitRanges(namespace).map((o) => o.metadata?.name as string));
          for (const name of names) if (!listed.has(name)) throw new Error(`LimitRange ${namespace}/${name} not yet in the operator's cache`);
        },
        { what: `the operator's LimitRange cache to catch up`, timeoutMs: 60_000 },
      );
      return;
    }
    if (kind === 'Namespace') {
      for (const name of names) await eventually(async () => view.namespace(name) ?? Promise.reject(new Error(`namespace ${name} not yet cached`)), { what: `namespace ${name} in the operator's cache` });
      return;
    }
    if (!LOOKUP_KINDS.has(kind)) return;
    await eventually(
      async () => {
        const listed = new Set(view.list(kind as LookupKind).map((o) => o.metadata?.name as string));
        for (const name of names) if (!listed.has(name)) throw new Error(`${kind} ${name} not yet in the operator's cache`);
        for (const name of gone) if (listed.has(name)) throw new Error(`${kind} ${name} still in the operator's cache`);
      },
      { what: `the operator's ${kind} cache to catch up`, timeoutMs: 60_000 },
    );
  }

  /** Removes what a row made, finalizers first (no controller here removes them), on both sides. */
  async function cleanup(made: NonNullable<Request['made']>[], sides: [Side, Side]): Promise<void> {
    const byKind = new Map<string, Set<string>>();
    for (const { kind, name, namespace } of made.reverse()) {
      const path = objectPath(kind, name, undefined, namespace);
      for (const side of sides) {
        await side.send('PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
        const gone = await side.send('DELETE', `${path}?gracePeriodSeconds=0`);
        if (gone.status >= 300 && gone.status !== 404) throw new Error(`${side.name}: deleting ${kind} ${name}: ${gone.status} ${gone.body.message}`);
      }
      // Namespaces go when the namespace controller has emptied them; each row names its own.
      if (kind === 'Namespace') continue;
      if (!byKind.has(kind)) byKind.set(kind, new Set());
      byKind.get(kind)!.add(name);
    }
    for (const [kind, names] of byKind) await ourCacheHas(kind, new Set(), names);
    if ([...byKind.keys()].some((k) => LOOKUP_KINDS.has(k))) await new Promise((r) => setTimeout(r, REFERENCE_SETTLE_MS));
  }

  const names = ROWS.map((r) => `${r.plugin}: ${r.name}`);
  it('has a unique name for every row', function () {
    expect(names.length).to.equal(new Set(names).size);
  });

  for (const plugin of [...new Set(ROWS.map((r) => r.plugin))]) {
    it(`${plugin}: every row answered alike by the in-tree plugin and the handler`, async function () {
      const differing: string[] = [];
      const unexpected: string[] = [];
      const count = { run: 0, agreed: 0, differing };
      counts.set(plugin, count);
      for (const row of ROWS.filter((r) => r.plugin === plugin)) {
        const reason = await runRow(row);
        count.run += 1;
        if (!reason) count.agreed += 1;
        else if (reason === KNOWN) differing.push(`${row.name}: ${row.knownDifference!.reason}`);
        else {
          differing.push(`${row.name}: ${reason}`);
          unexpected.push(`${row.name}: ${reason}`);
        }
      }
      expect(unexpected, `${plugin}: rows that differ from the in-tree plugin`).to.deep.equal([]);
    });
  }

  it('warns on apply of a suite whose certificate handlers are sent CertificateSigningRequests, and registers them without the CSR exclusion', async function () {
    const suite = { apiVersion: API_VERSION, kind: 'AdmissionSuite', metadata: { name: 'plugins-diff-csr-warning' }, spec: { webhooks: WEBHOOKS } };
    const applied = await scopedSides[1].send('POST', `/apis/${API_VERSION}/${PLURAL}?dryRun=All`, suite);
    expect(applied.status, JSON.stringify(applied.body).slice(0, 300)).to.equal(201);
    const certificateHooks = WEBHOOKS.filter((w) => w.name.startsWith('certificate-')).map((w) => `(${w.name}): handler ${w.handler!.name}`);
    expect(certificateHooks).to.have.length(3);
    for (const hook of certificateHooks) {
      const warning = applied.warnings.find((w) => w.includes(hook));
      expect(warning, `a warning for ${hook} in ${JSON.stringify(applied.warnings)}`).to.include("kubelets' client and serving certificates included");
    }
    // What the API server evaluates: the three are registered with no condition keeping CSRs away (the rows below show they are called).
    const registered = await scopedSides[1].send('GET', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/portcullis-${SUITE}`);
    const hooks = ((registered.body as any).webhooks as { name: string; matchConditions?: { expression: string }[] }[]).filter((w) => w.name.includes('certificate-'));
    expect(hooks).to.have.length(3);
    for (const webhook of hooks) expect(JSON.stringify(webhook.matchConditions ?? []), webhook.name).to.not.include('certificatesigningrequests');
  });

  it('keeps CSRs from every other webhook: a deny-all CEL webhook on CSRs and ConfigMaps refuses the ConfigMap and never sees the CSR', async function () {
    const guard = 'plugins-diff-csr-guard';
    await createSuite(guard, {
      webhooks: [
        {
          name: 'deny-all',
          type: 'Validating',
          rules: [rule(['CREATE'], 'certificates.k8s.io', ['certificatesigningrequests']), rule(['CREATE'], '', ['configmaps'])],
          objectSelector: { matchLabels: LABEL },
          validations: [{ expression: 'false', message: 'plugins-diff-csr-guard refuses everything it is sent' }],
        },
      ],
    });
    try {
      await waitForCondition(guard, 'Ready', 'True', 60_000);
      const ours = scopedSides[1];
      await eventually(
        async () => {
          const configMap = await ours.send('POST', `/api/v1/namespaces/${NS}/configmaps?dryRun=All`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'guard-probe', labels: LABEL } });
          if (!String(configMap.body.message ?? '').includes('refuses everything it is sent')) throw new Error(`not yet served: ${configMap.status} ${configMap.body.message ?? ''}`);
        },
        { what: 'the deny-all suite to serve', timeoutMs: 60_000 },
      );
      const csr = ROWS.find((r) => r.plugin === 'CertificateSubjectRestriction' && r.name === 'some other group')!.request;
      const answer = await ours.send('POST', `${csr.path}?dryRun=All`, csr.body);
      expect(answer.status, String(answer.body.message ?? '')).to.equal(201);
    } finally {
      await deleteSuite(guard);
    }
  });

  it('keeps the lookup caches only while a suite uses them: deleting the suite stops them', async function () {
    const view = operator.registry.context.view;
    expect(view.list('StorageClass').map((o) => o.metadata?.name)).to.not.include('probe');
    await deleteSuite(SUITE);
    await eventually(
      async () => {
        try {
          view.list('StorageClass');
        } catch (err) {
          if (err instanceof LookupNotReady) return;
          throw err;
        }
        throw new Error('the StorageClass cache is still kept');
      },
      { what: 'the StorageClass cache to stop' },
    );
    expect(() => view.list('PriorityClass')).to.throw(LookupNotReady);
  });

  /** Runs one row on both sides; the reason they differ, or undefined when they agree. */
  async function runRow(row: Row): Promise<string | undefined> {
    const made: NonNullable<Request['made']>[] = [];
    const sides = row.reference === 'unscoped' ? unscopedSides : scopedSides;
    try {
      for (const step of row.setup) {
        if ('pauseMs' in step) {
          await new Promise((r) => setTimeout(r, step.pauseMs));
          continue;
        }
        const answers = await Promise.all(sides.map((side) => side.send(step)));
        if (step.made && answers.some((a) => a.status < 300)) made.push(step.made);
        // Setup is the same on both sides, rejected alike or accepted alike (PriorityClasses pass the handler too).
        const [a, b] = answers.map((x) => x!.status < 300);
        if (a !== b) return `setup ${step.method} ${step.path}: reference ${answers[0]!.status}, portcullis ${answers[1]!.status} ${answers[1]!.body.message ?? ''}`;
        if (!a) throw new Error(`setup of "${row.name}" failed on both sides: ${answers[0]!.status} ${answers[0]!.body.message}`);
        if (step.made) await ourCacheHas(step.made.kind, new Set([step.made.name]), new Set(), step.made.namespace);
      }
      if (row.setup.some((s) => 'made' in s && s.made && (LOOKUP_KINDS.has(s.made.kind) || s.made.kind === 'Namespace' || s.made.kind === 'LimitRange'))) {
        await new Promise((r) => setTimeout(r, REFERENCE_SETTLE_MS));
      }
      const [ref, ours] = await Promise.all(sides.map((side) => side.send(row.request)));
      if (row.request.made && (ref!.status < 300 || ours!.status < 300)) made.push(row.request.made);
      const theirs: ReturnType<typeof outcome> & { readBack?: unknown } = outcome(ref!);
      const mine: ReturnType<typeof outcome> & { readBack?: unknown } = outcome(ours!);
      if (row.readBack) {
        const [refRead, ourRead] = await Promise.all(sides.map((side) => side.send('GET', row.readBack!)));
        theirs.readBack = outcome(refRead!);
        mine.readBack = outcome(ourRead!);
      }
      const known = row.knownDifference;
      if (known) {
        // Only the documented status codes may differ; with them set aside, all else must agree.
        if (theirs.status !== known.reference || mine.status !== known.portcullis) return `expected the documented codes ${known.reference}/${known.portcullis}, got ${theirs.status}/${mine.status}`;
        mine.status = theirs.status;
      }
      if (row.shows && !JSON.stringify(theirs).includes(row.shows)) return `the reference's answer does not show ${row.shows}: ${JSON.stringify(theirs).slice(0, 300)}`;
      const difference = firstDifference(theirs, mine);
      if (known && !difference) return KNOWN;
      if (process.env.PORTCULLIS_DIFF_VERBOSE) process.stdout.write(`        ${row.plugin}: ${row.name}: ${ref!.status} ${JSON.stringify(outcome(ref!)).slice(0, 400)}\n`);
      return difference;
    } finally {
      await cleanup(made, sides);
    }
  }
});
