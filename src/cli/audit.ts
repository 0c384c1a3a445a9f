/**
 * `portcullis audit`: the background audit's judgement of a live cluster, run once with nothing
 * installed: the files' suites and policies as targets (src/audit/targets.ts), resources found by its
 * discovery (Secrets never), each stored object LISTed (audit/list.ts) and judged as its CREATE as the
 * scanner judges it; Namespaces and params read as the operator reads them. GETs only. Owns what counts
 * as denied and the output (text, JSON); the exit code is main.ts'.
 */
import type * as k8s from '@kubernetes/client-node';
import type { AdmissionPolicy, AdmissionSuite, ParamsRef } from '../api/types.ts';
import { DEFAULTS } from '../config.ts';
import { describeError } from '../apiserver/client.ts';
import { resourcePath, ScanDiscovery, targetsByResource } from '../audit/listable-resources.ts';
import { listPaged, type KubeItem } from '../audit/list.ts';
import { judgeStored, namespaceLabelsOf, refOf, storedCreate } from '../audit/stored.ts';
import { policyTarget, suiteTargets, type AuditTarget, type CheckResult, type TargetSource } from '../audit/targets.ts';
import type { ObjectRef } from '../audit/results.ts';
import { DEFAULT_POLICY_LIMITS, objectsContext } from './evaluate.ts';

type KubeObject = Record<string, any>;

export interface AuditRequest {
  kubeConfig: k8s.KubeConfig;
  suites: AdmissionSuite[];
  /** Each with its namespace (files.ts' splitSuites gives one to those without). */
  policies: AdmissionPolicy[];
  /** The files' other objects: params and LimitRanges the cluster does not have. */
  objects: KubeObject[];
  operatorNamespace?: string;
  /** Only the objects of this namespace (and no cluster-scoped one). */
  namespace?: string;
  /** Objects per LIST page (the operator's default). */
  pageSize?: number;
}

export interface AuditedObject extends ObjectRef {
  results: CheckResult[];
}

/** One suite webhook's or AdmissionPolicy's findings. */
export interface WebhookAudit {
  /** `<suite>/<webhook>`, or the AdmissionPolicy's `<namespace>/<name>`: a report's `policy`. */
  policy: string;
  source: Omit<TargetSource, 'generation'>;
  action: string;
  evaluated: number;
  /** Objects with a `fail` or `error` result. */
  denied: number;
  objects: AuditedObject[];
}

export interface AuditOutput {
  webhooks: WebhookAudit[];
  /** Objects judged by some webhook, and those any would deny, each counted once. */
  evaluated: number;
  denied: number;
  /** What could not be audited (a kind that may not be listed): the audit is incomplete. */
  problems: string[];
}

/** A request for the object would be refused: a failing validation, or one that cannot be evaluated (failurePolicy Fail). */
export const wouldDeny = (results: CheckResult[]) => results.some((r) => r.result === 'fail' || r.result === 'error');

/** The params collections the suites and policies name (a policy's params are of its own namespace). */
function paramsRefs(suites: AdmissionSuite[], policies: AdmissionPolicy[]): ParamsRef[] {
  return [...suites.flatMap((s) => s.spec.webhooks.flatMap((w) => (w.params ? [w.params] : []))), ...policies.flatMap((p) => (p.spec.params ? [{ ...p.spec.params, namespace: p.metadata.namespace }] : []))];
}

/** Every object of `path`, each given the apiVersion and kind a LIST's items leave out. */
async function listAll(config: k8s.KubeConfig, path: string, apiVersion: string, kind: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  await listPaged(config, path, 500, async (item) => void out.push({ apiVersion, kind, ...item }));
  return out;
}

