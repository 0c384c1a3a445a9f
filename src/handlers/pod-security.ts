/**
 * PodSecurity, after the in-tree plugin (k8s.io/pod-security-admission/admission/admission.go):
 * the Pod Security Standards (privileged, baseline, restricted; each policy version the library
 * knows, up to v1.37, and latest) enforced, audited and warned per namespace from its
 * `pod-security.kubernetes.io/*` labels, over the suite's defaults and per-namespace policies
 * (pod-security/config.ts).
 *
 * - Pods (CREATE and UPDATE, every subresource but exec, attach, binding, eviction, log,
 *   portforward, proxy and status; an UPDATE that changes no image and adds no ephemeral
 *   container is not judged): denied on an enforce violation, warned, and audited.
 * - Workload templates (replicationcontrollers, podtemplates, apps' replicasets, deployments,
 *   statefulsets and daemonsets, batch's jobs and cronjobs): warned and audited, never denied.
 * - Namespaces: unparsable labels refused; an enforce change that tightens answered with a
 *   warning listing the namespace's existing pods that would violate it (the Pod lookup cache).
 * - Exempt users, namespaces and runtime classes pass with the `exempt` audit annotation.
 * - An AdmissionException's controls (validatePodSecurity's `excuse`, from registry/compile.ts):
 *   the failures of those controls, for the images it lists, are let through in every mode; the
 *   other checks of the level still apply. The warning and annotation naming it are the registry's.
 *
 * Messages are upstream's after its own prefix (the API server puts the webhook's in front); audit
 * annotations carry upstream's keys without the `pod-security.kubernetes.io/` prefix, since the
 * API server records a webhook's as `<webhook name>/<key>`. The checks are pod-security/*.
 */
import { allowed, denied, type AdmissionRequest, type Decision } from '../api/admission-review.ts';
import type { ClusterView, Handler } from './handler.ts';
import { isPlainObject } from './config.ts';
import { at, podSpecPath } from './pods.ts';
import { goQuote } from '../go/strconv.ts';
import { Evaluator, forbiddenDetail, forbiddenReason, visitContainers, nameOf, type AggregateResult, type ExcusesControl, type Meta, type Spec } from './pod-security/checks.ts';
import { POD_SECURITY_CONTROLS } from '../api/exceptions.ts';
import { PRIVILEGE_CHECKS } from './pod-security/privileges.ts';
import { HOST_CHECKS } from './pod-security/host.ts';
import { PROFILE_CHECKS } from './pod-security/profiles.ts';
import { USER_CHECKS } from './pod-security/users.ts';
import { VOLUME_CHECKS } from './pod-security/volumes.ts';
import { basePolicy, parsePodSecurityConfig, PRIVILEGED_POLICY, type PodSecurityConfig } from './pod-security/config.ts';
import {
  aggregate,
  compareLevels,
  fullyPrivileged,
  levelLabel,
  levelVersionString,
  MODES,
  policyEquivalent,
  policyToEvaluate,
  sameLevelVersion,
  sameVersion,
  versionLabel,
  type LabelError,
  type LevelVersion,
  type Policy,
} from './pod-security/levels.ts';

export const EVALUATOR = new Evaluator([...PRIVILEGE_CHECKS, ...HOST_CHECKS, ...PROFILE_CHECKS, ...USER_CHECKS, ...VOLUME_CHECKS]);
// The controls an exception may name are checked on apply from the api's list: a check whose control is not there could never be excepted.
for (const control of EVALUATOR.controls) if (!POD_SECURITY_CONTROLS.includes(control)) throw new Error(`PodSecurity control ${control} is missing from api/exceptions.ts POD_SECURITY_CONTROLS`);

/**
 * What an AdmissionException lets through this request (registry/exceptions.ts Excuse): whether a
 * failure of `control` is, given the images of the containers it names (undefined: the pod's own
 * fields are at fault). Each yes is recorded as a use by the registry.
 */
export interface PodSecurityExcuse {
  coversControl(control: string, images: readonly string[] | undefined): boolean;
}

