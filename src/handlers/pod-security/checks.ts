/**
 * The Pod Security checks' frame (k8s.io/pod-security-admission/policy: checks.go, registry.go,
 * helpers.go, visitor.go): what a check is, the versions each revision applies from, the
 * restricted revisions that replace baseline checks, and the evaluator that picks, for a level
 * and version, the checks that apply and runs them in upstream's order (baseline IDs sorted, then
 * restricted IDs sorted), so the messages come out in upstream's words and order. The checks
 * themselves live in one file per family beside this one. Pure.
 */
import type { Level, LevelVersion } from './levels.ts';

/** A Pod's (or a template's) metadata and spec as JSON. */
export type Meta = { annotations?: Record<string, string>; [key: string]: unknown };
export type Spec = Record<string, any>;
export type Container = Record<string, any>;

export interface CheckResult {
  allowed: boolean;
  forbiddenReason?: string;
  forbiddenDetail?: string;
  /**
   * The containers (by name) a failure is about, when it is about containers only; unset when the
   * pod itself is at fault (its securityContext, volumes, annotations, host namespaces). An
   * AdmissionException limited to images lets a failure through only when it can say which.
   */
  containers?: string[];
}
export type CheckPod = (meta: Meta, spec: Spec) => CheckResult;

export interface VersionedCheck {
  /** The first v1 minor this revision applies to. */
  minimumVersion: number;
  checkPod: CheckPod;
  /** Baseline checks this (restricted) revision replaces. */
  overrideCheckIDs?: string[];
}
export interface Check {
  id: string;
  level: Exclude<Level, 'privileged'>;
  versions: VersionedCheck[];
}

export const ALLOWED: CheckResult = { allowed: true };
export const forbidden = (forbiddenReason: string, forbiddenDetail: string, containers?: string[]): CheckResult =>
  containers ? { allowed: false, forbiddenReason, forbiddenDetail, containers } : { allowed: false, forbiddenReason, forbiddenDetail };

/**
 * The control a check belongs to, as an AdmissionException names it (spec.podSecurity.controls):
 * its ID without the level suffix, so `capabilities` is baseline's check and the restricted one
 * that replaces it.
 */
export const controlOf = (checkId: string) => checkId.replace(/_(baseline|restricted)$/, '');

/** Whether a failure of `control` about `containers` (unset: the pod's own) is let through (an AdmissionException). */
export type ExcusesControl = (control: string, containers: string[] | undefined) => boolean;

// helpers.go -------------------------------------------------------------------------------------

export function joinQuote(items: string[]): string {
  return items.length ? `"${items.join('", "')}"` : '';
}
export const pluralize = (singular: string, plural: string, count: number) => (count === 1 ? singular : plural);
/** `container "a"` / `containers "a", "b"`. */
export const containersNamed = (names: string[]) => `${pluralize('container', 'containers', names.length)} ${joinQuote(names)}`;
/** A Pod in a user namespace (hostUsers: false), where some restricted checks relax from v1.35. */
export const inUserNamespace = (spec: Spec) => spec.hostUsers === false;
export const isWindows = (spec: Spec) => spec.os?.name === 'windows';
/** Go's sets.String List(): distinct, sorted by bytes. */
export const sortedSet = (items: Iterable<string>) => [...new Set(items)].sort(byBytes);
export const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Init containers, containers, then ephemeral containers, as visitContainers walks them. */
export function visitContainers(spec: Spec, visit: (container: Container) => void): void {
  for (const list of ['initContainers', 'containers', 'ephemeralContainers']) {
    const containers = spec[list];
    if (Array.isArray(containers)) for (const c of containers) if (c && typeof c === 'object') visit(c);
  }
}
export const nameOf = (c: Container): string => (typeof c.name === 'string' ? c.name : '');

// checks.go: aggregation ------------------------------------------------------------------------

export interface AggregateResult {
  allowed: boolean;
  reasons: string[];
  details: string[];
}

export function aggregateResults(results: CheckResult[]): AggregateResult {
  const reasons: string[] = [];
  const details: string[] = [];
  for (const r of results) {
    if (r.allowed) continue;
    reasons.push(r.forbiddenReason || 'unknown forbidden reason');
    details.push(r.forbiddenDetail ?? '');
  }
  return { allowed: reasons.length === 0, reasons, details };
}