export async function auditCluster(request: AuditRequest): Promise<AuditOutput> {
  const { kubeConfig: config, namespace: only } = request;
  const operatorNamespace = request.operatorNamespace ?? DEFAULTS.namespace;
  const discovery = new ScanDiscovery(config);
  const problems: string[] = [];

  // What the operator watches and the targets read: the live Namespaces and params first (the
  // first object of a name wins), then what the files give.
  const namespaces = await listAll(config, '/api/v1/namespaces', 'v1', 'Namespace');
  const labels = new Map(namespaces.map((n) => [n.metadata?.name as string, n.metadata?.labels as Record<string, string> | undefined]));
  const params: KubeObject[] = [];
  const namespacedKinds = new Map<string, boolean>();
  const listed = new Set<string>();
  for (const ref of paramsRefs(request.suites, request.policies)) {
    const key = `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}`;
    if (listed.has(key)) continue;
    listed.add(key);
    try {
      const resource = await discovery.ofKind(ref.apiVersion, ref.kind);
      if (!resource) continue;
      namespacedKinds.set(`${ref.apiVersion}|${ref.kind}`, resource.namespaced);
      params.push(...(await listAll(config, resourcePath(resource, resource.namespaced ? ref.namespace : undefined), ref.apiVersion, ref.kind)));
    } catch (err) {
      problems.push(`cannot read params ${ref.apiVersion} ${ref.kind}: ${describeError(err)}`);
    }
  }
  const { view, params: paramsSource } = objectsContext([...namespaces, ...params, ...request.objects], (apiVersion, kind) => namespacedKinds.get(`${apiVersion}|${kind}`));
  const context = { view, params: paramsSource, operatorNamespace };
  const operatorConfig = { ...DEFAULTS, namespace: operatorNamespace };
  const targets: AuditTarget[] = [
    ...request.suites.flatMap((s) => suiteTargets(s, operatorConfig, context)),
    ...request.policies.map((p) => policyTarget(p, DEFAULT_POLICY_LIMITS, operatorConfig, context)).filter((t): t is AuditTarget => t !== undefined),
  ];

  // As the scanner does: each resource listed once, judged by every target that names it.
  const byResource = await targetsByResource(discovery, targets, (target, resources) => {
    if ('error' in resources) problems.push(`${target.policy}: discovery failed: ${describeError(resources.error)}`);
  });
  const found = new Map<string, AuditedObject[]>(targets.map((t) => [t.key, []]));
  for (const { resource, targets: judging } of byResource.values()) {
    if (only !== undefined && !resource.namespaced) continue;
    const onItem = async (item: KubeItem) => {
      const ref = refOf(item, resource);
      const stored = storedCreate(item, resource);
      const nsLabels = namespaceLabelsOf(ref.namespace, (n) => labels.get(n));
      for (const target of judging) {
        if (target.namespace && target.namespace !== ref.namespace) continue;
        const results = await judgeStored(target, stored, nsLabels);
        if (results !== undefined) found.get(target.key)!.push({ ...ref, results });
      }
    };
    try {
      await listPaged(config, resourcePath(resource, only), request.pageSize ?? 500, onItem);
    } catch (err) {
      problems.push(`cannot list ${resource.group || 'core'}/${resource.resource}: ${describeError(err)}`);
    }
  }

  const order = (a: ObjectRef, b: ObjectRef) => `${a.namespace ?? ''}/${a.kind}/${a.name}`.localeCompare(`${b.namespace ?? ''}/${b.kind}/${b.name}`);
  const webhooks = targets.map((t): WebhookAudit => {
    const objects = found.get(t.key)!.sort(order);
    const { generation: _g, ...source } = t.source;
    return { policy: t.policy, source, action: t.action, evaluated: objects.length, denied: objects.filter((o) => wouldDeny(o.results)).length, objects };
  });
  const all = webhooks.flatMap((w) => w.objects);
  return {
    webhooks,
    evaluated: new Set(all.map((o) => o.uid)).size,
    denied: new Set(all.filter((o) => wouldDeny(o.results)).map((o) => o.uid)).size,
    problems,
  };
}

const objectLabel = (o: ObjectRef) => `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;

/** Per webhook: how many objects it judged and would deny, then each denied object's failing checks with their messages. */
export function auditText(output: AuditOutput): string {
  const lines: string[] = [];
  for (const w of output.webhooks) {
    const warned = w.objects.filter((o) => !wouldDeny(o.results) && o.results.some((r) => r.result === 'warn')).length;
    lines.push(`${w.source.kind} ${w.policy} (${w.action}): ${w.evaluated} evaluated, ${w.denied} would be denied${warned ? `, ${warned} warned` : ''}`);
    for (const o of w.objects.filter((x) => wouldDeny(x.results))) {
      for (const r of o.results.filter((x) => x.result === 'fail' || x.result === 'error')) lines.push(`  ${objectLabel(o)}: ${r.rule} ${r.result}: ${r.message ?? ''}`);
    }
  }
  if (output.webhooks.length === 0) lines.push('no validating webhook or AdmissionPolicy in the files judges stored objects');
  lines.push('', `${output.denied} of ${output.evaluated} objects would be denied`);
  return `${lines.join('\n')}\n`;
}
