/**
 * audit: the live results waiting for the scanner's watch to see their object, and the watch's
 * recent sightings they are matched with; a result is kept only where the stored object fails the
 * same way. Bounded (anyone may send requests); must not list, watch or judge anything itself.
 */
import type { AuditResults, ObjectRef } from './results.ts';
import type { CheckResult } from './targets.ts';

/**
 * Live results waiting for the watch to see their object, at most: anyone who reaches the
 * admission port can send requests, so what they leave behind is bounded (oldest dropped).
 */
const LIVE_WAITING_MAX = 5_000;
/**
 * How long the watch's sighting of an object's write matches a live result that names it: the
 * admission thread sends its live results in batches (up to 2 s late), so the write is often seen
 * before the result that let it through arrives.
 */
const SIGHTING_MS = 10_000;
/** Sightings kept at most (the oldest go first). */
const SIGHTINGS_MAX = 20_000;
/** A live result's message is cut here, as a report cuts it (reports.ts). */
const LIVE_MESSAGE_LIMIT = 1024;

/** What a uid the API server assigns looks like (a live result naming anything else cannot be matched). */
const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface WaitingLive {
  key: string;
  ref: ObjectRef;
  results: CheckResult[];
  at: number;
}

/** Where a target's live results (requests it allowed with Warn or Audit failures) are kept, beside its own. */
export const liveKey = (key: string) => `${key}#admission`;

/** The live results of the targets kept in `results` once the watch confirms them; `liveWaitMs`: how long one waits. */
export class LiveConfirmations {
  /** uid -> live results waiting for the watch to see that object. */
  private readonly waiting = new Map<string, WaitingLive[]>();
  private waitingCount = 0;
  /** uid -> the watch's latest sighting of a write of that object (for SIGHTING_MS). */
  private readonly sightings = new Map<string, { at: number; ref: ObjectRef }>();
  private readonly results: AuditResults;
  private readonly liveWaitMs: number;

  constructor(results: AuditResults, liveWaitMs: number) {
    this.results = results;
    this.liveWaitMs = liveWaitMs;
  }

  /**
   * A request `key`'s webhook allowed with Warn or Audit failures: kept at once when the watch saw
   * its object's write moments ago (true: results changed), else it waits for the sighting, a
   * while and in bounded numbers.
   */
  offer(key: string, ref: ObjectRef, results: CheckResult[]): boolean {
    if (!UID.test(ref.uid)) return false;
    const now = Date.now();
    const cut = results.map((r) => (r.message && r.message.length > LIVE_MESSAGE_LIMIT ? { ...r, message: r.message.slice(0, LIVE_MESSAGE_LIMIT) } : r));
    const seen = this.sightings.get(ref.uid);
    if (seen && now - seen.at <= SIGHTING_MS) {
      // The write was seen before this result arrived.
      return this.matches({ key, ref, results: cut, at: now }, seen.ref, now);
    }
    const entries = this.waiting.get(ref.uid) ?? [];
    const kept = entries.filter((e) => e.key !== key);
    this.waitingCount += kept.length - entries.length + 1;
    kept.push({ key, ref, results: cut, at: now });
    this.waiting.delete(ref.uid);
    this.waiting.set(ref.uid, kept);
    // The oldest go first: a flood of made-up requests pushes out only what nobody wrote.
    for (const [uid, list] of this.waiting) {
      if (this.waitingCount <= LIVE_WAITING_MAX && list.every((e) => now - e.at <= this.liveWaitMs)) break;
      this.waiting.delete(uid);
      this.waitingCount -= list.length;
    }
    return false;
  }

  /** The watch saw a write of `ref` (after judging it): remembered a few seconds, and the live results waiting for it kept. */
  seen(ref: ObjectRef): void {
    const now = Date.now();
    this.sightings.delete(ref.uid);
    this.sightings.set(ref.uid, { at: now, ref });
    for (const [uid, seen] of this.sightings) {
      if (this.sightings.size <= SIGHTINGS_MAX && now - seen.at <= SIGHTING_MS) break;
      this.sightings.delete(uid);
    }
    const entries = this.waiting.get(ref.uid);
    if (!entries) return;
    this.waiting.delete(ref.uid);
    this.waitingCount -= entries.length;
    for (const entry of entries) this.matches(entry, ref, now);
  }

  /** Forgets every waiting result and sighting (the replica stopped auditing). */
  clear(): void {
    this.waiting.clear();
    this.waitingCount = 0;
    this.sightings.clear();
  }

  /**
   * Keeps `entry` as the live result of the object the watch saw (`ref`), when it names it, its
   * target judges it, and the stored object fails the same way (or the scan cannot judge the rule).
   * Anyone can POST a request naming a real object's uid within seconds of its write, with content
   * of their making: a failure it reports is kept only where the stored object gives the same
   * words, so none of theirs reaches a report (but for rules that read the request itself).
   */
  private matches(entry: WaitingLive, ref: ObjectRef, now: number): boolean {
    if (now - entry.at > this.liveWaitMs || entry.ref.name !== ref.name || (entry.ref.namespace ?? '') !== (ref.namespace ?? '') || entry.ref.kind !== ref.kind) return false;
    // The target selects the stored object (rules, namespace and object selectors, conditions) and may show it.
    const stored = this.results.resultsOf(ref, entry.key);
    if (!stored) return false;
    // Each failure the request reported is kept where the stored object fails with the same words
    // (in the same validation, where the request named it; a warning does not), or where the scan
    // cannot judge the stored object (skip: the rule reads the request, such as who sent it, which
    // only the live result can tell). Any other is a request's own words: not kept.
    const same = (r: CheckResult, f: CheckResult) => r.rule === 'warning' || f.rule === r.rule;
    const confirmed = entry.results.filter((r) => stored.some((f) => same(r, f) && (f.result === 'skip' || (f.result !== 'pass' && f.message === r.message))));
    if (confirmed.length === 0) return false;
    return this.results.set(ref, liveKey(entry.key), confirmed, now, false);
  }
}
