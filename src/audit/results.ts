/**
 * audit: the latest results of every judged object, kept per object and compactly (its reference
 * and each target's results, no copy of the object), indexed by namespace so that one namespace's
 * reports can be rebuilt alone. Remembers which namespaces changed since their reports were last
 * written, and since when each result has held (the report's timestamp, stable while unchanged).
 * No I/O.
 */
import { isDeepStrictEqual } from 'node:util';
import type { CheckResult } from './targets.ts';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid: string;
}

export interface TargetResults {
  results: CheckResult[];
  /** When these results were first seen as they are (ms). */
  since: number;
  /** Reported, but not counted in status or metrics: the target's author may not list the object. */
  uncounted?: true;
}

export interface JudgedObject {
  ref: ObjectRef;
  /** target key -> its results. */
  byTarget: Map<string, TargetResults>;
}

/** A target's counts: objects judged, and those with a failing result. */
export interface AuditCounts {
  evaluated: number;
  failing: number;
}

const failing = (r: TargetResults) => r.results.some((c) => c.result === 'fail' || c.result === 'error');
/** The results that count: those of objects the target's author may list. */
const counted = (r: TargetResults | undefined): r is TargetResults => r !== undefined && !r.uncounted;

export class AuditResults {
  /** namespace ('' for cluster-scoped objects) -> uid -> object. */
  private readonly byNamespace = new Map<string, Map<string, JudgedObject>>();
  private readonly dirty = new Set<string>();

  /**
   * Records `target`'s results for `ref` (undefined: it does not judge it); true when they changed.
   * `count`: false when they are reported but not counted (access.ts).
   */
  set(ref: ObjectRef, target: string, results: CheckResult[] | undefined, now = Date.now(), count = true): boolean {
    const namespace = ref.namespace ?? '';
    let objects = this.byNamespace.get(namespace);
    let judged = objects?.get(ref.uid);
    const before = judged?.byTarget.get(target);
    if (results === undefined) {
      if (!before || !judged) return false;
      judged.byTarget.delete(target);
      if (judged.byTarget.size === 0) objects!.delete(ref.uid);
      this.dirty.add(namespace);
      return true;
    }
    if (before && isDeepStrictEqual(before.results, results) && judged!.ref.name === ref.name && !before.uncounted === count) return false;
    if (!objects) this.byNamespace.set(namespace, (objects = new Map()));
    if (!judged) objects.set(ref.uid, (judged = { ref, byTarget: new Map() }));
    judged.ref = ref;
    const since = before && isDeepStrictEqual(before.results, results) ? before.since : now;
    judged.byTarget.set(target, { results, since, ...(count ? {} : { uncounted: true as const }) });
    this.dirty.add(namespace);
    return true;
  }

  /** `target`'s results for the object `ref` names, if it judged it. */
  resultsOf(ref: ObjectRef, target: string): CheckResult[] | undefined {
    return this.byNamespace
      .get(ref.namespace ?? '')
      ?.get(ref.uid)
      ?.byTarget.get(target)?.results;
  }

  /** Whether `target` judged the object `ref` names (its uid, in its namespace). */
  judges(ref: ObjectRef, target: string): boolean {
    return (
      this.byNamespace
        .get(ref.namespace ?? '')
        ?.get(ref.uid)
        ?.byTarget.has(target) === true
    );
  }

  /** Forgets an object (deleted). */
  removeObject(namespace: string | undefined, uid: string): boolean {
    const objects = this.byNamespace.get(namespace ?? '');
    if (!objects?.delete(uid)) return false;
    this.dirty.add(namespace ?? '');
    return true;
  }

  /** Forgets every result of `target` (its suite or policy was deleted, or changed and will be judged again). */
  removeTarget(target: string): void {
    for (const [namespace, objects] of this.byNamespace) {
      for (const [uid, judged] of objects) {
        if (!judged.byTarget.delete(target)) continue;
        if (judged.byTarget.size === 0) objects.delete(uid);
        this.dirty.add(namespace);
      }
    }
  }

  /** The uids judged by `target` among objects of `apiVersion`/`kind` (to find those deleted since). */
  judgedBy(target: string, kind: string): { namespace: string; uid: string }[] {
    const out: { namespace: string; uid: string }[] = [];
    for (const [namespace, objects] of this.byNamespace) for (const [uid, judged] of objects) if (judged.ref.kind === kind && judged.byTarget.has(target)) out.push({ namespace, uid });
    return out;
  }

  objects(namespace: string): JudgedObject[] {
    return [...(this.byNamespace.get(namespace)?.values() ?? [])];
  }

  namespaces(): string[] {
    return [...this.byNamespace.keys()];
  }

  /** The namespaces whose results changed since the last call ('' for cluster-scoped objects). */
  takeDirty(): string[] {
    const out = [...this.dirty];
    this.dirty.clear();
    return out;
  }

  hasDirty(): boolean {
    return this.dirty.size > 0;
  }

  /** Marks a namespace's reports to be written again (a write failed). */
  markDirty(namespace: string): void {
    this.dirty.add(namespace);
  }

  counts(target: string): AuditCounts {
    const counts = { evaluated: 0, failing: 0 };
    for (const objects of this.byNamespace.values()) {
      for (const judged of objects.values()) {
        const results = judged.byTarget.get(target);
        if (!counted(results)) continue;
        counts.evaluated += 1;
        if (failing(results)) counts.failing += 1;
      }
    }
    return counts;
  }

  /**
   * The counts of each group of targets (`groupOf` a target's group; undefined: not counted), in
   * one pass: an object is counted once per group, judged by any of its targets, failing any.
   */
  countsBy(groupOf: (target: string) => string | undefined): Map<string, AuditCounts> {
    const out = new Map<string, AuditCounts>();
    const groups = new Map<string, boolean>();
    for (const objects of this.byNamespace.values()) {
      for (const judged of objects.values()) {
        groups.clear();
        for (const [target, results] of judged.byTarget) {
          if (!counted(results)) continue;
          const group = groupOf(target);
          if (group !== undefined) groups.set(group, groups.get(group) === true || failing(results));
        }
        for (const [group, fails] of groups) {
          let counts = out.get(group);
          if (!counts) out.set(group, (counts = { evaluated: 0, failing: 0 }));
          counts.evaluated += 1;
          if (fails) counts.failing += 1;
        }
      }
    }
    return out;
  }

  /** Objects with a failing result under any of `targets`, each counted once. */
  failingObjects(targets: string[]): number {
    let n = 0;
    for (const objects of this.byNamespace.values()) {
      for (const judged of objects.values())
        if (
          targets.some((t) => {
            const r = judged.byTarget.get(t);
            return counted(r) && failing(r);
          })
        )
          n += 1;
    }
    return n;
  }
}