/** `host ports, privileged` (the namespace warnings' form). */
export const forbiddenReason = (a: AggregateResult) => a.reasons.join(', ');
/** `host ports (8080, 9090), privileged (container "a" ...)` (a single object's form). */
export const forbiddenDetail = (a: AggregateResult) => a.reasons.map((reason, i) => (a.details[i] ? `${reason} (${a.details[i]})` : reason)).join(', ');

// registry.go: the evaluator --------------------------------------------------------------------

/**
 * The checks that apply at each level and version, computed once from the check list as
 * upstream's checkRegistry does; versions past the newest revision (and latest) use the newest.
 */
export class Evaluator {
  /** The newest minor any check revision starts at: latest and newer versions evaluate as this. */
  readonly maxMinor: number;
  private readonly baseline = new Map<number, CheckPod[]>();
  private readonly restricted = new Map<number, CheckPod[]>();
  /** The control of each check, in the same order as the lists above (asked only under an exception). */
  private readonly baselineControls = new Map<number, string[]>();
  private readonly restrictedControls = new Map<number, string[]>();
  /** Every control of the checks, once each. */
  readonly controls: ReadonlySet<string>;

  constructor(checks: Check[]) {
    this.maxMinor = Math.max(...checks.map((c) => c.versions[c.versions.length - 1]!.minimumVersion));
    const ordered = [
      ...checks
        .filter((c) => c.level === 'baseline')
        .map((c) => c.id)
        .sort(byBytes),
      ...checks
        .filter((c) => c.level === 'restricted')
        .map((c) => c.id)
        .sort(byBytes),
    ];
    const byId = new Map(checks.map((c) => [c.id, c]));
    this.controls = new Set(checks.map((c) => controlOf(c.id)));
    for (let minor = 0; minor <= this.maxMinor; minor++) {
      const active = new Map<string, VersionedCheck>();
      for (const check of checks) {
        const revision = [...check.versions].reverse().find((v) => v.minimumVersion <= minor);
        if (revision) active.set(check.id, revision);
      }
      const overridden = new Set([...active].filter(([id]) => byId.get(id)!.level === 'restricted').flatMap(([, v]) => v.overrideCheckIDs ?? []));
      const pick = (keep: (id: string) => boolean) => ordered.filter((id) => active.has(id) && keep(id));
      const baseline = pick((id) => byId.get(id)!.level === 'baseline');
      const restricted = pick((id) => byId.get(id)!.level === 'restricted' || !overridden.has(id));
      this.baseline.set(
        minor,
        baseline.map((id) => active.get(id)!.checkPod),
      );
      this.restricted.set(
        minor,
        restricted.map((id) => active.get(id)!.checkPod),
      );
      this.baselineControls.set(minor, baseline.map(controlOf));
      this.restrictedControls.set(minor, restricted.map(controlOf));
    }
  }

  evaluate(lv: LevelVersion, meta: Meta, spec: Spec): CheckResult[] {
    if (lv.level === 'privileged') return [];
    const checks = (lv.level === 'baseline' ? this.baseline : this.restricted).get(this.minorOf(lv)) ?? [];
    return checks.map((check) => check(meta, spec));
  }

  /**
   * The failures of the level, but those `excuses` lets through (an AdmissionException's
   * controls). `excuses` is asked only of a failing check, and only when an exception covers the
   * request: without one, this is the upstream aggregation and nothing more.
   */
  aggregate(lv: LevelVersion, meta: Meta, spec: Spec, excuses?: ExcusesControl): AggregateResult {
    const results = this.evaluate(lv, meta, spec);
    if (!excuses || lv.level === 'privileged') return aggregateResults(results);
    const controls = (lv.level === 'baseline' ? this.baselineControls : this.restrictedControls).get(this.minorOf(lv)) ?? [];
    return aggregateResults(results.filter((r, i) => r.allowed || !excuses(controls[i]!, r.containers)));
  }

  private minorOf(lv: LevelVersion): number {
    return lv.version.latest ? this.maxMinor : Math.min(lv.version.minor, this.maxMinor);
  }
}