/** The excuse as the evaluator asks it: container names turned into their images. */
function excusesOf(excuse: PodSecurityExcuse, spec: Spec): ExcusesControl {
  let images: Map<string, string> | undefined;
  return (control, containers) => {
    if (!containers) return excuse.coversControl(control, undefined);
    if (!images) {
      images = new Map();
      visitContainers(spec, (c) => images!.set(nameOf(c), typeof c.image === 'string' ? c.image : ''));
    }
    return excuse.coversControl(
      control,
      containers.map((name) => images!.get(name) ?? ''),
    );
  };
}

/** Pod subresources that cannot change what the policy judges. */
const IGNORED_POD_SUBRESOURCES = new Set(['exec', 'attach', 'binding', 'eviction', 'log', 'portforward', 'proxy', 'status']);

/** Whether Pod Security judges this write of a Pod (a create or update, not of a subresource it ignores). */
export function judgesPodWrite(request: Pick<AdmissionRequest, 'resource' | 'subResource' | 'operation'>): boolean {
  if (request.resource.group !== '' || request.resource.resource !== 'pods') return false;
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return false;
  return !(request.subResource && IGNORED_POD_SUBRESOURCES.has(request.subResource));
}
/** Upstream's cap on the pods a namespace change checks. */
const MAX_PODS_TO_CHECK = 3000;

const WORKLOADS = [
  { group: '', resource: 'replicationcontrollers' },
  { group: '', resource: 'podtemplates' },
  { group: 'apps', resource: 'replicasets' },
  { group: 'apps', resource: 'deployments' },
  { group: 'apps', resource: 'statefulsets' },
  { group: 'apps', resource: 'daemonsets' },
  { group: 'batch', resource: 'jobs' },
  { group: 'batch', resource: 'cronjobs' },
];

type Labels = Record<string, string>;
const labelsOf = (object: unknown): Labels => {
  const labels = isPlainObject(object) && isPlainObject(object.metadata) ? object.metadata.labels : undefined;
  return isPlainObject(labels) ? (labels as Labels) : {};
};
const asObject = (value: unknown): Record<string, any> => (isPlainObject(value) ? value : {});

const exempt = (reason: 'namespace' | 'user' | 'runtimeClass'): Decision => ({ allowed: true, auditAnnotations: { exempt: reason } });
const withAnnotations = (decision: Decision, auditAnnotations: Record<string, string>): Decision => (Object.keys(auditAnnotations).length ? { ...decision, auditAnnotations } : decision);

/** The namespace's policy: its labels over the suite's base policy for it (none read when an entry says to ignore them). */
function namespacePolicy(config: PodSecurityConfig, labels: Labels): { policy: Policy; base: Policy; errors: LabelError[] } {
  const { policy: base, ignoreLabels } = basePolicy(config, labels);
  const { policy, errors } = policyToEvaluate(ignoreLabels ? {} : labels, base);
  return { policy, base, errors };
}

function exemptRuntimeClass(config: PodSecurityConfig, spec: Spec): boolean {
  const name = spec.runtimeClassName;
  return typeof name === 'string' && name !== '' && config.exemptions.runtimeClasses.includes(name);
}

