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
export const forbidden = (forbiddenReason: string, forbiddenDetail: string): CheckResult => ({ allowed: false, forbiddenReason, forbiddenDetail });

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

  constructor(checks: Check[]) {
    this.maxMinor = Math.max(...checks.map((c) => c.versions[c.versions.length - 1]!.minimumVersion));
    const ordered = [...checks.filter((c) => c.level === 'baseline').map((c) => c.id).sort(byBytes), ...checks.filter((c) => c.level === 'restricted').map((c) => c.id).sort(byBytes)];
    const byId = new Map(checks.map((c) => [c.id, c]));
    for (let minor = 0; minor <= this.maxMinor; minor++) {
      const active = new Map<string, VersionedCheck>();
      for (const check of checks) {
        const revision = [...check.versions].reverse().find((v) => v.minimumVersion <= minor);
        if (revision) active.set(check.id, revision);
      }
      const overridden = new Set([...active].filter(([id]) => byId.get(id)!.level === 'restricted').flatMap(([, v]) => v.overrideCheckIDs ?? []));
      const pick = (keep: (id: string) => boolean) => ordered.filter((id) => active.has(id) && keep(id)).map((id) => active.get(id)!.checkPod);
      this.baseline.set(minor, pick((id) => byId.get(id)!.level === 'baseline'));
      this.restricted.set(minor, pick((id) => byId.get(id)!.level === 'restricted' || !overridden.has(id)));
    }
  }

  evaluate(lv: LevelVersion, meta: Meta, spec: Spec): CheckResult[] {
    if (lv.level === 'privileged') return [];
    const minor = lv.version.latest ? this.maxMinor : Math.min(lv.version.minor, this.maxMinor);
    const checks = (lv.level === 'baseline' ? this.baseline : this.restricted).get(minor) ?? [];
    return checks.map((check) => check(meta, spec));
  }

  aggregate(lv: LevelVersion, meta: Meta, spec: Spec): AggregateResult {
    return aggregateResults(this.evaluate(lv, meta, spec));
  }
}