/** EvaluatePod: enforce (for Pods only), audit and warn, each level and version evaluated once. */
function evaluatePod(config: PodSecurityConfig, policy: Policy, errors: LabelError[], meta: Meta, spec: Spec, enforce: boolean, excuse?: PodSecurityExcuse): Decision {
  if (exemptRuntimeClass(config, spec)) return exempt('runtimeClass');
  const annotations: Record<string, string> = {};
  if (errors.length) annotations.error = `Failed to parse policy: ${aggregate(errors)}`;
  const cache: { lv: LevelVersion; result: AggregateResult }[] = [];
  const excuses = excuse && excusesOf(excuse, spec);
  const evaluate = (lv: LevelVersion) => {
    const cached = cache.find((c) => sameLevelVersion(c.lv, lv));
    if (cached) return cached.result;
    const result = EVALUATOR.aggregate(lv, meta, spec, excuses);
    cache.push({ lv, result });
    return result;
  };
  let decision: Decision = allowed();
  if (enforce) {
    annotations['enforce-policy'] = levelVersionString(policy.enforce);
    const result = evaluate(policy.enforce);
    if (!result.allowed) decision = denied(`violates PodSecurity ${goQuote(levelVersionString(policy.enforce))}: ${forbiddenDetail(result)}`, 'Forbidden');
  }
  const audit = evaluate(policy.audit);
  if (!audit.allowed) annotations['audit-violations'] = `would violate PodSecurity ${goQuote(levelVersionString(policy.audit))}: ${forbiddenDetail(audit)}`;
  if (decision.allowed) {
    const warn = evaluate(policy.warn);
    if (!warn.allowed) decision = { ...decision, warnings: [`would violate PodSecurity ${goQuote(levelVersionString(policy.warn))}: ${forbiddenDetail(warn)}`] };
  }
  return withAnnotations(decision, annotations);
}

function namespaceLabelsFor(request: AdmissionRequest, view: ClusterView): Labels {
  const namespace = view.namespace(request.namespace ?? '');
  if (!namespace) throw new Error(`PodSecurity: namespace "${request.namespace ?? ''}" is not in the operator's cache yet; retry`);
  return labelsOf(namespace);
}

/** isSignificantPodUpdate: a container added or removed, an image changed, an ephemeral container added or changed. */
function significantPodUpdate(spec: Spec, oldSpec: Spec): boolean {
  const list = (s: Spec, field: string): Record<string, any>[] => (Array.isArray(s[field]) ? s[field].map(asObject) : []);
  for (const field of ['containers', 'initContainers']) {
    const now = list(spec, field);
    const before = list(oldSpec, field);
    if (now.length !== before.length) return true;
    if (now.some((c, i) => (c.image ?? '') !== (before[i]!.image ?? ''))) return true;
  }
  const before = list(oldSpec, 'ephemeralContainers');
  return list(spec, 'ephemeralContainers').some((c) => {
    const old = before.find((o) => (o.name ?? '') === (c.name ?? ''));
    return !old || (old.image ?? '') !== (c.image ?? '');
  });
}

function validatePod(request: AdmissionRequest, config: PodSecurityConfig, view: ClusterView, excuse?: PodSecurityExcuse): Decision {
  if (request.subResource && IGNORED_POD_SUBRESOURCES.has(request.subResource)) return allowed();
  const namespace = request.namespace ?? '';
  if (namespace && config.exemptions.namespaces.includes(namespace)) return exempt('namespace');
  const user = request.userInfo?.username ?? '';
  if (user && config.exemptions.usernames.includes(user)) return exempt('user');
  const { policy, errors } = namespacePolicy(config, namespaceLabelsFor(request, view));
  if (errors.length === 0 && fullyPrivileged(policy)) return { allowed: true, auditAnnotations: { 'enforce-policy': 'privileged:latest' } };
  const pod = asObject(request.object);
  const spec = asObject(pod.spec);
  if (request.operation === 'UPDATE' && !significantPodUpdate(spec, asObject(asObject(request.oldObject).spec))) return allowed();
  return evaluatePod(config, policy, errors, asObject(pod.metadata), spec, true, excuse);
}

/** Where a workload keeps its pod template (metadata and spec). */
function templatePath(resource: { group: string; resource: string }): string[] | undefined {
  if (resource.group === '' && resource.resource === 'podtemplates') return ['template'];
  return podSpecPath(resource)?.slice(0, -1);
}

function validateWorkload(request: AdmissionRequest, config: PodSecurityConfig, view: ClusterView, excuse?: PodSecurityExcuse): Decision {
  if (request.subResource) return allowed();
  const namespace = request.namespace ?? '';
  if (namespace && config.exemptions.namespaces.includes(namespace)) return exempt('namespace');
  const user = request.userInfo?.username ?? '';
  if (user && config.exemptions.usernames.includes(user)) return exempt('user');
  const namespaceObject = view.namespace(namespace);
  if (!namespaceObject) return { allowed: true, auditAnnotations: { error: `failed to lookup namespace "${namespace}": not in the operator's cache yet` } };
  const { policy, errors } = namespacePolicy(config, labelsOf(namespaceObject));
  if (errors.length === 0 && policy.warn.level === 'privileged' && policy.audit.level === 'privileged') return allowed();
  const template = at(request.object, templatePath(request.resource)!);
  // Only a ReplicationController's template may be absent (a pointer upstream); the others are structs, judged even when empty.
  if (template === undefined && request.resource.resource === 'replicationcontrollers') return allowed();
  const t = asObject(template);
  return evaluatePod(config, policy, errors, asObject(t.metadata), asObject(t.spec), false, excuse);
}

// Namespaces ------------------------------------------------------------------------------------

/** A compact form of the policy an exempt namespace's labels set (its non-privileged modes that were labelled). */
function exemptNamespaceWarning(name: string, policy: Policy, base: Policy, labels: Labels): string | undefined {
  if (fullyPrivileged(policy) || policyEquivalent(policy, base)) return undefined;
  const parts = MODES.filter((mode) => policy[mode].level !== 'privileged' && (levelLabel(mode) in labels || versionLabel(mode) in labels)).map((mode) => `${mode}=${levelVersionString(policy[mode])}`);
  return `namespace ${goQuote(name)} is exempt from Pod Security, and the policy (${parts.join(', ')}) will be ignored`;
}

const isControllerOf = (pod: Record<string, any>): string | undefined => {
  const refs = asObject(pod.metadata).ownerReferences;
  const ref = Array.isArray(refs) ? refs.find((r: any) => r && r.controller === true) : undefined;
  return ref ? String(ref.uid ?? '') : undefined;
};

/** EvaluatePodsInNamespace: the existing pods that violate `enforce`, one warning per distinct reason, naming the first pod by name. */
export function evaluatePodsInNamespace(namespace: string, enforce: LevelVersion, config: PodSecurityConfig, view: ClusterView): string[] {
  // One pod per controller first (replicas share a template), then the other replicas; exempt runtime classes not at all.
  const first: Record<string, any>[] = [];
  const replicas: Record<string, any>[] = [];
  const seen = new Set<string>();
  for (const pod of view.list('Pod', namespace)) {
    if (exemptRuntimeClass(config, asObject(pod.spec))) continue;
    const controller = isControllerOf(pod);
    if (controller === undefined) first.push(pod);
    else if (seen.has(controller)) replicas.push(pod);
    else {
      seen.add(controller);
      first.push(pod);
    }
  }
  const pods = [...first, ...replicas];
  const checked = pods.slice(0, MAX_PODS_TO_CHECK);
  const counts = new Map<string, { name: string; count: number }>();
  for (const pod of checked) {
    const result = EVALUATOR.aggregate(enforce, asObject(pod.metadata), asObject(pod.spec));
    if (result.allowed) continue;
    const reason = forbiddenReason(result);
    const name = String(asObject(pod.metadata).name ?? '');
    const entry = counts.get(reason);
    if (!entry) counts.set(reason, { name, count: 1 });
    else {
      if (name < entry.name) entry.name = name;
      entry.count++;
    }
  }
  const warnings: string[] = [];
  if (checked.length < pods.length) warnings.push(`new PodSecurity enforce level only checked against the first ${checked.length} of ${pods.length} existing pods`);
  if (counts.size) warnings.push(`existing pods in namespace ${goQuote(namespace)} violate the new PodSecurity enforce level ${goQuote(levelVersionString(enforce))}`);
  const podWarnings = [...counts].map(([reason, { name, count }]) => {
    if (count === 1) return `${name}: ${reason}`;
    if (count === 2) return `${name} (and 1 other pod): ${reason}`;
    return `${name} (and ${count - 1} other pods): ${reason}`;
  });
  return [...warnings, ...podWarnings.sort()];
}

function validateNamespace(request: AdmissionRequest, config: PodSecurityConfig, view: ClusterView): Decision {
  if (request.subResource) return allowed();
  const object = asObject(request.object);
  const name = String(asObject(object.metadata).name ?? '');
  const labels = labelsOf(object);
  const { policy, base, errors } = namespacePolicy(config, labels);
  const exemptNamespace = !!request.namespace && config.exemptions.namespaces.includes(request.namespace);
  const invalid = () => denied(aggregate(errors), 'Invalid');
  const exemptWarning = () => {
    const warning = exemptNamespaceWarning(name, policy, base, labels);
    return warning ? { allowed: true, warnings: [warning] } : allowed();
  };
  if (request.operation === 'CREATE') {
    if (errors.length) return invalid();
    return exemptNamespace ? exemptWarning() : allowed();
  }
  if (request.operation !== 'UPDATE') return allowed();
  const old = namespacePolicy(config, labelsOf(request.oldObject));
  // Labels that were already wrong may stay wrong; a change must leave them valid.
  if (errors.length && (old.errors.length === 0 || aggregate(errors) !== aggregate(old.errors))) return invalid();
  // Nothing to check: enforce unchanged, now privileged, or relaxed within the same version.
  if (sameLevelVersion(policy.enforce, old.policy.enforce)) return allowed();
  if (policy.enforce.level === 'privileged') return allowed();
  if (sameVersion(policy.enforce.version, old.policy.enforce.version) && compareLevels(policy.enforce.level, old.policy.enforce.level) < 1) return allowed();
  if (exemptNamespace) return exemptWarning();
  const warnings = evaluatePodsInNamespace(name, policy.enforce, config, view);
  return warnings.length ? { allowed: true, warnings } : allowed();
}

const isResource = (request: AdmissionRequest, group: string, resource: string) => request.resource.group === group && request.resource.resource === resource;

export const podSecurity: Handler<PodSecurityConfig> = {
  name: 'PodSecurity',
  audits: true,
  resources: [{ group: '', resource: 'pods' }, { group: '', resource: 'namespaces' }, ...WORKLOADS],
  lookups: ['Pod'],
  parseConfig: parsePodSecurityConfig,
  validate: (request, config, view) => validatePodSecurity(request, config, view),
};

/** The handler's validate side, with what an AdmissionException lets through this request (registry/compile.ts asks only when one names the webhook). */
export function validatePodSecurity(request: AdmissionRequest, config: PodSecurityConfig, view: ClusterView, excuse?: PodSecurityExcuse): Decision {
  // The in-tree plugin judges creates and updates only.
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allowed();
  if (isResource(request, '', 'pods')) return validatePod(request, config, view, excuse);
  if (isResource(request, '', 'namespaces')) return validateNamespace(request, config, view);
  if (WORKLOADS.some((w) => isResource(request, w.group, w.resource))) return validateWorkload(request, config, view, excuse);
  return allowed();
}

/**
 * Why a team's mutation of a Pod must be refused under Pod Security, or undefined: the mutated Pod
 * judged at the namespace's `enforce` level (its labels; privileged, the in-tree plugin's own
 * default, when unlabelled), as the team's own Pod would be. The API server exempts writers by
 * username, so without this a team's mutation of a Pod an exempt user writes (a privileged
 * container added) would never be judged. A violation the writer's own Pod already had is the
 * writer's, and passes: only what the mutation adds is refused.
 */
export function mutationViolation(namespaceLabels: Record<string, string>, original: Record<string, unknown>, mutated: Record<string, unknown>): string | undefined {
  const { policy } = policyToEvaluate(namespaceLabels, PRIVILEGED_POLICY);
  if (policy.enforce.level === 'privileged') return undefined;
  const after = EVALUATOR.aggregate(policy.enforce, asObject(mutated.metadata), asObject(mutated.spec));
  if (after.allowed) return undefined;
  const before = EVALUATOR.aggregate(policy.enforce, asObject(original.metadata), asObject(original.spec));
  if (!before.allowed && after.reasons.every((reason) => before.reasons.includes(reason))) return undefined;
  return `its mutation makes the Pod violate PodSecurity ${goQuote(levelVersionString(policy.enforce))}: ${forbiddenDetail(after)}`;
}
